#include "sql/planner.h"

#include <cctype>
#include <map>
#include <optional>

namespace perfprof::sql {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<Token> tokens(std::string_view s) {
    std::vector<Token> out;
    size_t i = 0;
    auto ident_char = [&](size_t j) {
        const unsigned char c = static_cast<unsigned char>(s[j]);
        return std::isalnum(c) || c == '_' || c == '.' || c == '$';
    };
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (std::isspace(c)) {
            ++i;
        } else if (c == '-' && i + 1 < s.size() && s[i + 1] == '-') {  // comment to the end of the line
            while (i < s.size() && s[i] != '\n') ++i;
        } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
            // 'text' ('' inside), "identifier", `identifier`, [identifier]
            const char close = c == '[' ? ']' : char(c);
            std::string text;
            size_t j = i + 1;
            for (; j < s.size(); ++j) {
                if (s[j] == close) {
                    if (close != ']' && j + 1 < s.size() && s[j + 1] == close) {
                        text += close;
                        ++j;
                        continue;
                    }
                    break;
                }
                text += s[j];
            }
            out.push_back({c == '\'' ? Token::String : Token::Ident, std::move(text)});
            i = j < s.size() ? j + 1 : s.size();
        } else if (std::isdigit(c)) {
            size_t j = i;
            while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
            out.push_back({Token::Number, std::string(s.substr(i, j - i))});
            i = j;
        } else if (std::isalpha(c) || c == '_') {
            size_t j = i;
            while (j < s.size() && ident_char(j)) ++j;
            out.push_back({Token::Ident, std::string(s.substr(i, j - i))});
            i = j;
        } else {
            const std::string_view two = s.substr(i, 2);
            const bool pair =
                two == "<=" || two == ">=" || two == "!=" || two == "<>" || two == "==" || two == "||";
            out.push_back({Token::Op, std::string(s.substr(i, pair ? 2 : 1))});
            i += pair ? 2 : 1;
        }
    }
    return out;
}

namespace {

std::string column_part(const std::string& w) {
    const size_t dot = w.rfind('.');
    return dot == std::string::npos ? w : w.substr(dot + 1);
}

bool keyword(const Token& t, const char* k) {
    return t.kind == Token::Ident && lower(t.text) == k;
}

bool clause_end(const Token& t) {
    static const char* const kEnds[] = {"group", "order",  "limit",  "having",
                                        "union", "window", "except", "intersect"};
    if (t.kind == Token::Op && t.text == ";") return true;
    for (const char* k : kEnds)
        if (keyword(t, k)) return true;
    return false;
}

std::map<std::string, ColType> columns(const Layout& l) {
    std::map<std::string, ColType> cols = {{"_pid", ColType::Integer},
                                           {"_tid", ColType::Integer},
                                           {"_time", ColType::Integer},
                                           {"_cpu", ColType::Integer},
                                           {"_period", ColType::Integer}};
    for (const Column& c : l.columns) cols.emplace(c.name, c.type);
    return cols;
}

bool mentions(const std::vector<Token>& w, const std::string& table) {
    for (const Token& t : w)
        if (t.kind == Token::Ident && lower(t.text) == lower(table)) return true;
    return false;
}

}  // namespace

std::string index_column(const Layout& l, const std::string& index_attr,
                         const std::vector<std::string>& statements, std::string* warning) {
    const std::map<std::string, ColType> cols = columns(l);
    auto indexable = [&](const std::string& name) {
        auto it = cols.find(name);
        return it != cols.end() && (it->second == ColType::Integer || it->second == ColType::Text);
    };
    std::map<std::string, int> score;
    for (const std::string& st : statements) {
        const std::vector<Token> w = tokens(st);
        if (!mentions(w, l.table)) continue;
        // WHERE: every column named; GROUP BY / ORDER BY: a single-column clause only.
        std::string clause;
        std::vector<std::string> items;
        int commas = 0;
        auto close = [&] {
            if (clause == "where")
                for (const std::string& x : items) ++score[x];
            else if ((clause == "group" || clause == "order") && items.size() == 1 && commas == 0)
                ++score[items[0]];
            items.clear();
            commas = 0;
        };
        for (const Token& t : w) {
            const std::string k = t.kind == Token::Ident ? lower(t.text) : t.text;
            if (k == "where" || k == "group" || k == "order" || k == "limit" || k == "having" ||
                k == "union" || k == "from" || k == "select" || k == ";") {
                close();
                clause = k;
                continue;
            }
            if (k == ",") ++commas;
            if (t.kind == Token::Ident && indexable(column_part(t.text)))
                items.push_back(column_part(t.text));
        }
        close();
    }
    std::string best;
    int best_score = 0;
    for (const auto& [name, n] : score)
        if (n > best_score) best = name, best_score = n;
    if (!index_attr.empty()) {
        if (indexable(index_attr)) return index_attr;
        if (warning)
            *warning = "index field '" + index_attr + "' not " +
                       (cols.count(index_attr) ? "integer or string" : "found") + ", using '" + best + "'";
    }
    return best;
}

