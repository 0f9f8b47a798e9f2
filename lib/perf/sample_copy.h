// SampleCopy: a Sample kept past Profiler::sample(), whose pointers die with the ring (a
// task-state interval's first event, multi-trace's backed-up event1s and --detail timeline).
// assign() reuses the buffers' capacity, so a slot that is refilled allocates only while its
// records keep growing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf-prof/sample.h"

namespace perfprof::perf {

struct SampleCopy {
    const EventSpec* event = nullptr;
    int event_index = -1;
    int instance = -1;
    uint32_t pid = 0, tid = 0, cpu = UINT32_MAX;
    uint64_t time = 0;
    uint64_t id = 0, period = 0;
    uint64_t ip = 0, addr = 0, read_value = 0;
    Profiler* from = nullptr;
    std::vector<uint8_t> raw;
    std::vector<uint64_t> chain;

    void assign(const Sample& s) {
        event = s.event;
        event_index = s.event_index;
        instance = s.instance;
        pid = s.pid;
        tid = s.tid;
        cpu = s.cpu;
        time = s.time;
        id = s.id;
        period = s.period;
        ip = s.ip;
        addr = s.addr;
        read_value = s.read_value;
        from = s.from;
        const auto* r = static_cast<const uint8_t*>(s.raw);
        raw.assign(r, r + s.raw_size);
        chain.assign(s.callchain, s.callchain + s.callchain_nr);
    }
    // The copy as a Sample; valid while the copy is neither changed nor destroyed.
    Sample sample() const {
        Sample s;
        s.event = event;
        s.event_index = event_index;
        s.instance = instance;
        s.pid = pid;
        s.tid = tid;
        s.cpu = cpu;
        s.time = time;
        s.id = id;
        s.period = period;
        s.ip = ip;
        s.addr = addr;
        s.read_value = read_value;
        s.from = from;
        s.raw = raw.empty() ? nullptr : raw.data();
        s.raw_size = uint32_t(raw.size());
        s.callchain = chain.empty() ? nullptr : chain.data();
        s.callchain_nr = chain.size();
        return s;
    }
    // Bytes held, the object included.
    size_t bytes() const { return sizeof(*this) + raw.capacity() + chain.capacity() * sizeof(uint64_t); }
};

}  // namespace perfprof::perf
