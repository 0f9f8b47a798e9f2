#include "hw/watchdog.h"

#include <algorithm>

#include "core/format.h"
#include "perf-prof/error.h"

namespace perfprof::hw {

uint64_t parse_watchdog_thresh(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    uint64_t v = 0;
    if (text.empty() || text.size() > 6) throw Error("watchdog: kernel.watchdog_thresh is not a number");
    for (const char c : text) {
        if (c < '0' || c > '9') throw Error("watchdog: kernel.watchdog_thresh is not a number");
        v = v * 10 + uint64_t(c - '0');
    }
    return v;
}

WatchdogDiscovery::WatchdogDiscovery(std::vector<int> cpus) : cpus_(std::move(cpus)) {
    std::sort(cpus_.begin(), cpus_.end());
    cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
    timers_.assign(cpus_.size(), 0);
    left_ = cpus_.size();
}

bool WatchdogDiscovery::found(int cpu, uint64_t hrtimer) {
    const auto it = std::lower_bound(cpus_.begin(), cpus_.end(), cpu);
    if (it == cpus_.end() || *it != cpu || hrtimer == 0) return false;
    uint64_t& t = timers_[size_t(it - cpus_.begin())];
    if (t) return false;
    t = hrtimer;
    --left_;
    return true;
}

uint64_t WatchdogDiscovery::hrtimer(int cpu) const {
    const auto it = std::lower_bound(cpus_.begin(), cpus_.end(), cpu);
    return it == cpus_.end() || *it != cpu ? 0 : timers_[size_t(it - cpus_.begin())];
}

LockupPredictor::LockupPredictor(uint64_t thresh_s, int verbose)
    : soft_(thresh_s * 2 / 5),
      hard_(thresh_s * 2 * (1000000000ull / 5) + 1000000000ull / 5),
      verbose_(verbose) {}

LockupPredictor::Cpu& LockupPredictor::at(int cpu) {
    const size_t c = cpu < 0 ? 0 : size_t(cpu);
    if (c >= cpus_.size()) cpus_.resize(c + 1);
    return cpus_[c];
}

namespace {

// "{what}: {kind} lockup - CPU#{cpu} [{now} - {touch} {op} {thresh}]"
std::string lockup_text(const char* what, const char* kind, int cpu, uint64_t now, uint64_t touch,
                        const char* op, uint64_t thresh) {
    std::string m = what;
    m += ": ";
    m += kind;
    m += " lockup - CPU#";
    core::append_int(m, cpu);
    m += " [";
    core::append_uint(m, now);
    m += " - ";
    core::append_uint(m, touch);
    m += ' ';
    m += op;
    m += ' ';
    core::append_uint(m, thresh);
    m += ']';
    return m;
}

}  // namespace

LockupPredictor::Verdict LockupPredictor::expire(int cpu, uint64_t t) {
    Cpu& c = at(cpu);
    c.running = true;
    c.interrupts++;
    c.hrtimer_touch_ts = t;
    Verdict v;
    const uint64_t now = t >> 30;
    if (c.watchdog_touch_ts && now > c.watchdog_touch_ts && now - c.watchdog_touch_ts > soft_) {
        v.message = lockup_text("WILL", "soft", cpu, now, c.watchdog_touch_ts, ">", soft_);
        c.print_sched = true;
    } else {
        c.print_sched = false;
        if (verbose_ >= 1 && c.watchdog_touch_ts)
            v.message = lockup_text("DEBUG", "soft", cpu, now, c.watchdog_touch_ts, "<=", soft_);
    }
    v.print = c.print_sched;
    return v;
}

void LockupPredictor::start(int cpu, uint64_t t) {
    Cpu& c = at(cpu);
    c.running = true;
    c.hrtimer_touch_ts = t;
}

void LockupPredictor::cancel(int cpu) {
    at(cpu).running = false;
}

void LockupPredictor::touch(int cpu, uint64_t t) {
    Cpu& c = at(cpu);
    c.watchdog_touch_ts = t >> 30;
    c.print_sched = false;
}

LockupPredictor::Verdict LockupPredictor::clock(int cpu, uint64_t t) {
    Cpu& c = at(cpu);
    Verdict v;
    c.print_stack = false;
    if (c.running && c.hrtimer_touch_ts && c.interrupts == c.saved && t > c.hrtimer_touch_ts) {
        const uint64_t age = t - c.hrtimer_touch_ts;
        if (age > hard_) {
            v.message = lockup_text("WILL", "hard", cpu, t, c.hrtimer_touch_ts, ">", hard_);
            c.print_stack = true;
        } else if (verbose_ >= 1) {
            v.message = lockup_text("DEBUG", "hard", cpu, t, c.hrtimer_touch_ts, "<=", hard_);
        }
    }
    c.saved = c.interrupts;
    v.print = c.print_stack || c.print_sched || verbose_ >= 2;
    return v;
}

bool LockupPredictor::print_sched(int cpu) const {
    const size_t c = cpu < 0 ? 0 : size_t(cpu);
    return c < cpus_.size() && cpus_[c].print_sched;
}

}  // namespace perfprof::hw
