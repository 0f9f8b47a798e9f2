#include "counters/group_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/format.h"

#include "event/planned_event.h"
#include "event/resolve.h"
#include "perf-prof/error.h"

namespace perfprof::counters {

std::vector<int> CounterGroup::present_on(int cpu) const {
    std::vector<int> out;
    for (size_t e = 0; e < names.size(); ++e)
        if (cpu < 0 || cpus[e].empty() || std::ranges::find(cpus[e], cpu) != cpus[e].end())
            out.push_back(int(e));
    return out;
}

EventSpec clock_leader(uint64_t period_ns, uint64_t freq) {
    EventSpec ev;
    ev.sys = "software";
    ev.name = "cpu-clock";
    ev.kind = EventKind::Other;
    perf_event_attr& a = ev.attr;
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    if (freq) {
        a.freq = 1;
        a.sample_freq = freq;
    } else {
        a.sample_period = period_ns;
    }
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_READ;
    a.read_format = PERF_FORMAT_ID | PERF_FORMAT_GROUP;
    return ev;
}

void plan_group(Context& ctx, const std::string& profiler, const std::string& events, EventSpec leader,
                EventPlan& plan, CounterGroup& group) {
    if (events.empty())
        throw Error::usage("monitor(" + profiler + ") init failed: no events given (use -e EVENT,...)");
    const int leader_index = int(plan.events.size());
    plan.events.push_back(std::move(leader));
    const Options& opt = ctx.options();
    for (event::Resolved& r : event::resolve_event_list(events, ctx.tep(), opt.verbose, profiler_names())) {
        if (r.item.kind == event::Kind::Profiler)
            throw Error::usage(profiler + " counts events: '" + r.item.sys + "' is a profiler");
        EventSpec ev = event::planned_event(r, false, false, false);
        ev.attr.sample_period = 0;
        ev.attr.sample_type = 0;
        ev.attr.read_format = PERF_FORMAT_ID;
        ev.attr.pinned = 0;
        ev.attr.disabled = 0;
        ev.attr.watermark = 0;
        ev.attr.wakeup_events = 0;
        ev.group_leader = leader_index;
        const std::string& alias = r.item.attrs.alias;
        group.names.push_back(alias.empty() ? r.item.sys + ":" + r.item.name : alias);
        group.vars.push_back(alias.empty() ? r.item.name : alias);
        group.cpus.push_back(ev.cpus);
        plan.events.push_back(std::move(ev));
    }
    if (group.names.empty()) throw Error::usage("monitor(" + profiler + ") init failed: no events given");
    plan.user_filter = false;  // kernel filters only
}

std::string instance_label(Context& ctx, int instance) {
    const int cpu = ctx.instance_cpu(instance);
    std::string out = "[";
    if (cpu >= 0) {
        core::append_uint(out, uint64_t(cpu), 3, '0');
        return out + "] ";
    }
    const std::vector<int>& t = ctx.threads();
    const int tid = size_t(instance) < t.size() ? t[size_t(instance)] : -1;
    out += std::string(tid < 0 ? 4 : 0, ' ');
    if (tid < 0)
        out += "-1";
    else
        core::append_uint(out, uint64_t(tid), 6);
    return out + "] ";
}

}  // namespace perfprof::counters

namespace perfprof::counters {
void append_evts_t(uint64_t t, std::string& out) {
    core::append_uint(out, t / 1000000000);
    out += '.';
    core::append_uint(out, t % 1000000000 / 1000, 6, '0');
}

void append_timer_line(Context& ctx, const Sample& s, const char* name, uint64_t ns, std::string& out) {
    ctx.wall(s.time, out);
    out += "     pid ";
    core::append_uint(out, s.pid, 6);
    out += " tid ";
    core::append_uint(out, s.tid, 6);
    out += " [";
    core::append_uint(out, s.cpu, 3, '0');
    out += "] ";
    append_evts_t(s.time, out);
    out += ": ";
    out += name;
    out += ": cpu-clock ";
    core::append_uint(out, ns);
    out += " ns\n";
}
}  // namespace perfprof::counters

namespace perfprof::counters {
std::string help_line(const char* profiler, const Options& opt, const std::vector<event::Resolved>& events,
                      const std::string& tail) {
    std::string t = std::string("perf-prof ") + profiler + " -e \"";
    bool first = true;
    for (const event::Resolved& r : events) {
        if (r.item.kind == event::Kind::Profiler) continue;
        if (!first) t += ',';
        first = false;
        t += r.item.sys + ":" + r.item.name + "/" + (r.item.filter.empty() ? "." : r.item.filter) + "/";
        t += r.item.attrs.alias.empty() ? "[alias=./]" : "alias=" + r.item.attrs.alias + "/";
        const std::vector<int>& c = r.item.attrs.cpus;
        if (c.empty())
            t += "[cpus=./]";
        else if (c.back() - c.front() + 1 == int(c.size()))  // a range (a list would need commas)
            t += "cpus=" + std::to_string(c.front()) + (c.size() > 1 ? "-" + std::to_string(c.back()) : "") +
                 "/";
    }
    t += "\" " + tail;
    t += opt.cpus.empty() ? "[-C .] " : "-C " + opt.cpus + " ";
    t += opt.interval_ms ? "-i " + std::to_string(opt.interval_ms) + " " : "[-i .] ";
    t += "\n";
    return t;
}
}  // namespace perfprof::counters
