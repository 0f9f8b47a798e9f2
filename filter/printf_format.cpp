// Checked printf-style formats (see printf_format.h).
#include "filter/printf_format.h"

#include <cctype>
#include <climits>
#include <cstring>

namespace perfprof::filter::printf_format {

namespace {

// Format text as a message shows it: one line whatever the user typed.
std::string shown(std::string_view s) {
    std::string r = "'";
    for (unsigned char c : s) {
        if (c == '\n') {
            r += "\\n";
        } else if (c == '\t') {
            r += "\\t";
        } else if (c < 0x20 || c >= 0x7f) {
            static const char hex[] = "0123456789abcdef";
            r += "\\x";
            r += hex[c >> 4];
            r += hex[c & 15];
        } else {
            r += char(c);
        }
    }
    return r + "'";
}

const char* need_name(Arg a) {
    switch (a) {
        case Arg::Integer:
            return "an integer";
        case Arg::String:
            return "a string (char *)";
        case Arg::Pointer:
            break;
    }
    return "a pointer";
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Digits at f[i..], advanced past; false when the number passes kMaxWidth.
bool number(std::string_view f, size_t& i, std::string& digits) {
    long v = 0;
    while (i < f.size() && is_digit(f[i])) {
        if (v <= kMaxWidth) v = v * 10 + (f[i] - '0');
        digits += f[i++];
    }
    return v <= kMaxWidth;
}

// The bits of an integer conversion's argument by its length modifier; 0: not supported.
uint8_t integer_bits(const std::string& len) {
    if (len == "hh") return 8;
    if (len == "h") return 16;
    if (len.empty()) return 32;
    // LP64: long, long long, size_t, intmax_t and ptrdiff_t are 64 bits.
    if (len == "l" || len == "ll" || len == "z" || len == "j" || len == "t") return 64;
    return 0;
}

}  // namespace

std::string parse(std::string_view f, Format& out, size_t* at) {
    out = Format{};
    std::string lit;
    auto flush = [&] {
        if (lit.empty()) return;
        out.pieces.emplace_back().text = std::move(lit);
        lit.clear();
    };
    size_t i = 0;
    while (i < f.size()) {
        if (f[i] != '%') {
            lit += f[i++];
            continue;
        }
        const size_t start = i++;
        if (i < f.size() && f[i] == '%') {
            lit += '%';
            ++i;
            continue;
        }
        // The conversion as written so far (up to and including f[i] when there is one).
        auto conv_text = [&] { return shown(f.substr(start, i < f.size() ? i + 1 - start : i - start)); };
        auto fail = [&](const std::string& msg) {
            if (at) *at = start;
            return msg;
        };
        std::string flags, width, prec;
        bool has_prec = false;
        Piece p;
        while (i < f.size() && std::strchr("-+ #0'", f[i]) && f[i]) {
            if (flags.find(f[i]) == std::string::npos) flags += f[i];
            ++i;
        }
        if (i < f.size() && f[i] == '*') {
            p.star_width = true;
            ++i;
        }
        if (!number(f, i, width))
            return fail("width in " + conv_text() + " is over " + std::to_string(kMaxWidth));
        if (i < f.size() && f[i] == '$')
            return fail("positional arguments (" + conv_text() + ") are not supported");
        if (p.star_width && !width.empty()) return fail("malformed width in " + conv_text());
        if (i < f.size() && f[i] == '.') {
            has_prec = true;
            ++i;
            if (i < f.size() && f[i] == '*') {
                p.star_prec = true;
                ++i;
                if (i < f.size() && (is_digit(f[i]) || f[i] == '$'))
                    return fail("positional arguments (" + conv_text() + ") are not supported");
            } else if (!number(f, i, prec)) {
                return fail("precision in " + conv_text() + " is over " + std::to_string(kMaxWidth));
            }
        }
        std::string len;
        while (i < f.size() && std::strchr("hlzjtLq", f[i]) && f[i] && len.size() < 3) len += f[i++];
        if (i >= f.size()) {
            if (i == start + 1)
                return fail("the format ends with a lone '%' (write '%%' for a percent sign)");
            return fail("the format ends inside the conversion " + conv_text());
        }
        const char c = f[i];
        p.text = std::string(f.substr(start, i + 1 - start));
        // (strchr finds a NUL in any set: it is ruled out first.)
        if (c == '\0') return fail("unknown conversion " + conv_text());
        const bool integer = std::strchr("diouxX", c) != nullptr;
        if (c == 'n') return fail(conv_text() + " writes to memory: not supported");
        if (std::strchr("fFeEgGaA", c))
            return fail(conv_text() + " needs a floating-point value: expressions have only integers");
        if (c == 'C' || c == 'S' || ((c == 'c' || c == 's') && len == "l"))
            return fail(conv_text() + ": wide characters are not supported");
        if (c == 'm') return fail(conv_text() + " (errno's text) is not supported");
        // glibc prints a conversion ending in punctuation as written, taking no argument: upstream's
        // "pid%10=%d" shows "pid%10=" then the value. A letter, or '%' after flags, stays an error.
        if (std::isprint((unsigned char)c) && std::ispunct((unsigned char)c) && c != '%' && !p.star_width &&
            !p.star_prec) {
            lit += p.text;
            ++i;
            continue;
        }
        if (!integer && c != 'c' && c != 's' && c != 'p') return fail("unknown conversion " + conv_text());
        if (integer) {
            p.bits = integer_bits(len);
            if (!p.bits) return fail("length modifier '" + len + "' in " + conv_text() + " is not supported");
        } else if (!len.empty()) {
            return fail("length modifier '" + len + "' does not apply to " + conv_text());
        }
        // What C leaves undefined is refused rather than left to one C library's reading.
        auto refuse_flag = [&](char flag, const char* convs) {
            return flags.find(flag) != std::string::npos && std::strchr(convs, c);
        };
        for (auto [flag, convs] :
             {std::pair{'#', "diucsp"}, std::pair{'0', "csp"}, std::pair{'\'', "oxXcsp"}})
            if (refuse_flag(flag, convs))
                return fail(std::string("flag '") + flag + "' is undefined for " + conv_text());
        if (has_prec && (c == 'c' || c == 'p')) return fail("a precision is undefined for " + conv_text());
        ++i;

        p.conv = c;
        p.spec = "%" + flags + (p.star_width ? "*" : width);
        if (has_prec) p.spec += "." + (p.star_prec ? std::string("*") : prec);
        if (integer) p.spec += "ll";  // format() passes (unsigned) long long, already truncated
        p.spec += c;
        flush();
        const size_t piece = out.pieces.size();
        if (p.star_width) out.needs.push_back({Arg::Integer, piece, "width"});
        if (p.star_prec) out.needs.push_back({Arg::Integer, piece, "precision"});
        out.needs.push_back({c == 's'   ? Arg::String
                             : c == 'p' ? Arg::Pointer
                                        : Arg::Integer,
                             piece, nullptr});
        out.pieces.push_back(std::move(p));
    }
    flush();
    return "";
}

std::string check(const Format& fmt, std::span<const Arg> args, size_t* arg) {
    const size_t want = fmt.needs.size();
    if (args.size() != want) {
        if (arg) *arg = std::min(args.size(), want);
        return "the format reads " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") + ", " +
               std::to_string(args.size()) + " given";
    }
    for (size_t k = 0; k < want; ++k) {
        const Need& need = fmt.needs[k];
        // %p prints any value; the others read exactly their class.
        if (need.arg == Arg::Pointer || need.arg == args[k]) continue;
        if (arg) *arg = k;
        std::string msg = shown(fmt.pieces[need.piece].text);
        if (need.role) msg += std::string("'s '*' ") + need.role;
        msg += std::string(" needs ") + need_name(need.arg) + ", argument " + std::to_string(k + 1) + " is " +
               need_name(args[k]);
        if (need.arg == Arg::Integer && !need.role) msg += " (cast it, e.g. (long)x, or print it with %p)";
        return msg;
    }
    return "";
}

namespace {

int64_t sign_extend(int64_t v, int bits) {
    if (bits >= 64) return v;
    const uint64_t mask = (uint64_t(1) << bits) - 1, sign = uint64_t(1) << (bits - 1);
    uint64_t u = uint64_t(v) & mask;
    if (u & sign) u |= ~mask;
    return int64_t(u);
}

uint64_t zero_extend(int64_t v, int bits) {
    return bits >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << bits) - 1);
}

int clamp_width(int64_t v) {
    return int(v < -kMaxWidth ? -kMaxWidth : v > kMaxWidth ? kMaxWidth : v);
}

// Calls emit(spec, args…) once per piece, each with the C types its one conversion reads, and
// sums what emit returns (-1 as soon as one fails).
template <class Emit>
int emit_all(const Format& fmt, std::span<const int64_t> args, Emit&& emit) {
    long total = 0;
    size_t k = 0;
    auto next = [&]() -> int64_t { return k < args.size() ? args[k++] : 0; };
    for (const Piece& p : fmt.pieces) {
        int n;
        if (!p.conv) {
            n = emit("%s", p.text.c_str());
        } else {
            // A negative '*' width means '-' and a negative '*' precision means none, as in C.
            const int w = p.star_width ? clamp_width(next()) : 0;
            const int pr = p.star_prec ? clamp_width(next()) : 0;
            auto with_stars = [&](auto value) {
                if (p.star_width && p.star_prec) return emit(p.spec.c_str(), w, pr, value);
                if (p.star_width) return emit(p.spec.c_str(), w, value);
                if (p.star_prec) return emit(p.spec.c_str(), pr, value);
                return emit(p.spec.c_str(), value);
            };
            const int64_t v = next();
            switch (p.conv) {
                case 'd':
                case 'i':
                    n = with_stars(static_cast<long long>(sign_extend(v, p.bits)));
                    break;
                case 'c':
                    n = with_stars(static_cast<int>(v));
                    break;
                case 's':
                    n = with_stars(v ? reinterpret_cast<const char*>(uintptr_t(v)) : "");
                    break;
                case 'p':
                    n = with_stars(reinterpret_cast<void*>(uintptr_t(v)));
                    break;
                default:  // o u x X
                    n = with_stars(static_cast<unsigned long long>(zero_extend(v, p.bits)));
                    break;
            }
        }
        if (n < 0) return -1;
        total += n;
        if (total > INT_MAX) total = INT_MAX;
    }
    return int(total);
}

}  // namespace

// The two calls with a format that is not a literal: a spec parse() rebuilt from the pieces it
// accepted, one conversion, its argument of the C type that conversion reads.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
int format(const Format& fmt, std::span<const int64_t> args, FILE* out) {
    return emit_all(fmt, args, [out](const char* spec, auto... a) { return std::fprintf(out, spec, a...); });
}

int format(const Format& fmt, std::span<const int64_t> args, char* buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    return emit_all(fmt, args, [&](const char* spec, auto... a) {
        const size_t room = len < cap ? cap - len : 0;
        const int n = std::snprintf(room ? buf + len : nullptr, room, spec, a...);
        if (n > 0) len += size_t(n);
        return n;
    });
}

#pragma GCC diagnostic pop

}  // namespace perfprof::filter::printf_format
