// Latency heat-map files (SPEC §8.1): NAME.lat gets one "{time} {latency}" line per pair as it
// happens; at close, if anything was written, the picture NAME.svg is drawn from it beside it
// (flamegraph/heatmap.h), and stdout says where both are.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace perfprof::output {

class HeatmapFile {
public:
    // Creates NAME.lat (an existing one is renamed NAME.lat.old first). `title` heads the
    // picture. Throws Error when the file cannot be created.
    HeatmapFile(const std::string& name, std::string title);
    ~HeatmapFile();
    HeatmapFile(const HeatmapFile&) = delete;
    HeatmapFile& operator=(const HeatmapFile&) = delete;

    // One pair: its time and latency, both in ns.
    void write(uint64_t time, uint64_t latency);
    // Flushes NAME.lat and, if it holds a line, writes NAME.svg and prints where both are.
    // Idempotent; the destructor closes without the picture if close() was not called.
    void close();

    const std::string& lat_path() const { return lat_; }
    const std::string& svg_path() const { return svg_; }
    uint64_t lines() const { return lines_; }

private:
    std::string lat_, svg_, title_;
    FILE* out_ = nullptr;
    uint64_t lines_ = 0;
    char buf_[48];
};

}  // namespace perfprof::output
