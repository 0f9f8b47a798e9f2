"""profile (SPEC §4.2): CPU sampling, stacks, flame graphs, PMU filters, --than.

The hotab workload spends its CPU time 3:1 in hot_a() and hot_b() (the same loop, three units
against one). The flame graph's hot_a:hot_b ratio must agree with `perf record` on the same
workload in the same test.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed, perf_event_cgroup_mount, run, skip_or_fail

LINE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} +(.{1,16}) +(\d+) \[(\d{3})\] +\d+\.\d{6}: "
                     r"profile: (\d+) (cpu-clock|cpu-cycles|ref-cycles)$")


def folded_counts(path):
    a = b = total = 0
    root_ok = True
    with open(path) as f:
        for line in f:
            stack, n = line.rsplit(" ", 1)
            n = int(n)
            total += n
            frames = stack.split(";")
            if "hot_a" in frames:
                a += n
                root_ok &= frames[0] == "hotab"
            if "hot_b" in frames:
                b += n
                root_ok &= frames[0] == "hotab"
    return a, b, total, root_ok


def perf_record_counts(workload, tmp_path):
    perf = shutil.which("perf")
    if not perf:
        skip_or_fail("perf not installed")
    data = str(tmp_path / "perf.data")
    r = subprocess.run([perf, "record", "-q", "-F", "997", "-g", "-o", data, "--", workload, "2000"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([perf, "script", "-i", data, "-F", "comm,ip,sym"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    a = b = 0
    for sample in re.split(r"\n(?=\S)", r.stdout):
        syms = {l.split()[1] for l in sample.splitlines()[1:] if len(l.split()) >= 2}
        a += "hot_a" in syms
        b += "hot_b" in syms
    return a, b


def test_flame_graph_ratio_agrees_with_perf_record(perf_prof, workload, tmp_path):
    """hot_a:hot_b is 3 by construction (one loop, three units against one); measured 2.8-3.2
    for both tools over repeated runs. With ~480 hot_b samples in 2 s the statistical error of
    one ratio is ~5 %, of the comparison ~7 %: agreement within 25 % (over 3 sigma), and both
    within [2.4, 3.75]."""
    hotab = workload("hotab")
    name = str(tmp_path / "cpu")
    rc, out, err = run([perf_prof, "profile", "-F", "997", "-g", "--flame-graph", name, "--", hotab, "2000"],
                       timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == ""
    assert "Flame graph: %s.svg (folded stacks: %s.folded)" % (name, name) in out
    a, b, total, root_ok = folded_counts(name + ".folded")
    assert root_ok, "root frame is not the process name"
    assert b > 200 and total > 1500, (a, b, total)
    ours = a / b
    pa, pb = perf_record_counts(hotab, tmp_path)
    assert pb > 200, (pa, pb)
    theirs = pa / pb
    print("\nhot_a:hot_b perf-prof %d:%d = %.2f, perf record %d:%d = %.2f" % (a, b, ours, pa, pb, theirs))
    assert 2.4 <= ours <= 3.75 and 2.4 <= theirs <= 3.75
    assert abs(ours / theirs - 1) <= 0.25


def test_flame_graph_of_processes_gone_before_the_end(perf_prof, workload, tmp_path):
    """Chains are symbolized when the graph is written, so a process's maps must be captured
    while it lives: hotab, started before perf-prof and exiting before it, still folds to
    hot_a/hot_b; a python3 that spins and then execs sleep folds to python3's own functions
    (its chains are symbolized before exec drops its symbols), not to sleep's."""
    python = "/usr/bin/python3"
    spin_then_exec = ("import os, time\nt = time.time()\nwhile time.time() - t < 0.6: pass\n"
                      "os.execv('/bin/sleep', ['sleep', '0.4'])")
    hot = Bg([workload("hotab"), "900"])
    name = str(tmp_path / "gone")
    p = Bg([perf_prof, "profile", "-F", "997", "-g", "--flame-graph", name])
    try:
        time.sleep(0.3)
        subprocess.run([python, "-c", spin_then_exec], timeout=20, check=True)
        hot.finish(timeout=10)
        p.send(signal.SIGINT)
        rc, out, err = p.finish(timeout=20)
    finally:
        hot.kill()
    assert rc == 0 and err == "", (rc, err)
    a, b, total, root_ok = folded_counts(name + ".folded")
    assert root_ok and a > 100 and b > 30, (a, b)
    py = {}
    with open(name + ".folded") as f:
        for line in f:
            stack, n = line.rsplit(" ", 1)
            frames = stack.split(";")
            if frames[0].startswith("python3"):
                for fr in frames[1:]:
                    py[fr] = py.get(fr, 0) + int(n)
    assert sum(n for fr, n in py.items() if fr.startswith(("_Py", "Py"))) > 100, sorted(py.items())[:20]


