"""kmemleak --user never leaves a process stopped, nor changed (issue 25, "Never leave a process
stopped"): perf-prof is interrupted (SIGINT), terminated (SIGTERM) or killed (SIGKILL) at random
points of its attach (the injection of the agent, or the eBPF probes), of its recording, of its
detach and of the leak scan at the process's exit, on both paths (--probes=agent and
--probes=ebpf). Whatever the moment, the process must be running again within a moment of
perf-prof's end, and end exactly as a run without perf-prof: same output, same exit code.

The target is inject_target's `alloc` mode: two threads calling malloc and free in a loop (the
agent's hooks and the eBPF probes fire all the time, and the threads hold the allocator's locks
most of the time), printing checksums of what they did at the end and exiting with a code made
of them.
"""
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import assert_not_crashed

pytestmark = pytest.mark.usefixtures("needs_root")

PROBES = ["agent", "ebpf"]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
LONG, SHORT = 100_000_000, 4_000_000  # malloc rounds of the main thread (the other does half)


def thread_states(pid):
    """The state letters of the threads of pid ('' once it is gone or a zombie)."""
    s = ""
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s += f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        pass
    return s.replace("Z", "").replace("X", "")


def wait_running(pid, timeout=3.0):
    """True once no thread of pid is stopped (or pid is gone), within timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        s = thread_states(pid)
        if not any(c in "tT" for c in s):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.01)


class Target:
    def __init__(self, exe, rounds):
        self.p = subprocess.Popen([exe, "alloc", str(rounds)], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == "ready\n"
        self.pid = self.p.pid

    def end(self, timeout=60):
        out = self.p.stdout.read()
        return self.p.wait(timeout), out

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(5)


@pytest.fixture(scope="module")
def expected(workload):
    """Output and exit code of untouched runs, by number of rounds."""
    runs = {}
    for rounds in (LONG, SHORT):
        t = Target(workload("inject_target"), rounds)
        rc, out = t.end()
        runs[rounds] = (rc, out)
    return runs


def start(pp, probes, pid):
    return subprocess.Popen([pp.path, "kmemleak", "--user", "--probes=" + probes, "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def end_of(p, sig, rng, what):
    """Sends sig, then (half the time, when sig lets it run on) SIGKILL a moment later: in its
    detach or its scan. perf-prof must exit, uncrashed, within 30 s; whatever it did
    meanwhile (errors included) is not what is tested here."""
    p.send_signal(sig)
    if sig != signal.SIGKILL and rng.random() < 0.5:
        time.sleep(rng.uniform(0, 0.05))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    try:
        rc = p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("%s: perf-prof did not exit within 30 s of signal %d" % (what, sig))
    # Killed by the signal itself: before perf-prof handles it (its first milliseconds), or SIGKILL.
    if rc not in (-sig, -signal.SIGKILL):
        assert_not_crashed(rc)
    return rc


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("probes", PROBES)
def test_killed_at_random_points_of_attach_recording_and_detach(pp, workload, expected, probes, sig):
    rng = random.Random()
    t = Target(workload("inject_target"), LONG)
    rounds = 0
    try:
        while rounds < 4 and t.p.poll() is None:
            p = start(pp, probes, t.pid)
            # Before its attach, in it (the injection takes a few ms), or while recording.
            time.sleep(rng.choice([rng.uniform(0, 0.02), rng.uniform(0, 0.3)]))
            what = "round %d (--probes=%s)" % (rounds, probes)
            end_of(p, sig, rng, what)
            assert wait_running(t.pid), "%s: process %d left stopped: %s" % (what, t.pid, thread_states(t.pid))
            rounds += 1
        assert rounds >= 2, "the target ended after %d rounds: %s" % (rounds, t.end())
        assert t.end() == expected[LONG]
    finally:
        t.kill()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("probes", PROBES)
def test_a_process_exiting_around_the_signal_is_never_left_stopped(pp, workload, expected, probes, sig):
    """The process exits while perf-prof attaches, records, detaches or scans it at its exit;
    perf-prof gets the signal at a random point of that."""
    rng = random.Random()
    for i in range(3):
        t = Target(workload("inject_target"), SHORT)
        try:
            p = start(pp, probes, t.pid)
            time.sleep(rng.uniform(0, 0.4))
            what = "round %d (--probes=%s)" % (i, probes)
            end_of(p, sig, rng, what)
            assert wait_running(t.pid), "%s: process %d left stopped: %s" % (what, t.pid, thread_states(t.pid))
            # The agent waits at exit for a scan by a perf-prof that is gone: no longer than its
            # heartbeat time-out.
            assert t.end(timeout=15) == expected[SHORT], what
        finally:
            t.kill()
