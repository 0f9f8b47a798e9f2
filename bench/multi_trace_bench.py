#!/usr/bin/python3
"""Overhead of `perf-prof multi-trace` measuring run-queue latency on the whole machine under a
context-switch storm, side by side with `perf sched record -a` + `perf sched latency` on the same
load, in one run. The multi-trace command (default options otherwise):

  perf-prof multi-trace -e sched:sched_wakeup,sched:sched_wakeup_new \\
      -e sched:sched_switch//key=next_pid/ -k pid --order

Loads (bench/pingpong.c): two threads hand the turn back and forth (futex by default), both on
one CPU ("same") or one on each of two CPUs ("diff"). A round trip is two sched_switch events
(more in diff mode, through idle) and one or two sched_wakeup (none when the waker is preempted
before the other thread sleeps); multi-trace reads all three events of every CPU in time order and
pairs each wake-up with the switch-in of the task it woke. For each mode:

  untraced     the load alone, before and after the traced runs (the mean is the baseline): round
               trips per second; then, in a 1 s run with perf stat -a counting alongside, the
               switches and sched events per second and the load's speed under perf stat alone
  perf-prof    the command above, stdout and stderr to files; handled = the events its SIGUSR2
   multi-trace state dump (sent just before the SIGINT that ends it) says were delivered ("order:
               N delivered"); lost = its "lost N events (total)" (stderr) or the dump's count.
               SIGUSR1 (every second) prints its own statistics: the backed-up wake-ups (live,
               slots, bytes) and the wake-ups its trick found unnecessary; the last are shown
  multi-trace, the same without the perf stat alongside: the load's speed under multi-trace alone
   no perf stat
  perf sched   perf sched record -a -o FILE (perf's own choice of tracepoints: sched_switch,
   record      sched_waking, sched_stat_runtime, sched_migrate_task, ... with perf 6.1):
               written = perf's "(N samples)", lost from PERF_RECORD_LOST (perf report --stats,
               sched:sched_switch) or perf's own warning
  perf sched   perf sched latency -i FILE >/dev/null, run after the recording as its own process
   latency     (handled = the samples written)
  perf sched   the two perf processes together: CPU summed, RSS the largest; what perf spends to
   rec+lat     get multi-trace's answer (wake-up to switch-in latency) from the same load

The multi-trace and the perf sched record runs have a `perf stat -a` counting sched_switch,
sched_wakeup and sched_wakeup_new alongside (occurred; it costs the load some speed, alike in
both: compare the untraced speed under perf stat alone in the mode's title line). Every row
reports: the load's speed relative to untraced, occurred, handled (or written), lost, CPU time
(utime+stime from wait4: start-up, the whole run and the exit-time work, here the latency table)
and CPU per handled event, CPU per occurred event (the same basis for every row: perf sched record
writes more event types than the three), peak RSS (ru_maxrss). Then:

  rate         a paced same-CPU load on each of (up to) two CPUs, about --rate sched events/s in
               all (default 300k; the events per round trip are measured first in a 1 s paced run
               untraced): multi-trace's losses with default options, and its CPU per event
  long         with --long SECONDS: multi-trace with --detail=samecpu,-100us --than 1s -i 10000
               (a threshold that never fires: run-queue latencies stay far below 1 s) under a paced
               load of --rate/2 events/s, its VmRSS sampled every 10 s (first, max, last under
               the load; one sample before it), the backed-up wake-ups' slots likewise (SIGUSR1),
               CPU per event, the tables printed every 10 s counted and the pairs over the
               threshold summed. The target length is 600 s (--long 600).

Targets (reported, not asserted): no loss at 300k events/s with default options, <= 0.5 us of
CPU per event all included without --detail (perf record alone spends about 0.35 us per event
here just copying), RSS flat over a 10-minute run with --detail and a threshold that never fires.

The whole machine is profiled: keep runs short (--seconds). Needs root (or perf_event_paranoid
-1) and perf. Run with: make bench, or
  /usr/bin/python3 bench/multi_trace_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
"""

import os
import re
import signal
import subprocess
import sys
import time

