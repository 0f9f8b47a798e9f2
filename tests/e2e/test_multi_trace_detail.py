"""multi-trace --detail (SPEC §4.6.7): the window printed around each pair beyond --than: the
events before event1 (-TIME), between the two (hide<TIME collapses runs), after event2
(+TIME), filtered by samecpu, under the 27-column titles.

Workloads: sleeper (tests/workloads/sleeper.c) pinned to CPU 1 sleeps 30 ms a few times, each
one clock_nanosleep: enter -> exit pairs beyond --than 20ms, with its switch-out between; a
second sleeper pinned to CPU 0 switches every millisecond meanwhile, the events samecpu must
leave out. bursts (tests/workloads/bursts.c) makes 500 getpid calls back to back after each
sleep: the exit -> next enter pairs hold runs that hide<1ms collapses. The assertions are on
structure and order, never on exact times."""

import os
import re
import signal
import subprocess
import time

from conftest import WALL_RE, Bg, assert_not_crashed, skip_or_fail

ENTER = "syscalls:sys_enter_clock_nanosleep"
EXIT = "syscalls:sys_exit_clock_nanosleep"
GETPID = "syscalls:sys_enter_getpid"

# {title:26} {M} {comm:>16} {tid:>6} {LAT} [{cpu:03}] {EVTS}: {sys:name}: {INFO}; the title is
# WALL for event1 and event2, a "|..." text for the context events.
EVENT_RE = re.compile(r"^(?P<title>.{26}) (?P<m>.) (?P<comm>.{16}) +(?P<tid>\d+) \S{4,5} \[(?P<cpu>\d{3})\] "
                      r"(?P<sec>\d+)\.(?P<usec>\d{6}): (?P<event>[a-z_]+:[a-z_]+): ")
PREVIOUS_RE = re.compile(r"^-Previous (-\d+\.\d{3}) us$")
AFTER_RE = re.compile(r"^`After (\d+\.\d{3}) us$")
HIDDEN_RE = re.compile(r"^\| (?P<n>[ \d]{17}) hidden$")
PLUS_RE = re.compile(r"^\|\+ (\d+\.\d{3}) us$")


class Ev:
    def __init__(self, m, line):
        self.title = m.group("title")
        self.marker = m.group("m")
        self.tid = int(m.group("tid"))
        self.cpu = int(m.group("cpu"))
        self.us = int(m.group("sec")) * 1000000 + int(m.group("usec"))
        self.event = m.group("event")
        self.line = line

    def wall(self):
        return re.fullmatch(WALL_RE, self.title) is not None

    def __repr__(self):
        return self.line


class Block:
    def __init__(self):
        self.neg = None  # -Previous
        self.before, self.between, self.after = [], [], []  # between: Ev, ("hidden", n), ("plus", us)
        self.ev1 = self.ev2 = None
        self.after_d = None  # `After
        self.part = "before"

    def events(self):
        return self.before + [self.ev1] + [e for e in self.between if isinstance(e, Ev)] + [self.ev2] + self.after

    def __repr__(self):
        return "\n".join(map(str, [self.neg] + self.events()))


def blocks_of(out):
    """The output blocks of --detail, each parsed and checked for its shape as it is read."""
    blocks, cur = [], None
    for line in out.splitlines():
        m = EVENT_RE.match(line)
        if PREVIOUS_RE.match(line):
            cur = Block()
            cur.neg = float(PREVIOUS_RE.match(line).group(1))
            blocks.append(cur)
        elif m and re.fullmatch(WALL_RE, m.group("title")):
            if cur is None or cur.part in ("after", "done"):
                cur = Block()
                blocks.append(cur)
            if cur.part == "before":
                cur.ev1, cur.part = Ev(m, line), "between"
            else:
                cur.ev2, cur.part = Ev(m, line), "after"
        elif m:
            assert cur is not None and cur.part in ("before", "between", "after"), line
            assert m.group("title").startswith("|"), line
            getattr(cur, cur.part).append(Ev(m, line))
        elif HIDDEN_RE.match(line):
            assert cur is not None and cur.part == "between", line
            cur.between.append(("hidden", int(HIDDEN_RE.match(line).group("n"))))
        elif PLUS_RE.match(line):
            assert cur is not None and cur.part == "between" and not cur.between, line
            cur.between.append(("plus", float(PLUS_RE.match(line).group(1))))
        elif AFTER_RE.match(line):
            assert cur is not None and cur.part == "after" and cur.after, line
            cur.after_d, cur.part = float(AFTER_RE.match(line).group(1)), "done"
    for b in blocks:
        assert b.ev1 and b.ev2, "a block without both events:\n%s\n---\n%s" % (b, out)
        assert (b.neg is not None) == bool(b.before), b
    return blocks


