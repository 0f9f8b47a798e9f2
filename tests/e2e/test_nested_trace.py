"""nested-trace (SPEC-PROFILERS §P7): a deterministic nesting (uprobe on main and its return,
N getpid() system calls inside: tests/workloads/syscalls.c `getpid N`) with exact call counts in
the call-delay table, the call tree and the delay table; softirq/timer nesting on the live
system (SPEC's command lines); help and bad input."""
import re
import signal
import time

import pytest

from conftest import WALL_RE, assert_not_crashed, spinning

N = 300
ROW = re.compile(r"^(?P<name>(?:  \| )*(?:  \|-)?\S+) +(?P<r>R| ) +(?P<calls>\d+) +(?P<total>\d+\.\d{3})"
                 r"(?: +\d+\.\d{3}){5}$")


def nest(workload):
    w = workload("syscalls")
    return ["-e", 'uprobe:main@"%s",uretprobe:main@"%s"' % (w, w),
            "-e", "syscalls:sys_enter_getpid,syscalls:sys_exit_getpid", "--", w, "getpid", str(N)]


def run_ok(pp, args):
    rc, out, err = pp.run(["nested-trace"] + args, timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    return out.splitlines()


def test_call_delay_exact(pp, needs_root, workload):
    lines = run_ok(pp, nest(workload))
    assert re.match("^" + WALL_RE + " $", lines[0])
    assert re.match(r"^ +function call R    calls +total\(us\) +min\(us\) +p50\(us\)", lines[1])
    fl = len(lines[1].split(" R ")[0])
    # FL = max(13, 4 x depth 1 + len("sys_enter_getpid"))
    assert fl == 4 + len("sys_enter_getpid")
    rows = [ROW.match(l) for l in lines[3:]]
    assert all(rows), lines
    assert [(m.group("name"), int(m.group("calls"))) for m in rows] == [("main", 1), ("  |-sys_enter_getpid", N)]
    main, getpid = (float(m.group("total")) for m in rows)
    assert getpid < main


def test_call_tree(pp, needs_root, workload):
    assert run_ok(pp, nest(workload)[:4] + ["--impl", "call"] + nest(workload)[4:]) == ["main", "  |-sys_enter_getpid"]


def test_delay(pp, needs_root, workload):
    lines = run_ok(pp, ["--impl", "delay"] + nest(workload))
    counts = {l.split()[0]: int(l.split()[3]) for l in lines if " => " in l and "start" not in l}
    assert counts == {"main": 1, "sys_enter_getpid": N}, lines


SPEC_LINES = [
    ["-e", "irq:softirq_entry/vec==1/,irq:softirq_exit/vec==1/", "-i", "1000", "--impl", "call-delay"],
    ["-e", "irq:softirq_entry/vec==1/,irq:softirq_exit/vec==1/", "-e", "timer:timer_expire_entry,timer:timer_expire_exit",
     "-i", "1000", "--impl", "call-delay", "--than", "50us"],
    ["-e", "irq:softirq_entry/vec==1/,irq:softirq_exit/vec==1/,profile/-F 1000 --watermark 50 -m 16 -g/untraced/",
     "-e", "timer:timer_expire_entry,timer:timer_expire_exit", "-i", "1000", "--impl", "call-delay", "--than", "50us",
     "--detail=samecpu", "--order"],
]


def test_spec_command_lines_softirq_timer_nesting(pp, needs_root):
    # The kernel's own timers expire on busy vCPUs: the tracepoints of an idle one's
    # interrupts are not delivered on this VM. A spinner on each CPU for the whole run.
    with spinning((0, 1), 4000):
        runs = [pp.start(["nested-trace"] + a) for a in SPEC_LINES]
        time.sleep(2.3)
        outs = []
        for b in runs:
            b.send(signal.SIGINT)
            rc, out, err = b.finish(timeout=20)
            assert_not_crashed(rc)
            assert rc == 0 and err == "", err
            outs.append(out)
    # The timer softirq runs the expired timers: timer_expire_entry nests under softirq_entry.
    assert "softirq_entry " in outs[1] and "  |-timer_expire_entry " in outs[1], outs[1]


@pytest.mark.parametrize("args,msg", [
    (["-e", "irq:softirq_entry,irq:softirq_exit", "--impl", "pair"], "--impl pair not supported by nested-trace"),
    (["-e", "irq:softirq_entry,irq:softirq_exit", "--impl", "kmemprof"], "--impl kmemprof not supported by nested-trace"),
    (["-e", "irq:softirq_entry,irq:softirq_exit", "--impl", "syscalls"], "--impl syscalls not supported by nested-trace"),
    (["-e", "irq:softirq_entry"], "-e irq:softirq_entry are unpaired"),
    (["-e", "irq:softirq_entry,irq:softirq_exit//untraced/"], "-e irq:softirq_entry,irq:softirq_exit//untraced/ are unpaired"),
    (["-e", "irq:softirq_entry,irq:softirq_exit", "--than", "0"], "must be above 0"),
])
def test_bad_input(pp, needs_root, args, msg):
    rc, out, err = pp.run(["nested-trace"] + args + ["--", "true"])
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and msg in lines[0], err


def test_help(pp):
    rc, out, err = pp.run(["nested-trace", "-h"])
    assert_not_crashed(rc)
    assert "--impl pair|kmemprof|syscalls are rejected" in out + err
    rc, out, err = pp.run(["nested-trace", "-e", "irq:softirq_entry,irq:softirq_exit", "help"])
    assert rc == 0 and err == "" and "\nperf-prof nested-trace -e " in out
