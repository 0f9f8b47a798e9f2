"""hrcount (SPEC-PROFILERS §P9): per-CPU hrtimer series, exact counts of a burst on CPU 1."""
import re
import signal
import time

import pytest

from counters_util import burst_run, totals

EV = "syscalls:sys_enter_getppid"


@pytest.fixture(scope="module")
def burst(pp, workload):
    # On CPU 1 alone: an idle vCPU's timer can be late by a second, and the reset rule then
    # clears every series of a multi-CPU run (SPEC's rule), counts included.
    return burst_run(pp, workload, lambda pid: ["hrcount", "-e", "%s/common_pid==%d/" % (EV, pid),
                                                "--period", "100ms", "-i", "500", "--perins", "-C", "1"], after=3.5, spin=True)


def test_totals_equal_the_calls(burst):
    rc, out, err = burst
    assert rc == 0 and err == ""
    assert totals(out) == 1000, out
    cpu1 = sum(int(m.group(1)) for m in re.finditer(r"^\[001\] .*\| total (\d+)$", out, re.M))
    assert cpu1 == 1000, out
    assert re.search(r"^\[001\] %s( *\d+\|){4} *\d+ \| total \d+$" % EV, out, re.M), out


def run_for(pp, args, secs=1.7):
    b = pp.start(args)
    time.sleep(secs)
    b.send(signal.SIGINT)
    return b.finish(timeout=10)


@pytest.mark.parametrize("args", [
    ["hrcount", "-e", "sched:sched_switch", "--period", "100ms", "-i", "1000"],
    ["hrcount", "-e", "sched:sched_switch,sched:sched_wakeup", "-i", "1000"],
    ["hrcount", "-e", "sched:sched_switch,sched:sched_wakeup//cpus=0-2/", "--period", "50ms", "-i", "1000",
     "--perins"],
    ["hrcount", "-e", "sched:sched_switch//cpus=0/,sched:sched_wakeup/target_cpu==0/", "--period", "50ms",
     "-i", "1000"],
])
def test_spec_lines(pp, args):
    rc, out, err = run_for(pp, args)
    assert rc == 0 and err == ""
    # Every line is a WALL line, a series line or a reset line (an idle vCPU's timer batches
    # may arrive too late for a round within the run: no exact count here).
    wall = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} "
    series = r"(\[\d{3}\] )?sched:sched_(switch|wakeup)( *\d+\|)* *\d+ \| total \d+"
    late = r"\S+ \S+ +\d+/\d+ +\[\d{3}\]  \d+\.\d{6}: hrcount: cpu-clock: \d+ ns"
    for line in out.splitlines():
        assert re.fullmatch("|".join([wall, series, wall + "hrcount reset", late]), line), line


def test_verbose_leader_lines(pp):
    rc, out, err = run_for(pp, ["hrcount", "-e", "sched:sched_switch", "--period", "200ms", "-i", "1000",
                                "-v", "-C", "0"], secs=1.5)
    assert rc == 0 and err == ""
    assert re.search(r"^\S+ \S+  +\d+/\d+ +\[000\]  \d+\.\d{6}: hrcount: cpu-clock: \d+ ns$", out, re.M), out


def test_help_and_bad_input(pp):
    rc, out, err = pp.run(["hrcount", "-e", "sched:sched_switch//cpus=0-1/", "--period", "50ms", "help"])
    assert rc == 0 and err == ""
    assert out.splitlines()[1].startswith(
        'perf-prof hrcount -e "sched:sched_switch/./[alias=./]cpus=0-1/" --period 50000000 [--perins]'), out
    rc, out, err = pp.run(["hrcount", "-h"])
    assert rc == 129 and "--period" in err
    for args, msg in [(["hrcount", "-e", "sched:sched_switch", "-p", "1"], "hrcount can only be attached to cpu."),
                      (["hrcount", "--period", "10ms"], "init failed"),
                      (["hrcount", "-e", "sched:sched_switch/prev_pid==/"], "filter 'prev_pid==' failed")]:
        rc, out, err = pp.run(args)
        assert rc != 0 and len(err.strip().splitlines()) == 1 and msg in err, err
