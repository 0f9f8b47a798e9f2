#!/usr/bin/env python3
"""Soak: trace, profile -g, task-state, multi-trace and kmemleak, each watching the whole
machine at once for --seconds (default 600) under a load (bench/pingpong.c paced at --rate
round trips a second on each CPU, and tests/workloads/family started again and again, so that
tasks come and go and the heap and kernel allocators churn). Every --period seconds each
profiler's VmRSS is sampled; at the end the series is printed, and a profiler whose RSS grew by
more than --slack (default 10 %) plus 2 MB between the end of the first minute and the end fails
the soak (exit 1). Also each profiler must still be running, end with exit 0 on SIGINT and print
nothing on stderr but lost-event counts. Needs root. Not part of `make bench` (make soak).
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

PROFILERS = {
    "trace": ["trace", "-e", "sched:sched_switch,sched:sched_wakeup"],
    "profile-g": ["profile", "-F", "997", "-g", "--flame-graph", "{tmp}/soak"],
    "task-state": ["task-state", "-i", "10000"],
    "multi-trace": ["multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch//key=prev_pid/",
                    "-k", "pid", "--order", "-i", "10000"],
    "kmemleak": ["kmemleak", "--alloc", "kmem:kmalloc,kmem:kmem_cache_alloc",
                 "--free", "kmem:kfree,kmem:kmem_cache_free", "-g", "-i", "10000"],
}


def vm_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--pingpong", default="build/bench/pingpong")
    ap.add_argument("--family", default="build/workloads/family")
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--period", type=int, default=30)
    ap.add_argument("--rate", type=int, default=20000, help="round trips a second of each pingpong")
    ap.add_argument("--slack", type=float, default=0.10)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="soak.")
    procs, errs = {}, {}
    for name, argv in PROFILERS.items():
        argv = [a.replace("{tmp}", tmp) for a in argv]
        errs[name] = open(os.path.join(tmp, name + ".err"), "w+")
        procs[name] = subprocess.Popen([args.perf_prof, *argv], stdout=subprocess.DEVNULL, stderr=errs[name])
    time.sleep(2)
    loads = [subprocess.Popen([args.pingpong, "-m", "same", "-c", str(c), "-r", str(args.rate), "-d",
                               str(args.seconds + 5)], stdout=subprocess.DEVNULL) for c in range(min(2, os.cpu_count()))]
    series = {n: [] for n in procs}
    t0 = time.monotonic()
    family = None
    next_sample = 0.0
    while time.monotonic() - t0 < args.seconds:
        if family is None or family.poll() is not None:
            family = subprocess.Popen([args.family, "2", "2", "20", "5"], stdout=subprocess.DEVNULL)
        now = time.monotonic() - t0
        if now >= next_sample:
            for n, p in procs.items():
                series[n].append((round(now), vm_rss_kb(p.pid)))
            next_sample += args.period
        time.sleep(0.2)
    for n, p in procs.items():
        series[n].append((round(time.monotonic() - t0), vm_rss_kb(p.pid)))
    for l in loads + [family]:
        l.kill()
        l.wait()
    failed = []
    for n, p in procs.items():
        p.send_signal(signal.SIGINT)
    for n, p in procs.items():
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
        errs[n].seek(0)
        err = errs[n].read()
        s = [kb for _, kb in series[n] if kb is not None]
        after_minute = [kb for t, kb in series[n] if kb is not None and t >= 60]
        base = after_minute[0] if after_minute else (s[0] if s else 0)
        grew = (s[-1] - base) if s else 0
        # Lost-event reports are the one stderr line a loaded machine may cause; anything else fails.
        problems = [l for l in err.splitlines() if " lost " not in l]
        ok = rc == 0 and not problems and len(s) == len(series[n]) and grew <= args.slack * base + 2048
        if not ok:
            failed.append(n)
        print("%-12s %s  exit %s%s  RSS MB: %s" % (n, "ok  " if ok else "FAIL", rc,
                                                   (" stderr: " + err.strip()[:200]) if err else "",
                                                   " ".join("%d:%.1f" % (t, kb / 1024.0) if kb else "%d:-" % t
                                                            for t, kb in series[n])))
    if failed:
        sys.exit("soak: " + ", ".join(failed) + " failed")


if __name__ == "__main__":
    main()
