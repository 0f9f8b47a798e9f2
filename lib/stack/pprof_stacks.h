// --pprof FILE: sampled call chains as a gzip-compressed pprof profile.proto (ANCHORS.md §7.3).
//
// Chains are counted as they come by their raw addresses (pid, comm, addresses), as FlameGraph
// counts them, and symbolized into the profile when it is written, or when their process's
// symbols are about to be dropped (exit, exec: a sym::ProcessObserver of the Symbolizer). Frames get the
// names the folded flame graph of the same run gives them (Printer::folded_name), so `go tool pprof -top` and
// the folded file agree; the process name is a `comm` label, not a root frame.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "output/pprof.h"
#include "perf-prof/options.h"
#include "stack/chain_counts.h"
#include "stack/stack_printer.h"

namespace perfprof::sym {
class DwarfNames;
}

namespace perfprof::stack {

class PprofStacks final : public sym::ProcessObserver {
public:
    // What one sample is: `type`/`unit` counts it ("samples"/"count"); a `cpu_period_ns` adds
    // cpu/nanoseconds, each sample standing for that much CPU time (profile: 1e9/F).
    struct Kind {
        const char* type = "samples";
        const char* unit = "count";
        int64_t cpu_period_ns = 0;
        // The name of that time: "cpu", or "wall" when off-CPU waits are counted too.
        const char* period_name = "cpu";
        // The key of add_callchain()'s tag label ("off_cpu"); null: no tags.
        const char* tag_key = nullptr;
        // Several values per sample instead (a heap profile: alloc_objects, alloc_space, ...),
        // given with add_values(); then the profile's period is `period` of `period_type`.
        std::vector<output::PprofBuilder::ValueType> values = {};
        output::PprofBuilder::ValueType period_type = {};
        int64_t period = 1;

        // A heap profile as Go's runtime writes one: alloc_objects, alloc_space, inuse_objects,
        // inuse_space per stack, each allocation standing for `period` bytes (the sampling rate).
        static Kind heap(int64_t period = 1) {
            Kind k;
            k.values = {{"alloc_objects", "count"},
                        {"alloc_space", "bytes"},
                        {"inuse_objects", "count"},
                        {"inuse_space", "bytes"}};
            k.period_type = {"space", "bytes"};
            k.period = period;
            return k;
        }
    };

    // --pprof of `profiler`: nullptr when not given, a usage error without -g. `printer` (the
    // profiler's, which must outlive the output) is used when -g is given.
    static std::unique_ptr<PprofStacks> from_options(const Options& opt, const char* profiler,
                                                     Printer* printer, const Kind& kind);
    // Throws Error when `path` cannot be created: found at start-up, not after the run.
    PprofStacks(std::string path, Printer& printer, Kind kind);
    // A profile kept in memory (serve): encoded by gzipped(), never written by finish().
    PprofStacks(Printer& printer, Kind kind);
    ~PprofStacks();
    PprofStacks(const PprofStacks&) = delete;
    PprofStacks& operator=(const PprofStacks&) = delete;

    // Counts one sampled chain of process `pid` named `comm` ("" when unknown), `n` times, with
    // Kind::tag_key's label set to `tag` when not empty. Hot path: no allocation but the map
    // entry of a chain not seen before.
    void add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm, uint64_t n = 1,
                       std::string_view tag = {});
    // Counts a chain `count` times with `value` added to its second value, for a Kind of two
    // `values` (contentions and delay): pending like add_callchain().
    void add_weighted(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm, uint64_t count,
                      uint64_t value);
    // Adds one sample of `values` (one per Kind::values) for a chain, symbolized now.
    void add_values(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm,
                    std::span<const int64_t> values);
    // A string label `key`=`value` on every sample (serve: executable, build_id), set before
    // the first sample is added.
    void label(std::string_view key, std::string_view value);
    // The processes profiled (a command's, -p's; Context::threads()): the program file in
    // most of their samples is the profile's main binary (pprof's "File:"). Without them, or
    // when they have no sample, the one in most samples of all.
    void main_processes(std::span<const int> pids) {
        profile_.main_processes(pid_key_, std::vector<int64_t>(pids.begin(), pids.end()));
    }
    // The profile's other fields: comments, the default sample type.
    output::PprofBuilder& builder() { return profile_; }
    // The profile of the whole run, gzip-compressed, as finish() writes it.
    std::string gzipped();
    // Writes the profile of the whole run (also with -i) to the file, through FILE.tmp.
    void finish();

    // Before the symbols of `tgid` are dropped: its pending chains are symbolized.
    void before_forget(uint32_t tgid) override;

private:
    void symbolize_pending();
    // location_ids_ and labels_ for a chain; false for context markers only.
    bool locate(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm);
    uint64_t location_of(const Printer::ChainFrame& f, uint32_t pid, bool return_address);
    // pid, label()'s, then comm (unless empty).
    std::span<const output::PprofBuilder::Label> sample_labels(std::string_view comm) const;
    // The same, with the tag label (unless empty) before comm.
    std::span<const output::PprofBuilder::Label> tagged_labels(std::string_view comm, std::string_view tag);
    sym::DwarfNames* dwarf_of(const sym::Object& obj);

    std::string path_;
    Printer& printer_;
    sym::Symbolizer& symbols_;  // the printer's: outlives it, asked at destruction
    Kind kind_;
    output::PprofBuilder profile_;
    int64_t start_realtime_ = 0, start_monotonic_ = 0;
    uint64_t pid_key_ = 0, comm_key_ = 0;  // label keys' string ids
    uint64_t kernel_mapping_ = 0;

    ChainCounts pending_;  // chains not yet symbolized, under their comm

    // Symbolization: locations by (mapping, address, frame kind and role), DWARF by object.
    std::unordered_map<std::string, uint64_t> locations_;
    std::unordered_map<std::string, std::unique_ptr<sym::DwarfNames>> dwarf_;
    std::vector<Printer::ChainFrame> frames_;
    std::vector<uint64_t> location_ids_;
    std::vector<output::PprofBuilder::Label> labels_;  // pid, label()'s, comm (last)
    std::vector<output::PprofBuilder::Label> tagged_;  // tagged_labels()' buffer
    uint64_t tag_key_ = 0;
    std::string name_, file_, loc_key_, root_;
};

}  // namespace perfprof::stack
