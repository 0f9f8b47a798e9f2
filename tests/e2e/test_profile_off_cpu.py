"""End-to-end tests of `profile --off-cpu`: a wall-clock profile in which on-CPU samples and
the time tasks spend off the CPU share one unit (the sampling period), each wait under an
[off-cpu: STATE] frame with the stack the task left with.

Workload `offcpu`:
  split MS   the main thread spins in spin_work() for MS ms while a second thread naps in
             nap_work() (5 ms sleeps, S) until then: each owns half of the wall time.
  vfork N MS N vforks of a child that sleeps MS ms; the parent waits in D (vfork's wait).
"""

import os
import random
import re
import signal
import subprocess
import time

import pytest

import browser
from test_flamegraph import read_folded
from conftest import (REPO, assert_not_crashed, perf_event_cgroup_mount, require_root, skip_or_fail,
                      wait_opened)

F = 997
PERIOD_MS = 1000.0 / F
ARTIFACTS = os.path.join(REPO, "build", "test-artifacts")


def total(folded, pred):
    return sum(n for s, n in folded.items() if pred(s.split(";")))


def ok(pp, args, timeout=60):
    rc, out, err = pp.run(args, timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s\n%s" % (rc, out[-3000:], err)
    return out


@pytest.fixture(scope="module")
def split_run(pp, workload, tmp_path_factory):
    """2 s of `offcpu split` under profile --off-cpu, as a flame graph and a pprof profile."""
    require_root()
    d = tmp_path_factory.mktemp("offcpu")
    name = str(d / "split")
    out = ok(pp, ["profile", "-F", str(F), "-g", "--off-cpu", "--flame-graph", name, "--pprof",
                  str(d / "split.pb.gz"), "--", workload("offcpu"), "split", "2000"])
    return name, read_folded(name + ".folded"), out, d


def test_spinning_and_sleeping_threads_split_the_wall_profile(split_run):
    _, folded, out, _ = split_run
    spun_ms = int(re.search(r"spin_ns=(\d+)", out).group(1)) / 1e6
    spin = total(folded, lambda f: "spin_work" in f and not any(x.startswith("[off-cpu") for x in f))
    nap = total(folded, lambda f: "nap_work" in f and "[off-cpu: S]" in f)
    # Each about half of the two: 50/50 +- 5 %.
    share = spin / float(spin + nap)
    assert 0.45 <= share <= 0.55, (spin, nap, share)
    # Both in sampling periods: the napper's waits add up to the time it lived (the spin time),
    # within 5 %; the spinner's samples too.
    assert abs(nap * PERIOD_MS - spun_ms) <= 0.05 * spun_ms, (nap, spun_ms)
    assert abs(spin * PERIOD_MS - spun_ms) <= 0.05 * spun_ms, (spin, spun_ms)
    # The marker is right under the process name, the kernel's schedule() at the top.
    naps = [s for s in folded if "nap_work" in s and "[off-cpu: S]" in s]
    assert naps and all(s.split(";")[:2] == ["offcpu", "[off-cpu: S]"] for s in naps), naps[:3]
    assert any(s.split(";")[-1] in ("__schedule", "schedule") for s in naps), naps[:3]
    # The spinner never waits in spin_work.
    assert total(folded, lambda f: "spin_work" in f and "[off-cpu: S]" in f) <= 0.02 * spin


def test_pprof_carries_wall_time_and_the_state_label(split_run, go_pprof):
    _, folded, _, d = split_run
    pprof = go_pprof
    path = str(d / "split.pb.gz")
    top = pprof("-top", "-sample_index=wall", path)
    assert "Type: wall" in top, top
    tags = pprof("-tags", path)
    # Nearly all off-CPU time is the napper's S (a preemption may add a little R).
    m = re.search(r"off_cpu: Total .*\n\s+\S+ \(\s*([\d.]+)%\): S\n", tags)
    assert m and float(m.group(1)) >= 95, tags
    # Only the off-CPU samples carry the label: the napper's stacks, none of the spinner's.
    focused = pprof("-top", "-sample_index=samples", "-nodefraction=0", "-tagfocus=off_cpu=S", path)
    assert "nap_work" in focused and "spin_work" not in focused, focused
    m = re.search(r"accounting for (\d+), [\d.]+% of (\d+) total", focused)
    off = total(folded, lambda f: "[off-cpu: S]" in f)
    assert m and int(m.group(1)) == off and int(m.group(2)) == sum(folded.values()), (focused[:600], off)


def test_svg_draws_off_cpu_frames_apart(split_run):
    name, _, _, _ = split_run
    svg = open(name + ".svg").read()
    # The widest frame of each name (nap_work also runs briefly on the CPU between naps).
    fills, widths = {}, {}
    for fname, n, fill in re.findall(r'<title>(\w+) \(([\d,]+) [^<]*</title><rect[^>]* fill="#([0-9a-f]{6})"', svg):
        if int(n.replace(",", "")) > widths.get(fname, -1):
            fills[fname], widths[fname] = fill, int(n.replace(",", ""))

    def rgb(h):
        return [int(h[i:i + 2], 16) for i in (0, 2, 4)]

    nap, spin = rgb(fills["nap_work"]), rgb(fills["spin_work"])
    assert nap[2] > nap[0] + 60, fills["nap_work"]  # indigo: time off the CPU
    assert spin[0] > spin[2], fills["spin_work"]   # warm: the program's code on the CPU
    assert ">off-CPU</text>" in svg


def test_svg_in_a_real_browser(split_run):
    reason = browser.missing()
    if reason:
        skip_or_fail(reason)
    name, _, _, _ = split_run
    with browser.Browser() as b:
        b.open("file://" + name + ".svg")
        assert b.run("return typeof window.flamegraph") == "object", b.logs()
        frames = b.flame_frames()
        assert frames and all(f["shown"] for f in frames)
        by = {}
        for f in frames:  # the widest frame of each name
            if f["n"] > by.get(f["name"], {"n": -1})["n"]:
                by[f["name"]] = f
        blue = [int(x) for x in re.findall(r"\d+", by["nap_work"]["fill"])]
        warm = [int(x) for x in re.findall(r"\d+", by["spin_work"]["fill"])]
        assert blue[2] > blue[0] + 60 and warm[0] > warm[2], (by["nap_work"], by["spin_work"])
        # The two halves are drawn about equally wide.
        assert abs(by["nap_work"]["width"] - by["spin_work"]["width"]) <= 0.1 * by["spin_work"]["width"]
        os.makedirs(ARTIFACTS, exist_ok=True)
        b.screenshot(os.path.join(ARTIFACTS, "flamegraph-off-cpu.png"))
        assert not [m for m in b.logs() if m.get("level") == "SEVERE"], b.logs()


def test_uninterruptible_waits_are_marked_d(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "vf")
    out = ok(pp, ["profile", "-F", str(F), "-g", "--off-cpu", "--flame-graph", name, "--",
                  workload("offcpu"), "vfork", "20", "20"])
    own_ms = int(re.search(r"vfork_ns=(\d+)", out).group(1)) / 1e6
    folded = read_folded(name + ".folded")
    d = total(folded, lambda f: "[off-cpu: D]" in f and any("vfork" in x for x in f))
    # 20 waits of 20 ms and more (the child inherits the profiler's events, then exits): the
    # parent spends nearly all of its own measure of the loop waiting in D.
    assert own_ms >= 400 and 0.9 * own_ms <= d * PERIOD_MS <= 1.02 * own_ms, (d, own_ms, folded)


def test_off_cpu_min_leaves_short_waits_out(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "min")
    ok(pp, ["profile", "-F", str(F), "-g", "--off-cpu", "--off-cpu-min", "50ms", "--flame-graph", name, "--",
            workload("offcpu"), "split", "500"])
    folded = read_folded(name + ".folded")
    assert total(folded, lambda f: "spin_work" in f) > 300
    # Every nap is 5 ms: none is left (50 ms: a nap's timer fired late on an idle vCPU stays out).
    assert total(folded, lambda f: "nap_work" in f and "[off-cpu: S]" in f) == 0, folded


def test_attached_with_p(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "p")
    proc = subprocess.Popen([workload("offcpu"), "split", "1500", "go"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        b = pp.start(["profile", "-F", str(F), "-g", "--off-cpu", "--flame-graph", name, "-p", str(proc.pid)])
        wait_opened([b])
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out = proc.stdout.read()
        proc.wait(timeout=20)
        rc, _, err = b.finish(timeout=20)
        assert rc == 0 and err == "", err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "spin_ns=" in out
    folded = read_folded(name + ".folded")
    spin = total(folded, lambda f: "spin_work" in f and "[off-cpu: S]" not in f)
    nap = total(folded, lambda f: "nap_work" in f and "[off-cpu: S]" in f)
    assert spin > 1000 and 0.45 <= spin / float(spin + nap) <= 0.55, (spin, nap)


def test_system_wide_leaves_idle_out(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "sys")
    b = pp.start(["profile", "-F", str(F), "-g", "--off-cpu", "--flame-graph", name])
    wait_opened([b])
    r = subprocess.run([workload("offcpu"), "split", "800"], timeout=30, capture_output=True)
    assert r.returncode == 0
    time.sleep(0.2)
    b.send(signal.SIGINT)
    rc, _, err = b.finish(timeout=20)
    assert rc == 0 and err == "", err
    folded = read_folded(name + ".folded")
    # The workload's napper is there among every task of the machine; the idle task is not.
    assert total(folded, lambda f: f[0] == "offcpu" and "nap_work" in f and "[off-cpu: S]" in f) > 400
    assert not [s for s in folded if s.split(";")[0] in ("swapper", "swapper/0", "swapper/1")]


def test_lines_without_a_flame_graph(pp, needs_root, workload):
    out = ok(pp, ["profile", "--print-samples", "-F", str(F), "-g", "--off-cpu", "--", workload("offcpu"), "vfork", "3", "20"])
    waits = re.findall(r"profile: off-cpu D (\d+\.\d+) ms", out)
    assert len(waits) >= 3, out[-2000:]
    # Each at least the child's 20 ms sleep (the first vfork also copies the profiler's events).
    assert sum(1 for w in waits if 19.5 <= float(w) <= 500) >= 3, waits


def test_dwarf_stacks(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "dw")
    ok(pp, ["profile", "-F", str(F), "--call-graph", "dwarf", "--off-cpu", "--flame-graph", name, "--",
            workload("offcpu"), "split", "400"])
    folded = read_folded(name + ".folded")
    assert total(folded, lambda f: "[off-cpu: S]" in f and "napper" in f and "nap_work" in f) > 200, folded


@pytest.mark.parametrize("args,msg", [
    (["--off-cpu"], "--off-cpu needs -g"),
    (["-g", "--off-cpu-min", "1ms"], "--off-cpu-min needs --off-cpu"),
    (["-g", "--off-cpu", "--off-cpu-min", "soon"], "soon"),
])
def test_bad_input(pp, args, msg):
    rc, out, err = pp.run(["profile", "-F", "100"] + args + ["--", "true"])
    assert rc == 129 and msg in err and len(err.strip().splitlines()) <= 2, (rc, err)


def test_sigint_completes_the_outputs(pp, needs_root, workload, tmp_path):
    name = str(tmp_path / "int")
    b = pp.start(["profile", "-F", str(F), "-g", "--off-cpu", "--flame-graph", name, "--pprof",
                  str(tmp_path / "int.pb.gz"), "--", workload("offcpu"), "split", "20000"])
    time.sleep(1.5)
    b.send(signal.SIGINT)
    rc, _, err = b.finish(timeout=20)
    assert rc == 0 and err == "", err
    folded = read_folded(name + ".folded")
    # The napper was still asleep or between naps: its waits so far are all there.
    assert total(folded, lambda f: "nap_work" in f and "[off-cpu: S]" in f) > 800
    assert os.path.getsize(str(tmp_path / "int.pb.gz")) > 100
    assert open(name + ".svg").read().rstrip().endswith("</svg>")


def off_cpu_tids(out):
    """The tids of the off-CPU lines and of the on-CPU sample lines of a lines-mode run."""
    off = {int(m.group(1)) for m in re.finditer(r"^\S+ \S+\s+\S+\s+(\d+) \[\d+\] [\d.]+: profile: off-cpu ", out, re.M)}
    on = {int(m.group(1)) for m in re.finditer(r"^\S+ \S+\s+\S+\s+(\d+) \[\d+\] [\d.]+: profile: \d+ ", out, re.M)}
    return off, on


def test_thread_and_cgroup_selection(pp, needs_root, workload):
    """-t the napper: only its waits; --cgroups: only the tasks in that cgroup, of two alike."""
    a = subprocess.Popen([workload("offcpu"), "split", "6000"], stdout=subprocess.DEVNULL)
    b = subprocess.Popen([workload("offcpu"), "split", "6000"], stdout=subprocess.DEVNULL)
    mount = perf_event_cgroup_mount()
    cg = os.path.join(mount, "pp_offcpu_%06x" % random.getrandbits(24)) if mount else None
    try:
        time.sleep(0.3)
        napper = max(int(t) for t in os.listdir("/proc/%d/task" % a.pid))

        def lines(args):
            r = pp.start(["profile", "--print-samples", "-F", str(F), "-g", "--off-cpu"] + args)
            time.sleep(1.5)
            r.send(signal.SIGINT)
            rc, out, err = r.finish(timeout=20)
            assert rc == 0 and err == "", (args, rc, err)
            return off_cpu_tids(out)

        off, on = lines(["-t", str(napper)])
        assert off == {napper} and on <= {napper}, (off, on)
        if cg is None:
            skip_or_fail("no cgroup hierarchy is mounted")
        os.mkdir(cg)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(a.pid))
        off, on = lines(["--cgroups", os.path.basename(cg)])
        a_tids = {int(t) for t in os.listdir("/proc/%d/task" % a.pid)}
        assert napper in off and off <= a_tids and a.pid in on and on <= a_tids, (off, on, a_tids)
    finally:
        a.kill()
        b.kill()
        a.wait()
        b.wait()
        if cg and os.path.isdir(cg):
            os.rmdir(cg)


def test_not_nested(pp):
    rc, out, err = pp.run(["trace", "-e", "profile/-F 99 -g --off-cpu/", "--", "true"])
    assert rc == 129 and "--off-cpu cannot run nested" in err and len(err.strip().splitlines()) == 1, (rc, err)
