#include "core/text.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace perfprof::core {

std::string read_file_or_empty(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string out = read_fd(fd);
    ::close(fd);
    return out;
}

std::string read_fd(int fd) {
    std::string out;
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

bool write_all(int fd, std::string_view data) {
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

bool parse_hex(std::string_view s, uint64_t& v) {
    if (s.empty() || s.size() > 16) return false;
    v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = (v << 4) | static_cast<uint64_t>(d);
    }
    return true;
}

bool parse_dec(std::string_view s, uint64_t& v) {
    if (s.empty() || s.size() > 20) return false;
    v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v))
            return false;
    }
    return true;
}

std::string_view next_line(std::string_view text, size_t& pos) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(pos, e - pos);
    pos = e + 1;
    return line;
}

std::string_view next_field(std::string_view line, size_t& pos) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t b = pos;
    while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') ++pos;
    return line.substr(b, pos - b);
}

std::string_view status_value(std::string_view status_text, std::string_view field) {
    for (size_t pos = 0; pos < status_text.size();) {
        std::string_view line = next_line(status_text, pos);
        if (line.substr(0, field.size()) != field) continue;
        line.remove_prefix(field.size());
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        return line;
    }
    return {};
}

std::string status_field(const std::string& status_path, std::string_view field) {
    const std::string text = read_file_or_empty(status_path);
    return std::string(status_value(text, field));
}

size_t utf8_length(std::string_view s) {
    if (s.empty()) return 0;
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto cont = [&](size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
        if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogates
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
        if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
        return 4;
    }
    return 0;
}

bool is_shared_object(std::string_view path) {
    const size_t slash = path.rfind('/');
    const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const size_t so = base.find(".so");
    return so != std::string_view::npos && (so + 3 == base.size() || base[so + 3] == '.');
}

namespace {
// Set once by main before anything else runs, read-only afterwards (the SVG subtitles): the
// process's argv as text, not state (ARCHITECTURE.md, "Process-wide state").
std::string& command_line_text() {
    static std::string text = "perf-prof";
    return text;
}
}  // namespace

void set_command_line(int argc, char** argv) {
    std::string& text = command_line_text();
    text = "perf-prof";
    for (int i = 1; i < argc; i++) {
        const std::string_view w = argv[i];
        text += ' ';
        const bool plain = !w.empty() && w.find_first_not_of(
                                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789-_=+,.:/@%^") == std::string_view::npos;
        if (plain) {
            text += w;
            continue;
        }
        text += '\'';
        for (char c : w) {
            if (c == '\'')
                text += "'\\''";
            else
                text += c;
        }
        text += '\'';
    }
}

const std::string& command_line() {
    return command_line_text();
}

std::string online_cpus_text() {
    std::string text = read_file_or_empty("/sys/devices/system/cpu/online");
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

namespace {

// Levenshtein distance, one row at a time.
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
    const size_t limit = word.empty() ? 0 : std::min<size_t>(2, (word.size() - 1) / 2);
    const std::string* best = nullptr;
    size_t best_distance = limit + 1;
    for (const std::string& c : candidates) {
        // The distance is at least the difference in length.
        if ((c.size() > word.size() ? c.size() - word.size() : word.size() - c.size()) >= best_distance)
            continue;
        const size_t d = edit_distance(word, c);
        if (d < best_distance && d > 0) {
            best = &c;
            best_distance = d;
        }
    }
    return best ? *best : std::string();
}

}  // namespace perfprof::core
