"""profile (SPEC §4.2): CPU sampling, stacks, flame graphs, PMU filters, --than.

The hotab workload spends its CPU time 3:1 in hot_a() and hot_b() (the same loop, three units
against one). The flame graph's hot_a:hot_b ratio must agree with `perf record` on the same
workload in the same test.
"""

import os
import re
import shutil
import subprocess

import pytest

from conftest import assert_not_crashed, run, skip_or_fail

LINE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} +(.{1,16}) +(\d+) \[(\d{3})\] +\d+\.\d{6}: "
                     r"profile: (\d+) (cpu-clock|cpu-cycles)$")


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
    assert "flamegraph.pl %s.folded" % name in out
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


def test_sample_lines_and_stacks(perf_prof, workload):
    rc, out, err = run([perf_prof, "profile", "-F", "500", "-g", "--", workload("hotab"), "500"], timeout=30)
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
    rc, out, err = run([perf_prof, "profile", "-F", "997", "-g", "--exclude-user", "--", workload("hotab"),
                        "500"], timeout=30)
    assert rc == 0 and err == ""
    frames = [l.split()[0] for l in out.splitlines() if l.startswith("    ")]
    assert frames, "no kernel samples at all"
    assert all(f.startswith("ffff") for f in frames), [f for f in frames if not f.startswith("ffff")][:5]
    assert "hot_a" not in out and "hot_b" not in out


def test_than_prints_busy_not_idle(perf_prof, workload):
    rc, out, err = run([perf_prof, "profile", "-F", "100", "--than", "50", "--", workload("spin"), "1500"],
                       timeout=30)
    assert rc == 0 and err == ""
    busy = [l for l in out.splitlines() if LINE_RE.match(l)]
    # 1.5 s of 100 % CPU: each 1 s window prints from its 50th sample on.
    assert len(busy) >= 40, out[-2000:]
    rc, out, err = run([perf_prof, "profile", "-F", "100", "--than", "50", "--", "sleep", "1.5"], timeout=30)
    assert rc == 0 and err == ""
    assert out == ""


@pytest.mark.parametrize("args, msg", [
    ([], "-F freq is required"),
    (["-F", "0"], "-F freq is required"),
    (["-F", "100", "--exclude-user", "--exclude-kernel"], "--exclude-user and --exclude-kernel"),
    (["-F", "100", "--exclude-guest", "-G"], "--exclude-guest and --exclude-host"),
    (["-F", "100", "--than", "abc"], "than"),
])
def test_bad_input(perf_prof, args, msg):
    rc, out, err = run([perf_prof, "profile"] + args + ["--", "true"], timeout=30)
    assert_not_crashed(rc)
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], err
