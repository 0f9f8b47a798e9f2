#!/usr/bin/python3
"""Overhead of `perf-prof task-state` on the whole machine under a context-switch storm, side by
side with `perf sched record -a` + `perf sched latency` and `perf sched timehist -s` on the same
load, in one run.

Loads (bench/pingpong.c): two threads hand the turn back and forth (futex by default), both on
one CPU ("same") or one on each of two CPUs ("diff"). A round trip is two sched_switch events
(more in diff mode, through idle) and one or two sched_wakeup (none when the waker is preempted
before the other thread sleeps), all of which task-state handles. For each mode:

  untraced     the load alone, before and after the traced runs (the mean is the baseline): round
               trips per second; then, in a 1 s run with perf stat -a counting alongside, the
               switches and sched events per second and the load's speed under perf stat alone
  perf-prof    perf-prof task-state (no -p: every CPU, default options), stdout and stderr to
   task-state  files; handled = the events its SIGUSR2 state dump (sent just before the SIGINT
               that ends it) says were delivered ("order: N delivered": task-state reads in time
               order; the device's "N samples" counts only for -N); lost = its "lost N events
               (total)" (stderr) or the dump's count
  task-state,  the same without the perf stat alongside: the load's speed under task-state alone
   no perf stat
  perf sched   perf sched record -a -o FILE (perf's own choice of tracepoints: sched_switch,
   record      sched_waking, sched_stat_runtime, sched_migrate_task, ... with perf 6.1):
               written = perf's "(N samples)", lost from PERF_RECORD_LOST (perf report --stats,
               sched:sched_switch) or perf's own warning
  perf sched   perf sched latency -i FILE >/dev/null, run after the recording as its own process
   latency     (handled = the samples written)
  perf sched   perf sched timehist -s -i FILE >/dev/null, likewise
   timehist -s
  perf sched   the three perf processes together: CPU summed, RSS the largest; what perf spends to
   rec+lat+th  get task-state's answer (latency per task, time per state) from the same load

The perf-prof task-state and the perf sched record runs have a `perf stat -a` counting
sched_switch, sched_wakeup and sched_wakeup_new alongside (occurred; it costs the load some speed,
alike in both: compare the untraced speed under perf stat alone in the mode's title line).
Every row reports: the load's speed relative to untraced, occurred, handled (or written), lost,
CPU time (utime+stime from wait4: start-up, the whole run and the exit-time work, here task-state's
table) and CPU per handled event, CPU per occurred event (the same basis for every row: perf sched
record writes more event types than the three), peak RSS (ru_maxrss). occurred - handled - lost
for task-state: the events perf stat counts outside task-state's window, and on a VM whose idle
vCPUs count scheduler events but sample none (perf record loses them alike, unreported: about
half the wake-ups in diff mode, those done on the idle CPU the woken thread runs on). Then:

  rate         a paced same-CPU load on each of (up to) two CPUs, about --rate switches/s in all
               (default 300k): task-state's losses with default options, and its CPU per event
  long         with --long SECONDS (e.g. 600): task-state -i 10000 under a paced load of --rate/2
               switches/s, its VmRSS sampled every 10 s (first, max, last), CPU per event, and
               the tables it printed every 10 s counted

Targets (reported, not asserted): no loss at 300k switches/s with default options, <= 0.4 us of
CPU per event all included (nothing is printed per event; perf record alone spends about 0.35 us
per event here just copying), the load keeps >= 90% of its untraced speed, RSS flat over a
10-minute run (--long 600).

The whole machine is profiled: keep runs short (--seconds). Needs root (or perf_event_paranoid
-1) and perf. Run with: make bench, or
  /usr/bin/python3 bench/task_state_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
"""

import os
import re
import subprocess
import sys
import time

from benchproc import (CountedLoad, measure_perfprof, measure_sched_mode, paced_load, per_us, print_problems,
                       print_sched_table, run_bench, sched_bench_args, sched_bench_start)

# perf's post-processing of its recording: what gives task-state's answer (latency per task, time
# per state).
PERF_POSTS = [("perf sched latency", ["latency"]), ("perf sched timehist -s", ["timehist", "-s"])]
TABLE_RE = re.compile(rb"^St +calls ", re.M)  # the header of each table task-state prints
RSS_PERIOD = 10.0  # seconds between VmRSS samples in the long run (and -i of task-state there)


# ---------------------------------------------------------------- measurements


def measure_task_state(args, tmp, tag, load, pp_args=(), rss_period=None, count=True):
    """perf-prof task-state (benchproc.measure_perfprof), and the tables it printed counted."""
    r = measure_perfprof(args, tmp, tag, "task-state", pp_args, load, rss_period, count)
    with open(r["out_path"], "rb") as f:
        r["tables"] = len(TABLE_RE.findall(f.read()))
    if not r["tables"]:
        r["problems"].append(f"no table on stdout ({r['out_path']})")
    return r


