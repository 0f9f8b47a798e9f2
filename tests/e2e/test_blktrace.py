"""blktrace (SPEC §P21): O_DIRECT writes of a known count to a loop device over a file in /tmp."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import perf_prof_path, run

PP = perf_prof_path()
BLOCKS = 16
ROW = re.compile(r"^\s*(block_\w+) => (block_\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s+(\d+) \(\s*(\d+)%\))?$")


def sh(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout.strip()


def traced(args, action, settle=0.5):
    p = subprocess.Popen([PP, "blktrace"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(settle)
    action()
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    return p.returncode, out, err


def rows(out):
    return {(m.group(1), m.group(2)): m for m in map(ROW.match, out.splitlines()) if m}


@pytest.fixture(scope="module")
def loop():
    img = "/tmp/perf-prof-blktrace-%d.img" % os.getpid()
    with open(img, "wb") as f:
        f.truncate(16 << 20)
    try:
        dev = sh("losetup", "-f", "--show", img)
    except (OSError, subprocess.CalledProcessError) as e:
        os.unlink(img)
        pytest.skip("no loop device: %s" % e)
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev])
        os.unlink(img)


@pytest.fixture(scope="module")
def writes(loop):
    def dd():
        sh("dd", "if=/dev/zero", "of=" + loop, "bs=4k", "count=%d" % BLOCKS, "oflag=direct", "status=none")
    return traced(["-d", loop, "-v", "-i", "10000", "--than", "10s"], dd)


def test_stage_counts_of_the_direct_writes(loop, writes):
    rc, out, err = writes
    assert rc == 0 and err == ""
    major, minor = (int(x, 16) for x in sh("stat", "-c", "%t %T", loop).split())
    assert "filter: dev==%d\n" % ((major << 20) | minor) in out
    r = rows(out)
    ins = int(r[("block_getrq", "block_rq_insert")].group(3))
    iss = int(r[("block_rq_insert", "block_rq_issue")].group(3))
    cpl = int(r[("block_rq_issue", "block_rq_complete")].group(3))
    assert iss == BLOCKS and cpl == BLOCKS and ins in (0, BLOCKS), out
    # without a scheduler the requests go from getrq straight to issue: -v labels them
    assert out.count("BYPASS_INSERT") == BLOCKS - ins
    for m in r.values():
        n, total, mn, avg, mx = int(m.group(3)), *(float(m.group(i)) for i in range(4, 8))
        if n:
            assert mn <= avg <= mx and abs(avg * n - total) < 0.01 * n + 0.01
        assert m.group(8) == "0"  # nothing above 10 s


SPEC_DEVICES = [d for d in ["vda", "zram0"] + ["loop%d" % i for i in range(8)] if os.path.exists("/dev/" + d)]


@pytest.mark.parametrize("dev", SPEC_DEVICES or ["vda"])
def test_spec_command_line(dev):
    if not os.path.exists("/dev/" + dev):
        pytest.skip("no /dev/" + dev)
    rc, out, err = traced(["-d", "/dev/" + dev, "-i", "1000", "--than", "10ms"], lambda: None, 0.25)
    assert rc == 0 and err == ""
    assert len(rows(out)) == 3 and "than(reqs)" in out


def test_help_and_bad_input(loop):
    rc, out, err = run([PP, "blktrace", "-h"])
    assert rc == 129 and "--device" in err and "sector<end" in err
    for bad, msg in ((["-d", "/nonexistent"], "blktrace: cannot stat /nonexistent"),
                     ([], "-d DEVICE is required"),
                     (["-d", "/dev/null"], "blktrace: cannot stat /dev/null"),
                     (["-d", loop, "--than", "x"], "invalid time 'x'"),
                     (["-d", loop, "-C", "0"], "not usable")):
        rc, out, err = run([PP, "blktrace"] + bad, timeout=10)
        assert rc != 0 and len(err.splitlines()) == 1 and msg in err, (bad, err)
