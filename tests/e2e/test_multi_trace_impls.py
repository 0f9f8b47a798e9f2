"""End-to-end tests of the multi-trace implementations pair, kmemprof and syscalls (SPEC §4.6.8,
§4.6.9, §4.6.10): exact per-syscall call and error counts checked against `perf stat`, exactly
one unpaired event for a sleep still in progress when perf-prof is interrupted, the memory
profile of a pipe workload, and the usage errors.

Workloads (tests/workloads/syscalls.c): `syscalls mixed N M` makes N getpid() then M failing
close(); `syscalls nanosleep N` sleeps N times 1 ms, prints "last sleep" and sleeps a minute;
`syscalls pipes N` creates and closes N pipes."""

import re
import signal
import time

import pytest

from conftest import WALL_RE, assert_not_crashed, perf_stat_count

SYSCALLS = ["-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--impl", "syscalls"]

WALL_LINE_RE = re.compile(r"^" + WALL_RE + r" $")
# {name(id):<20} {calls:>8} {total:>16.3f} {min:>12.3f} {avg:>12.3f} {max:>12.3f} {err:>6}
SYSCALL_ROW_RE = re.compile(
    r"^(?:(?P<tid>\d+) +(?P<comm>.{16}) )?(?P<name>\S+?(?:\((?P<id>\d+)\))?) +(?P<calls>\d+) +"
    r"(?P<total>\d+\.\d{3}) +(?P<min>\d+\.\d{3}) +(?P<avg>\d+\.\d{3}) +(?P<max>\d+\.\d{3}) +(?P<err>\d+)"
    r"(?: +(?P<than>\d+) \( *(?P<pct>\d+)%\))?$")
# {WALL} {M} {comm:>16} {pid:>6} {LAT} [{cpu:03}] {sec}.{usec:06}: {sys}:{name}: {INFO}
EVENT_RE = re.compile(
    r"^" + WALL_RE + r" [ G] .{16} +\d+ [.Ddb][.BNLbnpl][.ZzHhs][.0-9a-f][0-9a-f]? "
    r"\[(?:\d{3}|---)\] \d+\.\d{6}: (?P<event>[^ :]+:[^ :]+): .*$")
KSTACK_RE = re.compile(r"^    [0-9a-f]{16} \S+\+0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$")