def measure_rate(args, tmp, untraced_same):
    trips, cpus, run = paced_load(args, args.rate)
    note = ""
    if untraced_same and untraced_same < trips * 1.05:
        note = f"(one copy tops out at {2 * untraced_same / 1000:.0f}k switches/s untraced)"
    load = CountedLoad(tmp, "rate-load", run)  # sched_switch/s while the load runs
    r = measure_task_state(args, tmp, "rate-perfprof", load)
    r.update(cpus=cpus, note=note, rate_per_s=load.per_s, load_rate_per_s=2 * r["speed"])
    return r


def measure_long(args, tmp):
    trips, cpus, run = paced_load(args, args.rate / 2, seconds=args.long)
    r = measure_task_state(args, tmp, "long-perfprof", run, ["-i", str(int(RSS_PERIOD * 1000))], RSS_PERIOD)
    r.update(cpus=cpus, target=args.rate / 2)
    return r


# ---------------------------------------------------------------- report


def print_columns():
    print("\ncolumns: load % = load speed / mean untraced speed; occurred = sched_switch + sched_wakeup +")
    print("  sched_wakeup_new counted by a perf stat -a over the profiler's lifetime (alongside both")
    print("  recorders alike); handled = events delivered to task-state (its SIGUSR2 dump before SIGINT)")
    print("  or perf's samples written (sched_stat_runtime, sched_waking, ... included); CPU s = utime +")
    print("  stime from wait4, everything included; CPU/event = CPU s / handled; CPU/occ = CPU s /")
    print("  occurred (one basis for every row); RSS = ru_maxrss; no perf stat = task-state again without")
    print("  perf stat alongside (the load's speed under task-state alone); rec+lat+timehist = the three perf")
    print("  processes: CPU summed, largest RSS. occurred - handled - lost: events perf stat counted outside")
    print("  task-state's window (start-up, exit) and, on a VM whose idle vCPUs count scheduler events but")
    print("  write none to a ring (perf record misses them alike), the wake-ups sent to an idle CPU")


def main():
    args = sched_bench_args(__doc__, "switches/s of the rate test (the long run: half)",
                            "also a long run of task-state -i 10000 for RSS (e.g. 600; default 0: skipped)",
                            "skip perf sched record / latency / timehist")
    tmp = sched_bench_start(args, "task-state", "task-state",
                            "perf sched record -a + perf sched latency / timehist -s")
    if isinstance(tmp, int):
        return tmp
    t_start = time.monotonic()

    def measure():
        untraced_same = None
        modes = [m for m in args.modes.split(",") if m]
        for mode in modes:
            untraced, rows = measure_sched_mode(
                args, tmp, mode, lambda tag, load, count: measure_task_state(args, tmp, tag, load, count=count),
                PERF_POSTS, "perf sched rec+lat+timehist")
            if mode == "same":
                untraced_same = untraced["before"]
            print_sched_table(args, mode, untraced, rows, "task-state")
            sys.stdout.flush()

        if modes:
            print_columns()

        if not args.no_rate:
            r = measure_rate(args, tmp, untraced_same)
            print(f"\n== rate: paced same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target "
                  f"{args.rate:,} switches/s, measured {r['rate_per_s']:,.0f}/s system-wide while the load ran "
                  f"({r['load_rate_per_s']:,.0f}/s by the load) {r['note']}".rstrip())
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"   perf-prof task-state (default options): lost {r['lost']:,} of {r['occurred']:,} events "
                  f"({pct:.3f}%), handled {r['events']:,}, CPU {r['cpu_s']:.2f} s = "
                  f"{per_us(r['cpu_s'], r['events'])}/event, RSS {r['rss_mb']:.1f} MB")
            print_problems(r)

        if args.long:
            r = measure_long(args, tmp)
            series = r["rss_series"]
            mbs = [mb for _, mb in series]
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"\n== long: {args.long:g} s of perf-prof task-state -i {int(RSS_PERIOD * 1000)} under a paced "
                  f"same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target {r['target']:,.0f} switches/s "
                  f"({2 * r['speed']:,.0f}/s by the load)")
            print(f"   VmRSS every {RSS_PERIOD:g} s: first {mbs[0]:.1f} MB, max {max(mbs):.1f} MB, last {mbs[-1]:.1f} MB "
                  f"({len(mbs)} samples); peak RSS {r['rss_mb']:.1f} MB")
            print(f"   handled {r['events']:,}, lost {r['lost']:,} of {r['occurred']:,} ({pct:.3f}%), "
                  f"CPU {r['cpu_s']:.2f} s = {per_us(r['cpu_s'], r['events'])}/event; "
                  f"{r['tables']} tables on stdout ({int(args.long / RSS_PERIOD) + 1} expected: every 10 s and at exit)")
            print("   RSS series (s:MB): " + " ".join(f"{t:.0f}:{mb:.1f}" for t, mb in series))
            print_problems(r)

        print(f"\ntargets: 0 lost at 300k switches/s with default options, <=0.4 us CPU per event all included "
              f"(perf record alone ~0.35 us/event copying), load >=90% of untraced, RSS flat over 10 minutes "
              f"(--long 600{'' if args.long else ': not run'})")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
