// Reading SPEC §8.1's .lat files: one `{time} {latency}` line per point, as multi-trace writes
// them and `perf-prof heatmap` draws them (flamegraph/heatmap.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::flamegraph {

struct LatPoint {
    uint64_t time = 0;     // in the file's time unit (multi-trace: event-clock ns)
    uint64_t latency = 0;  // in the file's latency unit (ns)
};

// The result of reading a .lat text: the good lines' points and the first bad line.
struct LatFile {
    std::vector<LatPoint> points;
    uint64_t lines = 0;           // lines seen, blank ones included
    uint64_t bad_lines = 0;       // lines that are neither blank nor `{time} {latency}`
    uint64_t first_bad_line = 0;  // 1-based; 0 = none
    std::string first_problem;    // what is wrong with that line, printable ASCII
};

// Reads .lat text in chunks of any size, so a file's text is never held whole and a line is never
// kept longer than a good line can be (a 1 GB line costs nothing but the time to skip it).
// A good line is two unsigned decimal integers separated by spaces or tabs; leading and
// trailing spaces, tabs and a CR are allowed; whitespace-only lines are skipped.
class LatParser {
public:
    void feed(std::string_view chunk);
    // Takes the last line (one without a newline) and hands the result over.
    LatFile finish();

private:
    void line(std::string_view text);
    void bad(std::string problem);
    void overlong();  // the line passed kMaxLine: counted, never kept

    LatFile file_;
    std::string partial_;    // the current line's start, when a chunk ended inside it
    bool too_long_ = false;  // the current line passed kMaxLine: skipped up to its newline
};

LatFile parse_lat(std::string_view text);
// The .lat file at `path` ("-": stdin), read in chunks. Throws Error naming the path when it
// cannot be opened or read.
LatFile read_lat_file(const std::string& path);

}  // namespace perfprof::flamegraph
