"""kmemleak --user: the heap profile of a process, through the allocator agent in the process
(preloaded into a launched command, injected into a running one) and through eBPF uprobes from
the outside (--probes=ebpf): every case runs on both paths, with the same exact numbers.

The `leaks` workload leaks exactly SMALL blocks of 48 bytes (leak_small_alloc <- leak_small_path
<- main) and BIG blocks of 4096 bytes (leak_big_alloc <- leak_big_path <- main), keeps 5 blocks
of 64 bytes reachable from a global list (keep_list), and frees everything else: 6 allocations
(malloc, calloc, realloc, posix_memalign, aligned_alloc, strdup) and 6 frees (realloc's
included) a round, ROUNDS rounds twice. The same numbers must come out launched and attached, and
equal those of gperftools' heap checker (LD_PRELOAD=libtcmalloc, HEAPCHECK) on the same run.
"""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import Bg, asan_build, assert_not_crashed

pytestmark = pytest.mark.usefixtures("needs_root")

SMALL, BIG, ROUNDS = 3, 2, 200
ALLOCS = 6 * 2 * ROUNDS + SMALL + BIG + 5
FREES = 6 * 2 * ROUNDS

GROUP_RE = re.compile(r"^(Leak of|In use) (\d+) bytes in (\d+) objects allocated from:$")
FRAME_RE = re.compile(r"^    [0-9a-f]{16} (\S+?)(?:\+0x[0-9a-f]+)? \((.*)\)$")
TOTAL_RE = re.compile(r"^TOTAL alloc (\d+) free (\d+)$", re.M)


@pytest.fixture(params=["agent", "ebpf"])
def probes(request):
    """The path under test, as kmemleak --user's option."""
    return "--probes=" + request.param


def parse(out):
    """{'Leak of': [(bytes, objects, [function, ...])], 'In use': [...]} from our report."""
    groups = {"Leak of": [], "In use": []}
    cur = None
    for line in out.splitlines():
        m = GROUP_RE.match(line)
        if m:
            cur = (int(m.group(2)), int(m.group(3)), [])
            groups[m.group(1)].append(cur)
            continue
        m = FRAME_RE.match(line)
        if m and cur is not None:
            cur[2].append(m.group(1))
        elif not line.startswith("    "):
            cur = None
    return groups


def summary(groups):
    """{leaf function: (bytes, objects)} of the groups made by the workload's own functions."""
    return {g[2][0]: (g[0], g[1]) for g in groups if g[2] and g[2][0].startswith(("leak_", "keep_"))}


def check_leaks(out, allocs=ALLOCS, frees=FREES):
    g = parse(out)
    leaks = g["Leak of"]
    # Exactly the two leaking paths, each with its whole stack, and nothing else.
    assert len(leaks) == 2, out
    assert summary(leaks) == {"leak_big_alloc": (4096 * BIG, BIG), "leak_small_alloc": (48 * SMALL, SMALL)}, out
    stacks = {s[2][0]: s[2][:3] for s in leaks}
    assert stacks["leak_big_alloc"] == ["leak_big_alloc", "leak_big_path", "main"], out
    assert stacks["leak_small_alloc"] == ["leak_small_alloc", "leak_small_path", "main"], out
    # In use: the leaks and the reachable list.
    assert summary(g["In use"]) == {"leak_big_alloc": (4096 * BIG, BIG), "leak_small_alloc": (48 * SMALL, SMALL),
                                    "keep_list": (64 * 5, 5)}, out
    m = TOTAL_RE.search(out)
    assert m and (int(m.group(1)), int(m.group(2))) == (allocs, frees), out
    return leaks


def test_launched_reports_exactly_the_leaks(pp, workload, probes):
    rc, out, err = pp.run(["kmemleak", "--user", probes, "--", workload("leaks"), str(SMALL), str(BIG), str(ROUNDS)],
                          timeout=60)
    assert rc == 0 and err == "", err
    assert "leaks done" in out
    check_leaks(out)
    assert "LEAKED BYTES REPORT: %d bytes in %d objects (glibc, pid " % (4096 * BIG + 48 * SMALL, BIG + SMALL) in out