from benchproc import (SCHED_EVENTS, CountedLoad, measure_perfprof, measure_sched_mode, paced_load, per_us,
                       print_problems, print_sched_table, run_bench, sched_bench_args, sched_bench_start)

RUNQ = ["-e", "sched:sched_wakeup,sched:sched_wakeup_new", "-e", "sched:sched_switch//key=next_pid/",
        "-k", "pid", "--order"]  # run-queue latency
DETAIL = ["--detail=samecpu,-100us"]
THAN = ["--than", "1s"]  # never reached by a run-queue latency on a working machine
PERF_POSTS = [("perf sched latency", ["latency"])]  # perf's way to the latency per task
TABLE_RE = re.compile(rb"^ *start => end +calls ", re.M)  # the header of each delay table
# A table row with --than: "... => ...  calls ... max(us)   N ( P%)": N pairs over the threshold.
THAN_RE = re.compile(rb"=>.*?(\d+) \( *[\d.]+%\) *$", re.M)
# SIGUSR1: "  backups: LIVE (SLOTS slots, BYTES bytes)" and "  unnecessary wake-ups: N".
BACKUPS_RE = re.compile(rb"^  backups: (\d+) \((\d+) slots, (\d+) bytes\)", re.M)
UNNECESSARY_RE = re.compile(rb"^  unnecessary wake-ups: (\d+)", re.M)
STATS_PERIOD = 1.0  # seconds between SIGUSR1 (and VmRSS samples) in the storm and rate runs
RSS_PERIOD = 10.0  # seconds between VmRSS samples and SIGUSR1 in the long run (and its -i)


# ---------------------------------------------------------------- measurements


def sigusr1(prof):
    prof.send(signal.SIGUSR1)  # from the VmRSS sampler's thread: no reaping there


def measure_multi_trace(args, tmp, tag, load, pp_args=(), count=True, period=STATS_PERIOD):
    """perf-prof multi-trace RUNQ PP_ARGS (benchproc.measure_perfprof) with VmRSS sampled and
    SIGUSR1 sent every `period` s; then from its stdout: the tables, the pairs over --than, its
    SIGUSR1 statistics (one per sample, in order)."""
    r = measure_perfprof(args, tmp, tag, "multi-trace", RUNQ + list(pp_args), load, period, count, sigusr1)
    with open(r["out_path"], "rb") as f:
        out = f.read()
    r["tables"] = len(TABLE_RE.findall(out))
    r["over"] = sum(int(m.group(1)) for m in THAN_RE.finditer(out))
    r["backups"] = [tuple(map(int, m.groups())) for m in BACKUPS_RE.finditer(out)]  # (live, slots, bytes)
    unnecessary = UNNECESSARY_RE.findall(out)
    r["unnecessary"] = int(unnecessary[-1]) if unnecessary else None
    if not r["tables"]:
        r["problems"].append(f"no table on stdout ({r['out_path']})")
    if not r["backups"]:
        r["problems"].append(f"no SIGUSR1 statistics on stdout ({r['out_path']})")
    if count:
        r["tool"] = "perf-prof multi-trace"
    return r


def events_per_trip(args, tmp, rate):
    """The sched events per round trip of the paced load, from a 1 s paced run untraced."""
    trips, cpus, run = paced_load(args, rate, seconds=1, per_trip=3.0)
    load = CountedLoad(tmp, "calibrate", run, SCHED_EVENTS)
    speed = load()
    return load.per_s / speed if speed else 3.0


def measure_rate(args, tmp, untraced_same):
    per_trip = events_per_trip(args, tmp, args.rate)
    trips, cpus, run = paced_load(args, args.rate, per_trip=per_trip)
    note = ""
    if untraced_same and untraced_same < trips * 1.05:
        note = f"(one copy tops out at {untraced_same:,.0f} round trips/s untraced)"
    load = CountedLoad(tmp, "rate-load", run, SCHED_EVENTS)  # sched events/s while the load runs
    r = measure_multi_trace(args, tmp, "rate-perfprof", load)
    r.update(cpus=cpus, note=note, per_trip=per_trip, rate_per_s=load.per_s,
             switches_per_s=load.counts["sched:sched_switch"] / load.seconds)
    return r


