"""hrtimer (SPEC-PROFILERS §P15): expression over per-period counts; true/false cases."""
import re
import signal
import time

import pytest

from counters_util import burst_run

EV = "syscalls:sys_enter_getppid"
HEAD = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}     pid +\d+ tid +\d+ \[001\] \d+\.\d{6}: hrtimer: cpu-clock \d+ ns$"


@pytest.fixture(scope="module")
def fired(pp, workload):
    return burst_run(pp, workload, lambda pid: ["hrtimer", "-e", "%s/common_pid==%d/" % (EV, pid), "-C", "1",
                                                "--period", "50ms", "sys_enter_getppid>=1000"],
                     calls=3000, settle=1.5, after=1.0, spin=True)


def test_fires_only_in_the_burst_period(fired):
    rc, out, err = fired
    assert rc == 0 and err == ""
    heads = [l for l in out.splitlines() if "hrtimer:" in l]
    assert 1 <= len(heads) <= 2, out  # the burst falls in one period, or straddles two
    assert all(re.match(HEAD, h) for h in heads), out
    counts = [int(m.group(1)) for m in re.finditer(r"^    sys_enter_getppid (\d+)$", out, re.M)]
    assert len(counts) == len(heads) and sum(counts) >= 1000 and sum(counts) <= 3000, out


def test_false_expression_prints_nothing(pp, workload):
    rc, out, err = burst_run(pp, workload, lambda pid: ["hrtimer", "-e", "%s/common_pid==%d/" % (EV, pid),
                                                        "-C", "1", "--period", "50ms", "sys_enter_getppid>=5000"],
                             calls=3000, settle=1.5, after=1.0)
    assert rc == 0 and err == "" and out == "", out


def run_for(pp, args, secs=1.2):
    b = pp.start(args)
    time.sleep(secs)
    b.send(signal.SIGINT)
    return b.finish(timeout=10)


@pytest.mark.parametrize("args", [
    ["hrtimer", "-e", "sched:sched_switch", "-C", "0", "--period", "10ms", "sched_switch==0"],
    ["hrtimer", "-e", "sched:sched_switch,sched:sched_wakeup", "-C", "0-1", "-F", "20", "-g",
     "sched_switch==0 && sched_wakeup==0"],
    ["hrtimer", "-e", "sched:sched_switch//cpus=0-24/", "--period", "100ms", "sched_switch>=2000"],
])
def test_spec_lines(pp, args):
    rc, out, err = run_for(pp, args)
    assert rc == 0 and err == ""
    for line in out.splitlines():
        if "hrtimer:" in line:
            assert re.match(HEAD.replace("001", r"\d{3}"), line), line
    if "-g" in args and "hrtimer:" in out:
        assert re.search(r"^ {4,}\S", out, re.M)


def test_help_and_bad_input(pp):
    rc, out, err = pp.run(["hrtimer", "-h"])
    assert rc == 129 and "--period" in err
    for args, msg in [(["hrtimer", "-e", "sched:sched_switch", "--period", "10ms"], "needs to be specified"),
                      (["hrtimer", "-e", "sched:sched_switch", "x==1"], "init failed"),
                      (["hrtimer", "-e", "sched:sched_switch", "--period", "10ms", "nope==1"], "nope"),
                      (["hrtimer", "-e", "sched:sched_switch", "--period", "10ms", "-p", "1", "x"], "cpu")]:
        rc, out, err = pp.run(args)
        assert rc != 0 and len(err.strip().splitlines()) == 1 and msg in err, err
