"""lock (issue 28): futex waits of known length from tests/workloads/lockhold.c, which measures
its own waits: a holder keeps a pthread mutex (or a rwlock, or signals a condition variable)
HOLD_MS while the waiter blocks, N rounds, one contended wait a round. Checked: the lock's
waits and total against the workload's own total (5 %), the waiter's and the holder's functions
in the stacks, the --than lines, Go's contention profile read by `go tool pprof`, the flame
graph, three locks told apart by address, a process exiting while a thread waits, -p with -i,
and bad input.

The futex syscall tracepoints are not among the scheduler events this VM's kernel drops now and
then: counts are exact. Each run is shared by the tests of its module-scoped fixture.
"""

import os
import re
import signal

import pytest

from conftest import WALL_RE, Bg, assert_not_crashed, require_root

ROW_RE = re.compile(
    r"^0x(?P<addr>[0-9a-f]{16}) (?P<pid>\d+) +(?P<comm>\S+) +(?P<waits>\d+) +(?P<timeout>\d+) +(?P<intr>\d+) +"
    r"(?P<retry>\d+) +(?P<total>\d+\.\d{3}) +(?P<mean>\d+\.\d{3}) +(?P<p50>\d+\.\d{3}) +(?P<p99>\d+\.\d{3}) +"
    r"(?P<max>\d+\.\d{3})$")
HEADER = ("LOCK               PID     COMM                WAITS  TIMEOUT     INTR    RETRY        total(us)"
          "     mean(us)      p50(us)      p99(us)      max(us)")
THAN_RE = re.compile(
    r"^" + WALL_RE + r"  lock: (?P<tid>\d+) (?P<comm>\S+) waited (?P<us>\d+\.\d{3}) us on 0x(?P<addr>[0-9a-f]+) "
    r"\((?P<pid>\d+) \S+\), (?P<end>woken by (?P<waker>\d+) \S+|timed out|interrupted|no release seen)")


class Run:
    """One perf-prof lock run over one lockhold mode: its output split into the workload's lines,
    the lock rows, and the rest."""

    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err
        self.lines = out.splitlines()
        self.rows = [m.groupdict() for m in map(ROW_RE.match, self.lines) if m]
        self.locks = [int(m.group(1), 16) for m in map(re.compile(r"^lockhold: lock 0x([0-9a-f]+)$").match,
                                                          self.lines) if m]
        pid = [l for l in self.lines if l.startswith("lockhold: pid ")]
        self.pid = int(pid[0].split()[-1]) if pid else None
        m = re.search(r"^lockhold: waited (\d+) ns in (\d+) waits$", out, re.M)
        self.own_ns, self.own_waits = (int(m.group(1)), int(m.group(2))) if m else (None, None)

    def rows_in(self, base, size):
        """The rows of this process's locks at addresses [base, base + size)."""
        return [r for r in self.rows if int(r["pid"]) == self.pid and base <= int(r["addr"], 16) < base + size]

    def check_clean(self):
        assert_not_crashed(self.rc)
        assert self.rc == 0, self.out + self.err
        assert self.err == "", self.err
        assert HEADER in self.lines, self.out


def lock_run(pp, workload, tmp, mode, *args, opts=()):
    require_root()
    rc, out, err = pp.run(["lock", *opts, "--", workload("lockhold"), mode, *map(str, args)], timeout=60)
    return Run(rc, out, err)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("lock")


@pytest.fixture(scope="module")
def mutex(pp, workload, tmp):
    """100 rounds of 5 ms on a pthread mutex, with -g, --than, --pprof and --flame-graph."""
    r = lock_run(pp, workload, tmp, "mutex", 100, 5,
                 opts=["-g", "--than", "4ms", "--pprof", str(tmp / "mutex.pb.gz"), "--flame-graph",
                       str(tmp / "mutex")])
    r.pprof = str(tmp / "mutex.pb.gz")
    r.folded = str(tmp / "mutex.folded")
    return r


@pytest.fixture(scope="module")
def rwlock(pp, workload, tmp):
    return lock_run(pp, workload, tmp, "rwlock", 30, 5, opts=["--call-graph", "dwarf"])


@pytest.fixture(scope="module")
def condvar(pp, workload, tmp):
    return lock_run(pp, workload, tmp, "condvar", 30, 5, opts=["--call-graph", "dwarf"])