def ok(pp, args, timeout=60):
    rc, out, err = pp.run(["multi-trace"] + args, timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0, "rc=%d\n%s\n%s" % (rc, out[-3000:], err)
    assert err == "", "a normal run writes nothing on stderr:\n" + err
    return out


def syscall_table(out, perins=False, than=False):
    """The one syscalls table of `out`: checks its header lines, returns {name: row dict}."""
    lines = out.splitlines()
    heads = [i for i, l in enumerate(lines) if WALL_LINE_RE.match(l)]
    assert len(heads) == 1, "expected one table:\n" + out[-3000:]
    i = heads[0]
    unit = ["calls", "total(us)", "min(us)", "avg(us)", "max(us)"]
    head = ("thread " + "comm".ljust(16) + " " if perins else "") + "syscalls".ljust(20) + \
        "".join(" " + c.rjust(w) for c, w in zip(unit, [8, 16, 12, 12, 12])) + " " + "err".rjust(6) + \
        ("   than(reqs)" if than else "")
    dashes = ("-" * 6 + " " + "-" * 16 + " " if perins else "") + " ".join(
        "-" * w for w in [20, 8, 16, 12, 12, 12, 6]) + (" " + "-" * 14 if than else "")
    assert lines[i + 1] == head
    assert lines[i + 2] == dashes
    rows = {}
    for l in lines[i + 3:]:
        m = SYSCALL_ROW_RE.match(l)
        assert m, "not a table row: %r" % l
        if not perins:
            assert m.group("tid") is None
            assert len(m.group("name")) <= 20 and l[20] == " " and l[:20].rstrip() == m.group("name")
        r = {k: m.group(k) for k in ("tid", "comm", "name", "id", "than")}
        for k in ("calls", "err"):
            r[k] = int(m.group(k))
        for k in ("total", "min", "avg", "max"):
            r[k] = float(m.group(k))
        key = (int(r["tid"]), r["name"]) if perins else r["name"]
        assert key not in rows, "two rows for %s" % (key,)
        rows[key] = r
    return rows


# --------------------------------------------------------------------------- syscalls

@pytest.mark.parametrize("n,m", [(2000, 300), (1, 1)])
def test_syscalls_counts_and_errors_match_perf_stat(pp, needs_root, workload, n, m):
    argv = [workload("syscalls"), "mixed", str(n), str(m)]
    rows = syscall_table(ok(pp, SYSCALLS + ["--"] + argv))
    getpid, close = rows["getpid(39)"], rows["close(3)"]
    assert getpid["calls"] == n
    assert getpid["err"] == 0
    # close: the M failing ones, and those of the dynamic loader, which succeed.
    assert close["err"] == m
    assert close["calls"] >= m
    for name, event in (("getpid(39)", "syscalls:sys_enter_getpid"), ("close(3)", "syscalls:sys_enter_close")):
        ref = perf_stat_count(event, argv)
        if ref is not None:
            assert rows[name]["calls"] == ref, "%s: %d, perf stat: %d" % (name, rows[name]["calls"], ref)
    ref = perf_stat_count("syscalls:sys_exit_close", argv, "ret < 0")
    if ref is not None:
        assert close["err"] == ref
    for r in rows.values():
        assert r["calls"] > 0
        assert r["min"] <= r["avg"] <= r["max"]
        assert abs(r["avg"] * r["calls"] - r["total"]) <= 0.001 * r["calls"] + 0.01
    # Rows by calls, descending.
    calls = [r["calls"] for r in rows.values()]
    assert calls == sorted(calls, reverse=True)


def test_syscalls_per_thread_with_threshold(pp, needs_root, workload):
    """--perins: one row per (thread, syscall), thread and comm columns; --than prints each
    slow call's enter and exit lines and counts them."""
    p = pp.start(["multi-trace"] + SYSCALLS + ["--perins", "--than", "5ms", "--",
                                               workload("syscalls"), "nanosleep", "3"])
    p.wait_line(r"^last sleep$", timeout=20)
    time.sleep(0.3)
    p.send(signal.SIGINT)
    rc, out, err = p.finish(timeout=20)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    table_at = next(i for i, l in enumerate(lines) if WALL_LINE_RE.match(l))
    rows = syscall_table("\n".join(lines[table_at:]), perins=True, than=True)
    tids = {t for t, _ in rows}
    assert len(tids) == 1
    tid = tids.pop()
    r = rows[(tid, "clock_nanosleep(230)")]
    assert r["comm"].rstrip() == "syscalls"
    # The three 1 ms sleeps; the minute-long one is still in progress.
    assert r["calls"] == 3 and r["err"] == 0
    assert 1000.0 <= r["min"] <= r["max"] < 5000.0
    # Slow calls: the only ones beyond 5 ms would be execve or the like; each was printed.
    slow = sum(int(x["than"]) for x in rows.values())
    events = [EVENT_RE.match(l) for l in lines[:table_at] if l != "last sleep"]
    assert all(events), "\n".join(lines[:table_at])
    assert len(events) == 2 * slow
    assert [e.group("event") for e in events] == ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"] * slow


def test_syscalls_needs_exactly_enter_and_exit(pp, needs_root):
    for events in (["-e", "raw_syscalls:sys_enter", "-e", "sched:sched_switch"],
                   ["-e", "raw_syscalls:sys_exit", "-e", "raw_syscalls:sys_enter"],
                   ["-e", "syscalls:sys_enter_getpid", "-e", "syscalls:sys_exit_getpid"]):
        rc, out, err = pp.run(["multi-trace"] + events + ["--impl", "syscalls", "--", "true"])
        assert_not_crashed(rc)
        assert rc != 0
        assert out == ""
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].endswith("Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit"), err