def start_waiting(leaks, *args):
    """The workload started before perf-prof, blocked on its stdin until go() lets it work;
    it then waits again, until its stdin is closed."""
    return subprocess.Popen([leaks] + [str(a) for a in args] + ["wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)


def go(w):
    """Lets the waiting workload work, and returns once it is done."""
    w.stdin.write(b"g")
    w.stdin.flush()
    assert w.stdout.readline() == b"leaks done\n"


def test_attached_to_a_running_process(pp, workload, probes):
    w = start_waiting(workload("leaks"), SMALL, BIG, ROUNDS)
    try:
        b = pp.start_ready(["kmemleak", "--user", probes, "-v", "-p", str(w.pid)])
        go(w)
        maps = open("/proc/%d/maps" % w.pid).read()
        if probes.endswith("ebpf"):
            assert "[uprobes]" in maps  # what the SIGKILL test checks
        else:
            assert "perf-prof-heap.so" in maps and "[uprobes]" not in maps
        w.stdin.close()  # EOF: the workload exits, and perf-prof with it
        assert w.wait(30) == 0
        rc, out, err = b.finish(30)
    finally:
        if w.poll() is None:
            w.kill()
    assert rc == 0, err
    check_leaks(out)


def test_sigint_reports_a_live_process_and_leaves_it_running(pp, workload, probes):
    w = start_waiting(workload("leaks"), SMALL, BIG, ROUNDS)
    try:
        b = pp.start_ready(["kmemleak", "--user", probes, "-v", "-p", str(w.pid)])
        go(w)
        b.send(signal.SIGINT)
        rc, out, err = b.finish(30)
        assert rc == 0 and err == "", err
        check_leaks(out)
        # Stopped for the scan, continued after it: it still runs and exits normally.
        state = [l for l in open("/proc/%d/status" % w.pid) if l.startswith("State:")][0]
        assert "T (stopped)" not in state
        w.stdin.close()
        assert w.wait(10) == 0
    finally:
        if w.poll() is None:
            w.kill()


def test_than_reports_only_older_allocations(pp, workload, probes):
    leaks = workload("leaks")
    for than, expect in (("300ms", 2), ("3600s", 0)):
        w = start_waiting(leaks, SMALL, BIG, ROUNDS)
        try:
            b = pp.start_ready(["kmemleak", "--user", probes, "--than", than, "-v", "-p", str(w.pid)])
            go(w)
            time.sleep(1.0)  # the leaks are made at once, then held
            b.send(signal.SIGINT)
            rc, out, err = b.finish(30)
            assert rc == 0 and err == "", err
            assert len(parse(out)["Leak of"]) == expect, out
            w.stdin.close()
            w.wait(10)
        finally:
            if w.poll() is None:
                w.kill()


def heap_checker_leaks(leaks, tcmalloc, perf_prof, tmp_path):
    """gperftools' heap checker on the same workload: {leaf function: (bytes, objects)}."""
    symbolizer = perf_prof
    if asan_build(perf_prof):
        # The symbolizer inherits LD_PRELOAD, under which an ASan build does not start.
        symbolizer = tmp_path / "pp.sh"
        symbolizer.write_text('#!/bin/sh\nexec env -u LD_PRELOAD "%s" "$@"\n' % perf_prof)
        symbolizer.chmod(0o755)
    env = dict(os.environ, LD_PRELOAD=tcmalloc, HEAPCHECK="normal", PPROF_PATH=str(symbolizer),
               TMPDIR=str(tmp_path), HEAP_CHECK_DUMP_DIRECTORY=str(tmp_path))
    r = subprocess.run([leaks, str(SMALL), str(BIG), str(ROUNDS)], env=env, capture_output=True, text=True,
                       timeout=120, cwd=str(tmp_path))
    assert "detected leaks of" in r.stderr, r.stderr
    found = {}
    cur = None
    for line in r.stderr.splitlines():
        m = re.match(r"^Leak of (\d+) bytes in (\d+) objects allocated from:$", line)
        if m:
            cur = (int(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"^\s+@ [0-9a-f]+ (\S+)$", line)
        if m and cur:
            if m.group(1).startswith(("leak_", "keep_")):
                found[m.group(1)] = cur
            cur = None
    return found


def test_same_leaks_as_the_tcmalloc_heap_checker(pp, perf_prof, workload, tcmalloc, tmp_path, probes):
    leaks = workload("leaks")
    theirs = heap_checker_leaks(leaks, tcmalloc, perf_prof, tmp_path)
    rc, out, err = pp.run(["kmemleak", "--user", probes, "--", leaks, str(SMALL), str(BIG), str(ROUNDS)], timeout=60)
    assert rc == 0 and err == "", err
    ours = summary(parse(out)["Leak of"])
    assert theirs == ours == {"leak_big_alloc": (4096 * BIG, BIG), "leak_small_alloc": (48 * SMALL, SMALL)}


def test_under_tcmalloc_its_own_entry_points_are_probed(pp, workload, tcmalloc, probes):
    if asan_build(pp.path):
        pytest.skip("an ASan build of perf-prof cannot run with tcmalloc in LD_PRELOAD, which the workload inherits")
    env = dict(os.environ, LD_PRELOAD=tcmalloc)
    rc, out, err = pp.run(["kmemleak", "--user", probes, "--", workload("leaks"), str(SMALL), str(BIG),
                           str(ROUNDS)], timeout=60, env=env)
    assert rc == 0 and err == "", err
    assert "(tcmalloc, pid " in out
    assert summary(parse(out)["Leak of"]) == {"leak_big_alloc": (4096 * BIG, BIG),
                                              "leak_small_alloc": (48 * SMALL, SMALL)}, out


def test_pprof_heap_profile_read_by_go_pprof(pp, workload, go_pprof, tmp_path, probes):
    pb = str(tmp_path / "heap.pb.gz")
    rc, out, err = pp.run(["kmemleak", "--user", probes, "--pprof", pb, "--", workload("leaks"), str(SMALL), str(BIG),
                           str(ROUNDS)], timeout=60)
    assert rc == 0 and err == "", err

    def flat(index):
        rows = {}
        for line in go_pprof("-top", "-unit=B", "-nodefraction=0", "-sample_index=" + index, pb).splitlines():
            m = re.match(r"^\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+\d+B?\s+[\d.]+%\s+(\S+)$", line)
            if m:
                rows[m.group(2)] = int(m.group(1))
        return rows

    inuse = flat("inuse_space")
    assert (inuse["leak_big_alloc"], inuse["leak_small_alloc"], inuse["keep_list"]) == (4096 * BIG, 48 * SMALL, 320)
    assert flat("inuse_objects")["keep_list"] == 5
    alloc = flat("alloc_objects")
    assert sum(alloc.values()) == ALLOCS
    assert alloc["churn"] == 2 * ROUNDS * 5  # strdup's are strdup's
    assert flat("alloc_space")["leak_big_alloc"] == 4096 * BIG


def tracefs_probes():
    for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        p = os.path.join(d, "uprobe_events")
        if os.path.exists(p):
            return open(p).read()
    return ""


def test_sigkill_leaves_no_probe_behind(pp, workload, probes):
    """The probes are perf events owned by perf-prof's file descriptors: the kernel removes
    them when it dies, even by SIGKILL; tracefs is never written. The agent turns itself off
    when perf-prof's heartbeat stops."""
    before = tracefs_probes()
    w = start_waiting(workload("leaks"), SMALL, BIG, ROUNDS)
    try:
        b = pp.start_ready(["kmemleak", "--user", probes, "-v", "-p", str(w.pid)])
        b.kill()
        # No uprobe is left: its thousands of allocator calls hit none (a hit maps the
        # [uprobes] area into the process), and it completes normally.
        go(w)
        assert "[uprobes]" not in open("/proc/%d/maps" % w.pid).read()
        w.stdin.close()
        assert w.wait(30) == 0
    finally:
        if w.poll() is None:
            w.kill()
    assert tracefs_probes() == before


@pytest.mark.parametrize("args, message", [
    (["kmemleak", "--user", "-p", "999999999"], r"999999999"),
    (["kmemleak", "--user"], r"--user.*-p PID or a command"),
    (["kmemleak", "--user", "--probes=ebpf", "--call-graph", "dwarf", "-p", str(os.getpid())],
     r"--call-graph dwarf needs the agent.*frame-pointer stacks only"),
    (["kmemleak", "--user", "--probes=bpf", "-p", str(os.getpid())], r"--probes|probes' takes agent or ebpf"),
    (["kmemleak", "--alloc", "kmem:kmalloc", "--free", "kmem:kfree", "--rate", "4096"], r"--rate goes with --user"),
])
def test_bad_input_one_line(pp, args, message):
    before = tracefs_probes()
    rc, out, err = pp.run(args, timeout=30)
    assert_not_crashed(rc)
    assert rc != 0
    assert len(err.strip().splitlines()) in (1, 2), err  # the message, and maybe a hint line
    assert re.search(message, err), err
    assert tracefs_probes() == before


def test_process_without_an_allocator(pp, tmp_path):
    """A static program with no malloc at all: one clear line, nothing probed."""
    src = tmp_path / "bare.c"
    src.write_text("void _start(void) { for (;;) __asm__ volatile(\"pause\"); }\n")
    exe = tmp_path / "bare"
    subprocess.run(["gcc", "-O1", "-static", "-nostdlib", "-o", str(exe), str(src)], check=True)
    b = Bg([str(exe)])
    try:
        rc, out, err = pp.run(["kmemleak", "--user", "-p", str(b.pid)], timeout=30)
        assert rc != 0
        assert "no known allocator" in err and len(err.strip().splitlines()) == 1, err
    finally:
        b.kill()


def test_a_threaded_command_runs_and_its_threads_allocations_are_seen(pp, workload, probes):
    """The process's threads are created as without perf-prof (an inherited uprobe event made
    every pthread_create fail), and what they allocate is recorded: 4 threads x (1000 malloc/free
    pairs + 2 blocks of 200 bytes kept), besides glibc's own block per thread (its TLS vector)."""
    rc, out, err = pp.run(["kmemleak", "--user", probes, "--", workload("heap_threads"), "4", "1000", "2"],
                          timeout=60)
    assert rc == 0 and err == "", err
    assert "heap_threads done" in out, out
    m = TOTAL_RE.search(out)
    # Frees: the eBPF path counts glibc's own at thread exit too (ld.so calls free through a
    # pointer of its own, which no preloaded symbol replaces).
    assert m and int(m.group(1)) == 4 * (1000 + 2) + 4 and int(m.group(2)) >= 4 * 1000, out
    in_use = {}
    for nbytes, objects, frames in parse(out)["In use"]:
        if frames and frames[0] == "worker":
            in_use["worker"] = (in_use.get("worker", (0, 0))[0] + nbytes, in_use.get("worker", (0, 0))[1] + objects)
    assert in_use == {"worker": (4 * 2 * 200, 4 * 2)}, out
