// The dispatcher: reads the session's rings, orders records by time when a device asks for it
// (SPEC §3.4), delivers samples to their profilers (user filters, forwarding to a parent,
// -N), accounts lost records (SPEC §3.3) and reports (lost totals, the SIGUSR2 dump). The
// side band (task names, mmaps, exits) reaches the symbols in side_band_to_symbols().
#pragma once

#include <memory>

#include "core/event_loop.h"
#include "perf/comm_table.h"
#include "perf/device.h"
#include "perf/event_clock.h"
#include "perf/orderer.h"
#include "unwind/call_graph.h"

namespace perfprof::perf {

class Dispatcher {
public:
    // `devices` and `rings` are the opener's (rings may grow while running); `loop` is
    // stopped when the top-level device closes or its rings all hang up.
    Dispatcher(const Options& opt, Devices& devices, Rings& rings, CommTable& comms, EventClock& clock,
               const filter::EvalHooks* hooks, core::EventLoop& loop, sym::Symbolizer& symbols);
    ~Dispatcher();

    // Task names, exec and mmap records feed the session's symbolizer.
    static void side_band_to_symbols(CommTable& comms, sym::Symbolizer& symbols);

    // Once every device is open: one Orderer for all rings when any device needs the order.
    void start();
    bool overwrite() const { return overwrite_; }
    // Samples before this perf time predate the atomic enable (SPEC §3.11).
    void set_cutoff(uint64_t raw_time) { cutoff_ = raw_time; }

    void on_ring(size_t idx, uint32_t events);  // a watched ring is readable or hung up
    void drain_all();                           // every ring, then what the order releases
    void tick();                                // -i and stdin markers: read, report, intervals
    void report_lost_all();
    // The end: the rings' last records (unless -N ended the run), then every profiler's finish.
    void finish();
    void dump_state();  // SIGUSR2 (SPEC §1.11)

private:
    void drain(Ring& r);
    void read_overwrite();
    void read_record(Ring& r, const perf_event_header& h);
    void account_lost(Ring& r, const perf_event_header& h);
    void deliver(Ring& r, const perf_event_header& h, uint64_t time);
    void deliver_lost(Ring& r, const LostRange& l);
    void deliver_switch(Ring& r, const perf_event_header& h, uint64_t time);
    void flush_ordered(bool all);
    uint64_t record_time(const Device& d, const perf_event_header& h) const;
    void close_device(Device& d);
    void report_lost(Device& d);
    bool halted() const { return final_ ? final_halt_ : loop_.stopping(); }

    const Options& opt_;
    Devices& devices_;
    Rings& rings_;
    CommTable& comms_;
    EventClock& clock_;
    const filter::EvalHooks* hooks_;
    core::EventLoop& loop_;
    sym::Symbolizer& symbols_;
    unwind::SampleUnwinder unwinder_;  // --call-graph dwarf samples
    std::unique_ptr<Orderer> orderer_;
    bool overwrite_ = false;
    uint64_t cutoff_ = 0;
    // finish(): the last records are delivered although the loop stopped, until -N ends it.
    bool final_ = false, final_halt_ = false;
};

}  // namespace perfprof::perf
