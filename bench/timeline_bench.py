#!/usr/bin/env python3
"""task-state --timeline on the whole machine for --seconds (default 600) under a fork/sleep load:
a shell loop starting short commands (each a new task: fork, exec, exit) and --sleepers processes
sleeping --nap ms in a loop (wake-ups and switches on every CPU). perf-prof's VmRSS is sampled
every --period seconds, with the timeline file's size; at the end the series is printed, the file
is checked to be complete JSON (parsed, counted), and the bench fails (exit 1) when the RSS grew
by more than --slack (default 10 %) plus 2 MB between the end of the first --warmup seconds and the
end, when perf-prof did not exit 0 on SIGINT, or wrote anything on stderr but lost-event counts.
Needs root.
"""

import argparse
import json
import os
import signal
import sys
import tempfile
import time

import benchproc as bp


def start_load(args):
    """The fork loop and the sleepers."""
    procs = [bp.Proc(["/bin/sh", "-c", "while :; do /bin/true; sleep 0.%03d; done" % args.fork_pause_ms])]
    nap = "%.3f" % (args.nap / 1000.0)
    for _ in range(args.sleepers):
        procs.append(bp.Proc(["/bin/sh", "-c", "while :; do sleep %s; done" % nap]))
    return procs


def check_file(path):
    """The file's events and slices, each line parsed as the writer puts them (one event a line):
    10 minutes make gigabytes, which json.loads of the whole would need many times over in
    memory. Raises ValueError unless the file is one complete trace-event object."""
    events = slices = 0
    with open(path, "rb") as f:
        if f.readline() != b'{"traceEvents":[\n':
            raise ValueError("the file does not begin with the traceEvents array")
        last = None
        for line in f:
            if last is not None:
                e = json.loads(last.rstrip(b",\n").decode("utf-8"))
                events += 1
                slices += e["ph"] == "X"
            last = line
    if last is None or json.loads(b'{"traceEvents":[' + last) != {"traceEvents": [], "displayTimeUnit": "ns"}:
        raise ValueError("the file does not end the traceEvents array and its object")
    return events, slices


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--period", type=float, default=5.0, help="seconds between RSS samples")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds before the RSS baseline")
    ap.add_argument("--sleepers", type=int, default=4)
    ap.add_argument("--nap", type=int, default=2, help="ms each sleeper sleeps")
    ap.add_argument("--fork-pause-ms", type=int, default=5)
    ap.add_argument("--slack", type=float, default=0.10)
    ap.add_argument("--keep", action="store_true", help="keep the timeline file")
    ap.add_argument("--without", action="store_true",
                    help="the same run without --timeline (a baseline: its RSS and losses)")
    args = ap.parse_args()
    if not bp.may_profile_system():
        print("bench: needs root (system-wide scheduler tracepoints)", file=sys.stderr)
        return 1
    if not os.access(args.perf_prof, os.X_OK):
        print(f"bench: {args.perf_prof} not found or not executable (make all)", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="timeline_bench.")
    result = {}

    def measure():
        perf_prof = bp.private_perf_prof(args.perf_prof, tmp)
        path = os.path.join(tmp, "timeline.json")
        err_path = os.path.join(tmp, "stderr")
        with open(err_path, "w") as err:
            cmd = [perf_prof, "task-state"] + ([] if args.without else ["--timeline", path])
            prof = bp.Proc(cmd, stderr=err)
        bp.wait_ready(prof, bp.ncpus(), 0.5, err_path)
        load = start_load(args)
        series = []  # (s, RSS MB, file MB)
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.seconds:
            if prof.poll() is not None:
                raise RuntimeError(f"perf-prof exited during the run ({bp.describe_exit(prof)}): "
                                   f"{bp.read_text(err_path)!r}")
            rss = bp.vm_rss_mb(prof.pid)
            size = os.path.getsize(path) / 1e6 if not args.without else 0.0
            series.append((time.monotonic() - t0, rss, size))
            time.sleep(args.period)
        series.append((time.monotonic() - t0, bp.vm_rss_mb(prof.pid),
                       os.path.getsize(path) / 1e6 if not args.without else 0.0))
        for p in load:
            p.stop(signal.SIGKILL, timeout=10)
        prof.stop(signal.SIGINT, timeout=120)
        print(f"task-state --timeline, whole machine ({bp.ncpus()} CPUs), {args.seconds} s under "
              f"{args.sleepers} sleepers ({args.nap} ms naps) and a fork loop")
        print("    time(s)   RSS(MB)  file(MB)")
        for t, rss, size in series:
            print(f"    {t:7.1f}  {rss:8.1f}  {size:8.1f}")
        t_base = min(args.warmup, args.seconds / 2)
        base = next(rss for t, rss, _ in series if t >= t_base)
        end = series[-1][1]
        peak = max(rss for _, rss, _ in series)
        problems = bp.stderr_problems(err_path)
        exit_code = prof.exit_code()
        if args.without:
            print(f"without --timeline: RSS {series[0][1]:.1f} -> {series[-1][1]:.1f} MB; "
                  f"perf-prof CPU {prof.cpu_s():.1f} s; lost events {bp.perfprof_lost(err_path)}")
            result["failed"] = [f"exit status {exit_code}"] if exit_code != 0 else []
            return
        t_parse = time.monotonic()
        n_events, slices = check_file(path)
        parse_s = time.monotonic() - t_parse
        size_mb = os.path.getsize(path) / 1e6
        print(f"RSS at {t_base:g} s {base:.1f} MB, at the end {end:.1f} MB, peak {peak:.1f} MB; "
              f"max RSS (rusage) {prof.rss_mb():.1f} MB; perf-prof CPU {prof.cpu_s():.1f} s")
        print(f"file: {size_mb:.1f} MB, {n_events} events ({slices} slices, "
              f"{slices / args.seconds:.0f}/s), complete JSON (parsed in {parse_s:.1f} s); "
              f"SIGINT to exit {prof.stop_s():.2f} s; exit {exit_code}; "
              f"lost events {bp.perfprof_lost(err_path)}")
        if args.keep:
            print(f"kept: {path}")
        else:
            os.unlink(path)
        result["failed"] = []
        if end > base * (1 + args.slack) + 2:
            result["failed"].append(f"RSS grew from {base:.1f} to {end:.1f} MB")
        if exit_code != 0:
            result["failed"].append(f"exit status {exit_code}")
        if problems:
            result["failed"].append(f"stderr: {problems!r}")

    rc = bp.run_bench(measure, tmp, args.keep, (RuntimeError, OSError, ValueError))
    for f in result.get("failed", []):
        print(f"bench: FAILED: {f}", file=sys.stderr)
    return rc or (1 if result.get("failed") else 0)


if __name__ == "__main__":
    sys.exit(main())
