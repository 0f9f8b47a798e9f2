// watchdog's lockup predictor (SPEC-PROFILERS §P20).
//
// Stage 1 (WatchdogDiscovery) learns each selected CPU's watchdog hrtimer from the expiries
// of watchdog_timer_fn. Stage 2 (LockupPredictor) keeps per CPU what the kernel's own
// watchdog keeps, from the outside:
//   - the watchdog hrtimer's expiries (hrtimer_interrupts, hrtimer_touch_ts), starts and
//     cancels (running),
//   - the switches to the CPU's stopper thread (migration/N), which the hrtimer queues and
//     which touch the soft-lockup timestamp (watchdog_touch_ts, in units of 2^30 ns ~ s),
// and warns before the kernel would:
//   - soft: at an hrtimer expiry, the stopper has not run for more than 2T/5 units,
//   - hard: at a sample of the clock, the hrtimer has not fired since the previous sample and
//     its last expiry is more than 2T/5 s + 1/5 s old.
// T is kernel.watchdog_thresh. The predictor returns the message texts (without the
// WALL(now) that starts them) and whether the sample is to be printed; the profiler prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::hw {

// kernel.watchdog_thresh's text: the seconds (1..60); throws Error when it is not a number.
uint64_t parse_watchdog_thresh(std::string_view text);

class WatchdogDiscovery {
public:
    explicit WatchdogDiscovery(std::vector<int> cpus);  // the CPUs to find, any order
    // An expiry of watchdog_timer_fn on `cpu` with this hrtimer: true the first time the CPU
    // is seen (SPEC prints every such sample anyway). CPUs not selected are ignored.
    bool found(int cpu, uint64_t hrtimer);
    bool complete() const { return left_ == 0; }
    size_t cpus() const { return cpus_.size(); }
    size_t found_count() const { return cpus_.size() - left_; }
    // The hrtimer of `cpu`, 0 while unknown.
    uint64_t hrtimer(int cpu) const;
    const std::vector<int>& cpu_list() const { return cpus_; }

private:
    std::vector<int> cpus_;
    std::vector<uint64_t> timers_;  // by position in cpus_
    size_t left_;
};

class LockupPredictor {
public:
    // `thresh_s` = T; `verbose` >= 1 adds the DEBUG: lines, >= 2 prints every clock sample.
    LockupPredictor(uint64_t thresh_s, int verbose);

    uint64_t soft_thresh() const { return soft_; }  // 2T/5, in 2^30 ns units
    uint64_t hard_thresh() const { return hard_; }  // 2T/5 s + 1/5 s, in ns

    // What to print for one event; `message` is empty when there is nothing to say.
    struct Verdict {
        std::string message;  // "WILL: soft lockup - CPU#1 [..]", "DEBUG: ..."
        bool print = false;   // print the sample itself (print_sched / print_stack / -vv)
    };

    // The watchdog hrtimer of `cpu` expired at t (ns): the soft check.
    Verdict expire(int cpu, uint64_t t);
    void start(int cpu, uint64_t t);  // the hrtimer was (re)armed
    void cancel(int cpu);             // the hrtimer was cancelled
    void touch(int cpu, uint64_t t);  // a switch to the stopper thread
    // A sample of the clock on `cpu` at t: the hard check.
    Verdict clock(int cpu, uint64_t t);
    // While a soft lockup is predicted on `cpu`, its tracepoint samples are printed.
    bool print_sched(int cpu) const;

private:
    struct Cpu {
        bool running = false;
        uint64_t interrupts = 0, saved = 0;
        uint64_t hrtimer_touch_ts = 0;   // ns, 0 = never
        uint64_t watchdog_touch_ts = 0;  // 2^30 ns units, 0 = never
        bool print_stack = false, print_sched = false;
    };
    Cpu& at(int cpu);

    uint64_t soft_, hard_;
    int verbose_;
    std::vector<Cpu> cpus_;
};

}  // namespace perfprof::hw
