// The .lat reader (flamegraph/lat_file.h).
#include "flamegraph/lat_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "core/fd.h"
#include "perf-prof/error.h"

namespace perfprof::flamegraph {

namespace {

// Two 20-digit numbers with generous whitespace; anything longer cannot be a good line.
constexpr size_t kMaxLine = 128;

bool blank(char c) {
    return c == ' ' || c == '\t';
}

// A field as it may appear in a message: printable ASCII, at most 24 characters.
std::string excerpt(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 24)) out += c >= 0x20 && c < 0x7f ? c : '?';
    if (s.size() > 24) out += "...";
    return out;
}

bool parse_decimal(std::string_view s, uint64_t& v, std::string& problem) {
    v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            problem = "'" + excerpt(s) + "' is not an unsigned decimal integer";
            return false;
        }
        if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) {
            problem = "'" + excerpt(s) + "' is too large (above 2^64-1)";
            return false;
        }
    }
    return true;
}

}  // namespace

void LatParser::line(std::string_view text) {
    ++file_.lines;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    std::array<std::string_view, 2> field;
    size_t n = 0, i = 0;
    while (true) {
        while (i < text.size() && blank(text[i])) i++;
        if (i == text.size()) break;
        size_t j = i;
        while (j < text.size() && !blank(text[j])) j++;
        if (n < field.size()) field[n] = text.substr(i, j - i);
        n++;
        i = j;
    }
    if (n == 0) return;
    std::string problem;
    LatPoint p;
    if (n != 2)
        problem = "expected '{time} {latency}', found " + std::to_string(n) + (n == 1 ? " field" : " fields");
    else if (parse_decimal(field[0], p.time, problem) && parse_decimal(field[1], p.latency, problem)) {
        file_.points.push_back(p);
        return;
    }
    bad(std::move(problem));
}

void LatParser::bad(std::string problem) {
    if (file_.bad_lines++ == 0) {
        file_.first_bad_line = file_.lines;
        file_.first_problem = std::move(problem);
    }
}

void LatParser::overlong() {
    ++file_.lines;
    bad("line longer than " + std::to_string(kMaxLine) + " characters");
}

void LatParser::feed(std::string_view chunk) {
    while (!chunk.empty()) {
        const size_t nl = chunk.find('\n');
        const std::string_view piece = chunk.substr(0, nl);
        if (!too_long_ && partial_.size() + piece.size() > kMaxLine) {
            too_long_ = true;
            partial_.clear();
        }
        if (nl == std::string_view::npos) {
            if (!too_long_) partial_.append(piece);
            return;
        }
        if (too_long_) {
            overlong();
            too_long_ = false;
        } else if (partial_.empty()) {
            line(piece);
        } else {
            partial_.append(piece);
            line(partial_);
            partial_.clear();
        }
        chunk.remove_prefix(nl + 1);
    }
}

LatFile LatParser::finish() {
    if (too_long_)
        overlong();
    else if (!partial_.empty())
        line(partial_);
    partial_.clear();
    too_long_ = false;
    return std::move(file_);
}

LatFile parse_lat(std::string_view text) {
    LatParser p;
    p.feed(text);
    return p.finish();
}

LatFile read_lat_file(const std::string& path) {
    core::Fd owned;
    int fd = STDIN_FILENO;
    if (path != "-") {
        owned = core::Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!owned) throw Error::sys(errno, "cannot open '" + path + "'");
        fd = owned.get();
    }
    LatParser parser;
    std::vector<char> buf(1 << 20);
    while (true) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error::sys(errno, "cannot read '" + path + "'");
        if (n == 0) break;
        parser.feed(std::string_view(buf.data(), size_t(n)));
    }
    return parser.finish();
}

}  // namespace perfprof::flamegraph
