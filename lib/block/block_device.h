// blktrace's device (SPEC §P21): the disk a block device node names and, for a partition, its
// sector range, from sysfs. The disk of a partition is the sysfs directory above it (not minor
// arithmetic, which is wrong for NVMe); the range is [start, start+size) (Recommendations).
#pragma once

#include <cstdint>
#include <string>

namespace perfprof::block {

struct BlockDev {
    unsigned major = 0, minor = 0;  // the whole disk
    bool partition = false;
    uint64_t start = 0, end = 0;  // a partition's sectors: [start, end)
    // The kernel's dev_t in the block tracepoints: (major << 20) | minor.
    uint64_t dev() const { return (uint64_t(major) << 20) | minor; }
    // The kernel filter of the four block events.
    std::string filter() const;
};

// The device `major`:`minor` as `sys` ("/sys", or a fake tree) describes it. Throws Error
// when a partition's start, size or disk cannot be read.
BlockDev resolve_block_device(unsigned major, unsigned minor, const std::string& sys = "/sys");

}  // namespace perfprof::block
