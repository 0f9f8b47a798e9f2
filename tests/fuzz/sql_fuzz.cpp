// libFuzzer target for lib/sql's parsers (SPEC-PROFILERS §P2): the printf conversions of a
// print format, print_info over libtraceevent's parse of a print format (the __print_symbolic
// and ?: walk), and the SQL tokenizer with the index choice and the kernel-filter push-down.
//
// Input: 1 mode byte, then text. Mode 0: conversions(text); 1: the bytes build a tree of print
// arguments (ops, ?:, casts, fields, atoms, __print_symbolic tables with byte-chosen values and
// names; libtraceevent's own parser is not under test: it crashes on some malformed formats)
// that print_info walks; 2: the text is ';'-separated statements over an event with
// sched_wakeup's fields and a u8 array, planned. Properties: every
// conversion is non-empty and there are no more of them than '%' and '*' characters; a
// pushed-down filter is empty or names only the table's columns (and CPU) in balanced
// parentheses, without a newline; the index column is one of the table's.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "sql/planner.h"
#include "sql/print_format.h"
#include "sql/schema.h"

extern "C" {
#include <event-parse.h>
}

using namespace perfprof::sql;

namespace {

constexpr const char* kHead =
    "name: ev\nID: 77\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:u8 mac[6];\toffset:32;\tsize:6;\tsigned:0;\n"
    "\nprint fmt: ";

// A print-argument tree from the input bytes; the nodes and their strings live in `pool`.
struct Pool {
    std::vector<std::unique_ptr<tep_print_arg>> args;
    std::vector<std::unique_ptr<tep_print_flag_sym>> syms;
    std::vector<std::string> strings;
    char* str(const uint8_t*& p, size_t& n) {
        static const char* const kWords[] = {"isa", "pid", "prio", "comm",   "mac", "==",       "&", "?",
                                             ":",   "1",   "2",    "0xffff", "-1",  "0x40 + 1", "",  "x"};
        std::string s = kWords[fuzz::take(p, n, 1) % 16];
        strings.reserve(4096);  // stable c_str() pointers: no reallocation below 4096 strings
        if (strings.size() >= 4096) return const_cast<char*>("");
        strings.push_back(std::move(s));
        return strings.back().data();
    }
};

tep_print_arg* build(Pool& pool, const uint8_t*& p, size_t& n, int depth) {
    if (!n || depth > 12) return nullptr;
    auto a = std::make_unique<tep_print_arg>();
    const unsigned kind = unsigned(fuzz::take(p, n, 1)) % 6;
    switch (kind) {
        case 0:
            a->type = TEP_PRINT_FIELD;
            a->field.name = pool.str(p, n);
            break;
        case 1:
            a->type = TEP_PRINT_ATOM;
            a->atom.atom = pool.str(p, n);
            break;
        case 2:
            a->type = TEP_PRINT_OP;
            a->op.op = pool.str(p, n);
            a->op.left = build(pool, p, n, depth + 1);
            a->op.right = build(pool, p, n, depth + 1);
            break;
        case 3:
            a->type = TEP_PRINT_TYPE;
            a->typecast.type = pool.str(p, n);
            a->typecast.item = build(pool, p, n, depth + 1);
            break;
        case 4: {
            a->type = TEP_PRINT_SYMBOL;
            a->symbol.field = build(pool, p, n, depth + 1);
            const unsigned count = unsigned(fuzz::take(p, n, 1)) % 5;
            tep_print_flag_sym** tail = &a->symbol.symbols;
            for (unsigned i = 0; i < count; ++i) {
                auto s = std::make_unique<tep_print_flag_sym>();
                s->value = pool.str(p, n);
                s->str = pool.str(p, n);
                *tail = s.get();
                tail = &s->next;
                pool.syms.push_back(std::move(s));
            }
            break;
        }
        default:
            a->type = TEP_PRINT_FLAGS;
            a->flags.field = build(pool, p, n, depth + 1);
            break;
    }
    pool.args.push_back(std::move(a));
    return pool.args.back().get();
}

void check_print_args(const uint8_t* p, size_t n) {
    Pool pool;
    tep_event ev{};
    tep_print_arg** tail = &ev.print_fmt.args;
    for (int i = 0; i < 8 && n; ++i) {
        tep_print_arg* a = build(pool, p, n, 0);
        if (!a) break;
        *tail = a;
        tail = &a->next;
    }
    std::string fmt = "%s %d %pI4 %*d %s";
    ev.print_fmt.format = fmt.data();
    const PrintInfo info = print_info(ev, int(n % 3));
    for (const Symbolic& s : info.symbolic)
        if (s.field.empty() && s.names.size() > 1000)
            fuzz::broken("sql_fuzz", "a symbolic table out of nowhere");
}

tep_event* event_with(tep_handle* tep, std::string_view print) {
    std::string text = kHead;
    text.append(print);
    text += '\n';
    if (tep_parse_event(tep, text.data(), text.size(), "fz") != TEP_ERRNO__SUCCESS) return nullptr;
    return tep_find_event_by_name(tep, "fz", "ev");
}

void check_conversions(std::string_view text) {
    size_t marks = 0;
    for (char c : text) marks += c == '%' || c == '*';
    const std::vector<std::string> c = conversions(text);
    if (c.size() > marks) fuzz::broken("sql_fuzz", "more conversions than '%' and '*'");
    for (const std::string& s : c)
        if (s.empty()) fuzz::broken("sql_fuzz", "an empty conversion");
}

void check_plan(const Layout& l, std::string_view text) {
    std::vector<std::string> st;
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i)
        if (i == text.size() || text[i] == ';') {
            st.emplace_back(text.substr(start, i - start));
            start = i + 1;
        }
    const std::string f = pushdown_filter(l, st);
    int depth = 0;
    bool quoted = false;
    for (char c : f) {
        if (c == '"') quoted = !quoted;
        if (!quoted) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        if (depth < 0 || c == '\n' || c == '\\') fuzz::broken("sql_fuzz", "a malformed filter");
    }
    if (depth || quoted) fuzz::broken("sql_fuzz", "unbalanced filter");
    std::string warning;
    const std::string idx = index_column(l, "", st, &warning);
    bool known = idx.empty() || idx[0] == '_';
    for (const Column& c : l.columns) known |= c.name == idx;
    if (!known) fuzz::broken("sql_fuzz", "an index column the table does not have");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const uint8_t* p = data;
    const unsigned mode = unsigned(fuzz::take(p, size, 1)) % 3;
    const std::string_view text(reinterpret_cast<const char*>(p), size);
    if (mode == 0) {
        check_conversions(text);
        return 0;
    }
    if (mode == 1) {
        check_print_args(p, size);
        return 0;
    }
    // One parsed event for every run: its format is fixed.
    static tep_handle* tep = tep_alloc();
    static tep_event* ev = event_with(tep, "\"%s %d %pM\", REC->comm, REC->pid, REC->mac");
    static const Layout l = layout_of(*ev, print_info(*ev, 1), "ev");
    if (l.columns.size() != 7) fuzz::broken("sql_fuzz", "a column lost");
    check_plan(l, text);
    return 0;
}
