"""percpu-stat (SPEC-PROFILERS §P18): the per-CPU table; minor faults of a pinned workload."""
import re
import signal
import time

import pytest

from counters_util import burst_run

PAGES = 3000


@pytest.fixture(scope="module")
def faults(pp, workload):
    return burst_run(pp, workload, lambda pid: ["percpu-stat", "-i", "500", "--syscalls"], calls=500,
                     pages=PAGES, settle=0.8, after=1.2)


def rows(out, label):
    return [line.split()[1:] for line in out.splitlines() if line.startswith(label)]


def test_minflt_of_the_pinned_cpu(faults):
    rc, out, err = faults
    assert rc == 0 and err == ""
    header = next(l for l in out.splitlines() if l.startswith("[CPU]"))
    assert header.startswith("[CPU]  SOFT csw cpu-mig minflt majflt  syscalls  hardirq"), header
    cols = header.split()
    minflt = cols.index("minflt") - 2  # "[CPU]", "SOFT" then "csw"
    total = sum(int(r[minflt]) for r in rows(out, "[001]"))
    assert total >= PAGES, out
    syscalls = header[6:].split("  ")  # just check the ALL row sums the CPU rows
    for i, line in enumerate(out.splitlines()):
        if line.startswith("[ALL]"):
            cpus = [r.split()[1:] for r in out.splitlines()[i - 2:i]]
            assert [int(a) + int(b) for a, b in zip(*cpus)] == [int(x) for x in line.split()[1:]]


@pytest.mark.parametrize("args", [["percpu-stat", "-i", "1000"], ["percpu-stat", "--syscalls", "-i", "2000"]])
def test_spec_lines(pp, args):
    b = pp.start(args)
    time.sleep(3.3)  # -i 2000: the first table at 2 s, the start and a late timer beside it
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=10)
    assert rc == 0 and err == ""
    assert re.search(r"^\[000\] +\d+ ", out, re.M) and re.search(r"^\[ALL\] +\d+ ", out, re.M), out
    assert ("syscalls" in out) == ("--syscalls" in args)


def test_help_and_bad_input(pp):
    rc, out, err = pp.run(["percpu-stat", "-h"])
    assert rc == 129 and "--syscalls" in err
    rc, out, err = pp.run(["percpu-stat", "-p", "1"])
    assert rc != 0 and len(err.strip().splitlines()) == 1 and "per CPU" in err, err
