"""--pprof FILE: the stacks of profile, trace and task-state as a gzip-compressed pprof
profile.proto, read back with `go tool pprof` (Debian's golang-go, a test-only dependency).

Each run writes a folded flame graph and a pprof profile of the same samples, so the two must
agree exactly: the same stacks with the same counts (pprof's `-raw` and `-traces`, the
process name being a `comm` label there, not a root frame), the same per-function totals
(`-top`), hence the same hot_a:hot_b ratio on the hotab workload (3:1 by construction, see
test_profile.py)."""

import collections
import datetime
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed, run

CPU0 = ["taskset", "-c", "0"]


# ---------------------------------------------------------------- helpers


@pytest.fixture
def pprof(go_pprof):
    return go_pprof


def folded(path, prefix_frames=0):
    """Stack text -> count; `prefix_frames` leading frames (-i's date and time) dropped, and the
    frames' kind annotations (_[k], _[l], ...: pprof keeps kinds apart by mapping)."""
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            frames = [re.sub(r"_\[[kjil]\]$", "", f) for f in stack.split(";")[prefix_frames:]]
            counts[";".join(frames)] += int(n)
    return counts


LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(.*) (\S*):(\d+) s=(\d+)(?:\(.*\))?$")
SAMPLE_RE = re.compile(r"^((?:\s+-?\d+)+): ((?:\d+ )*)$")
LABEL_RE = re.compile(r"^\s{16}(\w+):\[(.*)\]$")
MAP_RE = re.compile(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*) (\S*) ?((?:\[\w+\])*)$")


class Raw:
    """`go tool pprof -raw`: header fields, samples (values, location ids, labels),
    locations (id -> (mapping, address, function, file, line)) and mappings."""

    def __init__(self, text):
        self.header, self.samples, self.locations, self.mappings = {}, [], {}, {}
        section = "header"
        for line in text.splitlines():
            if line in ("Samples:", "Locations", "Mappings"):
                section = line.rstrip(":")
                continue
            if section == "header":
                k, _, v = line.partition(": ")
                self.header[k] = v
            elif section == "Samples":
                m = SAMPLE_RE.match(line)
                if m:
                    self.samples.append(([int(v) for v in m.group(1).split()],
                                         [int(v) for v in m.group(2).split()], {}))
                elif LABEL_RE.match(line):
                    k, v = LABEL_RE.match(line).groups()
                    self.samples[-1][2][k] = v
                else:
                    self.header["sample_types"] = line.split()
            elif section == "Locations":
                m = LOC_RE.match(line)
                assert m, "unexpected -raw location line: %r" % line
                self.locations[int(m.group(1))] = (int(m.group(3) or 0), int(m.group(2), 16), m.group(4),
                                                   m.group(5), int(m.group(6)))
            elif section == "Mappings" and line.strip():
                m = MAP_RE.match(line)
                assert m, "unexpected -raw mapping line: %r" % line
                self.mappings[int(m.group(1))] = dict(start=int(m.group(2), 16), limit=int(m.group(3), 16),
                                                      offset=int(m.group(4), 16), file=m.group(5),
                                                      build_id=m.group(6), bits=m.group(7))

    def stacks(self, value=0):
        """Folded-style stacks: comm label as the root, then the frames outermost first."""
        counts = collections.Counter()
        for values, locs, labels in self.samples:
            frames = [self.locations[l][2] for l in reversed(locs)]
            if "comm" in labels:
                frames.insert(0, labels["comm"])
            counts[";".join(frames)] += values[value]
        return counts


