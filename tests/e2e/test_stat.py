"""stat (SPEC-PROFILERS §P10): the series read by a user-space timer, exact counts of a burst."""
import re
import signal
import time

import pytest

from counters_util import burst_run, totals

EV = "syscalls:sys_enter_getppid"


@pytest.fixture(scope="module")
def cpu_run(pp, workload):
    return burst_run(pp, workload, lambda pid: ["stat", "-e", "%s/common_pid==%d/" % (EV, pid),
                                                "--period", "100ms", "-i", "500", "-C", "1"])


def test_totals_equal_the_calls_on_cpu(cpu_run):
    rc, out, err = cpu_run
    assert rc == 0 and err == ""
    assert totals(out) == 1000, out
    # --period 100ms -i 500: 5 slots per line
    line = next(l for l in out.splitlines() if "total" in l)
    assert re.fullmatch(r"%s( *\d+\|){4} *\d+ \| total \d+" % EV, line), line


def test_threads_per_instance(pp, workload):
    rc, out, err = burst_run(pp, workload, lambda pid: ["stat", "-e", EV, "-t", str(pid), "--perins",
                                                        "-i", "500"], after=1.5)
    assert rc == 0 and err == ""
    assert totals(out) == 1000, out
    assert re.search(r"^\[ *\d+\] %s +\d+ \| total" % EV, out, re.M), out


@pytest.mark.parametrize("args", [
    ["stat", "-e", "sched:sched_switch", "--period", "100ms", "-i", "1000"],
    ["stat", "-e", "sched:sched_switch,sched:sched_wakeup", "-i", "1000"],
])
def test_spec_lines(pp, args):
    b = pp.start(args)
    time.sleep(3.2)  # without --period the first read is the base: the first series at 2 s
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=10)
    assert rc == 0 and err == ""
    assert re.search(r"^sched:sched_switch .*\| total \d+$", out, re.M), out


def test_help_and_bad_input(pp):
    rc, out, err = pp.run(["stat", "-h"])
    assert rc == 129 and "--period" in err and "packed" in err
    rc, out, err = pp.run(["stat", "--period", "100ms"])
    assert rc != 0 and len(err.strip().splitlines()) == 1, err
    rc, out, err = pp.run(["stat", "-e", "sched:sched_switch", "--period", "0"])
    assert rc != 0 and len(err.strip().splitlines()) == 1, err
