#include "perf/dispatcher.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "perf/record.h"
#include "sym/symbolizer.h"

namespace perfprof::perf {

Dispatcher::Dispatcher(const Options& opt, Devices& devices, Rings& rings, CommTable& comms,
                       EventClock& clock, const filter::EvalHooks* hooks, core::EventLoop& loop,
                       sym::Symbolizer& symbols)
    : opt_(opt),
      devices_(devices),
      rings_(rings),
      comms_(comms),
      clock_(clock),
      hooks_(hooks),
      loop_(loop),
      symbols_(symbols) {}

Dispatcher::~Dispatcher() = default;

void Dispatcher::side_band_to_symbols(CommTable& comms, sym::Symbolizer& symbols) {
    // Symbols of a process are kept as long as its name: samples read after its exit record
    // still resolve, and a reused pid gets fresh maps.
    comms.forget = [&symbols](uint32_t tid) { symbols.exit(tid); };
    comms.on_exec = [&symbols](uint32_t pid) { symbols.exec(pid); };
    comms.on_mmap = [&symbols](const CommTable::Mapping& m) {
        if (!(m.prot & PROT_EXEC)) return;
        sym::MapsLine l;
        l.start = m.start;
        l.end = m.start + m.len;
        l.offset = m.pgoff;
        l.perms = "r-xp";
        l.dev_major = m.maj;
        l.dev_minor = m.min;
        l.inode = m.ino;
        l.path = std::string(m.path);
        symbols.mmap(m.pid, l);
    };
}

void Dispatcher::start() {
    for (auto& d : devices_) overwrite_ |= d->plan.overwrite;
    // One time order for every ring when any device needs it (a nested task-state pairs
    // events of different CPUs even when its parent was not asked for --order).
    const bool order = opt_.order || std::any_of(devices_.begin(), devices_.end(),
                                                 [](const auto& d) { return d->plan.order; });
    if (order) orderer_ = std::make_unique<Orderer>(rings_.size());
}

void Dispatcher::on_ring(size_t idx, uint32_t events) {
    Ring& r = rings_[idx];
    // With ordering every ring is read before the merge: a ring left unread could hold
    // records older than what the merge would release (SPEC §3.4 progress rule).
    if (orderer_)
        drain_all();
    else
        drain(r);
    if ((events & EPOLLHUP) && !r.hup) {
        // The task of a per-thread ring exited: nothing more can arrive.
        r.hup = true;
        loop_.remove(r.ring->fd());
        Device* top = devices_[0].get();
        if (std::all_of(rings_.begin(), rings_.end(), [&](const Ring& x) { return x.dev != top || x.hup; }))
            loop_.stop();
    }
}

void Dispatcher::drain(Ring& r) {
    // Task names first: a comm or exec record written before these samples is in the side
    // band by now, and a name must be current when its sample is printed.
    comms_.drain();
    if (r.dev->plan.overwrite) return;
    r.ring->reader().drain([&](const perf_event_header& h) { read_record(r, h); });
}

void Dispatcher::drain_all() {
    comms_.drain();
    for (Ring& r : rings_)
        if (!r.dev->plan.overwrite)
            r.ring->reader().drain([&](const perf_event_header& h) { read_record(r, h); });
    if (orderer_) flush_ordered(false);
}

void Dispatcher::read_overwrite() {
    if (!overwrite_) return;
    comms_.drain();
    for (Ring& r : rings_) {
        if (!r.dev->plan.overwrite) continue;
        // Paused while read, so the kernel does not overwrite what we are reading.
        r.ring->drain_backward([&](const perf_event_header& h) { read_record(r, h); });
    }
    if (orderer_) flush_ordered(false);
}

uint64_t Dispatcher::record_time(const Device& d, const perf_event_header& h) const {
    if (h.type == PERF_RECORD_SAMPLE) {
        if (!(d.sample_type & PERF_SAMPLE_TIME) || h.size < sizeof(h) + d.time_off + 8) return 0;
        uint64_t t;
        std::memcpy(&t, reinterpret_cast<const uint8_t*>(&h) + sizeof(h) + d.time_off, 8);
        return t;
    }
    SampleId id;
    return decode_sample_id(h, d.sample_type, id) ? id.time : 0;
}

// Every record read from a ring passes here: lost records are accounted at once; samples
// go to the Orderer or straight to delivery.
void Dispatcher::read_record(Ring& r, const perf_event_header& h) {
    if (h.type == PERF_RECORD_SAMPLE || h.type == PERF_RECORD_SWITCH ||
        h.type == PERF_RECORD_SWITCH_CPU_WIDE) {
        const uint64_t t = record_time(*r.dev, h);
        if (t) r.last_time = t;
        if (orderer_)
            orderer_->push(size_t(&r - rings_.data()), t, h);
        else
            deliver(r, h, t);
    } else if (h.type == PERF_RECORD_LOST) {
        account_lost(r, h);
    }
}

void Dispatcher::account_lost(Ring& r, const perf_event_header& h) {
    Device& d = *r.dev;
    // u64 id; u64 lost; then the sample_id trailer.
    if (h.size < sizeof(h) + 16) return;
    uint64_t lost;
    std::memcpy(&lost, reinterpret_cast<const uint8_t*>(&h) + sizeof(h) + 8, 8);
    LostRange l;
    l.instance = r.instance;
    l.cpu = r.cpu;
    l.tid = r.tid;
    l.count = lost;
    l.start = r.last_time;
    l.end = record_time(d, h);
    r.lost += lost;
    d.lost_total += lost;
    d.lost_pending += lost;
    if (d.opt.verbose > 0 && !d.opt.exit_n) {
        std::fprintf(stderr, "%s %s: lost %llu events on %s #%d\n",
                     core::format_wall(core::realtime_now_ns()).c_str(), d.name.c_str(),
                     (unsigned long long)lost, r.cpu >= 0 ? "CPU" : "thread", r.cpu >= 0 ? r.cpu : r.tid);
        d.lost_pending = 0;
    }
    if (orderer_) {
        // The window's end is the first sample after the loss; the Orderer fills it in.
        l.end = 0;
        orderer_->push_lost(size_t(&r - rings_.data()), l);
    } else {
        deliver_lost(r, l);
    }
}

void Dispatcher::deliver_lost(Ring& r, const LostRange& l) {
    if (r.dev->closed) return;
    LostRange c = l;
    if (c.start) c.start = clock_.convert(c.start);
    if (c.end) c.end = clock_.convert(c.end);
    r.dev->profiler->lost(c);
}

void Dispatcher::flush_ordered(bool all) {
    auto fn = [&](const Ordered& o) {
        Ring& r = rings_[o.ring];
        if (o.record)
            deliver(r, *o.record, o.time);
        else
            deliver_lost(r, *o.lost);
    };
    if (all)
        orderer_->flush_all(fn);
    else
        orderer_->flush(fn);
}

void Dispatcher::deliver(Ring& r, const perf_event_header& h, uint64_t time) {
    Device& d = *r.dev;
    if (d.closed || halted()) return;
    if (time < cutoff_) return;
    if (h.type != PERF_RECORD_SAMPLE) {
        deliver_switch(r, h, time);
        return;
    }
    int e = d.need_ids ? d.event_of(sample_identifier(h)) : 0;
    if (e < 0) return;
    const EventSpec& spec = d.plan.events[size_t(e)];
    Sample s;
    if (!decode_sample(h, spec.attr, s)) return;
    // --call-graph dwarf: the user stack is unwound now, while the process and its mappings
    // are alive; profilers see a complete call chain.
    if (unwind::carries_user_stack(spec.attr)) unwinder_.unwind(s, spec.attr, symbols_);
    // A per-CPU ring says the CPU: profilers may leave PERF_SAMPLE_CPU out (8 bytes less per event).
    if (!(spec.attr.sample_type & PERF_SAMPLE_CPU) && r.cpu >= 0) s.cpu = uint32_t(r.cpu);
    s.time = clock_.convert(time);  // raised when the Orderer fixed it
    s.event = &spec;
    s.event_index = e;
    s.instance = r.instance;
    if (d.perfeval) d.perfeval->count(s);
    if (const filter::Program* f = d.user_filters[size_t(e)].get()) {
        if (f->eval(filter::sample_context(s, hooks_)) <= 0)
            return;  // dropped: does not count for -N (SPEC §2.6.2)
    }
    if (d.parent) {
        // Forwarded to the parent, which asks us to print it (SPEC §2.8).
        s.from = d.profiler.get();
        Device& p = *d.parent;
        if (!p.closed) {
            p.profiler->sample(s);
            if (++p.samples >= p.opt.exit_n && p.opt.exit_n) close_device(p);
        }
        // -N of a child closes the child only; the parent keeps running.
        if (++d.samples >= d.opt.exit_n && d.opt.exit_n) close_device(d);
        return;
    }
    d.profiler->sample(s);
    // Counted always: the SIGUSR2 dump shows it.
    if (++d.samples >= d.opt.exit_n && d.opt.exit_n) close_device(d);
}

// Switch records go to the profiler that asked for them (a nested one's parent does not pair them).
void Dispatcher::deliver_switch(Ring& r, const perf_event_header& h, uint64_t time) {
    Device& d = *r.dev;
    SampleId id;
    if (d.parent || !decode_sample_id(h, d.sample_type, id)) return;
    ContextSwitch c;
    c.pid = id.pid;
    c.tid = id.tid;
    c.time = clock_.convert(time);
    c.cpu = id.cpu != UINT32_MAX || r.cpu < 0 ? id.cpu : uint32_t(r.cpu);
    c.out = h.misc & PERF_RECORD_MISC_SWITCH_OUT;
    c.preempted = h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
    c.instance = r.instance;
    d.profiler->context_switch(c);
}

void Dispatcher::close_device(Device& d) {
    d.close();
    if (d.parent) return;
    loop_.stop();
    final_halt_ = true;
}

void Dispatcher::tick() {
    drain_all();
    read_overwrite();
    for (auto& d : devices_) {
        report_lost(*d);
        // Children print no periodic statistics of their own (SPEC §2.8 rule 7).
        if (!d->parent) d->profiler->interval();
        if (d->perfeval && !d->closed && d->perfeval->report(stdout, d->name.c_str(), opt_.interval_ms))
            close_device(*d);
    }
}

void Dispatcher::finish() {
    // Everything still in the rings is delivered, unless -N already ended the run.
    final_ = true;
    if (!devices_[0]->closed) {
        drain_all();
        read_overwrite();
        if (orderer_) flush_ordered(true);
    }
    // Children first. (std::views::reverse does not build with clang 14 over libstdc++ 12,
    // which the fuzz and sanitize-quick builds use.)
    std::for_each(devices_.rbegin(), devices_.rend(), [](const auto& d) { d->profiler->finish(); });
    if (opt_.verbose > 0 && unwinder_.samples()) {
        const unwind::UnwindStats& u = unwinder_.stats();
        std::printf(
            "unwound %llu user stacks: %llu frames, %llu steps through CFI, %llu through frame "
            "pointers, %llu truncated, %llu broken\n",
            (unsigned long long)unwinder_.samples(), (unsigned long long)u.frames,
            (unsigned long long)u.cfi_frames, (unsigned long long)u.fp_frames,
            (unsigned long long)u.truncated, (unsigned long long)u.broken);
    }
    std::fflush(stdout);
    report_lost_all();
}

}  // namespace perfprof::perf