def traces(text):
    """`go tool pprof -traces -sample_index=0` (counts): the same folded-style stacks."""
    counts = collections.Counter()
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        labels, frames, n = {}, [], None
        for line in block.splitlines():
            m = re.match(r"^\s+(\w+):  (.*)$", line)
            if n is None and m:
                labels[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^\s+(\d+)   (\S.*)$", line)
            if n is None and m:
                n = int(m.group(1))
                frames.append(m.group(2))
            elif n is not None and line.strip():
                frames.append(line.strip())
        if n is None:
            continue
        frames.reverse()
        if "comm" in labels:
            frames.insert(0, labels["comm"])
        counts[";".join(frames)] += n
    return counts


def top(text):
    """`go tool pprof -top -sample_index=0` (counts): function -> (flat, cum)."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(\S.*)$", line)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def with_function(counts, name):
    return sum(n for s, n in counts.items() if name in s.split(";"))


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def check_against_folded(pprof, pb, fold, value_types):
    """The profile holds the folded file's stacks, counts and per-function totals exactly."""
    raw = Raw(pprof("-raw", pb))
    assert raw.header["sample_types"] == value_types, raw.header
    assert raw.stacks() == fold
    assert traces(pprof("-traces", "-sample_index=0", pb)) == fold
    rows = top(pprof("-top", "-sample_index=0", "-nodefraction=0", "-nodecount=100000", pb))
    for fn in {f for s in fold for f in s.split(";")[1:]}:
        assert rows[fn][1] == with_function(fold, fn), fn
    return raw, rows


# ---------------------------------------------------------------- profile


def test_profile_pprof_agrees_with_folded(pp, needs_root, workload, pprof, tmp_path):
    hotab = workload("hotab")
    name, pb = str(tmp_path / "cpu"), str(tmp_path / "cpu.pb.gz")
    t0 = time.time()
    rc, out, err = run([pp.path, "profile", "-F", "997", "-g", "--flame-graph", name, "--pprof", pb, "--",
                        hotab, "2000"], timeout=60)
    t1 = time.time()
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    with open(pb, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    assert not os.path.exists(pb + ".tmp")
    fold = folded(name + ".folded")
    total = sum(fold.values())
    assert total > 1500, fold

    raw, rows = check_against_folded(pprof, pb, fold, ["samples/count", "cpu/nanoseconds"])
    # hot_a and hot_b named, with the folded file's counts, so the same ratio; 3:1 by construction.
    a, b = with_function(fold, "hot_a"), with_function(fold, "hot_b")
    assert rows["hot_a"][1] == a and rows["hot_b"][1] == b and b > 200, (a, b)
    print("\nhot_a:hot_b folded %d:%d, pprof %d:%d = %.2f" % (a, b, rows["hot_a"][1], rows["hot_b"][1], a / b))
    assert 2.4 <= a / b <= 3.75
    assert sum(v[0] for v, _, _ in raw.samples) == total
    for values, locs, labels in raw.samples:
        if {"hot_a", "hot_b"} & {raw.locations[l][2] for l in locs}:
            assert labels["comm"] == "hotab" and labels["pid"].isdigit(), labels

    # Period: 1/F s of CPU time per sample, in each sample's second value.
    period = 1_000_000_000 // 997
    assert raw.header["PeriodType"] == "cpu nanoseconds"
    assert int(raw.header["Period"]) == period
    assert all(v[1] == v[0] * period for v, _, _ in raw.samples)
    # Time: the start of the run; duration: the run (hotab burns 2 s of CPU).
    when = datetime.datetime.strptime(raw.header["Time"][:26], "%Y-%m-%d %H:%M:%S.%f")
    when = when.replace(tzinfo=datetime.timezone.utc).timestamp()
    assert t0 - 1 <= when <= t0 + 1, (t0, raw.header["Time"])
    head = pprof("-top", pb)
    m = re.search(r"Duration: ([\d.]+)(ms|s)\b", head)
    duration = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    assert 1.9 <= duration <= t1 - t0 + 0.01, (duration, t1 - t0)

    # Mappings: the workload first (pprof's main binary), with its build-id; every one
    # symbolized by us, so pprof never looks for the binaries.
    assert raw.mappings[1]["file"] == hotab, raw.mappings
    assert raw.mappings[1]["build_id"] == build_id(hotab)
    assert "[FN]" in raw.mappings[1]["bits"] and "[LN]" in raw.mappings[1]["bits"]
    assert re.search(r"^File: hotab$", head, re.M) and ("Build ID: " + build_id(hotab)) in head, head
    assert all("[FN]" in m["bits"] for m in raw.mappings.values())
    # Locations: runtime addresses inside their mapping; hot_a's lines in hotab.c.
    for mapping, addr, fn, file, line in raw.locations.values():
        if mapping:
            m = raw.mappings[mapping]
            assert m["start"] <= addr < m["limit"] or m["file"] == "[kernel.kallsyms]", (fn, hex(addr), m)
        if fn in ("hot_a", "hot_b", "work", "main"):
            assert raw.mappings[mapping]["file"] == hotab
            assert file.endswith("hotab.c") and line > 0, (fn, file, line)


def test_profile_pprof_with_interval_covers_the_whole_run(pp, needs_root, workload, pprof, tmp_path):
    name, pb = str(tmp_path / "cpu"), str(tmp_path / "cpu.pb.gz")
    rc, out, err = run([pp.path, "profile", "-F", "997", "-g", "-i", "200", "--flame-graph", name, "--pprof", pb,
                        "--", workload("hotab"), "700"], timeout=60)
    assert rc == 0 and err == "", err
    fold = folded(name + ".folded", prefix_frames=2)  # each interval's lines start with date;time
    assert sum(fold.values()) > 500
    check_against_folded(pprof, pb, fold, ["samples/count", "cpu/nanoseconds"])


def test_profile_pprof_written_on_sigint(pp, needs_root, workload, pprof, tmp_path):
    """Attached to a running process, stopped by SIGINT: the file is complete, FILE.tmp gone,
    and an existing FILE replaced."""
    hot = Bg([workload("hotab"), "5000"])
    pb = str(tmp_path / "p.pb.gz")
    with open(pb, "w") as f:
        f.write("old")
    p = Bg([pp.path, "profile", "-F", "997", "-g", "--pprof", pb, "-p", str(hot.pid)])
    try:
        time.sleep(1.0)
        p.send(signal.SIGINT)
        rc, out, err = p.finish(timeout=20)
    finally:
        hot.kill()
    assert rc == 0 and err == "", (rc, err)
    assert not os.path.exists(pb + ".tmp")
    rows = top(pprof("-top", "-sample_index=samples", "-nodefraction=0", pb))
    assert rows["hot_a"][1] > 300 and rows["hot_b"][1] > 50, rows


# ---------------------------------------------------------------- trace and task-state


def test_trace_pprof_agrees_with_folded(pp, needs_root, workload, pprof, tmp_path):
    name, pb = str(tmp_path / "t"), str(tmp_path / "t.pb.gz")
    rc, out, err = pp.run(["trace", "-e", "syscalls:sys_enter_getpid", "-g", "--flame-graph", name, "--pprof", pb,
                           "--", workload("syscalls"), "getpid", "500"], timeout=60)
    assert rc == 0 and err == "", err
    fold = folded(name + ".folded")
    assert sum(fold.values()) == 500, fold
    raw, rows = check_against_folded(pprof, pb, fold, ["samples/count"])
    assert raw.header["PeriodType"] == "samples count" and int(raw.header["Period"]) == 1
    # syscall() keeps no frame: its caller getpids() is not seen, its caller main() is.
    assert rows["main"][1] == 500 and rows["syscall"][1] == 500, rows
    assert raw.mappings[1]["file"] == workload("syscalls")
    assert raw.mappings[1]["build_id"] == build_id(workload("syscalls"))


def test_trace_pprof_with_exit_n(pp, needs_root, workload, pprof, tmp_path):
    pb = str(tmp_path / "t.pb.gz")
    rc, out, err = pp.run(["trace", "-e", "syscalls:sys_enter_getpid", "-g", "-N", "50", "--pprof", pb,
                           "--", workload("syscalls"), "getpid", "100000"], timeout=60)
    assert rc == 0 and err == "", err
    rows = top(pprof("-top", "-sample_index=samples", "-nodefraction=0", pb))
    assert rows["main"][1] == 50, rows


def test_task_state_pprof_agrees_with_folded(pp, needs_root, workload, pprof, tmp_path):
    sleeper = [*CPU0, workload("sleeper"), "2", "100", "100"]
    name, pb = str(tmp_path / "waits"), str(tmp_path / "waits.pb.gz")
    rc, out, err = pp.run(["task-state", "-S", "--than", "50ms", "-g", "--flame-graph", name, "--pprof", pb,
                           "--", *sleeper])
    assert rc == 0 and err == "", err
    fold = folded(name + ".folded")
    assert sum(fold.values()) == 6, fold  # 3 long sleeps x 2 events, as the folded test finds
    raw, rows = check_against_folded(pprof, pb, fold, ["events/count"])
    assert rows["nap"][1] >= 3, rows


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("argv", [
    ["profile", "-F", "997", "--pprof"],
    ["trace", "-e", "syscalls:sys_enter_getpid", "--pprof"],
    ["task-state", "--pprof"],
], ids=["profile", "trace", "task-state"])
def test_pprof_implies_g(pp, needs_root, argv, tmp_path):
    """--pprof records the stacks it needs, as --flame-graph does (was a usage error)."""
    pb = str(tmp_path / "x.pb.gz")
    rc, out, err = run([pp.path] + argv + [pb, "--", "true"], timeout=30)
    assert (rc, err) == (0, ""), (rc, err)
    with open(pb, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"


def test_pprof_unwritable_fails_at_start(pp, needs_root, tmp_path):
    marker = tmp_path / "ran"
    rc, out, err = pp.run(["profile", "-F", "997", "-g", "--pprof", "/nonexistent/dir/x.pb.gz", "--",
                           "touch", str(marker)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 1, (rc, err)
    assert len(err.splitlines()) == 1 and "/nonexistent/dir/x.pb.gz" in err and "pprof" in err, err
    assert not marker.exists(), "the workload ran: the error came after the start"


def test_pprof_help(pp):
    rc, out, err = pp.run(["profile", "-h"], timeout=10)
    assert rc == 129
    assert re.search(r"^\s+--pprof <file>\s+record stacks \(-g implied\) and write them as a$", err, re.M), err
