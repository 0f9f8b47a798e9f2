"""syscalls (SPEC-PROFILERS §P5): multi-trace's syscalls implementation as a profiler of its own.
Exact call and error counts of a known workload (tests/workloads/syscalls.c: `mixed N M` makes N
getpid() then M close() failing with EBADF), SPEC's command lines, help and bad input."""
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed
from test_multi_trace_impls import syscall_table

SYS = ["syscalls", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit"]


def run_ok(pp, args, timeout=60):
    rc, out, err = pp.run(args, timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0, "rc=%d\n%s\n%s" % (rc, out[-3000:], err)
    assert err == "", err
    return out


@pytest.mark.parametrize("attach", ["command", "cpus"])
def test_exact_calls_and_errors(pp, needs_root, workload, attach):
    n, m = 1500, 250
    argv = [workload("syscalls"), "mixed", str(n), str(m)]
    if attach == "command":
        rows = syscall_table(run_ok(pp, SYS + ["--"] + argv))
        getpid, close = rows["getpid(39)"], rows["close(3)"]
    else:
        # On CPUs: key common_pid and ordering are automatic; the workload's own rows per thread.
        b = pp.start_ready(SYS + ["--perins", "-v", "-m", "1024"])
        subprocess.run(["taskset", "-c", "0"] + argv, check=True)
        time.sleep(0.5)  # the task is freed after an RCU grace period
        b.send(signal.SIGINT)
        rc, out, err = b.finish(timeout=10)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", err
        out = out[out.index("enabled after"):].split("\n", 1)[1]
        rows = syscall_table(out, perins=True)
        mine = {k: r for k, r in rows.items() if r["comm"].rstrip() == "syscalls"}
        getpid = mine[next(k for k in mine if k[1] == "getpid(39)")]
        close = mine[next(k for k in mine if k[1] == "close(3)")]
        # exit_group never returns: sched:sched_process_free closes the pending sys_enter, once
        # the task is freed (an RCU callback: lazy RCU may run it only after we stopped).
        exits = [r for k, r in mine.items() if k[1] == "exit_group(231)"]
        assert len(exits) <= 1 and all(r["calls"] == 1 and r["err"] == 0 for r in exits), mine
    assert getpid["calls"] == n and getpid["err"] == 0
    assert close["err"] == m and close["calls"] >= m


def test_spec_command_lines(pp, needs_root, workload):
    # SPEC's lines watch CPU 1: 1 ms sleeps pinned there (an idle CPU would show nothing, a
    # getpid() flood would overrun the 128-page ring).
    for extra in ([], ["--perins"]):
        b = Bg([pp.path] + SYS + ["-i", "1000", "-m", "128", "-C", "1"] + extra)
        load = subprocess.Popen(["taskset", "-c", "1", workload("syscalls"), "nanosleep", "100000"])
        try:
            time.sleep(1.3)
        finally:
            load.kill()
            load.wait()
        b.send(signal.SIGINT)
        rc, out, err = b.finish(timeout=10)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", err
        assert "syscalls " in out and "calls" in out
        assert "clock_nanosleep(230)" in out, out


@pytest.mark.parametrize("args,msg", [
    (["-e", "raw_syscalls:sys_enter"], "Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit"),
    (["-e", "sched:sched_switch", "-e", "raw_syscalls:sys_exit"],
     "Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit"),
    (["-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--impl", "pair"], "not usable"),
    (["-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--detail"], "not usable"),
])
def test_bad_input(pp, needs_root, args, msg):
    rc, out, err = pp.run(["syscalls"] + args + ["--", "true"])
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and msg in lines[0], err


def test_help(pp):
    rc, out, err = pp.run(["syscalls", "-h"])
    assert_not_crashed(rc)
    assert "raw_syscalls:sys_enter" in out + err and "--perins" in out + err
    rc, out, err = pp.run(SYS + ["help"])
    assert rc == 0 and err == ""
    assert "\nperf-prof syscalls -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit " in out, out
    assert "--impl" not in out.split("\n\n")[1]
