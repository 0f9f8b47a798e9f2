"""Command-line behaviour: -V, help texts, and bad input (one `perf-prof: ` line on stderr,
non-zero exit, 129 for usage errors, never a hang or a crash)."""

import os
import re
import subprocess

import pytest

from conftest import assert_not_crashed, require_root


def test_version(pp):
    for opt in ("-V", "--version"):
        rc, out, err = pp.run([opt], timeout=10)
        assert_not_crashed(rc)
        assert rc == 0
        assert err == ""
        assert re.fullmatch(r"perf-prof \S+\n", out), "bad version output: %r" % out


@pytest.mark.parametrize("args", [[], ["-h"], ["--help"]], ids=["noargs", "-h", "--help"])
def test_main_help(pp, args):
    rc, out, err = pp.run(args, timeout=10)
    assert_not_crashed(rc)
    assert rc == 129
    assert out == "", "help goes to stderr"
    lines = err.splitlines()
    assert any(x.startswith(" Usage: perf-prof ") for x in lines), err
    assert "Available Profilers:" in [x.strip() for x in lines], err
    # every profiler line has a name and a description; signal is one of them
    i = [x.strip() for x in lines].index("Available Profilers:")
    section = []
    for x in lines[i + 1:]:
        if not x.strip():
            break
        section.append(x)
    assert section, "no profiler listed"
    for x in section:
        assert len(x.split()) >= 2, "profiler line without description: %r" % x
    assert "signal" in [x.split()[0] for x in section], err


def test_signal_help(pp):
    rc, out, err = pp.run(["signal", "-h"], timeout=10)
    assert_not_crashed(rc)
    assert rc == 129
    assert out == "", "help goes to stderr"
    lines = err.splitlines()
    assert any(x.startswith(" Usage: perf-prof signal") for x in lines), err
    stripped = [x.strip() for x in lines]
    assert "EXAMPLES" in stripped, err
    i = stripped.index("EXAMPLES")
    assert stripped[i + 1].startswith("perf-prof signal"), "an example must follow EXAMPLES"
    assert re.search(r"^  -C, --cpus\b", err, re.M), err
    assert re.search(r"^\s+--filter\b", err, re.M), err
    # only options that signal accepts are listed
    assert not re.search(r"^\s+-e, --event\b", err, re.M), "signal does not accept -e"


def reaped_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    assert not os.path.exists("/proc/%d" % p.pid)
    return p.pid


USAGE, RUNTIME = 129, 1

BAD_INPUT = [
    # id, argv (after the binary), expected exit status, needs root
    ("cpus-reversed", ["signal", "-C", "1-0"], USAGE, False),
    ("cpus-garbage", ["signal", "-C", "abc"], USAGE, False),
    ("unknown-option", ["signal", "--no-such-option"], USAGE, False),
    ("unknown-option-before-profiler", ["--no-such-option", "signal"], USAGE, False),
    ("unknown-short-option", ["signal", "-Z"], USAGE, False),
    ("option-not-for-signal", ["signal", "-e", "sched:sched_switch"], USAGE, False),
    ("mmap-pages-not-power-of-2", ["signal", "-m", "3"], USAGE, False),
    ("unknown-profiler", ["nosuchprofiler"], USAGE, False),
    ("watermark-101", ["signal", "--watermark", "101"], USAGE, False),
    ("interval-trailing-garbage", ["signal", "-i", "12x"], USAGE, False),
    ("dead-pid", ["signal", "-p", "DEAD"], RUNTIME, True),
    ("dead-tid", ["signal", "-t", "DEAD"], RUNTIME, True),
    ("missing-workload", ["signal", "--", "/nonexistent/x"], RUNTIME, True),
]


@pytest.mark.parametrize("args,expect,root", [b[1:] for b in BAD_INPUT],
                         ids=[b[0] for b in BAD_INPUT])
def test_bad_input(pp, args, expect, root):
    if root:
        require_root()
    if "DEAD" in args:
        dead = str(reaped_pid())
        args = [dead if a == "DEAD" else a for a in args]
    rc, out, err = pp.run(args, timeout=10)
    assert_not_crashed(rc)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perf-prof: "), \
        "expected exactly one `perf-prof: ...` line on stderr, got:\n" + err
    assert rc == expect, "exit status %d, expected %d (stderr: %s)" % (rc, expect, err.strip())
    assert out == "", "nothing on stdout on error, got:\n" + out


def test_verbose_echoes_workload_words_without_dashdash(pp, needs_root, workload):
    """SPEC §1.2 rule 8: with -v and no `--`, the words taken as the workload are echoed,
    since a mistyped option may have become one; with `--` they are not."""
    argv = [workload("sigself"), "1", "--silent"]
    rc, out, err = pp.run(["signal", "-v"] + argv, timeout=30)
    assert rc == 0 and err == ""
    assert out.splitlines()[0] == "Unparsed options: " + " ".join(argv)
    rc, out, err = pp.run(["signal", "-v", "--"] + argv, timeout=30)
    assert rc == 0 and err == ""
    assert "Unparsed options" not in out
