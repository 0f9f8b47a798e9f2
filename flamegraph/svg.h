// The SVG text primitives both pictures share (flame graphs, heat maps): XML escaping,
// locale-independent numbers, the document frame and the embedded script. A picture goes to
// its file through a temporary one renamed into place, so it is either complete or absent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace perfprof::flamegraph {

// Appends `s` with & < > " ' escaped, and the characters XML 1.0 forbids (C0 controls other
// than tab, newline and CR) replaced by '?'. Bytes >= 0x80 pass through: names are UTF-8, and
// invalid UTF-8 is replaced too, so the document always parses.
void append_escaped(std::string& out, std::string_view s);

// Appends v with `decimals` digits after the point, '.' whatever the locale; "-0" never. The
// fraction's trailing zeros are dropped unless `keep_zeros` ("100.0%" for people to read).
void append_fixed(std::string& out, double v, int decimals = 2, bool keep_zeros = false);
// 1234567 → "1,234,567": counts that people read.
void append_grouped(std::string& out, uint64_t n);
void append_int(std::string& out, int64_t v);
void append_uint(std::string& out, uint64_t v);
// Appends ` name="v"`, v as append_fixed writes it with 2 decimals (coordinates, sizes).
void append_attr(std::string& out, std::string_view name, double v);

// "<?xml ...?><svg ...>" with the size in pixels, a viewBox, and the given CSS in a <style>.
void begin_document(std::string& out, int width, int height, std::string_view css);
// A <script> holding `js` in a CDATA section (the script must not contain "]]>").
void append_script(std::string& out, std::string_view js);
void end_document(std::string& out);

// Where a picture's text goes as it is made: its pieces in order.
using TextSink = std::function<void(std::string_view)>;

// Writes `text` to `path` ("" or "-" = stdout) through a temporary file renamed into place, so
// a reader never sees half a picture. Throws Error naming the path on failure.
void write_file(const std::string& path, std::string_view text);
// The same for the pieces `produce` hands its sink; if it throws, `path` is left as it was.
void write_file(const std::string& path, const std::function<void(const TextSink&)>& produce);

}  // namespace perfprof::flamegraph
