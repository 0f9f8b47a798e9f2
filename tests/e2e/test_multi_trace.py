"""multi-trace (SPEC §4.6) with the delay implementation: pairs of events of successive -e
lists by key, the statistics table, thresholds, heat maps and histograms, run-queue latency
against task-state, and the usage errors.

The sleeper workload (tests/workloads/sleeper.c) pauses once for PAUSE ms, then sleeps N times
for M ms, each time one clock_nanosleep: enter -> exit of that syscall is N+1 pairs, M ms at
least each, one of them the pause."""

import os
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import WALL_RE, Bg, assert_not_crashed

ENTER = "syscalls:sys_enter_clock_nanosleep"
EXIT = "syscalls:sys_exit_clock_nanosleep"
CPU0 = ["taskset", "-c", "0"]

NUM = r"(\d+\.\d{3})"
ROW_RE = re.compile(r"^(?:(?P<key>\S+) +(?:(?P<comm>.{16}) )?)? *(?P<ev1>\S+) => (?P<ev2>\S+) +(?P<calls>\d+) +"
                    + r" +".join([NUM] * 6) + r"(?: +(?P<than>\d+) \( *(?P<pct>\d+)%\))?$")
COLS = ("total", "min", "p50", "p95", "p99", "max")
# One event line of a printed pair: WALL, the marker column, then the standard line (SPEC §3.9).
EVENT_RE = re.compile(r"^" + WALL_RE + r"   +(?P<comm>\S.{0,15}) +(?P<tid>\d+) \S{4} \[\d{3}\] \d+\.\d{6}: "
                      r"(?P<event>[a-z_]+:[a-z_]+): ")


class Row:
    def __init__(self, m):
        self.key = m.group("key")
        self.comm = (m.group("comm") or "").strip() or None
        self.ev1, self.ev2 = m.group("ev1"), m.group("ev2")
        self.calls = int(m.group("calls"))
        for k, v in zip(COLS, m.groups()[5:11]):
            setattr(self, k, float(v) / 1000.0)  # ms
        self.than = int(m.group("than")) if m.group("than") is not None else None

    def __repr__(self):
        return "Row(%s %s=>%s calls=%d min=%.3f p99=%.3f max=%.3f)" % (
            self.key, self.ev1, self.ev2, self.calls, self.min, self.p99, self.max)


def tables(out):
    """Every delay table of `out` as (header line, [Row]); the layout is checked as it is read."""
    lines = out.splitlines()
    result = []
    for i, line in enumerate(lines):
        if not re.fullmatch(WALL_RE + " ", line) or i + 2 >= len(lines) or " => " not in lines[i + 1]:
            continue
        head, dashes = lines[i + 1], lines[i + 2]
        assert re.search(r"start => end +calls +total\(us\) +min\(us\) +p50\(us\) +p95\(us\) +p99\(us\) +"
                         r"max\(us\)(    than\(reqs\))?$", head), head
        # The dashes line spans the header column for column (SPEC §4.6.5 gives the than
        # column 15 dashes under its 14 characters).
        than = head.endswith("than(reqs)")
        assert len(dashes) == len(head) + than and set(dashes) <= {"-", " "}, (head, dashes)
        rows = []
        for row in lines[i + 3:]:
            m = ROW_RE.match(row)
            if not m:
                break
            assert len(row) == len(head), (head, row)
            rows.append(Row(m))
        result.append((head, rows))
    return result


def only_rows(out):
    t = tables(out)
    assert len(t) == 1, "expected one table:\n" + out
    return t[0][1]


def sleeper_run(pp, workload, args, n=5, ms=20, pause=150, timeout=30):
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT, *args, "--",
                           workload("sleeper"), str(n), str(ms), str(pause)], timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    return out


