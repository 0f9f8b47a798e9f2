#!/usr/bin/python3
"""Start-up and exit cost: the whole CPU (utime + stime from wait4) and peak RSS of short runs,
where what a run does besides starting and ending is small.

Rows (each --repeat times; the median is printed):

  profile cold      perf-prof profile -F 997 -g --flame-graph OUT of the whole machine for
                    --seconds (SIGINT), the kernel symbol cache removed first: a first run after
                    a boot reads all of /proc/kallsyms and writes the cache
  profile           the same with the cache there (every later run of this boot)
  profile idle pid  the same attached to a sleeping process: no samples, only start-up and exit
  trace             perf-prof trace -e sched:sched_switch -N 100 of the whole machine
  task-state        perf-prof task-state of the whole machine for --seconds (SIGINT)
  --symbols         perf-prof --symbols /bin/true, stdin empty (start-up only), then a libc maps
                    line and 100 addresses in it

The whole-machine rows sample whatever else runs: on a busy machine their symbolization of
other processes' stacks is counted too (the load average is printed). Target (reported, not
asserted): profile <= 30 ms of CPU with the cache. --vs OTHER runs a second perf-prof (an older
build) through the same rows, side by side. Needs root (the cache is root's,
/var/cache/perf-prof). Peak RSS is at least the bench's own (a child's peak starts from its
parent's at exec). Run with: make bench, or
  /usr/bin/python3 bench/startup_bench.py --perf-prof ./perf-prof
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchproc import Proc, may_profile_system, private_perf_prof, run_bench

TARGET_MS = 30.0
CACHE = "/var/cache/perf-prof/kallsyms"


def libc_input(path):
    """A maps line for libc's executable segment and 100 addresses in it."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[-2]:
            vaddr, off, size = int(f[2], 16), int(f[1], 16), int(f[5], 16)
            base = 0x7F0000000000
            lo, hi = base + vaddr, base + vaddr + size
            text = "%x-%x r-xp %08x fe:00 1 %s\n" % (lo, hi, off, path)
            step = size // 101
            return text + "".join("0x%x\n" % (lo + step * (i + 1)) for i in range(100))
    raise RuntimeError("no executable segment in " + path)


def run(cmd, seconds=None, stdin=None):
    """(CPU ms, peak RSS MB) of one run: stopped with SIGINT after `seconds`, or run to its end."""
    with open(stdin or os.devnull) as fin:
        p = Proc(cmd, stdin=fin)
        if seconds is None:
            p.wait(timeout=60)
        else:
            time.sleep(seconds)
            p.stop(signal.SIGINT)
    if p.exit_code() not in (0, -signal.SIGINT):
        raise RuntimeError("%s: exit status %d" % (" ".join(cmd), p.exit_code()))
    return p.cpu_s() * 1e3, p.rss_mb()


def rows(pp, tmp, sleeper, seconds, sym_in):
    out = os.path.join(tmp, "fg")
    prof = [pp, "profile", "-F", "997", "-g", "--flame-graph", out]
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()

    def cold():
        try:
            os.unlink(CACHE)
        except FileNotFoundError:
            pass
        return run(prof, seconds)

    return [
        ("profile cold", cold),
        ("profile", lambda: run(prof, seconds)),
        ("profile idle pid", lambda: run(prof + ["-p", str(sleeper.pid)], seconds)),
        ("trace", lambda: run([pp, "trace", "-e", "sched:sched_switch", "-N", "100"])),
        ("task-state", lambda: run([pp, "task-state"], seconds)),
        ("--symbols", lambda: run([pp, "--symbols", "/bin/true"], stdin=empty)),
        ("--symbols 100", lambda: run([pp, "--symbols", "/bin/true"], stdin=sym_in)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--vs", metavar="OTHER", help="a second perf-prof, run through the same rows")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not may_profile_system() or os.geteuid() != 0:
        print("bench: skipped: needs root (system-wide profiling, root's symbol cache)")
        return 0
    tmp = tempfile.mkdtemp(prefix="perfprof-startup-bench-")
    builds = [private_perf_prof(args.perf_prof, tmp)]
    if args.vs:
        os.makedirs(os.path.join(tmp, "vs"))
        builds.append(private_perf_prof(args.vs, os.path.join(tmp, "vs")))
    libc = next(p for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")
                if os.path.exists(p))
    sym_in = os.path.join(tmp, "sym.in")
    with open(sym_in, "w") as f:
        f.write(libc_input(libc))
    sleeper = Proc(["sleep", "3600"])

    def measure():
        print("bench: load average %.2f; CPU ms and peak RSS MB, medians of %d runs"
              % (os.getloadavg()[0], args.repeat))
        head = "%-18s %9s %8s" % ("row", "cpu_ms", "rss_MB")
        if args.vs:
            head += " %9s %8s %7s" % ("vs_cpu_ms", "vs_rss", "cpu_x")
        print(head)
        tables = [rows(pp, tmp, sleeper, args.seconds, sym_in) for pp in builds]
        profile_ms = None
        for i, (name, _) in enumerate(tables[0]):
            medians = []
            for t in tables:
                runs = []
                for _ in range(args.repeat):
                    runs.append(t[i][1]())
                medians.append((statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)))
            line = "%-18s %9.1f %8.1f" % (name, medians[0][0], medians[0][1])
            if args.vs:
                ratio = medians[1][0] / medians[0][0] if medians[0][0] > 0 else float("inf")
                line += " %9.1f %8.1f %6.1fx" % (medians[1][0], medians[1][1], ratio)
            print(line, flush=True)
            if name == "profile":
                profile_ms = medians[0][0]
        verdict = "met" if profile_ms <= TARGET_MS else "missed"
        print("target: profile -F 997 -g --flame-graph, %.0f s of the whole machine, <= %.0f ms of CPU: %s "
              "(%.1f ms)" % (args.seconds, TARGET_MS, verdict, profile_ms))

    status = run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.SubprocessError))
    return status


if __name__ == "__main__":
    sys.exit(main())
