"""page-faults (SPEC-PROFILERS §P8): every page fault, its address and instruction.

The faulter workload maps N fresh pages (no huge pages) and writes one byte into each: exactly
N user-mode faults at the N page addresses of the buffer it prints, whether launched by
perf-prof or attached with -p; -g adds the stack with the user registers where its user part
starts. Nested in trace and multi-trace, page-faults prints the same faults among their events.
SPEC's own lines run on CPU 0 while dd (kernel-mode faults: read() into fresh pages) and
faulter (user-mode faults) run there.
"""

import re
import subprocess
import time

import pytest

from conftest import WALL_RE, Bg, assert_not_crashed, require_root

N = 64
PAGE = 4096
LINE_RE = re.compile(r"^(?P<title>" + WALL_RE + r"|\|.{25}  ) +(?P<comm>\S.{0,15}) +(?P<tid>\d+) \[(?P<cpu>\d{3})\] "
                     r"(?P<sec>\d+)\.(?P<usec>\d{6}): page-fault: addr (?P<addr>[0-9a-f]{16}) ip (?P<ip>\S+)$")
REGS = [r"      RIP: (?P<rip>[0-9a-f]{16}) RSP: [0-9a-f]{16} RFLAGS:[0-9a-f]{8}",
        r"      RAX: [0-9a-f]{16} RBX: [0-9a-f]{16} RCX: [0-9a-f]{16}",
        r"      RDX: [0-9a-f]{16} RSI: [0-9a-f]{16} RDI: [0-9a-f]{16}",
        r"      RBP: [0-9a-f]{16} R08: [0-9a-f]{16} R09: [0-9a-f]{16}",
        r"      R10: [0-9a-f]{16} R11: [0-9a-f]{16} R12: [0-9a-f]{16}",
        r"      R13: [0-9a-f]{16} R14: [0-9a-f]{16} R15: [0-9a-f]{16}",
        r"      CS: 0033 SS: 002b"]
FRAME_RE = re.compile(r"^    [0-9a-f]{16} ")


def buffer_of(out):
    m = re.search(r"^buf 0x([0-9a-f]+) pages (\d+)$", out, re.M)
    assert m, out[-2000:]
    return int(m.group(1), 16), int(m.group(2))


def faults_in(out, buf, n):
    """The fault lines whose address lies in the buffer."""
    lines = []
    for line in out.splitlines():
        m = LINE_RE.match(line)
        if m and buf <= int(m.group("addr"), 16) < buf + n * PAGE:
            lines.append(m)
    return lines


def check_exact(out, buf, n, comm="faulter"):
    hits = faults_in(out, buf, n)
    pages = sorted(int(m.group("addr"), 16) for m in hits)
    assert pages == [buf + i * PAGE for i in range(n)], [hex(p) for p in pages[:8]]
    assert all(m.group("comm").strip() == comm for m in hits)
    return hits


