"""watchdog (SPEC-PROFILERS §P20): soft/hard lockup predictor.

SPEC's two lines run side by side, one on stdout and one with -o watchdog.log. Stage 1 must
print the expiries of watchdog_timer_fn (bare event lines) and `== collect all N watchdog
hrtimer` for the N online CPUs within one watchdog period (2T/5 s, T = watchdog_thresh) and 2 s;
then stage 2 runs for 2 s on a healthy system: nothing more is printed, nothing on stderr.

The target VM does not deliver the samples of tracepoints fired on an idle vCPU (perf stat
counts the watchdog's expiries there, perf record gets none of them): a `spin` workload keeps
every CPU busy during the test, as a real lockup watch would find them.
"""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import WALL_RE, Bg, assert_not_crashed, require_root

STAGE1_RE = re.compile(r"^ {0,15}\S.{0,15} +\d+ [.Ddb][.BNLbnpl][.ZzHhs][.0-9a-f][0-9a-f]? \[(\d{3})\] \d+\.\d{6}: "
                       r"timer:hrtimer_expire_entry: hrtimer=(0x[0-9a-f]+) now=\d+ function=(0x[0-9a-f]+)$")
COLLECT_RE = re.compile(r"^" + WALL_RE + r"  == collect all (\d+) watchdog hrtimer$")


def online_cpus():
    text = open("/sys/devices/system/cpu/online").read().strip()
    cpus = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        cpus += range(int(a), int(b or a) + 1)
    return cpus


def watchdog_fn():
    with open("/proc/kallsyms") as f:
        for line in f:
            a, _, name = line.split()[:3]
            if name == "watchdog_timer_fn":
                return int(a, 16)
    pytest.fail("watchdog_timer_fn not in /proc/kallsyms")


@pytest.fixture(scope="module")
def runs(perf_prof, workload, tmp_path_factory):
    require_root()
    thresh = int(open("/proc/sys/kernel/watchdog_thresh").read())
    cpus = online_cpus()
    limit = thresh * 2 / 5 + 2
    spins = [Bg(["taskset", "-c", str(c), workload("spin"), str(int((limit + 4) * 1000))]) for c in cpus]
    log = str(tmp_path_factory.mktemp("watchdog") / "watchdog.log")
    t0 = time.monotonic()
    a = Bg([perf_prof, "watchdog", "-F", "10", "-g"])
    b = Bg([perf_prof, "watchdog", "-F", "10", "-g", "-o", log])
    a.wait_line(r"== collect all", timeout=limit)
    collected_a = time.monotonic() - t0
    while time.monotonic() - t0 < limit and "== collect all" not in (open(log).read() if os.path.exists(log) else ""):
        time.sleep(0.1)
    collected_b = time.monotonic() - t0
    time.sleep(2)  # stage 2 on a healthy system
    for p in (a, b):
        p.send(signal.SIGINT)
    ra, rb = a.finish(timeout=10), b.finish(timeout=10)
    for s in spins:
        s.kill()
    return dict(cpus=cpus, limit=limit, a=ra, b=rb, log=open(log).read(), ta=collected_a, tb=collected_b)


def check_output(text, cpus):
    fn = watchdog_fn()
    timers = {}
    lines = text.splitlines()
    assert lines, "no output"
    m = COLLECT_RE.match(lines[-1])
    assert m and int(m.group(1)) == len(cpus), lines[-1]  # healthy: nothing after it
    for line in lines[:-1]:
        s = STAGE1_RE.match(line)
        assert s, line
        assert int(s.group(3), 16) == fn
        timers.setdefault(int(s.group(1)), set()).add(s.group(2))
    # Every CPU's timer, one per CPU, all different.
    assert sorted(timers) == cpus, timers
    assert all(len(t) == 1 for t in timers.values()), timers
    assert len({next(iter(t)) for t in timers.values()}) == len(cpus)


def test_stdout_run(runs):
    rc, out, err = runs["a"]
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    check_output(out, runs["cpus"])
    assert runs["ta"] < runs["limit"]


def test_log_run(runs):
    rc, out, err = runs["b"]
    assert_not_crashed(rc)
    assert (rc, out, err) == (0, "", "")
    check_output(runs["log"], runs["cpus"])
    assert runs["tb"] < runs["limit"]


@pytest.mark.parametrize("args,message", [
    (["-p", "1"], "-p, -t, --cgroups and a command are not usable"),
    (["--", "true"], "-p, -t, --cgroups and a command are not usable"),
    (["-F", "x"], "freq"),
    (["-e", "sched:sched_switch"], "is not usable"),
])
def test_bad_input(pp, needs_root, args, message):
    rc, out, err = pp.run(["watchdog"] + args)
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_help(pp):
    rc, out, err = pp.run(["watchdog", "-h"])
    text = out + err
    assert "perf-prof watchdog" in text and "collect all" in text and "-F, --freq" in text
