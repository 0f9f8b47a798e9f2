#include "output/heatmap_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/text.h"
#include "flamegraph/heatmap.h"
#include "flamegraph/svg.h"
#include "perf-prof/error.h"

namespace perfprof::output {

HeatmapFile::HeatmapFile(const std::string& name, std::string title)
    : lat_(name + ".lat"), svg_(name + ".svg"), title_(std::move(title)) {
    if (::access(lat_.c_str(), F_OK) == 0) std::rename(lat_.c_str(), (lat_ + ".old").c_str());
    out_ = std::fopen(lat_.c_str(), "we");
    if (!out_) throw Error::sys(errno, "cannot create the heat-map file '" + lat_ + "'");
}

HeatmapFile::~HeatmapFile() {
    if (out_) std::fclose(out_);
}

void HeatmapFile::write(uint64_t time, uint64_t latency) {
    if (!out_) return;
    // Two integers and a space: faster than fprintf on the per-pair path.
    char* p = buf_ + sizeof buf_;
    *--p = '\n';
    do *--p = char('0' + latency % 10);
    while (latency /= 10);
    *--p = ' ';
    do *--p = char('0' + time % 10);
    while (time /= 10);
    std::fwrite(p, 1, size_t(buf_ + sizeof buf_ - p), out_);
    lines_++;
}

void HeatmapFile::close() {
    if (!out_) return;
    std::fclose(out_);
    out_ = nullptr;
    if (!lines_) {
        std::printf("Heat map: none, no pair (latencies: %s is empty)\n", lat_.c_str());
        return;
    }
    // Read back in chunks: the points are all the picture needs to hold.
    const flamegraph::LatFile lat = flamegraph::read_lat_file(lat_);
    if (lat.points.empty()) return;
    flamegraph::HeatmapOptions o;
    o.title = title_;
    o.subtitle = core::command_line();
    flamegraph::write_file(svg_, flamegraph::render_heatmap(lat.points, o));
    std::printf("Heat map: %s (latencies: %s)\n", svg_.c_str(), lat_.c_str());
}

}  // namespace perfprof::output
