// Decoding PERF_RECORD_SAMPLE bodies and the sample_id trailer of other records, by the
// sample_type the event was opened with (fields come in the kernel's fixed order).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "perf-prof/sample.h"

namespace perfprof::perf {

// The fields every record may carry at its end when sample_id_all is set.
struct SampleId {
    uint32_t pid = 0, tid = 0;
    uint64_t time = 0, id = 0;
    uint32_t cpu = UINT32_MAX;
};

// Fills `s` from a PERF_RECORD_SAMPLE. Returns false for a record too short for its
// sample_type (a corrupt record is skipped, never read past its end). `regs_user_mask` and
// `regs_intr_mask` are the event's sample_regs_user / sample_regs_intr (how many registers
// PERF_SAMPLE_REGS_USER / _INTR carry), `read_format` how PERF_SAMPLE_READ is laid out.
bool decode_sample(const perf_event_header& h, uint64_t sample_type, Sample& s, uint64_t regs_user_mask = 0,
                   uint64_t read_format = 0, uint64_t regs_intr_mask = 0);
// The same, by the event's attributes.
bool decode_sample(const perf_event_header& h, const perf_event_attr& attr, Sample& s);

// Reads the sample_id trailer of a non-sample record (sample_id_all=1).
bool decode_sample_id(const perf_event_header& h, uint64_t sample_type, SampleId& id);

// The id of a sample when PERF_SAMPLE_IDENTIFIER is set: the first u64 of the body.
inline uint64_t sample_identifier(const perf_event_header& h) {
    if (h.size < sizeof(h) + 8) return 0;
    return *reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(&h) + sizeof(h));
}

}  // namespace perfprof::perf