def check_window(b, before_us, after_us):
    """Times in order and inside the window; the first thing between carries the latency."""
    t1, t2 = b.ev1.us, b.ev2.us
    times = [e.us for e in b.events()]
    assert times == sorted(times), b
    # EVTS are rounded to the microsecond: 1 us of slack on each bound.
    for e in b.before:
        assert t1 - before_us - 1 <= e.us <= t1, (e, b)
    for e in b.between:
        if isinstance(e, Ev):
            assert t1 <= e.us <= t2, (e, b)
    for e in b.after:
        assert t2 <= e.us <= t2 + after_us + 1, (e, b)
    if b.neg is not None:
        assert -before_us - 1 <= b.neg <= 0 and b.neg <= b.before[0].us - t1 + 1, b
    if b.after:
        assert b.after_d is not None and b.after[-1].us - t2 - 1 <= b.after_d <= after_us, b
    first = b.between[0] if b.between else None
    if isinstance(first, Ev):
        m = re.match(r"^\|\+ (\d+\.\d{3}) us +$", first.title)
        assert m, first
        delta = float(m.group(1))
    else:
        assert first and first[0] == "plus", b
        delta = first[1]
    assert abs(delta - (t2 - t1)) <= 1.001, (delta, b)
    # The 27-column titles: 26 columns and a space, the blank marker column, a space.
    for e in b.events():
        assert e.line[26] == " " and e.marker == " " and e.line[28] == " ", e
        assert e.wall() == (e is b.ev1 or e is b.ev2), e
    return delta


def need_two_cpus():
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        skip_or_fail("needs CPUs 0 and 1")


def samecpu_run(pp, workload, detail):
    """sleeper pinned to CPU 1 (3 sleeps of 30 ms after a 30 ms pause) while another pinned to
    CPU 0 switches every millisecond; multi-trace on both CPUs."""
    need_two_cpus()
    noise = Bg(["taskset", "-c", "0", workload("sleeper"), "100000", "1", "0"])
    target = Bg(["taskset", "-c", "1", workload("sleeper"), "3", "30", "30", "go"], stdin=subprocess.PIPE)
    try:
        target.wait_line(r"^ready$")
        a, b = target.pid, noise.pid
        prof = pp.start_ready(["multi-trace", "-C", "0,1", "--order", "-k", "common_pid", "-v",
                               "-e", "%s/common_pid==%d/" % (ENTER, a),
                               "-e", "%s/common_pid==%d/,sched:sched_switch/prev_pid==%d||next_pid==%d||"
                               "prev_pid==%d||next_pid==%d/untraced/" % (EXIT, a, a, a, b, b),
                               "--than", "20ms", "--detail=" + detail])
        target.p.stdin.write("go\n")
        target.p.stdin.flush()
        assert target.finish(timeout=20)[0] == 0
        time.sleep(0.3)
        prof.send(signal.SIGINT)
        rc, out, err = prof.finish(timeout=15)
    finally:
        noise.kill()
        target.kill()
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    blocks = blocks_of(out)
    # The pause and the three sleeps, each its enter then its exit, by the pinned task.
    assert len(blocks) == 4, out
    for blk in blocks:
        assert (blk.ev1.event, blk.ev2.event) == (ENTER, EXIT), blk
        assert blk.ev1.tid == blk.ev2.tid == a and blk.ev1.cpu == blk.ev2.cpu == 1, blk
    return a, blocks, out


def test_samecpu_window_in_order_with_titles(pp, needs_root, workload):
    a, blocks, out = samecpu_run(pp, workload, "samecpu,-5ms,+5ms")
    for i, b in enumerate(blocks):
        delta = check_window(b, 5000, 5000)
        assert delta >= 30000, b
        # Only CPU 1: the other sleeper's switches on CPU 0 are left out.
        assert all(e.cpu == 1 for e in b.events()), b
        # Between: the task's switch-out as it goes to sleep.
        assert any(isinstance(e, Ev) and e.event == "sched:sched_switch" and e.tid == a for e in b.between), b
        # After the exit, within microseconds: the next sleep's enter (the last exit is followed
        # by the task's exit instead).
        if i < len(blocks) - 1:
            assert any(e.event == ENTER and e.tid == a for e in b.after), b
    # A switch-out to sleep moves the tracked task off every CPU: the line says why.
    titles = [e.title for b in blocks for e in b.between + b.after if isinstance(e, Ev)]
    assert any(re.match(r"^\| +\d+\.\d{3} \[sleeping\] *$", t) for t in titles), out