# --------------------------------------------------------------------------- pair

def test_pair_reports_the_sleep_still_in_progress(pp, needs_root, workload):
    n = 5
    p = pp.start(["multi-trace", "-e", "syscalls:sys_enter_clock_nanosleep", "-e",
                  "syscalls:sys_exit_clock_nanosleep", "--impl", "pair", "--",
                  workload("syscalls"), "nanosleep", str(n)])
    p.wait_line(r"^last sleep$", timeout=20)
    time.sleep(0.3)  # into the last clock_nanosleep
    p.send(signal.SIGINT)
    rc, out, err = p.finish(timeout=20)
    assert_not_crashed(rc)
    assert rc == 0, "rc=%d\n%s\n%s" % (rc, out, err)
    assert err == ""
    lines = [l for l in out.splitlines() if l != "last sleep"]
    assert len(lines) == 3, out
    m = EVENT_RE.match(lines[0])
    assert m and m.group("event") == "syscalls:sys_enter_clock_nanosleep", lines[0]
    assert " syscalls " in lines[0]
    assert re.match(r"^" + WALL_RE + r" syscalls:sys_enter_clock_nanosleep unpaired 1$", lines[1]), lines[1]
    assert re.match(r"^" + WALL_RE + r" syscalls:sys_enter_clock_nanosleep "
                    r"syscalls:sys_exit_clock_nanosleep paired %d$" % n, lines[2]), lines[2]


def test_pair_periodic_reports_reset(pp, needs_root, workload):
    """-i: a report per interval; the counts of all reports add up to the run's."""
    n = 300
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "-e", "syscalls:sys_exit_getpid",
                  "--impl", "pair", "-i", "20", "--", workload("syscalls"), "mixed", str(n), "1"])
    paired = [int(x) for x in re.findall(
        r"^" + WALL_RE + r" syscalls:sys_enter_getpid syscalls:sys_exit_getpid paired (\d+)$", out, re.M)]
    unpaired = [int(x) for x in re.findall(
        r"^" + WALL_RE + r" syscalls:sys_enter_getpid unpaired (\d+)$", out, re.M)]
    assert len(paired) == len(unpaired) >= 1
    assert sum(paired) == n and sum(unpaired) == 0


# --------------------------------------------------------------------------- kmemprof

def kmem_sections(lines, i, ev, what, verb, noun):
    """Parses '{ev} total {what} B bytes on N objects[ but not freed]' and its top entries from
    lines[i]; returns (B, N, entries, next index), entries = [(bytes, objs, stack lines)]."""
    m = re.match(r"^%s total %s (\d+) bytes on (\d+) objects( but not freed)?$" % (re.escape(ev), what), lines[i])
    assert m, lines[i]
    total_b, total_n = int(m.group(1)), int(m.group(2))
    i += 1
    entries = []
    while i < len(lines):
        m = re.match(r"^%s (\d+) \((\d+\.\d)%%\) bytes on (\d+) \((\d+\.\d)%%\) objects:$" % verb, lines[i])
        if not m:
            break
        b, n = int(m.group(1)), int(m.group(3))
        assert m.group(2) == "%.1f" % (b * 100.0 / total_b)
        assert m.group(4) == "%.1f" % (n * 100.0 / total_n)
        i += 1
        stack = []
        while i < len(lines) and lines[i].startswith("    "):
            assert KSTACK_RE.match(lines[i]), lines[i]
            stack.append(lines[i])
            i += 1
        assert stack, "an entry without stack lines"
        entries.append((b, n, stack))
    assert 1 <= len(entries) <= 10
    assert [e[0] for e in entries] == sorted((e[0] for e in entries), reverse=True)
    m = re.match(r"^Skipping %s numbered 11\.\.(\d+)$" % noun, lines[i]) if i < len(lines) else None
    if m:
        assert len(entries) == 10 and int(m.group(1)) > 10
        i += 1
        assert sum(e[0] for e in entries) < total_b
    else:
        assert sum(e[0] for e in entries) == total_b and sum(e[1] for e in entries) == total_n
    return total_b, total_n, entries, i


