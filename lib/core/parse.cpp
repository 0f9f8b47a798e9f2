#include "core/parse.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_set>

#include "perf-prof/error.h"

namespace perfprof::core {

namespace {

// Kernel CPU numbers stay far below this; the cap keeps "0-4000000000" from allocating gigabytes.
// The kernel's largest NR_CPUS (x86_64 MAXSMP). A larger bound let "cpus=0-1048576" expand to
// a million entries per event (found by the event-spec fuzzer).
constexpr unsigned long long kMaxCpu = 8191;

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

// Plain decimal digits only: no sign, no spaces, no base prefix. nullopt on empty text,
// a non-digit, or a value above `limit`.
std::optional<unsigned long long> parse_decimal(std::string_view s, unsigned long long limit) {
    if (s.empty()) return std::nullopt;
    unsigned long long v = 0;
    for (char c : s) {
        if (!is_digit(c)) return std::nullopt;
        unsigned d = static_cast<unsigned>(c - '0');
        if (v > (limit - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

std::string quote(std::string_view s) {
    return "'" + std::string(s) + "'";
}

template <typename F>
void for_each_item(std::string_view text, F f) {
    size_t start = 0;
    for (;;) {
        size_t comma = text.find(',', start);
        f(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text) {
    return parse_id_list(text, "CPU", kMaxCpu);
}

std::vector<int> parse_id_list(std::string_view text, std::string_view noun, int max) {
    const std::string what(noun);
    auto fail = [&](const std::string& why) -> Error {
        return Error::usage("invalid " + what + " list " + quote(text) + ": " + why);
    };
    if (text.empty()) throw fail("empty");

    std::vector<int> cpus;
    for_each_item(text, [&](std::string_view item) {
        if (item.empty()) throw fail("empty item");
        size_t dash = item.find('-');
        std::string_view a = item.substr(0, dash);
        std::string_view b = dash == std::string_view::npos ? a : item.substr(dash + 1);
        if (!all_digits(a) || !all_digits(b)) throw fail("bad item " + quote(item));
        auto lo = parse_decimal(a, static_cast<unsigned long long>(max));
        auto hi = parse_decimal(b, static_cast<unsigned long long>(max));
        if (!lo || !hi) throw fail(what + " number above " + std::to_string(max) + " in " + quote(item));
        if (*hi < *lo) throw fail("range " + std::string(item) + " is reversed");
        for (auto c = *lo; c <= *hi; ++c) cpus.push_back(static_cast<int>(c));
    });
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
}

std::vector<int> parse_pid_list(std::string_view text) {
    auto fail = [&](const std::string& why) -> Error {
        return Error::usage("invalid PID list " + quote(text) + ": " + why);
    };
    if (text.empty()) throw fail("empty");

    std::vector<int> pids;
    std::unordered_set<int> seen;
    for_each_item(text, [&](std::string_view item) {
        if (item.empty()) throw fail("empty item");
        if (!all_digits(item)) throw fail("bad id " + quote(item));
        auto v = parse_decimal(item, INT_MAX);
        if (!v) throw fail("id " + std::string(item) + " is too large");
        if (*v == 0) throw fail("id 0 is not a process");
        int id = static_cast<int>(*v);
        if (seen.insert(id).second) pids.push_back(id);
    });
    return pids;
}

uint64_t parse_time_ns(std::string_view text) {
    auto fail = [&]() -> Error {
        return Error::usage("invalid time " + quote(text) + ": expected a number with unit s, ms, us or ns");
    };
    std::string_view s = text;
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    size_t ndigits = 0;
    while (ndigits < s.size() && is_digit(s[ndigits])) ++ndigits;
    if (ndigits == 0) throw fail();

    std::string_view unit = s.substr(ndigits);
    uint64_t mult;
    // Upstream accepts a capital first letter ("Ms", "Us", "Ns") but never a capital "S".
    if (unit.empty() || unit == "ns" || unit == "Ns")
        mult = 1;
    else if (unit == "us" || unit == "Us")
        mult = 1000;
    else if (unit == "ms" || unit == "Ms")
        mult = 1000 * 1000;
    else if (unit == "s")
        mult = 1000 * 1000 * 1000;
    else
        throw fail();

    uint64_t v = 0;
    for (char c : s.substr(0, ndigits)) {
        if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
            __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v))
            throw Error::usage("invalid time " + quote(text) + ": value too large");
    }
    if (__builtin_mul_overflow(v, mult, &v))
        throw Error::usage("invalid time " + quote(text) + ": value too large");
    return v;
}

long long parse_number(std::string_view text, std::string_view option) {
    auto fail = [&]() -> Error {
        return Error::usage("option `" + std::string(option) + "' expects a numerical value");
    };
    if (text.empty()) throw fail();
    // strtoll needs a terminator; comparing end against size() also catches an embedded NUL.
    std::string s(text);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (end == s.c_str() || end != s.c_str() + s.size() || errno == ERANGE) throw fail();
    return v;
}

uint64_t parse_count(std::string_view text, std::string_view option) {
    const long long n = parse_number(text, option);
    if (n < 0) throw Error::usage("option `" + std::string(option) + "' must not be negative");
    return static_cast<uint64_t>(n);
}

uint64_t parse_bounded(std::string_view text, std::string_view option, uint64_t max) {
    const uint64_t n = parse_count(text, option);
    if (n > max)
        throw Error::usage("option `" + std::string(option) + "' must be at most " + std::to_string(max));
    return n;
}

int parse_zero_or_one(std::optional<std::string_view> text, std::string_view option) {
    if (!text) return 1;
    if (*text == "0" || *text == "1") return (*text)[0] - '0';
    throw Error::usage("option `" + std::string(option) + "' takes 0 or 1, not '" + std::string(*text) + "'");
}

int parse_pages(std::string_view text) {
    long long n = parse_number(text, "mmap-pages");
    if (n <= 0 || n > INT_MAX || (n & (n - 1)) != 0)
        throw Error::usage("-m/--mmap-pages must be a power of two, got " + std::to_string(n));
    return static_cast<int>(n);
}

int parse_percent(std::string_view text, std::string_view option) {
    long long n = parse_number(text, option);
    if (n < 0 || n > 100)
        throw Error::usage("option `" + std::string(option) + "' expects a percentage from 0 to 100, got " +
                           std::to_string(n));
    return static_cast<int>(n);
}

}  // namespace perfprof::core
