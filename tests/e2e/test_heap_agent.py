"""kmemleak --user through the allocator agent (perf-prof-heap.so) in the process: what the agent
path adds to test_kmemleak_user.py (which runs every exact case on both paths).

Sampled mode (--rate R): an allocation of s bytes is kept with probability p = 1 - exp(-s/R) and
scaled back by 1/p, so for n allocations of s bytes the estimate of n*s has a relative standard
deviation of sqrt((1-p)/(n*p)). heap_live holds 20,000 x 1,024 bytes (alloc_small) and 6,000 x
4,096 bytes (alloc_large); at R = 4096 that is 1.33 % and 0.99 %. The bounds are 5 standard
deviations (a false failure once in ~1.7 million runs).

The other cases: the static binary's fallback note, the process's output and exit code
unchanged under the agent, detach (the process goes on at its own speed and a second attach
sees only its own window), and perf-prof killed while attached (the process goes on and exits
normally).
"""
import math
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed
from test_kmemleak_user import BIG, GROUP_RE, ROUNDS, SMALL, FRAME_RE, check_leaks, go, parse, start_waiting

pytestmark = pytest.mark.usefixtures("needs_root")

RATE = 4096
SMALL_N, SMALL_SIZE, LARGE_N, LARGE_SIZE = 20000, 1024, 6000, 4096
NOTE_RE = r"^perf-prof: kmemleak --user: .+: using eBPF uprobes \(about 5 µs per allocator call\)$"


def sigma_bound(n, size, k=5.0):
    p = 1 - math.exp(-size / RATE)
    return k * math.sqrt((1 - p) / (n * p))


def by_leaf(groups):
    """{leaf function: (bytes, objects)} summed over the groups (a function calling malloc from
    two call sites, an unrolled loop, makes two groups)."""
    sums = {}
    for nbytes, objects, frames in groups:
        if frames:
            b, o = sums.get(frames[0], (0, 0))
            sums[frames[0]] = (b + nbytes, o + objects)
    return sums


def in_use_by_leaf(out):
    """by_leaf() of the IN-USE report's groups (the last report)."""
    return by_leaf(parse(out[out.rfind("IN-USE BYTES REPORT"):])["In use"])