def test_sample_lines_and_stacks(perf_prof, workload):
    rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "500", "-g", "--", workload("hotab"), "500"], timeout=30)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    heads = [LINE_RE.match(l) for l in lines if not l.startswith("    ")]
    assert heads and all(heads), [l for l in lines if not l.startswith("    ") and not LINE_RE.match(l)][:3]
    assert all(m.group(1).strip() == "hotab" for m in heads)
    # cpu-clock counts nanoseconds: at 500 Hz a sample of a busy task is ~2 ms apart.
    deltas = sorted(int(m.group(4)) for m in heads[1:])
    assert 1_000_000 <= deltas[len(deltas) // 2] <= 4_000_000
    assert any("hot_a+0x" in l and "(" + workload("hotab") + ")" in l for l in lines)


def test_exclude_user_keeps_no_user_frames(perf_prof, workload):
    # getpid() in a loop: most of its time is spent entering and leaving the kernel.
    rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "997", "-g", "--exclude-user", "--", workload("syscalls"),
                        "getpid", "500000"], timeout=30)
    assert rc == 0 and err == ""
    frames = [l.split()[0] for l in out.splitlines() if l.startswith("    ")]
    assert len(frames) > 20, "no kernel samples at all"
    assert all(f.startswith("ffff") for f in frames), [f for f in frames if not f.startswith("ffff")][:5]
    assert "syscalls" not in "".join(l for l in out.splitlines() if l.startswith("    "))


def test_than_prints_busy_not_idle(perf_prof, workload):
    rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "100", "--than", "50", "--", workload("spin"), "1500"],
                       timeout=30)
    assert rc == 0 and err == ""
    busy = [l for l in out.splitlines() if LINE_RE.match(l)]
    # 1.5 s of 100 % CPU: each 1 s window prints from its 50th sample on.
    assert len(busy) >= 40, out[-2000:]
    rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "100", "--than", "50", "--", "sleep", "1.5"], timeout=30)
    assert rc == 0 and err == ""
    assert out == ""


def sample_tids(out):
    """The tid of every per-sample line; any other line fails the test."""
    tids = []
    for l in out.splitlines():
        m = LINE_RE.match(l)
        assert m, "not a sample line: %r" % l
        tids.append(int(m.group(2)))
    return tids


def profile_spin(perf_prof, workload, args, ms=500, prefix=()):
    """profile -F 200 ARGS -- [PREFIX] spin MS: the samples' tids, after exit 0 with no stderr."""
    rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "200"] + args + ["--"] + list(prefix) +
                       [workload("spin"), str(ms)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", (rc, err)
    return sample_tids(out)


def test_attach_pid_cpu_cgroup(perf_prof, workload, needs_root):
    """Two spinning processes, A inside a fresh cgroup: -p A, --cgroups and -C 1 keep only
    what they attach to (-N 40 ends each run)."""
    a = Bg([workload("spin"), "6000"])
    b = Bg([workload("spin"), "6000"])
    mount = perf_event_cgroup_mount()
    cg = os.path.join(mount, "pp_test_%06x" % random.getrandbits(24)) if mount else None
    try:
        def samples(args):
            rc, out, err = run([perf_prof, "profile", "--print-samples", "-F", "200", "-N", "40"] + args, timeout=20)
            assert_not_crashed(rc)
            assert rc == 0 and err == "", (args, rc, err)
            lines = [LINE_RE.match(l) for l in out.splitlines()]
            assert len(lines) == 40 and all(lines), out
            return lines

        assert {int(m.group(2)) for m in samples(["-p", str(a.pid)])} == {a.pid}
        assert {int(m.group(2)) for m in samples(["-t", str(b.pid)])} == {b.pid}
        assert {m.group(3) for m in samples(["-C", "1"])} == {"001"}
        if cg is None:
            pytest.skip("no cgroup hierarchy is mounted")
        os.mkdir(cg)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(a.pid))
        assert {int(m.group(2)) for m in samples(["--cgroups", os.path.basename(cg)])} == {a.pid}
    finally:
        a.kill()
        b.kill()
        if cg and os.path.isdir(cg):
            os.rmdir(cg)