def test_mutex_waits_and_total_match_the_workloads_own(mutex):
    mutex.check_clean()
    assert mutex.own_waits == 100, mutex.out
    assert len(mutex.locks) == 1
    rows = mutex.rows_in(mutex.locks[0], 40)  # pthread_mutex_t: the futex word is its first
    assert len(rows) == 1, mutex.out
    row = rows[0]
    assert int(row["waits"]) == 100, mutex.out
    assert int(row["timeout"]) == 0 and int(row["intr"]) == 0
    total_ns = float(row["total"]) * 1000
    assert abs(total_ns - mutex.own_ns) <= 0.05 * mutex.own_ns, (total_ns, mutex.own_ns)
    assert 5000 <= float(row["p50"]) <= 6000 and 5000 <= float(row["max"])
    assert row["comm"] == "lockhold"


def test_mutex_stacks_name_the_waiter_and_the_holder(mutex):
    text = mutex.out
    i = text.index("waiting stacks, by total wait")
    section = text[i:]
    m = re.search(r"^\[\d+\] 100 waits .*\n((?:    .*\n)+)  released by (\d+) lockhold: 100 waits.*\n((?:      .*\n)+)",
                  section, re.M)
    assert m, section
    assert "waiter_thread" in m.group(1), m.group(1)
    assert "holder_thread" in m.group(3), m.group(3)
    assert "holder_thread" not in m.group(1)


def test_than_prints_each_long_wait_with_its_waker(mutex):
    waits = [m for m in map(THAN_RE.match, mutex.lines) if m]
    mine = [m for m in waits if int(m.group("addr"), 16) == mutex.locks[0]]
    assert len(mine) == 100, mutex.out[:3000]
    for m in mine:
        assert float(m.group("us")) > 4000
        assert m.group("waker") and m.group("waker") != m.group("tid"), m.group(0)
    # The waiter's stack follows its line, the holder's after "released at:".
    i = mutex.lines.index(mine[0].group(0))
    block = "\n".join(mutex.lines[i:i + 20])
    assert "waiter_thread" in block.split("released at:")[0]
    assert "holder_thread" in block.split("released at:")[1]


