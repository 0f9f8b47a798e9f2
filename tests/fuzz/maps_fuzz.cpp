// libFuzzer target for /proc/PID/maps lines (lib/sym/syms.h parse_maps_line) and the mapping
// table built from them (Syms: the maps text, then each line again as a PERF_RECORD_MMAP2 would
// add it, replacing what it overlaps). No file is opened: the lookups that load objects are not
// called. Findings: a crash, a sanitizer report, a hang, an exception, a parsed line that does not
// read back the same when printed as the kernel prints it, or an address of a mapping that the
// table does not report as mapped (in tables without overlaps, as the kernel writes them).
#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sym/object_cache.h"
#include "sym/syms.h"

using perfprof::sym::MapsLine;

namespace {

void check(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "maps_fuzz: %s\n", what);
    std::abort();
}

std::string print(const MapsLine& m) {
    char head[160];
    std::snprintf(head, sizeof head, "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " %02x:%02x %" PRIu64 " ", m.start,
                  m.end, m.perms.c_str(), m.offset, m.dev_major, m.dev_minor, m.inode);
    return head + m.path;
}

bool same(const MapsLine& a, const MapsLine& b) {
    return a.start == b.start && a.end == b.end && a.offset == b.offset && a.perms == b.perms &&
           a.path == b.path && a.dev_major == b.dev_major && a.dev_minor == b.dev_minor && a.inode == b.inode;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<MapsLine> lines;
    for (size_t pos = 0; pos <= text.size();) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        MapsLine m;
        if (perfprof::sym::parse_maps_line(text.substr(pos, nl - pos), m)) {
            check(m.perms.size() == 4, "perms of 4 letters");
            check(m.path.find('\n') == std::string::npos, "a newline in a path");
            // A path that keeps no leading blank and no trailing CR reads back as it was.
            if ((m.path.empty() || (m.path.front() != ' ' && m.path.front() != '\t')) &&
                (m.path.empty() || m.path.back() != '\r')) {
                MapsLine again;
                check(perfprof::sym::parse_maps_line(print(m), again) && same(m, again), "printed line reads back");
            }
            lines.push_back(std::move(m));
        }
        pos = nl + 1;
    }

    // The kernel's maps never overlap (only a MMAP2 record replaces what it overlaps, through
    // add()): mapped() is checked on tables the kernel could write.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const MapsLine& m : lines)
        if (m.start < m.end) ranges.emplace_back(m.start, m.end);
    std::sort(ranges.begin(), ranges.end());
    bool disjoint = true;
    for (size_t i = 1; i < ranges.size(); ++i) disjoint &= ranges[i - 1].second <= ranges[i].first;

    perfprof::sym::ObjectCache objects;
    perfprof::sym::Syms syms(text, 0, objects);
    for (const auto& [start, end] : ranges)
        if (disjoint) check(syms.mapped(start) && syms.mapped(end - 1), "a mapping's addresses are mapped");
    (void)syms.mapped(0);
    (void)syms.mapped(~uint64_t(0));
    for (const MapsLine& m : lines) syms.add(m);
    if (!lines.empty() && lines.back().end > lines.back().start) check(syms.mapped(lines.back().start), "an added mapping is mapped");
    (void)syms.dso_count();
    return 0;
}
