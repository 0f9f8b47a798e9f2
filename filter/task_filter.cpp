#include "filter/task_filter.h"

#include "perf-prof/error.h"

namespace perfprof::filter {

namespace {

// TASK_COMM_LEN - 1: a longer pattern can never match a kernel task name.
constexpr size_t kMaxComm = 15;

Error bad(std::string_view what, const std::string& why) {
    return Error::usage("invalid --filter pattern '" + std::string(what) + "': " + why);
}

// The kernel matches a glob that only starts with '*' ("*self") by comparing the end of the
// whole fixed-size field (16 bytes for comm), not of the string in it, so it never matches.
// A one-character class after the stars sends the pattern down the full glob matcher instead.
std::string kernel_glob(std::string_view item) {
    size_t lit = item.find_first_not_of('*');
    if (lit == 0 || lit == std::string_view::npos) return std::string(item);
    if (item.find_first_of("*?[", lit) != std::string_view::npos) return std::string(item);
    std::string g(item.substr(0, lit));
    g += '[';
    g += item[lit];
    g += ']';
    g += item.substr(lit + 1);
    return g;
}

}  // namespace

std::string comm_filter(std::string_view patterns, std::string_view field) {
    std::string out;
    size_t start = 0;
    for (;;) {
        size_t comma = patterns.find(',', start);
        std::string_view item =
            patterns.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (item.empty()) throw bad(patterns, "empty name");
        if (item.size() > kMaxComm)
            throw bad(item, "longer than " + std::to_string(kMaxComm) + " characters");
        // The kernel's filter lexer has no escapes we could rely on inside a quoted string.
        if (item.find_first_of("\"\\") != std::string_view::npos)
            throw bad(item, "must not contain '\"' or '\\'");

        if (!out.empty()) out += "||";
        out += field;
        if (item.find_first_of("*?[") == std::string_view::npos) {
            out += "==\"";
            out += item;
        } else {
            out += "~\"";
            out += kernel_glob(item);
        }
        out += '"';

        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

std::string pid_filter(const std::vector<int>& tids, std::string_view field) {
    std::string out;
    for (size_t i = 0; i < tids.size();) {
        size_t j = i;
        while (j + 1 < tids.size() && tids[j + 1] == tids[j] + 1) ++j;
        if (!out.empty()) out += "||";
        auto test = [&](const char* op, int tid) {  // "field>=tid"
            out += field;
            out += op;
            out += std::to_string(tid);
        };
        if (j == i) {
            test("==", tids[i]);
        } else {
            out += '(';
            test(">=", tids[i]);
            out += "&&";
            test("<=", tids[j]);
            out += ')';
        }
        i = j + 1;
    }
    return out;
}

}  // namespace perfprof::filter