def test_sleeps_pair_by_pid(pp, needs_root, workload):
    """N+1 pairs, the shortest at least M ms, the longest the pause (bounded)."""
    n, ms, pause = 6, 20, 200
    out = sleeper_run(pp, workload, ["-k", "common_pid", "--perins"], n, ms, pause)
    rows = only_rows(out)
    assert len(rows) == 1, rows
    r = rows[0]
    assert (r.ev1, r.ev2) == ("sys_enter_clock_nanosleep", "sys_exit_clock_nanosleep"), r
    assert r.calls == n + 1, r
    assert r.min >= ms and pause <= r.max <= pause * 1.3, r
    assert n * ms + pause <= r.total <= (n * ms + pause) * 1.3, r
    head = tables(out)[0][0]
    # The key column is named after the key expression, at least 6 wide (SPEC §4.6.2).
    assert re.match(r"common_pid +start => end", head), head


def test_default_key_is_the_thread_with_its_name(pp, needs_root, workload):
    out = sleeper_run(pp, workload, ["--perins"], 3, 10, 30)
    head, rows = tables(out)[0]
    assert re.match(r"THREAD comm {13}  +start => end", head), head
    assert len(rows) == 1 and rows[0].comm == "sleeper" and rows[0].calls == 4, rows


def printed_events(out):
    return [(m.group("event"), int(m.group("tid"))) for m in map(EVENT_RE.match, out.splitlines()) if m]


def test_than_prints_exactly_the_slow_pairs(pp, needs_root, workload):
    n, ms, pause = 5, 10, 120
    out = sleeper_run(pp, workload, ["--than", "60ms"], n, ms, pause)
    ev = printed_events(out)
    # The pause only: its enter then its exit, one line each.
    assert [e for e, _ in ev] == [ENTER, EXIT], out
    rows = only_rows(out)
    assert rows[0].calls == n + 1 and rows[0].than == 1, rows
    assert "    than(reqs)" in tables(out)[0][0]


def test_lower_prints_exactly_the_fast_pairs(pp, needs_root, workload):
    n, ms, pause = 5, 10, 120
    out = sleeper_run(pp, workload, ["--lower", "60ms"], n, ms, pause)
    ev = [e for e, _ in printed_events(out)]
    assert ev == [ENTER, EXIT] * n, out


def test_only_than_suppresses_tables_without_a_slow_pair(pp, needs_root, workload):
    out = sleeper_run(pp, workload, ["--only-than", "10s"], 3, 10, 20)
    assert tables(out) == [] and printed_events(out) == [], out
    out = sleeper_run(pp, workload, ["--only-than", "50ms"], 3, 10, 80)
    assert only_rows(out)[0].calls == 4 and only_rows(out)[0].than == 1, out


def test_cycle_pairs_one_list_with_itself(pp, needs_root, workload):
    """--cycle with one -e: each enter pairs with the next one, N pairs for N+1 sleeps."""
    n, ms = 5, 20
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "--cycle", "--", workload("sleeper"), str(n), str(ms), str(ms)])
    assert rc == 0 and err == "", err
    r = only_rows(out)[0]
    assert (r.ev1, r.ev2, r.calls) == ("sys_enter_clock_nanosleep", "sys_enter_clock_nanosleep", n), r
    assert r.min >= ms, r


def test_alias_names_the_columns(pp, needs_root, workload):
    rc, out, err = pp.run(["multi-trace", "-e", ENTER + "//alias=nap/", "-e", EXIT + "//alias=woke/", "--",
                           workload("sleeper"), "2", "5", "0"])
    assert rc == 0 and err == "", err
    head, rows = tables(out)[0]
    assert re.match(r"start => end +calls", head) and (rows[0].ev1, rows[0].ev2) == ("nap", "woke"), out


def test_interval_prints_and_clears(pp, needs_root, workload):
    """-i: a table per tick that had pairs, each counting only its own interval."""
    out = sleeper_run(pp, workload, ["-i", "250"], 10, 100, 0)
    t = tables(out)
    calls = [rows[0].calls for _, rows in t]
    # ~1.1 s of 100 ms sleeps: 2-3 a tick on time; a tick the idle vCPU fires late takes more
    assert sum(calls) == 11 and len(t) >= 2 and max(calls) <= 6, calls


