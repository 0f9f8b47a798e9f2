"""Peers of kmemleak --user for the e2e tests: valgrind's leak check on the same workload, and
the parsing of our own leak report.

  valgrind_lost(cmd, input=None, timeout=300) -> (bytes, blocks)
      valgrind --leak-check=full on cmd: "definitely lost" + "indirectly lost".
  valgrind_sites(cmd, workload_name, ...) -> {function: (bytes, blocks)}
      the same losses by site: the first frame of each loss record in the workload's own code
      (indirect losses by the site that allocated them, not by their owner's).
  kmemleak_lost(out) -> (bytes, blocks)      our report's LEAKED BYTES total
  kmemleak_sites(out, workload_name, first_frame_only=False) -> {function: (bytes, blocks)}
      our groups, keyed the same way
  probes (fixture, import it)  kmemleak --user's options for each path: --probes=ebpf, --probes=agent
"""
import re
import shutil
import subprocess

import pytest

from conftest import skip_or_fail

_PID = r"==\d+== "
_SUMMARY_RE = re.compile(_PID + r"\s+(definitely|indirectly) lost: ([\d,]+) bytes in ([\d,]+) blocks$", re.M)
# "2,100 bytes in 7 blocks are definitely lost in loss record 15 of 17", or for a record whose
# blocks own indirect ones "208 (32 direct, 176 indirect) bytes in 1 blocks are definitely ...".
_RECORD_RE = re.compile(r"^" + _PID + r"([\d,]+)(?: \(([\d,]+) direct, [\d,]+ indirect\))? bytes in ([\d,]+) blocks "
                        r"are (definitely|indirectly) lost in loss record")
# "   at 0x48407B4: malloc (vg_replace_malloc.c:381)" / "   by 0x1092A5: leak_malloc (leak_mix.c:35)"
# / "   by 0x4A1B2C3: strdup (in /usr/lib/x86_64-linux-gnu/libc.so.6)"
_FRAME_RE = re.compile(r"^" + _PID + r"\s+(?:at|by) 0x[0-9A-Fa-f]+: (\S+) \((.*)\)$")


def _num(s):
    return int(s.replace(",", ""))


def valgrind_path():
    v = shutil.which("valgrind")
    if not v:
        skip_or_fail("valgrind is not installed")
    return v


def run_valgrind(cmd, input=None, timeout=300):
    """valgrind's leak check on cmd (a list): its stderr. The program must exit 0."""
    r = subprocess.run([valgrind_path(), "--leak-check=full", "--show-leak-kinds=definite,indirect",
                        "--error-exitcode=0", "--num-callers=30"] + list(cmd),
                       input=input, capture_output=True, timeout=timeout)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err[-3000:]
    assert "LEAK SUMMARY" in err or "All heap blocks were freed" in err, err[-3000:]
    return err


def valgrind_lost(cmd, input=None, timeout=300):
    """(bytes, blocks) valgrind finds definitely or indirectly lost when cmd exits."""
    err = run_valgrind(cmd, input=input, timeout=timeout)
    nbytes = nblocks = 0
    for _kind, b, n in _SUMMARY_RE.findall(err):
        nbytes += _num(b)
        nblocks += _num(n)
    return nbytes, nblocks


def _site(frames, workload_name):
    """The function of the first frame in the workload's own code: its source file
    (workload_name.c), or its executable when it has no line information."""
    for fn, where in frames:
        if where.startswith(workload_name + ".c:") or where == "in " + workload_name or \
                where.endswith("/" + workload_name):
            return fn
    return None


def valgrind_sites(cmd, workload_name, input=None, timeout=300):
    """{function: (bytes, blocks)} of the losses by the site that allocated them."""
    err = run_valgrind(cmd, input=input, timeout=timeout)
    sites = {}
    record = None
    frames = []

    def close():
        if record:
            fn = _site(frames, workload_name)
            b, n = sites.get(fn, (0, 0))
            sites[fn] = (b + record[0], n + record[1])

    for line in err.splitlines():
        m = _RECORD_RE.match(line)
        if m:
            close()
            # A record of definitely lost blocks that own others counts its direct bytes here:
            # the indirect ones have records of their own.
            record = (_num(m.group(2) or m.group(1)), _num(m.group(3)))
            frames = []
            continue
        m = _FRAME_RE.match(line)
        if m and record:
            frames.append((m.group(1), m.group(2)))
        elif record and frames:
            close()
            record = None
    close()
    return sites


_LEAKED_RE = re.compile(r"^LEAKED BYTES REPORT: (\d+) bytes in (\d+) objects", re.M)
_GROUP_RE = re.compile(r"^(Leak of|In use) (\d+) bytes in (\d+) objects allocated from:$")
# "    00007f... leak_malloc+0x20 (/path/leak_mix)", "    ... operator new(unsigned long)+0x1c (/lib...)"
_OUR_FRAME_RE = re.compile(r"^    [0-9a-f]{16} (.*?)(?:\+0x[0-9a-f]+)? \(([^()]*)\)$")


def kmemleak_lost(out):
    """(bytes, blocks) of kmemleak --user's leak report (its last one)."""
    found = _LEAKED_RE.findall(out)
    if not found:
        pytest.fail("no LEAKED BYTES REPORT in:\n" + out[-3000:], pytrace=False)
    b, n = found[-1]
    return int(b), int(n)


def kmemleak_sites(out, workload_name, first_frame_only=False):
    """{function: (bytes, blocks)} of the "Leak of" groups, by their first frame in the workload.
    first_frame_only: only where the first frame is (else under None): a stack walked by frame
    pointers from inside a library built without them (strdup, operator new) skips that
    frame's caller."""
    sites = {}
    cur = None

    def close():
        if cur:
            frames = cur[2][:1] if first_frame_only else cur[2]
            fn = next((f for f, obj in frames if obj.endswith("/" + workload_name)), None)
            b, n = sites.get(fn, (0, 0))
            sites[fn] = (b + cur[0], n + cur[1])

    for line in out.splitlines():
        m = _GROUP_RE.match(line)
        if m:
            close()
            cur = (int(m.group(2)), int(m.group(3)), []) if m.group(1) == "Leak of" else None
            continue
        m = _OUR_FRAME_RE.match(line)
        if m and cur is not None:
            cur[2].append((m.group(1), m.group(2)))
        elif not line.startswith("    "):
            close()
            cur = None
    close()
    return sites


_probes_supported = None


def probes_supported(pp):
    """Whether kmemleak --user has --probes (the agent path)."""
    global _probes_supported
    if _probes_supported is None:
        rc, out, err = pp.run(["kmemleak", "--help"], timeout=30)
        _probes_supported = "--probes" in out + err
    return _probes_supported


@pytest.fixture(params=["ebpf", "agent"])
def probes(request, pp):
    """kmemleak --user's options for the path under test."""
    if not probes_supported(pp):
        if request.param == "agent":
            pytest.skip("kmemleak --user has no --probes option yet: the agent path is not built in")
        return []  # eBPF uprobes are the only path
    return ["--probes=" + request.param]