def measure_long(args, tmp):
    """--long: with --detail and --than 1s, -i 10000, VmRSS and SIGUSR1 every 10 s, under a paced
    load of --rate/2 sched events/s."""
    per_trip = events_per_trip(args, tmp, args.rate / 2)
    trips, cpus, run = paced_load(args, args.rate / 2, seconds=args.long, per_trip=per_trip)
    interval = ["-i", str(int(RSS_PERIOD * 1000))]
    r = measure_multi_trace(args, tmp, "long-perfprof", run, DETAIL + THAN + interval, period=RSS_PERIOD)
    r.update(cpus=cpus, target=args.rate / 2, options=" ".join(DETAIL + THAN + interval))
    return r


# ---------------------------------------------------------------- report


def print_columns():
    print("\ncolumns: load % = load speed / mean untraced speed; occurred = sched_switch + sched_wakeup +")
    print("  sched_wakeup_new counted by a perf stat -a over the profiler's lifetime (alongside both")
    print("  recorders alike); handled = events delivered to multi-trace (\"order: N delivered\" of its SIGUSR2")
    print("  dump before SIGINT) or perf's samples written (sched_stat_runtime, sched_waking, ... included);")
    print("  CPU s = utime + stime from wait4, everything included; CPU/event = CPU s / handled; CPU/occ =")
    print("  CPU s / occurred (one basis for every row); RSS = ru_maxrss; no perf stat = multi-trace again")
    print("  without perf stat alongside (the load's speed under multi-trace alone); rec+lat = the two perf")
    print("  processes: CPU summed, largest RSS. occurred - handled - lost: events perf stat counted outside")
    print("  multi-trace's window (start-up, exit) and, on a VM whose idle vCPUs count scheduler events but")
    print("  write none to a ring (perf record misses them alike), the wake-ups sent to an idle CPU")


def print_stats(r):
    """multi-trace's own statistics (its last SIGUSR1) under its row."""
    if r["backups"]:
        live, slots, nbytes = r["backups"][-1]
        print(f"  {r['tool']}: SIGUSR1 at the end: {live:,} wake-ups backed up ({slots:,} slots, {nbytes:,} bytes), "
              f"{fmt_opt(r['unnecessary'])} unnecessary wake-ups; {r['tables']} table(s)")


def loaded_rss(r):
    """The VmRSS samples (MB) taken under the load: all but the first, taken once perf-prof was
    ready, before the load started (and its rings were touched)."""
    return [mb for _, mb in r["rss_series"][1:]] or [r["rss_series"][0][1]]


def fmt_opt(v):
    return "?" if v is None else f"{v:,}"


