"""Shared by the e2e tests of hrcount, stat, hrtimer, irq-off and percpu-stat: a ppid_burst
workload pinned on CPU 1 that makes its getppid() calls when told, while perf-prof counts."""
import re
import signal
import subprocess
import time

from conftest import Bg

TOTAL_RE = re.compile(r"\| total (\d+)$")


def burst_run(pp, workload, make_args, calls=1000, pages=0, settle=1.2, after=2.3, cpu=1, spin=False):
    """Starts `ppid_burst CALLS PAGES go` pinned on `cpu`, then perf-prof with make_args(pid),
    lets it settle, releases the burst, waits `after` seconds and stops perf-prof with SIGINT.
    Returns (rc, stdout, stderr) of perf-prof. spin: a busy loop shares `cpu` meanwhile, so
    that its cpu-clock timer fires on time (an idle vCPU's timer can be late by seconds)."""
    spinner = subprocess.Popen(["taskset", "-c", str(cpu), "timeout", "12", "sh", "-c", "while :; do :; done"]) \
        if spin else None
    wl = Bg(["taskset", "-c", str(cpu), workload("ppid_burst"), str(calls), str(pages), "go"],
            stdin=subprocess.PIPE)
    wl.wait_line(r"^ready", timeout=10)
    prof = pp.start(make_args(wl.pid))
    time.sleep(settle)
    wl.p.stdin.write("\n")
    wl.p.stdin.flush()
    wl.wait_line(r"^done", timeout=10)
    time.sleep(after)
    prof.send(signal.SIGINT)
    res = prof.finish(timeout=10)
    wl.p.stdin.close()
    wl.finish(timeout=10)
    if spinner:
        spinner.terminate()  # timeout passes SIGTERM on to the loop
        spinner.wait()
    return res


def totals(out):
    """The sum of every '| total N' of the output."""
    return sum(int(m.group(1)) for line in out.splitlines() for m in [TOTAL_RE.search(line)] if m)