@pytest.fixture(scope="module")
def launched(perf_prof, workload):
    require_root()
    r = subprocess.run([perf_prof, "page-faults", "--exclude-kernel", "--", workload("faulter"), str(N)],
                       capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def test_launched_command_exact_faults(launched):
    rc, out, err = launched
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    buf, n = buffer_of(out)
    hits = check_exact(out, buf, n)
    # Handled as they come (no --watermark): the writing instruction by symbol.
    assert all(re.match(r"^(main|round_of)\+0x[0-9a-f]+$", m.group("ip")) for m in hits), hits[0].group(0)
    # EVTS-T: strictly increasing in one thread.
    ts = [int(m.group("sec")) * 10**6 + int(m.group("usec")) for m in hits]
    assert ts == sorted(ts)


def test_attached_pid_exact_faults(perf_prof, workload, needs_root):
    w = Bg([workload("faulter"), str(N), "--wait-stdin"], stdin=subprocess.PIPE)
    w.wait_line("ready")
    pf = Bg([perf_prof, "page-faults", "--exclude-kernel", "-p", str(w.pid), "-v"])
    pf.wait_line(r"page-faults: enabled after", timeout=15)
    w.p.stdin.write("1")
    w.p.stdin.flush()
    w.wait_line("^done$")
    rc, wout, _ = w.finish()
    prc, out, err = pf.finish(timeout=15)
    assert_not_crashed(prc)
    assert prc == 0 and err == "", err
    buf, n = buffer_of(wout)
    check_exact(out, buf, n)


def test_stack_with_user_registers(perf_prof, workload, needs_root):
    r = subprocess.run([perf_prof, "page-faults", "--exclude-kernel", "-g", "--", workload("faulter"), "8"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    buf, n = buffer_of(r.stdout)
    lines = r.stdout.splitlines()
    seen = 0
    for i, line in enumerate(lines):
        m = LINE_RE.match(line)
        if not m or not buf <= int(m.group("addr"), 16) < buf + n * PAGE:
            continue
        # The loader may have read its cache at these very addresses before munmap left them
        # to the buffer (_dl_cache_libcmp): only the workload's own faults are the buffer's.
        if i + 8 >= len(lines) or not lines[i + 8].endswith("faulter)"):
            continue
        seen += 1
        # A user-mode fault has no kernel part: the registers come first, then the user frames.
        block = lines[i + 1:i + 8]
        for rx, text in zip(REGS, block):
            assert re.match("^" + rx + "$", text), (rx, text)
        rip = int(re.match(REGS[0], block[0]).group("rip"), 16)
        first = lines[i + 8]
        assert FRAME_RE.match(first) and int(first.split()[0], 16) == rip, first
        assert re.search(r" (main|round_of)\+0x[0-9a-f]+ \(.*faulter\)$", first), first
    assert seen == n


def test_nested_in_trace(perf_prof, workload, needs_root):
    r = subprocess.run([perf_prof, "trace", "-e", "sched:sched_switch,page-faults//", "--",
                        workload("faulter"), str(N)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    buf, n = buffer_of(r.stdout)
    check_exact(r.stdout, buf, n)
    # Every other line is trace's own (the command's few switches, when the kernel reports them).
    for line in r.stdout.splitlines():
        assert LINE_RE.match(line) or " sched:sched_switch: " in line or line in ("buf 0x%x pages %d" % (buf, n), "done")


@pytest.fixture(scope="module")
def multi_trace(perf_prof, workload):
    """page-faults nested untraced in multi-trace: the faults are printed in the --detail window
    of the user-space stretch between the write() of "buf ..." and the write() of "done"."""
    require_root()
    r = subprocess.run([perf_prof, "multi-trace", "-e", "raw_syscalls:sys_exit//key=common_pid/",
                        "-e", "raw_syscalls:sys_enter//key=common_pid/,page-faults/-N 100000/untraced/",
                        "--detail", "--order", "--than", "1us", "--", workload("faulter"), str(N)],
                       capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def test_nested_in_multi_trace(multi_trace):
    rc, out, err = multi_trace
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    titled = [m for m in map(LINE_RE.match, out.splitlines()) if m and m.group("title").startswith("|")]
    assert len([m for m in titled if m.group("comm").strip() == "faulter"]) >= N


def test_nested_in_multi_trace_addresses(multi_trace):
    rc, out, err = multi_trace
    buf, n = buffer_of(out)
    check_exact(out, buf, n)


@pytest.fixture(scope="module")
def spec_runs(perf_prof, workload):
    """SPEC's three lines on CPU 0, with dd and faulter looping there until they end."""
    require_root()
    load = Bg(["taskset", "-c", "0", "sh", "-c",
               "while :; do dd if=/dev/zero of=/dev/null bs=1M count=4 2>/dev/null; %s 50 >/dev/null; done"
               % workload("faulter")])
    argvs = [["page-faults", "-C", "0", "--exclude-user", "-N", "100"],
             ["page-faults", "-C", "0", "-g", "--exclude-user", "-N", "100"],
             ["page-faults", "-C", "0", "--exclude-kernel", "-N", "100", "--watermark", "20"]]
    procs = [Bg([perf_prof] + a) for a in argvs]
    try:
        return [p.finish(timeout=20) for p in procs]
    finally:
        load.kill()


@pytest.mark.parametrize("i", [0, 1, 2])
def test_spec_lines(spec_runs, i):
    rc, out, err = spec_runs[i]
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    heads = [m for m in map(LINE_RE.match, out.splitlines()) if m]
    assert len(heads) == 100
    assert all(m.group("cpu") == "000" for m in heads)
    if i < 2:  # kernel-mode faults: the kernel's instruction by symbol
        assert all(re.match(r"^[\w.]+\+0x[0-9a-f]+$", m.group("ip")) for m in heads), heads[0].group(0)
    else:  # --watermark: user ips are not symbolized
        assert all(re.match(r"^[0-9a-f]{16}$", m.group("ip")) for m in heads), heads[0].group(0)
    other = [l for l in out.splitlines() if not LINE_RE.match(l)]
    if i == 1:
        assert other and all(FRAME_RE.match(l) or any(re.match("^" + rx + "$", l) for rx in REGS) for l in other)
        assert any(" ([kernel.kallsyms])" in l for l in other)
    else:
        assert other == []


def test_bad_input(pp):
    rc, out, err = pp.run(["page-faults", "--exclude-user", "--exclude-kernel"])
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    assert err.count("\n") == 1 and "--exclude-user and --exclude-kernel" in err, err


def test_help(pp):
    rc, out, err = pp.run(["page-faults", "-h"])
    text = out + err
    assert "perf-prof page-faults" in text and "--exclude-kernel" in text and "--watermark" in text