def test_heatmap_file_per_pair_and_svg(pp, needs_root, workload, tmp_path):
    n, ms, pause = 8, 10, 50
    name = str(tmp_path / "nap")
    out = sleeper_run(pp, workload, ["--heatmap", name], n, ms, pause)
    lat = tmp_path / "nap-sys_enter_clock_nanosleep-sys_exit_clock_nanosleep.lat"
    svg = tmp_path / "nap-sys_enter_clock_nanosleep-sys_exit_clock_nanosleep.svg"
    lines = lat.read_text().splitlines()
    assert len(lines) == n + 1, lines
    points = [tuple(map(int, l.split(" "))) for l in lines]
    times = [t for t, _ in points]
    assert times == sorted(times), points
    lats = sorted(l for _, l in points)
    assert lats[0] >= ms * 1000000 and pause * 1000000 <= lats[-1] <= pause * 1300000, points
    assert "Heat map: %s" % svg in out, out
    root = ET.parse(svg).getroot()
    cells = root.findall(".//{http://www.w3.org/2000/svg}g[@id='cells']/{http://www.w3.org/2000/svg}rect")
    assert sum(int(c.get("data-n")) for c in cells) == n + 1


def test_heatmap_renders_in_a_browser(pp, needs_root, workload, tmp_path):
    import browser
    from conftest import skip_or_fail
    reason = browser.missing()
    if reason:
        skip_or_fail(reason)
    sleeper_run(pp, workload, ["--heatmap", str(tmp_path / "h")], 4, 10, 30)
    svg = tmp_path / "h-sys_enter_clock_nanosleep-sys_exit_clock_nanosleep.svg"
    with browser.Browser() as b:
        b.open("file://%s" % svg)
        assert b.run("return document.querySelectorAll('#cells > rect').length") >= 2
        assert b.logs() == [] or all(e.get("level") != "SEVERE" for e in b.logs())


def test_heatmap_of_a_workloads_wakeups_says_why_nothing_paired(pp, needs_root, workload, tmp_path):
    """Attached to a command, only the events its own thread raises are seen: the wake-ups of
    it and the switches to it are raised by other tasks, so nothing pairs; perf-prof says so
    (and what it saw) instead of leaving an empty .lat file unexplained."""
    name = str(tmp_path / "wake")
    rc, out, err = pp.run(["multi-trace", "-e", 'sched:sched_wakeup/comm=="sleeper"/',
                           "-e", 'sched:sched_switch/next_comm=="sleeper"/key=next_pid/', "-k", "pid",
                           "--heatmap", name, "--", workload("sleeper"), "3", "10", "10"])
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert tables(out) == [], out
    lat = name + "-sched_wakeup-sched_switch.lat"
    assert open(lat).read() == ""
    lines = out.splitlines()
    assert "multi-trace: nothing paired; events seen: sched:sched_wakeup 0, sched:sched_switch 0" in lines, out
    assert any(l.startswith("multi-trace: attached to tasks, only the events they raise are seen") for l in lines), out
    assert "Heat map: none, no pair (latencies: %s is empty)" % lat in lines, out


def sleeper_watched(pp, workload, args, n, ms):
    """A sleeper started first and released once multi-trace (on every CPU, with `args`, where
    PID stands for the sleeper's pid) is ready: (sleeper's pid, multi-trace's stdout)."""
    sleeper = Bg([*CPU0, workload("sleeper"), str(n), str(ms), str(ms), "go"], stdin=subprocess.PIPE)
    try:
        sleeper.wait_line("ready")
        pid = sleeper.pid
        mt = pp.start_ready(["multi-trace", "-v", *[a.replace("PID", str(pid)) for a in args], "--order"])
        sleeper.p.stdin.write("go\n")
        sleeper.p.stdin.flush()
        sleeper.p.wait(timeout=20)
        time.sleep(0.2)
        mt.send(signal.SIGINT)
        rc, out, err = mt.finish(timeout=10)
    finally:
        sleeper.p.kill()
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    return pid, out