def test_pprof_is_a_contention_profile_go_reads(mutex, go_pprof):
    raw = go_pprof("-raw", mutex.pprof)
    assert "PeriodType: contentions count" in raw, raw
    assert "contentions/count delay/nanoseconds[dflt]" in raw, raw
    samples = re.findall(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", raw, re.M)
    assert samples, raw
    total = sum(int(d) for _, d, _ in samples)
    waits = sum(int(n) for n, _, _ in samples)
    assert waits >= 100  # the lock's and the main thread's pthread_join
    top = go_pprof("-top", "-cum", mutex.pprof)
    assert "Type: delay" in top, top
    line = [l for l in top.splitlines() if l.rstrip().endswith(" waiter_thread")]
    assert line, top
    assert total >= mutex.own_ns * 0.95


def test_flame_graph_weighs_waiters_by_microseconds(mutex):
    with open(mutex.folded) as f:
        folded = [l.rsplit(" ", 1) for l in f.read().splitlines() if l]
    mine = [(s, int(n)) for s, n in folded if "waiter_thread" in s]
    assert mine, folded
    us = sum(n for _, n in mine)
    assert abs(us * 1000 - mutex.own_ns) <= 0.05 * mutex.own_ns, (us, mutex.own_ns)
    assert all(s.startswith("lockhold;") for s, _ in mine)
    assert os.path.exists(mutex.folded[:-len(".folded")] + ".svg")


def test_rwlock_reader_waits_for_the_writer(rwlock):
    rwlock.check_clean()
    rows = rwlock.rows_in(rwlock.locks[0], 56)  # pthread_rwlock_t
    assert sum(int(r["waits"]) for r in rows) == 30, rwlock.out
    total_ns = sum(float(r["total"]) for r in rows) * 1000
    assert abs(total_ns - rwlock.own_ns) <= 0.05 * rwlock.own_ns, (total_ns, rwlock.own_ns)
    assert "waiter_read_rwlock" in rwlock.out and "holder_release_rwlock" in rwlock.out
    i = rwlock.out.index("waiter_read_rwlock")
    assert rwlock.out.index("holder_release_rwlock", i) > i  # the holder under the waiter


def test_condvar_waits_are_woken_by_the_signaller(condvar):
    condvar.check_clean()
    rows = condvar.rows_in(condvar.locks[0], 48)  # pthread_cond_t: two futex words alternate
    assert sum(int(r["waits"]) for r in rows) == 30, condvar.out
    total_ns = sum(float(r["total"]) for r in rows) * 1000
    assert abs(total_ns - condvar.own_ns) <= 0.05 * condvar.own_ns, (total_ns, condvar.own_ns)
    m = re.search(r"((?:    .*\n)+)  released by \d+ lockhold: \d+ waits.*\n((?:      .*\n)+)", condvar.out)
    assert m and "waiter_wait_condvar" in m.group(1) and "holder_signal_condvar" in m.group(2), condvar.out


def test_three_locks_told_apart_by_address(pp, workload, tmp):
    r = lock_run(pp, workload, tmp, "locks", 30)
    r.check_clean()
    assert len(r.locks) == 3
    totals = []
    for base in r.locks:
        rows = r.rows_in(base, 40)
        assert len(rows) == 1 and int(rows[0]["waits"]) == 10, (hex(base), r.out)
        totals.append(float(rows[0]["total"]))
    # Lock i is held (i + 1) ms a round.
    assert totals[0] < totals[1] < totals[2], totals
    assert abs(sum(totals) * 1000 - r.own_ns) <= 0.05 * r.own_ns, (totals, r.own_ns)


def test_a_process_exiting_mid_wait(pp, workload, tmp):
    r = lock_run(pp, workload, tmp, "exit", 1, 100)
    r.check_clean()
    assert "lockhold: exiting with the waiter blocked" in r.out
    rows = r.rows_in(r.locks[0], 40)
    assert len(rows) == 1, r.out
    assert int(rows[0]["waits"]) == 1 and int(rows[0]["intr"]) == 1, r.out
    assert 95000 <= float(rows[0]["total"]) <= 150000, r.out


def test_attached_with_intervals_and_sigint(pp, workload):
    require_root()
    wl = Bg([workload("lockhold"), "mutex", "400", "5"])  # 2 s: time to attach and tick twice
    pid = int(wl.wait_line(r"^lockhold: pid \d+$").split()[-1])
    b = pp.start(["lock", "-p", str(pid), "-i", "200"])
    b.wait_count(r"^0x[0-9a-f]{16} %d " % pid, 2, timeout=10)
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=10)
    wl.kill()
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    rows = [m.groupdict() for m in map(ROW_RE.match, out.splitlines()) if m]
    assert len({r["addr"] for r in rows}) >= 1
    assert len(re.findall(r"^" + WALL_RE + r" $", out, re.M)) >= 2, out
    waits = sum(int(r["waits"]) for r in rows if int(r["pid"]) == pid)
    total = sum(float(r["total"]) for r in rows if int(r["pid"]) == pid)
    assert 10 <= waits <= 400, out
    assert 5000 <= total / waits <= 8000, out  # each wait ~5 ms (a wake-up late on an idle vCPU)


def test_bad_input(pp):
    require_root()
    rc, out, err = pp.run(["lock", "-p", "999999999"])
    assert rc != 0 and rc > 0, (rc, err)
    assert len(err.strip().splitlines()) >= 1 and "999999999" in err, err
    rc, out, err = pp.run(["lock", "--than", "soon", "--", "true"])
    assert rc > 0 and "invalid time 'soon'" in err, err
    rc, out, err = pp.run(["lock", "--than", "0", "--", "true"])
    assert rc > 0 and "than" in err, err
    rc, out, err = pp.run(["lock", "-e", "sched:sched_switch", "--", "true"])
    assert rc > 0 and err.strip(), err
    rc, out, err = pp.run(["lock", "--", "/nonexistent/program"])
    assert rc > 0 and err.strip() and "/nonexistent/program" in err, err


def test_help_lists_what_it_accepts(pp):
    rc, out, err = pp.run(["lock", "-h"])
    assert rc == 129, rc  # as perf's -h: the usage on stderr
    out = out + err
    assert " Usage: perf-prof lock " in out, out
    for opt in ("--than <TIME>", "--flame-graph <file>", "--pprof <file>", "  -g ", "--call-graph",
                "--user-callchain", "--kernel-callchain", "-p, --pids", "-i, --interval"):
        assert opt in out, opt
    for opt in ("-e, --event", "--perins", "--filter"):
        assert opt not in out, opt
