#!/usr/bin/python3
"""Overhead of `perf-prof trace -e sched:sched_switch` under a context-switch storm, side by side
with `perf record -e sched:sched_switch -a` on the same load, in one run.

Loads (bench/pingpong.c): two threads ping-pong a byte through pipes, both on one CPU ("same")
or one on each of two CPUs ("diff"). For each mode:

  untraced     the load alone: its round trips per second, and sched_switch/s (perf stat -a)
  perf-prof    perf-prof trace, stdout to a file: events delivered = lines written
  perf-prof    the same with stdout to /dev/null: profiler CPU per event, where the events are
   >/dev/null  counted by a concurrent `perf stat -e sched:sched_switch -a` minus those lost
  perf record  perf record -a -o FILE: events delivered = perf's "(N samples)", events lost
               from PERF_RECORD_LOST (perf report --stats / perf's own warning)

Every profiled run reports: load speed relative to untraced, events, lost, profiler CPU time
(utime+stime from wait4) per event, peak RSS (ru_maxrss). Then:

  idle         sched_switch/s on the (more or less) idle machine with and without perf-prof trace,
               and the switches perf-prof itself takes part in (prev or next is perf-prof)
  rate         a paced load of about --rate sched_switch/s (default 320k): perf-prof's losses with
               the default -m (stdout >/dev/null), then the same load with its lines to a file and
               with perf record -a: CPU per event of both and their ratio

Targets (reported, not asserted): <= 1 us profiler CPU per printed event and <= 1.2x perf
record's CPU per sample written, no loss at 320k events/s, load keeps >= 95% of its untraced
speed, < 1k events/s self-induced when idle.

The whole machine is profiled: keep runs short (--seconds). Needs root (or perf_event_paranoid
-1) and perf. Run with: make bench, or
  /usr/bin/python3 bench/trace_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from benchproc import (Proc, SwitchCounter, fmt_int, may_profile_system, ncpus, perf_record_lost,
                       perfprof_lost, private_perf_prof, run_bench, run_load, stderr_problems, tools_missing,
                       wait_ready)

TRACE_EVENT = "sched:sched_switch"


# ---------------------------------------------------------------- processes


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return n
            n += b.count(b"\n")


# ---------------------------------------------------------------- measurements


def measure_untraced(args, tmp, mode):
    speed = run_load(args, mode)
    # The switch rate in a second, shorter run: perf stat's own counting slows the load a little.
    stat = SwitchCounter(tmp, f"untraced-{mode}")
    t0 = time.monotonic()
    run_load(args, mode, seconds=1)
    n = stat.stop()
    return {"tool": "untraced", "speed": speed, "switches_per_s": n / (time.monotonic() - t0)}


def measure_perfprof(args, tmp, mode, to_file, tag=None, rate=None, cpus=None, seconds=None):
    """perf-prof trace while the load runs. To a file: events = lines. To /dev/null: events from
    perf stat running alongside (which costs the load a little speed), and the switch rate
    during the load alone from a second perf stat around it."""
    tag = tag or f"perfprof-{mode}-{'file' if to_file else 'null'}"
    out_path = os.path.join(tmp, tag + ".out")
    err_path = os.path.join(tmp, tag + ".err")
    stat = None if to_file else SwitchCounter(tmp, tag)
    load_rate = None
    with open(out_path if to_file else os.devnull, "wb") as out, open(err_path, "wb") as err:
        prof = Proc([args.perf_prof, "trace", "-e", TRACE_EVENT] + args.trace_args.split(), out, err)
        try:
            wait_ready(prof, ncpus(), 0.3, err_path)
            if mode:
                load_stat = None if to_file else SwitchCounter(tmp, tag + "-load")
                t0 = time.monotonic()
                speed = run_load(args, mode, rate=rate, cpus=cpus, seconds=seconds)
                if load_stat:
                    load_rate = load_stat.stop() / (time.monotonic() - t0)
            else:
                speed = None
                time.sleep(seconds)
            time.sleep(0.2)
        finally:
            prof.stop()
    occurred = stat.stop() if stat else None
    lost = perfprof_lost(err_path)
    r = {
        "tool": "perf-prof" if to_file else "perf-prof >null",
        "speed": speed,
        "occurred": occurred,
        "load_rate": load_rate,
        "lost": lost,
        "cpu_s": prof.cpu_s(),
        "rss_mb": prof.rss_mb(),
        "stat_seconds": stat.seconds if stat else None,
        "problems": stderr_problems(err_path),
        "out_path": out_path if to_file else None,
        "pid": prof.pid,
        "exit": prof.exit_code(),
    }
    if to_file:
        r["events"] = count_lines(out_path)
        r["per_event_basis"] = r["events"]
    else:
        # perf stat's window encloses perf-prof's; the difference is the idle start-up/tear-down.
        r["events"] = None
        r["per_event_basis"] = max(occurred - lost, 1)
    return r


def measure_perf_record(args, tmp, mode, tag=None, rate=None, cpus=None):
    tag = tag or f"perf-record-{mode}"
    data = os.path.join(tmp, tag + ".data")
    err_path = os.path.join(tmp, tag + ".err")
    with open(err_path, "wb") as err:
        rec = Proc(["perf", "record", "-e", TRACE_EVENT, "-a", "-o", data], subprocess.DEVNULL, err)
        try:
            wait_ready(rec, ncpus(), 0.5)
            speed = run_load(args, mode, rate=rate, cpus=cpus)
            time.sleep(0.2)
        finally:
            rec.stop()
    with open(err_path, errors="replace") as f:
        err_text = f.read()
    m = re.search(r"\((\d+) samples\)", err_text)
    events = int(m.group(1)) if m else 0
    lost = perf_record_lost(data, err_text, TRACE_EVENT)
    return {
        "tool": "perf record",
        "speed": speed,
        "occurred": None,
        "events": events,
        "lost": lost,
        "cpu_s": rec.cpu_s(),
        "rss_mb": rec.rss_mb(),
        "per_event_basis": max(events, 1),
        "data_mb": os.path.getsize(data) / 1e6 if os.path.exists(data) else 0,
    }


def measure_idle(args, tmp):
    stat = SwitchCounter(tmp, "idle-base")
    time.sleep(args.idle_seconds)
    base = stat.stop() / stat.seconds
    stat = SwitchCounter(tmp, "idle-with")
    r = measure_perfprof(args, tmp, None, True, tag="idle-perfprof", seconds=args.idle_seconds)
    with_pp = stat.stop() / stat.seconds
    own = 0
    pat = re.compile(rb"perf-prof:%d\b" % r["pid"])
    with open(r["out_path"], "rb") as f:
        for line in f:
            if pat.search(line):
                own += 1
    return {
        "base_per_s": base,
        "with_per_s": with_pp,
        "own_per_s": own / args.idle_seconds,
        "cpu_s": r["cpu_s"],
        "lost": r["lost"],
        "problems": r["problems"],
    }


def measure_rate(args, tmp, untraced_same):
    # A same-CPU copy of the load on each of (up to) two CPUs, paced so that together they make
    # --rate switches/s (two per round trip) while leaving each CPU partly idle for the profiler.
    cpus = list(range(min(2, ncpus())))
    trips = args.rate / 2 / len(cpus)
    note = ""
    if untraced_same and untraced_same < trips * 1.05:
        note = f"(one copy tops out at {2 * untraced_same / 1000:.0f}k switches/s untraced)"
    r = measure_perfprof(args, tmp, "same", False, tag="rate-perfprof", rate=int(trips), cpus=cpus)
    r["rate_per_s"] = r["load_rate"]
    r["load_rate_per_s"] = 2 * r["speed"]
    r["note"] = note
    # The same paced load with perf-prof's lines written to a file, and with perf record.
    r["file"] = measure_perfprof(args, tmp, "same", True, tag="rate-perfprof-file", rate=int(trips), cpus=cpus)
    os.unlink(r["file"]["out_path"])
    r["record"] = None
    if not args.no_perf:
        r["record"] = measure_perf_record(args, tmp, "same", tag="rate-perf-record", rate=int(trips), cpus=cpus)
        os.unlink(os.path.join(tmp, "rate-perf-record.data"))
    return r


def per_event_us(r):
    return 1e6 * r["cpu_s"] / r["per_event_basis"]


# ---------------------------------------------------------------- report


def print_mode_table(args, mode, untraced, rows):
    print(f"\n== mode {mode}: pingpong ({args.via}) {'both threads on CPU 0' if mode == 'same' else 'threads on CPU 0 and 1'}"
          f", untraced {untraced['before']:,.0f} (before) / {untraced['after']:,.0f} (after) round trips/s,"
          f" {untraced['switches_per_s']:,.0f} switches/s")
    hdr = f"{'tool':<16} {'load rt/s':>11} {'load %':>7} {'switches':>11} {'delivered':>11} {'lost':>9} {'CPU s':>7} {'CPU/event':>10} {'RSS MB':>7}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        pct = 100.0 * r["speed"] / untraced["speed"] if r.get("speed") else 0
        per = per_event_us(r)
        lost = fmt_int(r["lost"])
        print(f"{r['tool']:<16} {r['speed']:>11,.0f} {pct:>6.1f}% {fmt_int(r['occurred']):>11} "
              f"{fmt_int(r['events']):>11} {lost:>9} {r['cpu_s']:>7.2f} {per:>8.3f}us {r['rss_mb']:>7.1f}")
        for p in r.get("problems", [])[:3]:
            print(f"    stderr: {p}")
    print_ratio(rows[0], rows[-1] if rows[-1]["tool"] == "perf record" else None)


def print_ratio(printed, record):
    """perf-prof's CPU per printed line over perf record's per sample written (target <= 1.2)."""
    if record:
        print(f"CPU per event, perf-prof (lines to a file) / perf record (samples written): "
              f"{per_event_us(printed):.3f} / {per_event_us(record):.3f} us = "
              f"{per_event_us(printed) / per_event_us(record):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/bench/pingpong")
    ap.add_argument("--seconds", type=float, default=2.0, help="load duration of each run")
    ap.add_argument("--idle-seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=int, default=320000, help="sched_switch/s of the rate test")
    ap.add_argument("--modes", default="same,diff")
    ap.add_argument("--via", default="futex", choices=["futex", "pipe"], help="the load's hand-off")
    ap.add_argument("--trace-args", default="", help="extra perf-prof trace options, e.g. '-m 256'")
    ap.add_argument("--no-perf", action="store_true", help="skip perf record")
    ap.add_argument("--no-idle", action="store_true")
    ap.add_argument("--no-rate", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    if not may_profile_system():
        print("bench: skipped: system-wide tracing needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    if not shutil.which("perf"):
        print("bench: perf not found", file=sys.stderr)
        return 1

    tmp = tempfile.mkdtemp(prefix="perfprof-bench-")
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    t_start = time.monotonic()
    print(f"bench: {ncpus()} CPUs, {args.seconds:g} s per load run, perf-prof {args.perf_prof} "
          f"trace -e {TRACE_EVENT} {args.trace_args}".rstrip())
    print(f"bench: the machine is profiled as a whole: other activity adds events and noise; "
          f"load average {os.getloadavg()[0]:.2f}")

    def measure():
        untraced_same = None
        for mode in [m for m in args.modes.split(",") if m]:
            untraced = measure_untraced(args, tmp, mode)
            if mode == "same":
                untraced_same = untraced["speed"]
            rows = [measure_perfprof(args, tmp, mode, True), measure_perfprof(args, tmp, mode, False)]
            os.unlink(rows[0]["out_path"])  # hundreds of MB: keep the disk free between runs
            if not args.no_perf:
                rows.append(measure_perf_record(args, tmp, mode))
                for f in os.listdir(tmp):
                    if f.endswith(".data"):
                        os.unlink(os.path.join(tmp, f))
            # Untraced again: on a shared machine the baseline drifts; compare with the mean.
            after = run_load(args, mode)
            untraced["before"], untraced["after"] = untraced["speed"], after
            untraced["speed"] = (untraced["speed"] + after) / 2
            print_mode_table(args, mode, untraced, rows)
            sys.stdout.flush()

        print("\ncolumns: load % = load speed / mean untraced speed; switches = sched_switch counted by a")
        print("  perf stat -a over the profiler's lifetime (>null row only: it slows the load a little);")
        print("  delivered = lines printed (perf-prof) or samples written (perf record); CPU/event = the")
        print("  profiler's utime+stime / delivered (>null row: / (switches - lost)); RSS = ru_maxrss")

        if not args.no_idle:
            idle = measure_idle(args, tmp)
            print(f"\n== idle ({args.idle_seconds:g} s each): sched_switch/s without perf-prof {idle['base_per_s']:,.0f}, "
                  f"with perf-prof trace {idle['with_per_s']:,.0f} (difference {idle['with_per_s'] - idle['base_per_s']:+,.0f}); "
                  f"switches of perf-prof itself {idle['own_per_s']:,.1f}/s; perf-prof CPU {idle['cpu_s']:.3f} s")

        if not args.no_rate:
            r = measure_rate(args, tmp, untraced_same)
            print(f"\n== rate: paced same-CPU load on CPU 0 and CPU 1, target {args.rate:,} switches/s, measured "
                  f"{r['rate_per_s']:,.0f}/s system-wide while the load ran ({r['load_rate_per_s']:,.0f}/s by the load) {r['note']}")
            m = "default -m" if "-m" not in args.trace_args.split() else args.trace_args
            print(f"   perf-prof trace ({m}, stdout >/dev/null): lost {r['lost']:,} of {r['occurred']:,} "
                  f"events, CPU {r['cpu_s']:.2f} s = {per_event_us(r):.3f} us/event, "
                  f"RSS {r['rss_mb']:.1f} MB")
            for p in r["problems"][:3]:
                print(f"    stderr: {p}")
            f = r["file"]
            print(f"   perf-prof trace ({m}, stdout to a file): {f['events']:,} lines, lost {f['lost']:,}, "
                  f"CPU {f['cpu_s']:.2f} s = {per_event_us(f):.3f} us/line, RSS {f['rss_mb']:.1f} MB")
            for p in f["problems"][:3]:
                print(f"    stderr: {p}")
            rec = r["record"]
            if rec:
                print(f"   perf record -a: {rec['events']:,} samples, lost {rec['lost']:,}, CPU {rec['cpu_s']:.2f} s "
                      f"= {per_event_us(rec):.3f} us/sample, RSS {rec['rss_mb']:.1f} MB")
                print("   ", end="")
                print_ratio(f, rec)
        print("\ntargets: <=1 us CPU per printed event and <=1.2x perf record's per sample, 0 lost at 320k/s, "
              "load >=95% of untraced, <1k/s self-induced when idle")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