bool constrained(const Layout& l, const std::string& column, const std::vector<std::string>& statements) {
    for (const std::string& st : statements) {
        const std::vector<Token> w = tokens(st);
        if (!mentions(w, l.table)) continue;
        bool where = false;
        for (const Token& t : w) {
            if (keyword(t, "where"))
                where = true;
            else if (clause_end(t) || keyword(t, "select") || keyword(t, "from"))
                where = false;
            else if (where && t.kind == Token::Ident && column_part(t.text) == column)
                return true;
        }
    }
    return false;
}

namespace {

// `column OP literal` at w[i..i+2] as a kernel filter term, or nothing.
std::optional<std::string> term(const std::vector<Token>& w, size_t i,
                                const std::map<std::string, ColType>& cols, const std::string& alias) {
    if (i + 2 >= w.size() || w[i].kind != Token::Ident) return std::nullopt;
    std::string name = w[i].text;
    if (const size_t dot = name.find('.'); dot != std::string::npos) {
        if (lower(name.substr(0, dot)) != lower(alias)) return std::nullopt;
        name = name.substr(dot + 1);
    }
    auto col = cols.find(name);
    if (col == cols.end() || name == "_pid" || name == "_tid" || name == "_time" || name == "_period")
        return std::nullopt;
    const std::string field = name == "_cpu" ? "CPU" : name;
    std::string op = w[i + 1].kind == Token::Op ? w[i + 1].text : lower(w[i + 1].text);
    // A plain literal: no sign (an unsigned field compares -1 otherwise than SQLite does), at
    // most 9 digits (within every field's range).
    const Token& lit = w[i + 2];
    if (col->second == ColType::Integer) {
        static const std::map<std::string, std::string> kOps = {{"=", "=="},  {"==", "=="}, {"!=", "!="},
                                                                {"<>", "!="}, {"<", "<"},   {">", ">"},
                                                                {"<=", "<="}, {">=", ">="}};
        auto o = kOps.find(op);
        if (o == kOps.end() || lit.kind != Token::Number || lit.text.size() > 9) return std::nullopt;
        for (char c : lit.text)
            if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;  // no floats, no hex
        return field + o->second + lit.text;
    }
    if (col->second == ColType::Text && lit.kind == Token::String) {
        // Printable text only, no quote or backslash: the kernel's string literal has no escapes.
        for (char c : lit.text)
            if (c == '"' || c == '\\' || !std::isprint(static_cast<unsigned char>(c))) return std::nullopt;
        if (op == "=" || op == "==") return field + "==\"" + lit.text + "\"";
        if (op == "!=" || op == "<>") return field + "!=\"" + lit.text + "\"";
        if (op == "glob") return field + "~\"" + lit.text + "\"";
    }
    return std::nullopt;
}

// The && of one statement's terms on `table`; nullopt when it reads the table otherwise, ""
// when it does not read it.
std::optional<std::string> statement_filter(const std::vector<Token>& w, const std::string& table,
                                            const std::map<std::string, ColType>& cols) {
    if (!mentions(w, table)) return "";
    size_t i = 0;
    while (i < w.size() && !keyword(w[i], "from")) ++i;
    if (i + 1 >= w.size() || lower(w[i + 1].text) != lower(table) || w[i + 1].kind != Token::Ident)
        return std::nullopt;
    i += 2;
    std::string alias = table;
    if (i < w.size() && keyword(w[i], "as")) ++i;
    if (i < w.size() && w[i].kind == Token::Ident && !keyword(w[i], "where") && !clause_end(w[i]))
        alias = w[i++].text;
    if (i >= w.size() || !keyword(w[i], "where")) return std::nullopt;  // reads every row
    std::string f;
    for (++i;;) {
        std::optional<std::string> t = term(w, i, cols, alias);
        if (!t) return std::nullopt;
        f += (f.empty() ? "" : "&&") + *t;
        i += 3;
        if (i >= w.size() || clause_end(w[i])) break;
        if (!keyword(w[i], "and")) return std::nullopt;
        ++i;
    }
    // Nothing after the statement may read the table again (a second SELECT of a compound).
    for (; i < w.size(); ++i)
        if (keyword(w[i], "union") || keyword(w[i], "except") || keyword(w[i], "intersect") ||
            keyword(w[i], "from") || (w[i].kind == Token::Op && w[i].text == "("))
            return std::nullopt;
    return f;
}

}  // namespace

std::string pushdown_filter(const Layout& l, const std::vector<std::string>& statements) {
    const std::map<std::string, ColType> cols = columns(l);
    std::vector<std::string> parts;
    for (const std::string& st : statements) {
        const std::vector<Token> w = tokens(st);
        // Subqueries, joins and functions before FROM are fine; a '(' after it is not.
        std::optional<std::string> f = statement_filter(w, l.table, cols);
        if (!f) return "";
        if (!f->empty()) parts.push_back(*f);
    }
    if (parts.size() == 1) return parts[0];
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "(" : "||(") + p + ")";
    return out;
}

}  // namespace perfprof::sql
