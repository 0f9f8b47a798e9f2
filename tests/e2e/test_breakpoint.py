"""breakpoint (SPEC-PROFILERS §P12): hardware breakpoints.

The bpwrite workload writes its global int `bp_target` exactly K times. Its address comes from
`nm` (the symbol's offset) and /proc/PID/maps (where the executable is loaded), checked against
the address the workload prints; a 4-byte write breakpoint on it with -p must see exactly K
hits. SPEC's own lines break on try_to_wake_up's code: the target kernel has no kprobes, and x86
then refuses execute breakpoints in kernel code (within_kprobe_blacklist), so they must fail
with a clear message here (and run where the kernel has kprobes); -g, -N and the execute type
are exercised on a user function instead.
"""

import os
import re
import shutil
import subprocess

import pytest

from conftest import WALL_RE, Bg, assert_not_crashed, require_root, skip_or_fail

HEAD = WALL_RE + r" +(.{1,16}) +(\d+) \[(\d{3})\] \d+\.\d{6}: "
REGS_RE = re.compile(r"^      RIP: [0-9a-f]{16} RSP: [0-9a-f]{16} RFLAGS:[0-9a-f]{8}$")
K = 60


def nm_offset(path, symbol):
    nm = shutil.which("nm")
    if not nm:
        skip_or_fail("nm not installed")
    out = subprocess.run([nm, path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == symbol:
            return int(f[0], 16)
    pytest.fail("%s not in nm %s" % (symbol, path))


def load_base(pid, path):
    real = os.path.realpath(path)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            f5 = line.split()
            if len(f5) >= 6 and f5[5] == real and int(f5[2], 16) == 0:
                return int(f5[0].split("-")[0], 16)
    pytest.fail("%s not mapped in %d" % (path, pid))


@pytest.fixture(scope="module")
def write_run(perf_prof, workload):
    """bpwrite K started first, then `breakpoint -p PID 0xADDR/4:w` until it exits."""
    require_root()
    exe = workload("bpwrite")
    w = Bg([exe, str(K), "--wait-stdin"], stdin=subprocess.PIPE)
    ready = w.wait_line(r"ready bp_target 0x")
    printed = int(ready.split()[-1], 16)
    addr = load_base(w.pid, exe) + nm_offset(exe, "bp_target")
    bp = Bg([perf_prof, "breakpoint", "-p", str(w.pid), "%#x/4:w" % addr, "-v"])
    bp.wait_line(r"breakpoint: enabled after", timeout=15)
    w.p.stdin.write("go\n")
    w.p.stdin.flush()
    w.wait_line(r"^done$")
    w.finish()
    rc, out, err = bp.finish(timeout=15)
    return addr, printed, rc, out, err


def test_nm_address_is_the_variable(write_run):
    addr, printed, rc, out, err = write_run
    assert addr == printed


def test_write_breakpoint_sees_exactly_k_writes(write_run):
    addr, _, rc, out, err = write_run
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    hit = re.compile("^" + HEAD + r"breakpoint: %#x/4:W ip (\S+)$" % addr)
    hits = [m for m in map(hit.match, out.splitlines()) if m]
    assert len(hits) == K, out[-3000:]
    assert all(m.group(1).strip() == "bpwrite" for m in hits)
    # The ip is the instruction after the store (a trap), in bp_write: by symbol, hits come as
    # they happen (no --watermark).
    assert all(m.group(4).startswith("bp_write+0x") for m in hits), hits[0].group(0)
    # -v: the breakpoint; every hit has its 7-line register block.
    assert "%#x len 4 type W" % addr in out.splitlines()
    lines = out.splitlines()
    blocks = [i for i, l in enumerate(lines) if REGS_RE.match(l)]
    assert len(blocks) == K
    i = blocks[0]
    assert re.match(r"^      RAX: [0-9a-f]{16} RBX: [0-9a-f]{16} RCX: [0-9a-f]{16}$", lines[i + 1])
    assert re.match(r"^      CS: 0033 SS: 002b$", lines[i + 6]), lines[i + 6]


@pytest.fixture(scope="module")
def exec_run(perf_prof, workload):
    """An execute breakpoint on bp_write() (called K times) with -g -N 2, on a running bpwrite."""
    require_root()
    exe = workload("bpwrite")
    w = Bg([exe, str(K), "--wait-stdin"], stdin=subprocess.PIPE)
    w.wait_line("ready")
    fn = load_base(w.pid, exe) + nm_offset(exe, "bp_write")
    bp = Bg([perf_prof, "breakpoint", "-p", str(w.pid), "%#x:x" % fn, "-g", "-N", "2", "-v"])
    bp.wait_line(r"breakpoint: enabled after", timeout=15)
    w.p.stdin.write("go\n")
    w.p.stdin.flush()
    rc, out, err = bp.finish(timeout=15)
    w.finish()
    return fn, rc, out, err


def test_user_execute_breakpoint_stacks_and_exit_n(exec_run):
    fn, rc, out, err = exec_run
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    hit = re.compile("^" + HEAD + r"breakpoint: %#x/8:X ip bp_write\+0x0$" % fn)
    hits = [i for i, l in enumerate(lines) if hit.match(l)]
    assert len(hits) == 2, out  # -N 2
    for i in hits:
        # No kernel part: the registers lead the stack, then the user frames from bp_write.
        assert REGS_RE.match(lines[i + 1]), lines[i + 1]
        assert re.match(r"^      RIP: %016x " % fn, lines[i + 1]), lines[i + 1]
        frames = lines[i + 8:i + 11]
        assert re.match(r"^    %016x bp_write\+0x0 \(.*bpwrite\)$" % fn, frames[0]), frames
        # At the function's first instruction the frame-pointer walk skips its caller (main's
        # return address is not yet in a frame): the next frame is further out, in any object.
        assert re.match(r"^    [0-9a-f]{16} \S", frames[1]), frames


def kprobes():
    return os.path.isdir("/sys/bus/event_source/devices/kprobe")


def try_to_wake_up():
    with open("/proc/kallsyms") as f:
        for line in f:
            a, _, name = line.split()[:3]
            if name == "try_to_wake_up":
                return int(a, 16)
    pytest.fail("try_to_wake_up not in /proc/kallsyms")


@pytest.mark.parametrize("extra", [[], ["--exclude-user"]])
def test_spec_lines(pp, needs_root, extra):
    addr = try_to_wake_up()
    rc, out, err = pp.run(["breakpoint", "%s:x" % hex(addr), "-g", "-N", "2"] + extra, timeout=20)
    assert_not_crashed(rc)
    if kprobes():
        assert rc == 0 and err == "", err
        assert len(re.findall(r"breakpoint: %#x/8:X ip try_to_wake_up\+0x0\n" % addr, out)) == 2, out
    else:
        # §P22: no kprobes: x86 refuses execute breakpoints in kernel code.
        assert rc != 0 and out == ""
        assert err.count("\n") == 1 and "refuses an execute breakpoint at %#x" % addr in err, err


@pytest.mark.parametrize("args,message", [
    ([], " <addr> needs to be specified."),
    (["xyz"], "'xyz': <addr> is not decimal or hexadecimal."),
    (["0x1000/3"], "'0x1000/3': <addr> parsing error"),
    (["0x1000:wz"], "'0x1000:wz': <addr> parsing error."),
    (["1", "2", "3", "4", "5"], " Up to 4 breakpoints are supported."),
    (["0x1000", "--filter", "data > 0"], "--filter needs the values written"),
    (["0x1000", "--exclude-user", "--exclude-kernel"], "leave no hit to trace"),
])
def test_bad_input(pp, args, message):
    rc, out, err = pp.run(["breakpoint"] + args)
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_help(pp):
    rc, out, err = pp.run(["breakpoint", "-h"])
    assert rc != 0 or out
    text = out + err
    assert "perf-prof breakpoint" in text and "<addr>[/1/2/4/8][:rwx]" in text
    assert "--exclude-kernel" in text and "/proc/kcore" in text


def test_flame_graph_counts_every_hit(perf_prof, workload, needs_root, tmp_path):
    """-g --flame-graph: the K hits' stacks are counted into the folded file, not printed."""
    exe = workload("bpwrite")
    w = Bg([exe, str(K), "--wait-stdin"], stdin=subprocess.PIPE)
    w.wait_line("ready")
    addr = load_base(w.pid, exe) + nm_offset(exe, "bp_target")
    name = str(tmp_path / "bp")
    bp = Bg([perf_prof, "breakpoint", "-p", str(w.pid), "%#x/4:w" % addr, "-g", "--flame-graph", name, "-v"])
    bp.wait_line(r"breakpoint: enabled after", timeout=15)
    w.p.stdin.write("go\n")
    w.p.stdin.flush()
    w.finish()
    rc, out, err = bp.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert "Flame graph: %s.svg (folded stacks: %s.folded)" % (name, name) in out
    assert not any(FRAME for FRAME in out.splitlines() if FRAME.startswith("    0"))  # no stack lines
    total = 0
    with open(name + ".folded") as f:
        for line in f:
            stack, n = line.rsplit(" ", 1)
            frames = stack.split(";")
            assert frames[0] == "bpwrite" and frames[-1] == "bp_write", line
            total += int(n)
    assert total == K
