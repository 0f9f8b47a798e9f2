"""Processes in containers (issue 29, item 6): a program whose file exists only in another
mount namespace, as a container's does. `unshare -m` makes the namespace, mounts a tmpfs over
an empty folder of ours there, copies a workload into it and runs it from it: in perf-prof's
namespace that folder stays empty, so the path in the process's maps opens only through
/proc/PID/root.

Checked: stacks of `profile -g` name its functions (the symbolizer opens objects through
/proc/PID/root); a uprobe and a USDT probe written with the /proc/PID/root/... path attach and
fire; `kmemleak --user` falls back to the eBPF uprobes (the agent's file is not in the
container) and names the allocating functions."""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed


class Contained:
    """`workload ARGS` run from a tmpfs mounted over an empty folder in a new mount namespace."""

    def __init__(self, tmp_path, workload, name, *args):
        if not shutil.which("unshare"):
            pytest.fail("unshare not installed (Debian util-linux)")
        self.dir = str(tmp_path / "ctr")
        os.mkdir(self.dir)
        self.path = os.path.join(self.dir, name)
        script = "mount -t tmpfs perfprof-ctr '%s' && cp '%s' '%s' && exec '%s' %s" % (
            self.dir, workload(name), self.path, self.path, " ".join(args))
        # Without --fork, unshare execs sh, which execs the workload: one pid throughout.
        self.bg = Bg(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
        self.pid = self.bg.pid
        deadline = time.time() + 10
        while True:
            try:
                if os.readlink("/proc/%d/exe" % self.pid) == self.path:
                    break
            except OSError:
                pass
            assert self.bg.alive(), "the contained workload did not start: %s" % self.bg.finish()[2]
            assert time.time() < deadline, "the contained workload did not start"
            time.sleep(0.02)
        assert not os.path.exists(self.path), "the workload's file must not be in our namespace"
        self.root_path = "/proc/%d/root%s" % (self.pid, self.path)
        assert os.path.exists(self.root_path)

    def kill(self):
        self.bg.kill()


@pytest.fixture
def contained(tmp_path, workload):
    started = []

    def start(name, *args):
        c = Contained(tmp_path, workload, name, *args)
        started.append(c)
        return c

    yield start
    for c in started:
        c.kill()


def test_profile_names_the_functions_of_a_containers_binary(pp, needs_root, contained, tmp_path):
    c = contained("hotab", "20000")
    out = str(tmp_path / "cpu")
    rc, stdout, err = pp.run(["profile", "-F", "999", "-g", "-p", str(c.pid), "--flame-graph", out, "-N", "600"],
                             timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    a = b = total = 0
    with open(out + ".folded") as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            total += int(n)
            if re.search(r";main;hot_a;", stack):
                a += int(n)
            elif re.search(r";main;hot_b;", stack):
                b += int(n)
    # hotab splits its time 3:1 between hot_a and hot_b.
    assert total >= 500 and a + b >= 0.95 * total, (a, b, total)
    assert 2.2 < a / b < 4.0, (a, b)
    assert "[%s+0x" % c.path not in stdout


def test_uprobe_through_proc_pid_root(pp, needs_root, contained):
    c = contained("hotab", "20000")
    rc, out, err = pp.run(["trace", "-e", 'uprobe:hot_b@"%s"' % c.root_path, "-p", str(c.pid), "-N", "5", "-g"],
                          timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert len(re.findall(r"uprobe:hot_b: ", out)) == 5, out
    assert len(re.findall(r"^\s+[0-9a-f]+ hot_b\+0x0 \(%s\)\n\s+[0-9a-f]+ main\+0x" % re.escape(c.path), out,
                          re.M)) == 5, out


def test_usdt_through_proc_pid_root(pp, needs_root, contained):
    c = contained("usdt_app", "100000000000")
    spec = "ppapp:tick@" + c.root_path
    rc, out, err = pp.run(["usdt", "add", spec], timeout=30)
    assert rc == 0 and err == "", err
    try:
        rc, out, err = pp.run(["trace", "-e", "ppapp:tick", "-p", str(c.pid), "-N", "3", "-g"], timeout=60)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", err
        ticks = re.findall(r"ppapp:tick: \([0-9a-f]+\) arg1=(\d+)", out)
        assert len(ticks) == 3 and int(ticks[1]) == int(ticks[0]) + 1, out
        assert re.search(r"^\s+[0-9a-f]+ tick\+0x0 \(%s\)" % re.escape(c.path), out, re.M), out
    finally:
        rc, out, err = pp.run(["usdt", "del", spec], timeout=30)
        assert rc == 0 and err == "", err


def test_heap_profile_falls_back_to_ebpf_and_names_the_allocators(pp, needs_root, contained):
    c = contained("heap_live", "wait")
    prof = pp.start_ready(["kmemleak", "--user", "-p", str(c.pid), "-g", "-v"], timeout=30)
    c.bg.send(signal.SIGUSR1)
    c.bg.wait_line(r"^allocated$", timeout=30)
    prof.send(signal.SIGINT)
    rc, out, err = prof.finish(timeout=60)
    assert_not_crashed(rc)
    assert rc == 0, err
    assert err == ("perf-prof: kmemleak --user: process %d is in another mount namespace: the agent's path "
                   "would not open there: using eBPF uprobes (about 5 µs per allocator call)\n" % c.pid), err
    assert "TOTAL alloc 36000 free 10000" in out, out[-3000:]
    for fn in ("alloc_small", "alloc_large"):
        assert re.search(r"[0-9a-f]+ %s\+0x[0-9a-f]+ \(%s\)" % (fn, re.escape(c.path)), out), out[-3000:]
