#!/usr/bin/python3
"""CPU cost per event of multi-trace's derivatives side by side with multi-trace, in one run
(SPEC-PROFILERS §P4, §P5): each profiler watches the whole machine while a load runs for a fixed
time; `perf stat -a` counts the events that occurred meanwhile; the row is the profiler's CPU
time (utime+stime from wait4: start-up, run, final table) per occurred event.

  sched load    bench/pingpong.c -m same (a context-switch storm on CPU 0):
                multi-trace -e sched:sched_wakeup,sched:sched_wakeup_new -e sched:sched_switch//key=next_pid/ -k pid --order
                rundelay    -e sched:sched_wakeup*,sched:sched_switch -e sched:sched_switch
  syscall load  tests/workloads/syscalls getpid N, looped for the duration:
                multi-trace -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit --impl syscalls -k common_pid --order
                syscalls    -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit

Usage: /usr/bin/python3 bench/derivatives_bench.py --perf-prof ./perf-prof --pingpong PATH --syscalls PATH
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def occurred(events, seconds, load):
    """Runs `load` for `seconds` under perf stat -a; returns the count of `events`."""
    stat = subprocess.Popen(["perf", "stat", "-a", "-x,", "-e", ",".join(events), "sleep", str(seconds)],
                            stderr=subprocess.PIPE, text=True)
    load(seconds)
    err = stat.communicate()[1]
    total = 0
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].isdigit():
            total += int(f[0])
    return total


def measure(perf_prof, argv, events, seconds, load):
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([perf_prof] + argv + ["-v"], stdout=out, stderr=err)
        deadline = time.time() + 15
        while time.time() < deadline:
            out.seek(0)
            if b"enabled after" in out.read():
                break
            time.sleep(0.05)
        n = occurred(events, seconds, load)
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        _, status, ru = os.wait4(p.pid, 0)
        err.seek(0)
        e = err.read().decode(errors="replace")
    cpu = ru.ru_utime + ru.ru_stime
    lost = sum(int(x) for x in re.findall(r"lost (\d+) events \(total\)", e))
    return cpu, n, lost, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--pingpong", default="build/bench/pingpong")
    ap.add_argument("--syscalls", default="build/workloads/syscalls")
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()

    def sched_load(s):
        subprocess.run([a.pingpong, "-m", "same", "-d", str(s)], stdout=subprocess.DEVNULL, check=True)

    def sys_load(s):
        end = time.time() + s
        while time.time() < end:
            subprocess.run(["taskset", "-c", "0", a.syscalls, "getpid", "200000"], check=True)

    sched_ev = ["sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new"]
    sys_ev = ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"]
    rows = [
        ("multi-trace (delay)", ["multi-trace", "-e", "sched:sched_wakeup,sched:sched_wakeup_new",
                                 "-e", "sched:sched_switch//key=next_pid/", "-k", "pid", "--order"], sched_ev, sched_load),
        ("rundelay", ["rundelay", "-e", "sched:sched_wakeup*,sched:sched_switch", "-e", "sched:sched_switch"],
         sched_ev, sched_load),
        ("multi-trace (syscalls)", ["multi-trace", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit",
                                    "--impl", "syscalls", "-k", "common_pid", "--order"], sys_ev, sys_load),
        ("syscalls", ["syscalls", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit"], sys_ev, sys_load),
    ]
    print("%-24s %12s %10s %8s %10s %8s" % ("profiler", "events", "CPU s", "lost", "us/event", "RSS MB"))
    for name, argv, ev, load in rows:
        cpu, n, lost, rss = measure(a.perf_prof, argv, ev, a.seconds, load)
        print("%-24s %12d %10.3f %8d %10.3f %8.1f" % (name, n, cpu, lost, cpu * 1e6 / max(n, 1), rss))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
