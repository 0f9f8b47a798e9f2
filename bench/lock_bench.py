#!/usr/bin/python3
"""Overhead of `perf-prof lock` on a lock-heavy program, side by side with `perf trace -s -e
futex` (perf 6.1's per-thread syscall summary: what perf has for user-space locks; `perf lock`
traces kernel locks only, lock:contention_begin/end, and reports none of a pthread mutex's
waits) and `perf record` of the same two tracepoints (the kernel's part alone), in one run.

Loads (tests/workloads/lockhold, SECONDS long, printing the operations it made):
  handoff  two threads pass a turn through a pthread mutex and condition variable: every turn
           is a wake and a blocked wait. With OUTSIDE 0 the program does nothing else (the
           worst case: ~3.7 us a turn, ~600k futex calls/s, all of its time in futex calls and
           switches); OUTSIDE 20000 adds ~5 us of work a turn (~300k futex calls/s, half its
           time), OUTSIDE 100000 ~25 us (~90k/s, a lock-heavy program: an eighth of its time);
  storm    THREADS threads take and release one pthread mutex with nothing between (up to
           millions of futex calls a second). A mutex storm's speed is not a measure of
           overhead: slowing the futex calls changes how often the lock changes hands (a traced
           storm often runs faster) and its futex rate swings from run to run; its CPU per
           futex call is. The load waits for a byte on stdin, so that each tool is attached (-p,
its events open) before it starts; each tool ends when the load does.

The handoff runs on CPU 0 (both threads: a handoff is then a context switch on one CPU, steadier
than across two CPUs, where its speed swings fourfold with idle wake-ups), the storm on every
CPU (on one, its mutex is hardly ever contended), the tools on CPU 1. Each case runs --reps times (default 3), the cases interleaved; the table shows medians. Rows,
per load:
  untraced        the load alone: the baseline
  perf stat       perf stat -e syscalls:sys_enter_futex -p: the futex calls the load makes
                  (counted alongside perf-prof in the next row, and alone here for its speed)
  perf-prof lock  perf-prof lock -p (default options) with perf stat counting alongside: its CPU
                  (utime+stime from wait4) per futex call counted
  lock, alone     the same without perf stat: the load's speed under perf-prof lock alone
  lock -g         perf-prof lock -g -p: stacks of every futex call
  lock, all CPUs  perf-prof lock on every CPU (no -p): per-CPU events cost the load's context
                  switches nothing, where per-thread ones (-p, perf stat -p, perf trace -p) do;
                  its CPU per call counts the other processes' futex calls in the numerator only
  perf record     perf record -e syscalls:sys_enter_futex,syscalls:sys_exit_futex -p: the same
                  records written by the kernel (its CPU: writing them to a file)
  perf trace -s -a  perf trace -s -e futex on every CPU, output to a file (with -p it follows
                  no thread created after it attached: the load's workers)

Columns: ops/s and speed (against untraced), ops/CPU (the load's operations per second of its own
CPU time, utime+stime from wait4, against untraced: what tracing adds to its futex calls, less
sensitive than wall speed to other work sharing the CPUs), futex calls (perf stat alongside),
the tool's CPU time and CPU per futex call.

Targets (issue 28, reported, not asserted): <= 0.5 us of CPU per futex event, the load keeps
>= 90 % of its untraced speed.

Needs root and perf. Run with:
  /usr/bin/python3 bench/lock_bench.py --perf-prof ./perf-prof --load build/workloads/lockhold
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchproc import Proc, kill_started, perf_event_fds  # noqa: E402


def start_load(args, mode, outside):
    cpus = args.load_cpu if mode == "handoff" else "0-%d" % (os.cpu_count() - 1)
    return Proc(["taskset", "-c", cpus, args.load, mode, str(args.threads), str(int(args.seconds * 1000)), str(outside), "wait"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def release(load):
    load.p.stdin.write(b"g")
    load.p.stdin.close()


def ops_of(load):
    """(operations, seconds) the load printed."""
    out = load.p.stdout.read().decode()
    m = re.search(r"lockhold: (\d+) ops in (\d+) ns", out)
    if not m:
        raise RuntimeError("load printed no ops line: " + out)
    return int(m.group(1)), int(m.group(2)) / 1e9


def attach(args, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
    p = Proc(["taskset", "-c", args.tool_cpu] + cmd, stdout=stdout, stderr=stderr)
    deadline = time.monotonic() + 15
    while perf_event_fds(p.pid) == 0:
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("%s did not open its events" % cmd[0])
        time.sleep(0.02)
    time.sleep(0.3)  # the rest of its set-up
    return p


def run_case(args, tmp, mode, outside, tools, count):
    """The load under `tools` (argv builders taking the pid), perf stat counting alongside when
    `count`. Returns (ops/s, ops per CPU second of the load, [rusage cpu s per tool], futex
    calls or None)."""
    load = start_load(args, mode, outside)
    procs = [attach(args, t(load.pid), stderr=open(os.path.join(tmp, "tool%d.err" % i), "w"))
             for i, t in enumerate(tools)]
    stat_out = os.path.join(tmp, "stat.csv")
    stat = None
    if count:
        stat = attach(args, ["perf", "stat", "-x,", "-o", stat_out, "-e", "syscalls:sys_enter_futex", "-p",
                       str(load.pid)])
    release(load)
    ops, secs = ops_of(load)
    load.wait()
    rate, per_cpu = ops / secs, ops / max(load.cpu_s(), 1e-9)
    cpus = []
    for p in procs:  # -p runs end with the load; system-wide ones at SIGINT
        deadline = time.monotonic() + 3
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        p.stop()
        cpus.append(p.cpu_s())
    calls = None
    if stat:
        stat.stop()
        with open(stat_out) as f:
            m = re.search(r"^(\d+),,syscalls:sys_enter_futex", f.read(), re.M)
            calls = int(m.group(1)) if m else None
    for i in range(len(tools)):
        err = open(os.path.join(tmp, "tool%d.err" % i)).read().strip()
        if err:
            print("  stderr of %s: %s" % (tools[i](load.pid)[0], err[:300]))
    return rate, per_cpu, cpus, calls


def bench_load(args, tmp, mode, outside):
    """Each case --reps times, interleaved (the machine's load drifts): medians."""
    pp = lambda extra: (lambda pid: [args.perf_prof, "lock", *extra, "-p", str(pid)])  # noqa: E731
    out, data = os.path.join(tmp, "trace.out"), os.path.join(tmp, "perf.data")
    cases = (("untraced", None, False),
             ("perf stat", None, True),
             ("perf-prof lock", pp([]), True),
             ("lock, alone", pp([]), False),
             ("lock -g", pp(["-g"]), True),
             ("lock, all CPUs", lambda pid: [args.perf_prof, "lock"], True),
             ("perf record", lambda pid: ["perf", "record", "-q", "-o", data, "-e",
                                          "syscalls:sys_enter_futex,syscalls:sys_exit_futex", "-p", str(pid)], True),
             ("perf trace -s -a", lambda pid: ["perf", "trace", "-s", "-a", "-e", "futex", "-o", out], True))
    results = {label: [] for label, _, _ in cases}
    for _ in range(args.reps):
        for label, tool, count in cases:
            rate, per_cpu, cpus, calls = run_case(args, tmp, mode, outside, [tool] if tool else [], count)
            results[label].append((rate, cpus[0] if cpus else 0.0, calls, per_cpu))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    base = med([r for r, _, _, _ in results["untraced"]])
    base_cpu = med([p for _, _, _, p in results["untraced"]])
    print("\nlockhold %s %d threads, %g s, outside %d; medians of %d runs; untraced %.0f ops/s (%s), "
          "%.0f ops per CPU second of the load"
          % (mode, args.threads if mode == "storm" else 2, args.seconds, outside, args.reps, base,
             ", ".join("%.0f" % r for r, _, _, _ in results["untraced"]), base_cpu))
    print("  %-16s %12s %8s %10s %14s %10s %12s"
          % ("tool", "ops/s", "speed", "ops/CPU", "futex calls", "CPU s", "CPU us/call"))
    for label, _, _ in cases[1:]:
        rs = results[label]
        rate = med([r for r, _, _, _ in rs])
        per_cpu = med([p for _, _, _, p in rs])
        calls = [c for _, _, c, _ in rs if c]
        pers = [cpu * 1e6 / c for _, cpu, c, _ in rs if c]
        print("  %-16s %12.0f %7.1f%% %9.1f%% %14s %10.3f %12s"
              % (label, rate, 100 * rate / base, 100 * per_cpu / base_cpu,
                 "{:,}".format(med(calls)) if calls else "-", med([cpu for _, cpu, _, _ in rs]),
                 "%.3f" % med(pers) if pers and label != "perf stat" else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/workloads/lockhold")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--load-cpu", default="0", help="the load's CPUs (taskset), default 0: a steady handoff")
    ap.add_argument("--tool-cpu", default="1", help="the tools' CPUs (taskset), default 1")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("lock_bench: needs root")
    args.perf_prof, args.load = os.path.abspath(args.perf_prof), os.path.abspath(args.load)
    with tempfile.TemporaryDirectory(prefix="lock_bench.") as tmp:
        try:
            for mode, outside in (("handoff", 0), ("handoff", 20000), ("handoff", 100000), ("storm", 0)):
                bench_load(args, tmp, mode, outside)
        finally:
            kill_started()


if __name__ == "__main__":
    main()