def test_heatmap_of_wakeups_watched_on_every_cpu(pp, needs_root, workload, tmp_path):
    """The same wake-up latency watched on the CPUs with pid filters pairs, and the heat map
    has a point per pair (a wake-up the kernel did not report makes no pair)."""
    n = 5
    name = str(tmp_path / "wake")
    pid, out = sleeper_watched(pp, workload, ["-e", "sched:sched_wakeup/pid==PID/", "-e",
                                    "sched:sched_switch/next_pid==PID/key=next_pid/", "-k", "pid",
                                    "--heatmap", name], n, 10)
    r = only_rows(out)
    # The pause, the n sleeps, and the wake-up by "go".
    assert len(r) == 1 and 1 <= r[0].calls <= n + 2, out
    lat = name + "-sched_wakeup-sched_switch.lat"
    assert len(open(lat).read().splitlines()) == r[0].calls
    assert "Heat map: %s-sched_wakeup-sched_switch.svg (latencies: %s)" % (name, lat) in out, out
    assert "nothing paired" not in out


CLOSED_RE = re.compile(r"^multi-trace: (\d+) sleeps? ended without a wake-up record \(not reported by the kernel\); "
                       r"paired with the switch-in, run-queue wait included$", re.M)


def test_sleep_without_wakeup_record_pairs_with_its_switch_in(pp, needs_root, workload):
    """switch-out (S) -> wake-up -> switch-in: every sleep pairs, those whose wake-up the
    kernel did not report (a vCPU that idled) with their switch-in, and the note says how many;
    the run-queue wait is paired only after a wake-up that was seen."""
    n, ms = 10, 20
    args = ["-e", "sched:sched_switch/prev_pid==PID&&prev_state==1/key=prev_pid/",
            "-e", "sched:sched_wakeup/pid==PID/", "-e", "sched:sched_switch/next_pid==PID/key=next_pid/",
            "-k", "pid"]
    for attempt in range(2):
        pid, out = sleeper_watched(pp, workload, args, n, ms)
        rows = {(r.ev1, r.ev2): r for r in only_rows(out)}
        sleeps, waits = rows[("sched_switch", "sched_wakeup")], rows.get(("sched_wakeup", "sched_switch"))
        closed = sum(int(m.group(1)) for m in CLOSED_RE.finditer(out))
        print("\n%d sleeps paired, %d with their switch-in; %d run-queue waits"
              % (sleeps.calls, closed, waits.calls if waits else 0))
        # The pause and n sleeps; a sleep whose wake-up and switch-in were both lost cannot be
        # paired, and a lost switch-out leaves no trace: once more then.
        if sleeps.calls == n + 1 or attempt:
            break
    assert sleeps.calls == n + 1, out
    assert ms * 0.98 <= sleeps.min and sleeps.max <= ms * 1.5, sleeps
    # The wake-up by "go" pairs too (its sleep began before multi-trace).
    assert waits and n + 1 - closed <= waits.calls <= n + 2 - closed, out


def test_hist_log2_buckets(pp, needs_root, workload):
    """5 sleeps of 20 ms (16384..32767 us) and a pause of 150 ms (131072..262143 us)."""
    out = sleeper_run(pp, workload, ["--hist"], 5, 20, 150)
    i = out.index("syscalls:sys_enter_clock_nanosleep => syscalls:sys_exit_clock_nanosleep\n")
    hist = out[i:].splitlines()[1:6]
    assert hist == [
        "     usecs               : count    distribution",
        "         0 -> 32767      : 5        |****************************************|",
        "     32768 -> 65535      : 0        |                                        |",
        "     65536 -> 131071     : 0        |                                        |",
        "    131072 -> 262143     : 1        |********                                |",
    ], out