def test_kmemprof_pipes(pp, needs_root, workload):
    n = 1000
    out = ok(pp, ["-e", "kmem:kmalloc//size=bytes_alloc/stack/", "-e", "kmem:kfree//stack/",
                  "-k", "ptr", "--order", "--impl", "kmemprof", "--",
                  workload("syscalls"), "pipes", str(n)], timeout=120)
    lines = out.splitlines()
    assert WALL_LINE_RE.match(lines[0]), lines[0]
    assert lines[1] == "kmem:kmalloc => kmem:kfree"
    ab, an, allocs, i = kmem_sections(lines, 2, "kmem:kmalloc", "alloc", "Allocate", "alloc")
    fb, fn, frees, i = kmem_sections(lines, i, "kmem:kfree", "free", "Free", "free")
    assert lines[i] == ""
    # Every paired allocation was freed: the two sides count the same objects.
    assert (ab, an) == (fb, fn)
    assert an >= 2 * n
    # alloc_pipe_info allocates the pipe and its buffer array once per pipe; both are freed
    # under pipe_release (the pipe itself by a tail call of free_pipe_info).
    pipe_allocs = [e for e in allocs if any(" alloc_pipe_info+" in l for l in e[2])]
    assert len(pipe_allocs) >= 2 and all(e[1] == n for e in pipe_allocs[:2]), allocs
    pipe_frees = sum(e[1] for e in frees if any(" pipe_release+" in l for l in e[2]))
    assert pipe_frees >= 2 * n
    # Whatever follows is the not-freed block, and nothing else.
    rest = lines[i + 1:]
    if rest:
        assert WALL_LINE_RE.match(rest[0])
        _, nn, _, j = kmem_sections(rest, 1, "kmem:kmalloc", "alloc", "Allocate", "alloc")
        assert rest[1].endswith(" but not freed")
        assert nn < n  # not the pipes
        assert rest[j:] == [""]


def test_kmemprof_needs_size(pp, needs_root):
    rc, out, err = pp.run(["multi-trace", "-e", "kmem:kmalloc//stack/", "-e", "kmem:kfree//stack/", "-k", "ptr",
                           "--impl", "kmemprof", "--", "true"])
    assert_not_crashed(rc)
    assert rc != 0
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].endswith("kmem:kmalloc//size=?/ size attribute is not set"), err


def test_kmemprof_without_stack_warns_and_runs(pp, needs_root, workload):
    rc, out, err = pp.run(["multi-trace", "-e", "kmem:kmalloc//size=bytes_alloc/", "-e", "kmem:kfree",
                           "-k", "ptr", "--impl", "kmemprof", "--", workload("syscalls"), "pipes", "100"])
    assert_not_crashed(rc)
    assert rc == 0
    assert len(err.splitlines()) == 2 and all("stack" in l for l in err.splitlines()), err
    lines = out.splitlines()
    assert lines[1] == "kmem:kmalloc => kmem:kfree"
    # One entry holding everything, without stack lines.
    m = re.match(r"^kmem:kmalloc total alloc (\d+) bytes on (\d+) objects$", lines[2])
    assert m and int(m.group(2)) >= 200
    assert lines[3] == "Allocate %s (100.0%%) bytes on %s (100.0%%) objects:" % (m.group(1), m.group(2))
    assert lines[4] == "kmem:kfree total free %s bytes on %s objects" % (m.group(1), m.group(2))