def main():
    args = sched_bench_args(__doc__, "sched events/s of the rate test (the long run: half)",
                            "also a long run with --detail --than 1s -i 10000 for RSS (target 600; default 0: "
                            "skipped)", "skip perf sched record / latency")
    tmp = sched_bench_start(args, "multi-trace", f"multi-trace {' '.join(RUNQ)}",
                            "perf sched record -a + perf sched latency")
    if isinstance(tmp, int):
        return tmp
    t_start = time.monotonic()

    def measure():
        untraced_same = None
        summary = {}
        modes = [m for m in args.modes.split(",") if m]
        for mode in modes:
            untraced, rows = measure_sched_mode(
                args, tmp, mode, lambda tag, load, count: measure_multi_trace(args, tmp, tag, load, count=count),
                PERF_POSTS, "perf sched rec+lat")
            if mode == "same":
                untraced_same = untraced["before"]
            print_sched_table(args, mode, untraced, rows, "multi-trace")
            for r in rows[:2]:
                print_stats(r)
            summary[mode] = rows
            sys.stdout.flush()

        if modes:
            print_columns()

        if not args.no_rate:
            r = measure_rate(args, tmp, untraced_same)
            summary["rate"] = r
            print(f"\n== rate: paced same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target "
                  f"{args.rate:,} sched events/s ({r['per_trip']:.2f} events per round trip, measured untraced), "
                  f"measured {r['rate_per_s']:,.0f} events/s ({r['switches_per_s']:,.0f} switches/s) system-wide "
                  f"while the load ran ({r['speed']:,.0f} round trips/s) {r['note']}".rstrip())
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"   perf-prof multi-trace (default options): lost {r['lost']:,} of {r['occurred']:,} events "
                  f"({pct:.3f}%), handled {r['events']:,}, CPU {r['cpu_s']:.2f} s = "
                  f"{per_us(r['cpu_s'], r['events'])}/event, RSS {r['rss_mb']:.1f} MB")
            print_stats(r)
            print_problems(r)

        if args.long:
            r = measure_long(args, tmp)
            summary["long"] = r
            mbs = loaded_rss(r)
            slots = [s for _, s, _ in r["backups"][1:]] or [0]  # the first: before the load
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"\n== long: {args.long:g} s of perf-prof multi-trace (run-queue latency) {r['options']} under a "
                  f"paced same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target {r['target']:,.0f} "
                  f"sched events/s ({r['speed']:,.0f} round trips/s by the load)")
            print(f"   VmRSS every {RSS_PERIOD:g} s under the load: first {mbs[0]:.1f} MB, max {max(mbs):.1f} MB, "
                  f"last {mbs[-1]:.1f} MB ({len(mbs)} samples; {r['rss_series'][0][1]:.1f} MB before the load); "
                  f"peak RSS {r['rss_mb']:.1f} MB; backup slots (SIGUSR1): first {slots[0]:,}, max {max(slots):,}, "
                  f"last {slots[-1]:,}")
            print(f"   handled {r['events']:,}, lost {r['lost']:,} of {r['occurred']:,} ({pct:.3f}%), "
                  f"CPU {r['cpu_s']:.2f} s = {per_us(r['cpu_s'], r['events'])}/event; "
                  f"{r['tables']} tables on stdout ({int(args.long / RSS_PERIOD) + 1} expected: every 10 s and at exit); "
                  f"{r['over']:,} pairs over the threshold")
            print("   RSS series (s:MB): " + " ".join(f"{t:.0f}:{mb:.1f}" for t, mb in r["rss_series"]))
            print_problems(r)

        print_targets(args, summary)
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


def print_targets(args, summary):
    """The issue's targets against what this run measured."""
    print("\ntargets:")
    rate = summary.get("rate")
    if rate:
        print(f"  0 lost at {args.rate // 1000}k events/s with defaults: lost {rate['lost']:,} at "
              f"{rate['rate_per_s']:,.0f} events/s ({'met' if rate['lost'] == 0 else 'MISSED'})")
    cpu = [(f"{m} storm, no perf stat", rows[1]) for m, rows in summary.items() if isinstance(rows, list)]
    if rate:
        cpu.append(("rate", rate))
    for what, r in cpu:
        us = 1e6 * r["cpu_s"] / max(r["events"], 1)
        print(f"  <= 0.5 us CPU per event without --detail ({what}): {us:.3f} us "
              f"({'met' if us <= 0.5 else 'MISSED'})")
    for m, rows in summary.items():
        if isinstance(rows, list) and len(rows) > 2:
            print(f"  (perf sched record alone, {m} storm: {per_us(rows[2]['cpu_s'], rows[2]['events'])} per event "
                  f"written)")
    long = summary.get("long")
    if long:
        mbs = loaded_rss(long)
        grew = mbs[-1] - mbs[0]
        print(f"  RSS flat over {args.long:g} s (target: 600 s) with "
              f"--detail and --than 1s: "
              f"first {mbs[0]:.1f} MB, max {max(mbs):.1f} MB, last {mbs[-1]:.1f} MB ({grew:+.1f} MB; "
              f"{long['over']:,} pairs over the threshold)")
    else:
        print("  RSS flat over 10 minutes: not run (--long 600)")


if __name__ == "__main__":
    sys.exit(main())