def test_run_queue_latency_agrees_with_task_state(pp, needs_root, workload):
    """A task that sleeps 1 ms at a time on a CPU kept busy by a hog: its wake-up to switch-in
    latency from multi-trace (sched_wakeup -> sched_switch keyed by pid / next_pid) and the RD
    delays task-state reports for it, measured in the same run, agree."""
    hog = Bg([*CPU0, workload("spin"), "20000"])
    sleeper = Bg([*CPU0, workload("sleeper"), "300", "2", "0", "go"], stdin=subprocess.PIPE)
    try:
        sleeper.wait_line("ready")
        pid = sleeper.pid
        # taskset execs the sleeper: the pid is the sleeper's.
        mt = pp.start(["multi-trace", "-e", "sched:sched_wakeup/pid==%d/" % pid,
                       "-e", "sched:sched_switch/next_pid==%d/key=next_pid/" % pid, "-k", "pid", "--order",
                       "--perins"])
        ts = pp.start(["task-state", "--perins", "-p", str(pid)])
        time.sleep(1.0)
        sleeper.p.stdin.write("go\n")
        sleeper.p.stdin.flush()
        sleeper.p.wait(timeout=20)
        time.sleep(0.2)
        mt.send(signal.SIGINT)
        ts.send(signal.SIGINT)
        rc1, out1, err1 = mt.finish(timeout=10)
        rc2, out2, err2 = ts.finish(timeout=10)
    finally:
        hog.p.kill()
        sleeper.p.kill()
    assert rc1 == 0 and err1 == "" and rc2 == 0, (err1, err2)
    rows = [r for r in only_rows(out1) if r.key == str(pid)]
    assert len(rows) == 1 and rows[0].calls >= 250, out1
    mt_row = rows[0]
    rd = [l for l in out2.splitlines() if re.match(r"^ *%d +sleeper +RD " % pid, l)]
    assert len(rd) == 1, out2
    f = rd[0].split()
    ts_calls, ts_total, ts_p50 = int(f[3]), float(f[4]) / 1000.0, float(f[6]) / 1000.0
    print("\nmulti-trace: %d wake-ups, total %.3f ms, p50 %.4f ms; task-state RD: %d, total %.3f ms, p50 %.4f ms"
          % (mt_row.calls, mt_row.total, mt_row.p50, ts_calls, ts_total, ts_p50))
    assert mt_row.p50 > 0 and ts_p50 > 0
    # The bulk agrees (each tool stamps its own copy of an event, a few per cent apart). The tail
    # is not compared: p99 of ~300 waits is the 4th longest, and one wait seen differently by one
    # tool under load moved it 2.5x in a CI run (10 us against 25 us, same count, same max).
    assert 0.67 <= mt_row.p50 / ts_p50 <= 1.5, (mt_row, rd)
    assert 0.8 <= mt_row.total / ts_total <= 1.25, (mt_row, rd)
    assert 0.8 <= mt_row.calls / ts_calls <= 1.25, (mt_row, rd)


def test_trick_is_announced_and_unnecessary_wakeups_skipped(pp, needs_root, workload):
    rc, out, err = pp.run(["multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch//key=next_pid/",
                           "-k", "pid", "--", workload("sleeper"), "3", "5", "0"])
    assert rc == 0 and err == "", err
    assert out.splitlines()[0] == "Trick: Enable userland unnecessary detection of sched:sched_wakeup events."


def one_error_line(rc, out, err):
    assert_not_crashed(rc)
    assert rc != 0 and len(err.splitlines()) == 1, (rc, err)
    return err.strip()


@pytest.mark.parametrize("args,message", [
    (["-e", ENTER], "multi-trace needs at least 2 -e lists of events to pair, got 1"),
    (["-e", ENTER + "//untraced/", "-e", EXIT],
     "All tracepoint events in -e option 1 are marked as untraced: -e " + ENTER + "//untraced/"),
    (["-e", ENTER, "-e", EXIT, "--impl", "nope"], "--impl nope not implemented"),
    (["-e", ENTER, "-e", EXIT, "--impl", "call"], "Only nested-trace can enable --impl call."),
    (["-e", ENTER, "-e", EXIT, "-k", "no_such_field"], "key=no_such_field: undefined variable"),
])
def test_bad_input(pp, needs_root, args, message):
    rc, out, err = pp.run(["multi-trace", *args, "--", "true"])
    assert message in one_error_line(rc, out, err), err


def test_keys_on_several_rings_need_order(pp, needs_root):
    if os.cpu_count() < 2:
        pytest.skip("needs two CPUs")
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT, "-k", "common_pid", "-C", "0-1"])
    assert one_error_line(rc, out, err) == "perf-prof: Enable --key or pull= attr, also need to enable --order."


