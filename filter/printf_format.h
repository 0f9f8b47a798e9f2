// printf-style formats of the expression language (printf(), system(); SPEC §2.7.6), checked
// when the expression is compiled and formatted one conversion at a time when it runs.
//
// Why not hand the format to the C library: every argument of the language is a 64-bit value,
// and the format is text the user typed. `%s` on an integer, `%f` (read from a floating-point
// register nobody set), `%n` or one conversion too many reach memory the program never meant
// to touch. Here parse() accepts only conversions whose argument the language can supply,
// check() matches each against its argument's class and counts them, and format() hands the C
// library one conversion at a time, rebuilt from the parsed pieces, with an argument of exactly
// the C type that conversion reads: no varargs mismatch is possible whatever the format said.
//
// Accepted: `%%`; flags `-+ #0'`; a width and a precision (digits up to kMaxWidth, or `*` read
// from an integer argument and clamped to ±kMaxWidth); conversions d i o u x X with the length
// modifiers hh h l ll z j t (the value is truncated to the width the modifier names, as C does);
// c (integer, no modifier); s (a `char *`, no modifier); p (any value, no modifier).
// Refused: %n, floating-point conversions (the language has no doubles), %m, wide characters
// (%lc %ls %C %S), L and q, positional arguments (%1$d), a `%` that ends the format, flags C
// leaves undefined for the conversion (`#` on d/i/u/c/s/p, `0` on c/s/p, `'` on o/x/X/c/s/p) and
// a precision on c or p.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::filter::printf_format {

// Widths and precisions beyond this are refused (literal) or clamped (from `*`): system()'s
// command line is 4095 characters, and a huge field only makes a huge line.
constexpr int kMaxWidth = 4096;

// What the language's value is, as a conversion sees it.
enum class Arg : uint8_t {
    Integer,  // char/short/int/long, signed or not
    String,   // char *
    Pointer,  // any other pointer (int *, char **, …)
};

// One piece of a parsed format: literal text, or one conversion.
struct Piece {
    std::string text;   // literal text (`%%` already made `%`), or the conversion as written
    char conv = 0;      // 0 for literal text; else one of d i o u x X c s p
    std::string spec;   // the C spec format() passes: flags, width (or `*`), precision, `ll` for
                        // integers, conv; e.g. "%-*.3llx"
    uint8_t bits = 32;  // d i o u x X: the width the length modifier names (8, 16, 32, 64)
    bool star_width = false, star_prec = false;  // arguments read before the converted one
};

// What one argument must be, and who reads it.
struct Need {
    Arg arg;
    size_t piece;      // index of the conversion in Format::pieces
    const char* role;  // "width" or "precision" for a '*', null for the converted value
};

struct Format {
    std::vector<Piece> pieces;
    std::vector<Need> needs;  // one per argument, in order ('*' ones included)
};

// Parses fmt. On error returns a one-line message naming the conversion ("'%n' writes to
// memory: not supported") and sets *at to its offset in fmt; on success returns "".
std::string parse(std::string_view fmt, Format& out, size_t* at = nullptr);

// Matches the arguments' classes against fmt's needs: their count, then each one. On error
// returns a one-line message and sets *arg to the 0-based argument at fault (args.size() when
// arguments are missing); on success returns "".
std::string check(const Format& fmt, std::span<const Arg> args, size_t* arg = nullptr);

// Formats fmt with args (as many as fmt.needs; a `char *` argument is its address, 0 = "").
// Into out: returns the characters written, or -1 on a write error. Into buf: writes at most
// cap bytes including the NUL and returns the length the whole text has, as snprintf does.
int format(const Format& fmt, std::span<const int64_t> args, FILE* out);
int format(const Format& fmt, std::span<const int64_t> args, char* buf, size_t cap);

}  // namespace perfprof::filter::printf_format