def test_without_samecpu_the_other_cpu_shows(pp, needs_root, workload):
    """The same run without samecpu: the CPU 0 switches are in the windows too (what the first
    test's filter left out was there)."""
    a, blocks, out = samecpu_run(pp, workload, "-5ms,+5ms")
    for b in blocks:
        check_window(b, 5000, 5000)
    assert any(e.cpu == 0 for b in blocks for e in b.events()), out


def test_hide_collapses_runs(pp, needs_root, workload):
    """bursts: 3 rounds of 500 getpid calls, each round 5 ms at least from the wake-up to the next
    sleep; hide<1ms collapses each round's calls into '| {n:>17} hidden' runs, each run shown by
    its last call, the counts adding up to 500."""
    rounds, calls = 3, 500
    need_two_cpus()
    target = Bg(["taskset", "-c", "1", workload("bursts"), str(rounds), str(calls), "5", "go"],
                stdin=subprocess.PIPE)
    try:
        target.wait_line(r"^ready$")
        prof = pp.start_ready(["multi-trace", "-p", str(target.pid), "-v", "-e", EXIT,
                               "-e", "%s,%s//untraced/" % (ENTER, GETPID), "--than", "2ms", "--detail=hide<1ms"])
        target.p.stdin.write("go\n")
        target.p.stdin.flush()
        assert target.finish(timeout=20)[0] == 0
        rc, out, err = prof.finish(timeout=15)
    finally:
        target.kill()
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    blocks = blocks_of(out)
    assert len(blocks) == rounds, out
    for b in blocks:
        assert (b.ev1.event, b.ev2.event) == (EXIT, ENTER), b
        assert not b.before and not b.after, b  # no -TIME, no +TIME
        assert check_window(b, 0, 0) >= 5000, b
        shown = [e for e in b.between if isinstance(e, Ev)]
        hidden = [e[1] for e in b.between if isinstance(e, tuple) and e[0] == "hidden"]
        assert all(e.event == GETPID for e in shown), b
        assert hidden and len(shown) + sum(hidden) == calls, b
        assert len(shown) < calls // 10, b
        # Each hidden line is followed by the last call of its run.
        for i, e in enumerate(b.between):
            if isinstance(e, tuple) and e[0] == "hidden":
                assert i + 1 < len(b.between) and isinstance(b.between[i + 1], Ev), b
    for line in out.splitlines():
        if HIDDEN_RE.match(line):
            n = HIDDEN_RE.match(line).group("n")
            assert line == "| %17d hidden" % int(n), line


def test_malformed_item(pp):
    """A bad --detail item: one line on stderr naming it, a usage failure, nothing run."""
    for item, text in (("sameCPU", "'sameCPU'"), ("-5q", "'-5q'"), ("samecpu,,1", "''")):
        rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT, "--than", "1ms", "--detail=" + item,
                               "--", "true"])
        assert_not_crashed(rc)
        assert rc != 0 and out == "", (item, rc, out)
        lines = err.splitlines()
        assert len(lines) == 1 and "--detail" in lines[0] and text in lines[0], (item, err)


def test_an_event1_that_waits_too_long_lets_go_of_the_timeline(pp, needs_root, workload):
    """--detail keeps every sample an event1 may need; one waiting past the horizon (--than here)
    keeps only itself, so a pair that never ends cannot hold the whole stream. The pair it
    still makes is printed, as its two events."""
    ENTER, EXIT = "syscalls:sys_enter_clock_nanosleep", "syscalls:sys_exit_clock_nanosleep"
    noise = Bg([workload("sleeper"), "3000", "1", "0"])  # sched_switch events all along
    try:
        sleeper = Bg([workload("sleeper"), "0", "1", "2500", "go"], stdin=subprocess.PIPE)
        sleeper.wait_line("ready")
        b = pp.start(["multi-trace", "-e", "%s/common_pid==%d/" % (ENTER, sleeper.pid),
                      "-e", "%s/common_pid==%d/,sched:sched_switch//untraced/" % (EXIT, sleeper.pid),
                      "-k", "common_pid", "--order", "--than", "500ms", "--detail"])
        time.sleep(0.5)
        sleeper.p.stdin.write("go\n")
        sleeper.p.stdin.flush()
        time.sleep(2.0)
        b.send(signal.SIGUSR1)
        line = b.wait_line(r"^  timeline: \d+ samples")
        assert line.rstrip().endswith("; 1 event1s let go of it"), line
        sleeper.p.wait(timeout=10)
        time.sleep(0.3)
        b.send(signal.SIGINT)
        rc, out, err = b.finish(timeout=10)
    finally:
        noise.p.kill()
    assert rc == 0 and err == "", err
    printed = [l for l in out.splitlines() if "clock_nanosleep:" in l]
    assert len(printed) == 2 and ENTER in printed[0] and EXIT in printed[1], out