def test_exclude_pid_drops_that_process_only(perf_prof, workload):
    """Two spinning processes, the whole machine sampled for about a second: --exclude_pid A
    keeps none of A's samples and all of B's; without it both are there."""
    a = Bg([workload("spin"), "4000"])
    b = Bg([workload("spin"), "4000"])
    try:
        seen = {}
        for args in ([], ["--exclude_pid", str(a.pid)]):
            p = Bg([perf_prof, "profile", "--print-samples", "-F", "200"] + args)
            time.sleep(1.2)
            p.send(signal.SIGINT)
            rc, out, err = p.finish(timeout=15)
            assert rc == 0 and err == "", (rc, err)
            tids = sample_tids(out)
            seen[bool(args)] = (tids.count(a.pid), tids.count(b.pid))
        # ~1 s at 200 Hz of a task that never sleeps: ~200 samples (less when both CPUs are shared).
        assert seen[False][0] > 50 and seen[False][1] > 50, seen
        assert seen[True][0] == 0 and seen[True][1] > 50, seen
    finally:
        a.kill()
        b.kill()


def test_prio_and_sched_policy(perf_prof, workload):
    """spin runs at the normal priority 120, or under `chrt -f 10` (SCHED_FIFO, prio 89)."""
    assert len(profile_spin(perf_prof, workload, ["--prio", "120"])) > 50
    assert len(profile_spin(perf_prof, workload, ["--prio", "100-119,121-139"])) == 0
    assert profile_spin(perf_prof, workload, ["--prio", "0-99"]) == []
    assert len(profile_spin(perf_prof, workload, ["--sched_policy", "0"])) > 50
    assert profile_spin(perf_prof, workload, ["--sched_policy", "1"]) == []
    chrt = shutil.which("chrt")
    if not chrt:
        skip_or_fail("chrt (util-linux) not installed")
    fifo = [chrt, "-f", "10"]
    assert len(profile_spin(perf_prof, workload, ["--prio", "89"], 300, fifo)) > 20
    assert len(profile_spin(perf_prof, workload, ["--prio", "0-99", "--sched_policy", "1"], 300, fifo)) > 20
    # Only chrt itself, before it switches to SCHED_FIFO (well under one 5 ms period), is at 120.
    assert len(profile_spin(perf_prof, workload, ["--prio", "120"], 300, fifo)) <= 2


def test_nr_running(perf_prof, workload):
    """The sampled CPU's run queue holds at least the running spin itself."""
    assert profile_spin(perf_prof, workload, ["--nr_running_min", "1000"]) == []
    assert profile_spin(perf_prof, workload, ["--nr_running_max", "0"]) == []
    assert len(profile_spin(perf_prof, workload, ["--nr_running_min", "1", "--nr_running_max", "1000"])) > 50


def test_irqs_disabled_and_tif_need_resched(perf_prof, workload):
    """A user-space loop always runs with interrupts enabled, and the cpu-clock timer cannot
    fire where they are disabled: --irqs_disabled keeps none of its samples, =0 all of them.
    TIF_NEED_RESCHED is set only briefly before a preemption: =0 keeps nearly every sample."""
    assert profile_spin(perf_prof, workload, ["--irqs_disabled"]) == []
    on = profile_spin(perf_prof, workload, ["--irqs_disabled=0"])
    assert len(on) > 50
    profile_spin(perf_prof, workload, ["--tif_need_resched"])
    assert len(profile_spin(perf_prof, workload, ["--tif_need_resched=0"])) > 50


def test_nested_in_trace(perf_prof, workload):
    """profile as a nested event of trace (SPEC §2.8): trace prints the child's sample lines."""
    rc, out, err = run([perf_prof, "trace", "-e", "profile/-F 200 --prio 120/", "--", workload("spin"), "500"],
                       timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    tids = sample_tids(out)
    assert len(tids) > 50


@pytest.mark.parametrize("args, msg", [
    ([], "-F freq is required"),
    (["-F", "0"], "-F freq is required"),
    (["-F", "100", "--exclude-user", "--exclude-kernel"], "--exclude-user and --exclude-kernel"),
    (["-F", "100", "--exclude-guest", "-G"], "--exclude-guest and --exclude-host"),
    (["-F", "100", "--than", "abc"], "than"),
    (["-F", "100", "--prio", "140"], "prio number above 139"),
    (["-F", "100", "--prio", "100-x"], "invalid prio list"),
    (["-F", "100", "--prio", "120-100"], "reversed"),
    (["-F", "100", "--exclude_pid", "abc"], "`exclude_pid' expects a numerical value"),
    (["-F", "100", "--exclude_pid", "-3"], "`exclude_pid' must not be negative"),
    (["-F", "100", "--irqs_disabled=2"], "`irqs_disabled' takes 0 or 1"),
    (["-F", "100", "--sched_policy", "9"], "`sched_policy' must be at most 7"),
    (["-F", "100", "--nr_running_min", "1x"], "`nr_running_min' expects a numerical value"),
])
def test_bad_input(perf_prof, args, msg):
    rc, out, err = run([perf_prof, "profile"] + args + ["--", "true"], timeout=30)
    assert_not_crashed(rc)
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], err