def state_of(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("State:"):
            return line.split()[1]
    return "?"


@pytest.mark.parametrize("probes", ["agent", "ebpf"])
def test_sampled_in_use_within_the_sampling_error(pp, workload, probes):
    b = pp.start(["kmemleak", "--user", "--probes=" + probes, "--rate", str(RATE), "--", workload("heap_live")])
    b.wait_line(r"^allocated$", timeout=30)
    time.sleep(0.2)
    b.send(signal.SIGINT)
    rc, out, err = b.finish(30)
    assert rc == 0 and err == "", err
    assert "LEAKED BYTES REPORT: none: sampled (--rate %d)" % RATE in out, out
    assert out.count("LEAKED BYTES REPORT") == 1, out
    use = in_use_by_leaf(out)
    want_small, want_large = SMALL_N * SMALL_SIZE, LARGE_N * LARGE_SIZE
    small, large = use["alloc_small"][0], use["alloc_large"][0]
    assert abs(small - want_small) <= sigma_bound(SMALL_N, SMALL_SIZE) * want_small, (small, want_small, out)
    assert abs(large - want_large) <= sigma_bound(LARGE_N, LARGE_SIZE) * want_large, (large, want_large, out)
    assert "churn" not in use or use["churn"][0] < 512 * 20, out  # freed: nothing in use
    print("\n%s: in use alloc_small %d (%+.2f%%), alloc_large %d (%+.2f%%)" % (
        probes, small, 100.0 * (small - want_small) / want_small, large, 100.0 * (large - want_large) / want_large))


STATIC_SRC = r"""
#include <stdlib.h>
#include <unistd.h>
void* volatile sink;
__attribute__((noinline)) void* leak_static_alloc(size_t n) { return malloc(n); }
int main(void) {
    for (int i = 0; i < 4; i++) { sink = leak_static_alloc(64); sink = 0; }
    if (write(1, "static done\n", 12) < 0) return 1;
    return 0;
}
"""


@pytest.fixture
def static_leaker(tmp_path):
    src = tmp_path / "static_leaker.c"
    src.write_text(STATIC_SRC)
    exe = tmp_path / "static_leaker"
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-static", "-o", str(exe), str(src)], check=True)
    return str(exe)


def test_a_static_binary_falls_back_to_ebpf_with_one_line(pp, static_leaker):
    rc, out, err = pp.run(["kmemleak", "--user", "--", static_leaker], timeout=60)
    assert rc == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(NOTE_RE, lines[0]) and "static" in lines[0], err
    assert "static done" in out
    # The eBPF path saw every allocation (what its leak scan makes of them is test_kmemleak_user's).
    assert in_use_by_leaf(out).get("leak_static_alloc") == (256, 4), out


def test_forcing_the_agent_on_a_static_binary_is_a_usage_error(pp, static_leaker):
    rc, out, err = pp.run(["kmemleak", "--user", "--probes=agent", "--", static_leaker], timeout=60)
    assert_not_crashed(rc)
    assert rc != 0
    assert len(err.strip().splitlines()) in (1, 2) and "--probes=agent" in err and "static" in err, err
    assert "static done" not in out  # never started


# A program whose output and exit code we compare, and which works in rounds on each input
# line: ALLOCS allocations, all freed but LEAK of them ("g"; "n": none leaked), and prints the
# round's time in ns.
ROUNDS_SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define ALLOCS 20000
#define LEAK 3
void* volatile sink;
__attribute__((noinline)) void* round_leak(void) { return malloc(48); }
__attribute__((noinline)) void work(int leak) {
    for (int i = 0; i < ALLOCS - LEAK; i++) { void* p = malloc(16 + i % 64); sink = p; free(p); }
    for (int i = 0; i < LEAK; i++) { sink = round_leak(); if (!leak) free(sink); sink = 0; }
}
/* The dead stack below the frames of a round zeroed: the leak scan reads the 128-byte red zone
 * below the stack pointer of a thread waiting in read(), where the agent's hook frames leave
 * copies of the last pointers (valgrind's red zone is as wide, but nothing of its runs there). */
__attribute__((noinline)) void scrub(void) {
    volatile char pad[8192];
    for (unsigned i = 0; i < sizeof pad; i++) pad[i] = 0;
}
int main(void) {
    char line[16];
    int n = 0;
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        work(line[0] == 'g');
        scrub();
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("round %d %lld\n", n++, (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
        fflush(stdout);
    }
    printf("bye after %d rounds\n", n);
    return 3;
}
"""
ALLOCS, LEAK = 20000, 3


@pytest.fixture
def rounds_prog(tmp_path):
    src = tmp_path / "rounds.c"
    src.write_text(ROUNDS_SRC)
    exe = tmp_path / "rounds"
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    return str(exe)


class Rounds:
    """The rounds program started by us, driven a round at a time."""

    def __init__(self, exe):
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.out = [self.p.stdout.readline()]
        assert self.out[0] == "ready\n"

    def round(self, leak=True):
        self.p.stdin.write("g\n" if leak else "n\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        self.out.append(line)
        m = re.match(r"^round \d+ (\d+)$", line)
        assert m, line
        return int(m.group(1))

    def end(self):
        self.p.stdin.close()
        rest = self.p.stdout.read()
        return self.p.wait(20), "".join(self.out) + rest

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(5)


def attach(pp, pid, *extra):
    return pp.start_ready(["kmemleak", "--user", "--probes=agent", "-v"] + list(extra) + ["-p", str(pid)])


def test_output_and_exit_code_unchanged_under_the_agent(pp, rounds_prog):
    plain = Rounds(rounds_prog)
    for _ in range(3):
        plain.round()
    rc_plain, out_plain = plain.end()
    r = Rounds(rounds_prog)
    try:
        b = attach(pp, r.p.pid)
        for _ in range(3):
            r.round()
        b.send(signal.SIGINT)
        rc, out, err = b.finish(30)
        assert rc == 0 and err == "", err
        rc_agent, out_agent = r.end()
    finally:
        r.kill()
    strip = lambda s: re.sub(r"(?m)^(round \d+) \d+$", r"\1", s)
    assert (rc_agent, strip(out_agent)) == (rc_plain, strip(out_plain)) == (3, strip(out_plain))


def test_launched_output_unchanged_under_the_agent(pp, workload, tmp_path):
    plain = subprocess.run([workload("leaks"), str(SMALL), str(BIG), str(ROUNDS)], capture_output=True, text=True)
    report = tmp_path / "report.txt"
    rc, out, err = pp.run(["kmemleak", "--user", "--probes=agent", "-o", str(report), "--", workload("leaks"),
                           str(SMALL), str(BIG), str(ROUNDS)], timeout=60)
    assert rc == 0 and err == "", err
    assert out == plain.stdout == "leaks done\n"
    check_leaks(report.read_text())


def test_detach_leaves_it_running_at_its_own_speed(pp, rounds_prog):
    r = Rounds(rounds_prog)
    try:
        before = min(r.round(leak=False) for _ in range(5))  # the leak scan's roots hold no stale leaks
        b = attach(pp, r.p.pid)
        r.round()
        b.send(signal.SIGINT)
        rc, out, err = b.finish(30)
        assert rc == 0 and err == "", err
        assert by_leaf(parse(out)["Leak of"]) == {"round_leak": (48 * LEAK, LEAK)}, out
        assert state_of(r.p.pid) in ("S", "R"), state_of(r.p.pid)
        # Detached: the agent stays mapped (dlclose is not safe), but no call goes through it.
        assert "perf-prof-heap.so" in open("/proc/%d/maps" % r.p.pid).read()
        after = min(r.round(leak=False) for _ in range(5))
        # At its own speed again (generous: the machine is shared).
        assert after <= 2 * before + 2_000_000, (before, after)
        rc_end, _ = r.end()
        assert rc_end == 3
    finally:
        r.kill()


def test_a_second_attach_sees_only_its_own_window(pp, rounds_prog):
    """Nothing of the first attach is left recording: a second one reports exactly its own window."""
    r = Rounds(rounds_prog)
    try:
        b = attach(pp, r.p.pid)
        r.round()
        b.send(signal.SIGINT)
        assert b.finish(30)[0] == 0
        r.round()  # between the two: not recorded
        b = attach(pp, r.p.pid)
        r.round()
        r.round()
        b.send(signal.SIGINT)
        rc, out, err = b.finish(30)
        assert rc == 0 and err == "", err
        assert by_leaf(parse(out)["Leak of"]) == {"round_leak": (2 * 48 * LEAK, 2 * LEAK)}, out
        m = re.search(r"^TOTAL alloc (\d+) free (\d+)$", out, re.M)
        assert m and (int(m.group(1)), int(m.group(2))) == (2 * ALLOCS, 2 * (ALLOCS - LEAK)), out
        assert r.end()[0] == 3
    finally:
        r.kill()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_perf_prof_killed_while_attached_leaves_the_process_running(pp, rounds_prog, sig):
    r = Rounds(rounds_prog)
    try:
        b = attach(pp, r.p.pid)
        r.round()
        b.send(sig)
        rc, _, _ = b.finish(30)
        if sig != signal.SIGKILL:
            assert rc == 0
        time.sleep(0.3)
        assert state_of(r.p.pid) in ("S", "R"), state_of(r.p.pid)
        # It goes on working (past the agent's heartbeat time-out after a SIGKILL) and exits normally.
        r.round()
        time.sleep(3.5 if sig == signal.SIGKILL else 0)
        r.round()
        rc_end, out = r.end()
        assert rc_end == 3 and "bye after 3 rounds" in out
    finally:
        r.kill()


@pytest.mark.parametrize("probes", ["agent", "ebpf"])
@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_a_process_exiting_right_after_perf_prof_is_stopped_is_never_left_stopped(pp, workload, probes, delay):
    """The agent waits at exit for the leak scan only while perf-prof is there; the eBPF
    path's stop at exit is continued by perf-prof, or by its guard when perf-prof is killed."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        w = start_waiting(workload("leaks"), SMALL, BIG, ROUNDS)
        try:
            b = pp.start_ready(["kmemleak", "--user", "--probes=" + probes, "-v", "-p", str(w.pid)])
            go(w)
            b.send(sig)
            time.sleep(delay)
            w.stdin.close()  # exits at once, or a moment later
            assert w.wait(15) == 0, sig
            b.finish(30)
        finally:
            if w.poll() is None:
                w.kill()


def test_call_graph_dwarf_is_the_agents_own_walk(pp, workload):
    """The agent walks every stack with CFI: --call-graph dwarf is accepted and changes nothing."""
    rc, out, err = pp.run(["kmemleak", "--user", "--probes=agent", "--call-graph", "dwarf", "--", workload("leaks"),
                           str(SMALL), str(BIG), str(ROUNDS)], timeout=60)
    assert rc == 0 and err == "", err
    check_leaks(out)
