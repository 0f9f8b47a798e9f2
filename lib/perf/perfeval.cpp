#include "perf/perfeval.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "core/parse.h"
#include "core/text.h"
#include "core/time.h"
#include "perf-prof/error.h"

namespace perfprof::perf {

PerfEval::PerfEval(const Options& opt) : limit_(opt.sampling_limit) {
    if (opt.perfeval_cpus.empty() && opt.perfeval_pids.empty()) return;
    // SPEC §10 #17: upstream stays silently inactive without a tick; we say so.
    if (!opt.interval_ms)
        throw Error::usage(std::string("--perfeval-") + (opt.perfeval_cpus.empty() ? "pids" : "cpus") +
                           " needs -i: the rates are printed at each interval tick");
    if (!opt.perfeval_cpus.empty()) {
        by_cpu_ = true;
        list_ = opt.perfeval_cpus;
        const std::vector<int> cpus = core::parse_cpu_list(opt.perfeval_cpus);
        // None online: nothing would ever be counted (as --perfeval-pids of no process).
        if (const std::string online = core::online_cpus_text(); !online.empty()) {
            const std::vector<int> up = core::parse_cpu_list(online);
            if (std::none_of(cpus.begin(), cpus.end(),
                             [&](int c) { return std::find(up.begin(), up.end(), c) != up.end(); }))
                throw Error("--perfeval-cpus " + opt.perfeval_cpus +
                            ": none of these CPUs is online (online: " + online + ")");
        }
        for (int c : cpus) {
            if (size_t(c) >= cpu_listed_.size()) cpu_listed_.resize(size_t(c) + 1);
            cpu_listed_[size_t(c)] = true;
        }
        per_cpu_.assign(cpu_listed_.size(), 0);
    } else {
        by_pid_ = true;
        list_ = opt.perfeval_pids;
        for (int p : core::parse_pid_list(opt.perfeval_pids)) {
            struct stat st;
            if (::stat(("/proc/" + std::to_string(p)).c_str(), &st) != 0)
                throw Error("--perfeval-pids: process " + std::to_string(p) + " does not exist");
            pid_set_.insert(uint32_t(p));
        }
    }
}

bool PerfEval::report(FILE* out, const char* profiler, uint64_t interval_ms) {
    if (!active()) return false;
    std::vector<std::pair<uint32_t, uint64_t>> hits;  // (cpu or tid, samples)
    if (by_cpu_) {
        for (size_t c = 0; c < per_cpu_.size(); c++)
            if (per_cpu_[c]) hits.emplace_back(uint32_t(c), per_cpu_[c]);
    } else {
        hits.assign(per_tid_.begin(), per_tid_.end());
        std::sort(hits.begin(), hits.end());
    }
    const uint64_t sampled = sampled_;
    sampled_ = 0;
    std::fill(per_cpu_.begin(), per_cpu_.end(), 0);
    per_tid_.clear();
    if (!sampled) return false;

    const uint64_t ms = std::max<uint64_t>(interval_ms, 1);
    auto per_second = [&](uint64_t n) { return (n * 1000 + ms / 2) / ms; };
    uint64_t matched = 0;
    bool exceeded = false;
    for (const auto& [id, n] : hits) {
        matched += n;
        if (limit_ && per_second(n) > limit_) exceeded = true;
    }
    const std::string now = core::format_wall(core::realtime_now_ns());
    std::fprintf(out, "%s %s: perfeval %s(%s): sampled %llu events matched %llu on %zu instances%s\n",
                 now.c_str(), profiler, by_cpu_ ? "cpus" : "pids", list_.c_str(),
                 (unsigned long long)per_second(sampled), (unsigned long long)per_second(matched),
                 hits.size(), exceeded ? ", exceeds the limit, exit" : "");
    if (exceeded)
        for (const auto& [id, n] : hits)
            std::fprintf(out, "%s %s: perfeval: %s %u sampled %llu events\n", now.c_str(), profiler,
                         by_cpu_ ? "cpu" : "tid", id, (unsigned long long)per_second(n));
    return exceeded;
}

}  // namespace perfprof::perf