def test_trigger_prints_the_table_then_the_event(pp, needs_root, workload):
    """A trigger event reports at once (the rows so far), then prints itself; the final report
    has nothing left to print."""
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT + ",sched:sched_process_exit//trigger/", "--",
                           workload("sleeper"), "3", "5", "0"])
    assert rc == 0 and err == "", err
    assert len(tables(out)) == 1 and only_rows(out)[0].calls == 4, out
    last = out.splitlines()[-1]
    assert EVENT_RE.match(last) and EVENT_RE.match(last).group("event") == "sched:sched_process_exit", out


def test_role_keeps_an_event_from_starting_pairs(pp, needs_root, workload):
    """role=2 on the enter: it may only end pairs, so nothing starts and nothing pairs."""
    rc, out, err = pp.run(["multi-trace", "-e", ENTER + "//role=2/", "-e", EXIT, "--",
                           workload("sleeper"), "3", "5", "0"])
    assert rc == 0 and err == "" and tables(out) == [], out
    rc, out, err = pp.run(["multi-trace", "-e", ENTER + "//role=1/", "-e", EXIT, "--",
                           workload("sleeper"), "3", "5", "0"])
    assert rc == 0 and only_rows(out)[0].calls == 4, out


def test_verbose_twice_prints_every_event(pp, needs_root, workload):
    rc, out, err = pp.run(["multi-trace", "-vv", "-e", ENTER, "-e", EXIT, "--", workload("sleeper"), "3", "5", "0"])
    assert rc == 0, err
    assert [e for e, _ in printed_events(out)] == [ENTER, EXIT] * 4, out


def test_sigusr1_statistics(pp, needs_root):
    b = pp.start(["multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch//key=next_pid/", "-k", "pid",
                  "--order"])
    time.sleep(0.5)
    b.send(signal.SIGUSR1)
    b.wait_line(r"^  backups: \d+ \(\d+ slots, \d+ bytes\)$")
    b.wait_line(r"^  unnecessary wake-ups: \d+$")
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=10)
    assert rc == 0 and err == "", err


def test_help_word_templates(pp, needs_root):
    """SPEC §1.10: a template per suitable implementation, then each event's format."""
    rc, out, err = pp.run(["multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch//key=next_pid/",
                           "-k", "pid", "help"])
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    templates = [l for l in lines if l.startswith("perf-prof multi-trace ")]
    assert len(templates) == 4, out
    assert templates[0].startswith('perf-prof multi-trace -e "sched:sched_wakeup/./stack/') and \
        '-e "sched:sched_switch/./key=next_pid/stack/' in templates[0] and " -k pid --order " in templates[0]
    assert [t for t in templates if "--impl " in t] == [t for t in templates[1:]]
    assert "sched:sched_switch" in lines and "name: sched_switch" in lines, out
    rc, out, err = pp.run(["multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch", "--impl", "pair",
                           "help"])
    assert [l for l in out.splitlines() if l.startswith("perf-prof")] == [
        'perf-prof multi-trace -e "sched:sched_wakeup/./key=./[role=./][untraced/][trigger/][alias=./]" '
        '-e "sched:sched_switch/./key=./[role=./][untraced/][trigger/][alias=./]" --order --impl pair '
        '[-k .] [--perins] [--than .] [--detail] [-C .] [-p .] [-i .] '], out


def test_printkey_prints_the_key_cell(pp, needs_root, workload):
    """printkey= prints the key itself and returns its width; the cell is padded to the key column."""
    rc, out, err = pp.run(["multi-trace", "-e", ENTER + '//key=common_pid/printkey=printf("pid-%d",key)/',
                           "-e", EXIT + "//key=common_pid/", "--perins", "--", workload("sleeper"), "2", "5", "0"])
    assert rc == 0 and err == "", err
    head, rows = tables(out)[0]
    assert len(rows) == 1 and re.fullmatch(r"pid-\d+", rows[0].key) and rows[0].calls == 3, out
    row = next(l for l in out.splitlines() if l.startswith("pid-"))
    assert row.index(" sys_enter") == head.index(" ") and len(row) == len(head), (head, row)
