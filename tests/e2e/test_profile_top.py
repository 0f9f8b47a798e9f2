"""profile's table of the hottest functions (issue 29 item 5): printed at exit and every -i in
`go tool pprof -top`'s layout, checked on hotab (3:1 between hot_a and hot_b by construction,
see test_profile.py), against the same run's --pprof read by `go tool pprof -top`; the
per-sample lines only with --print-samples; pprof's main binary ("File:") is the profiled
program."""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import assert_not_crashed

HEADER_RE = re.compile(r"^(.*): (\d+) samples, top (\d+) of (\d+) functions?$")
COLUMNS = "      flat   flat%    sum%        cum    cum%"
ROW_RE = re.compile(r"^ *(\d+) +([\d.]+)% +([\d.]+)% +(\d+) +([\d.]+)%  (.+)$")
SAMPLE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} +\S.* +\d+ \[\d{3}\] +\d+\.\d{6}: profile: \d+ \S+$")


def ok(pp, args, timeout=60):
    rc, out, err = pp.run(args, timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s\n%s" % (rc, out[-2000:], err)
    return out


def tables(out):
    """Every table of `out` as (title, total, shown, functions, rows); rows are
    (flat, flat%, sum%, cum, cum%, name). Any other line fails the test."""
    result = []
    for line in out.splitlines():
        m = HEADER_RE.match(line)
        if m:
            result.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), []))
            continue
        if line == COLUMNS:
            assert result and not result[-1][4], "columns out of place"
            continue
        r = ROW_RE.match(line)
        assert r and result, "not a table line: %r" % line
        g = r.groups()
        result[-1][4].append((int(g[0]), float(g[1]), float(g[2]), int(g[3]), float(g[4]), g[5]))
    return result


def check_table(t, rows_wanted=20):
    """What every table holds: the header's counts, flat sorted, sum% growing to at most
    100, percentages of the header's total, cum >= flat."""
    title, total, shown, functions, rows = t
    assert len(rows) == shown == min(rows_wanted, functions), t[:4]
    flats = [r[0] for r in rows]
    assert flats == sorted(flats, reverse=True)
    sums = [r[2] for r in rows]
    assert sums == sorted(sums) and sums[-1] <= 100.0, sums
    running = 0
    for flat, flat_pct, sum_pct, cum, cum_pct, name in rows:
        running += flat
        assert cum >= flat and cum <= total, (name, flat, cum, total)
        assert abs(flat_pct - 100.0 * flat / total) < 0.006 and abs(cum_pct - 100.0 * cum / total) < 0.006
        assert abs(sum_pct - 100.0 * running / total) < 0.006
    assert len({r[5] for r in rows}) == len(rows), "a function twice"


def by_name(t):
    return {r[5]: r for r in t[4]}


def test_table_at_exit_with_stacks(pp, needs_root, workload):
    out = ok(pp, ["profile", "-F", "997", "-g", "--", workload("hotab"), "1500"])
    ts = tables(out)
    assert len(ts) == 1 and ts[0][0] == "profile", out
    check_table(ts[0])
    total = ts[0][1]
    assert total > 1200, total  # 1.5 s of CPU at 997 Hz
    f = by_name(ts[0])
    # work() is the leaf of both; hot_a and hot_b are in the stack, 3:1; main in nearly all.
    assert f["work"][1] >= 90.0, f["work"]
    assert f["hot_a"][0] == 0 and f["hot_b"][0] == 0
    assert 2.4 <= f["hot_a"][3] / f["hot_b"][3] <= 3.75, (f["hot_a"], f["hot_b"])
    assert 65.0 <= f["hot_a"][4] <= 80.0 and 20.0 <= f["hot_b"][4] <= 30.0
    assert f["main"][4] >= 97.0, f["main"]
    assert f["work"] == ts[0][4][0], "work is not first"


def test_table_without_stacks_is_self_time(pp, needs_root, workload):
    """Without -g a sample is counted in the function it was taken in: cum = flat."""
    ts = tables(ok(pp, ["profile", "-F", "997", "--", workload("hotab"), "1000"]))
    assert len(ts) == 1
    check_table(ts[0])
    assert all(r[0] == r[3] for r in ts[0][4]), ts[0][4]
    f = by_name(ts[0])
    assert f["work"][1] >= 90.0 and ts[0][1] > 800, ts[0]
    assert "hot_a" not in f and "main" not in f or f.get("main", (0,))[0] < 0.05 * ts[0][1]


def test_top_rows_option(pp, needs_root, workload):
    ts = tables(ok(pp, ["profile", "-F", "997", "-g", "--top", "3", "--", workload("hotab"), "500"]))
    assert len(ts) == 1 and ts[0][2] == 3 and ts[0][3] > 3, ts[0][:4]
    check_table(ts[0], 3)
    assert ok(pp, ["profile", "-F", "997", "-g", "--top", "0", "--", workload("hotab"), "200"]) == ""
    # -q: nothing on stdout either.
    assert ok(pp, ["profile", "-F", "997", "-q", "--", workload("hotab"), "200"]) == ""


@pytest.mark.parametrize("value, msg", [
    ("x", "perf-prof: option `top' expects a numerical value (see 'perf-prof profile -h')"),
    ("-1", "perf-prof: option `top' must not be negative (see 'perf-prof profile -h')"),
])
def test_top_rows_bad_value(pp, value, msg):
    rc, out, err = pp.run(["profile", "-F", "99", "--top", value, "--", "true"])
    assert_not_crashed(rc)
    assert (rc, out, err.splitlines()) == (129, "", [msg]), (rc, out, err)


def test_interval_tables_and_the_whole_run(pp, needs_root, workload):
    out = ok(pp, ["profile", "-F", "997", "-g", "-i", "300", "--top", "5", "--", workload("hotab"), "1500"])
    ts = tables(out)
    intervals, last = ts[:-1], ts[-1]
    # 1.5 s of CPU (more of wall time on a loaded machine) in 300 ms intervals.
    assert len(intervals) >= 4, [t[:4] for t in ts]
    for t in intervals:
        assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} profile$", t[0]), t[0]
        check_table(t, 5)
    stamps = [t[0] for t in intervals]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert last[0] == "profile, whole run"
    check_table(last, 5)
    assert last[1] == sum(t[1] for t in intervals)
    assert by_name(last)["work"][1] >= 85.0
    # An interval of ~300 samples on an idle machine; fewer when hotab shares its CPU.
    full = [t for t in intervals if t[1] > 50]
    assert full and all(by_name(t)["work"][1] >= 80.0 for t in full), [t[:4] for t in intervals]


def test_print_samples_is_upstreams_output(pp, needs_root, workload):
    """--print-samples alone: upstream's line per sample and nothing else; with --top N the
    table follows the lines."""
    out = ok(pp, ["profile", "-F", "997", "--print-samples", "--", workload("hotab"), "300"])
    lines = out.splitlines()
    assert len(lines) > 200 and all(SAMPLE_RE.match(l) for l in lines), [l for l in lines if not SAMPLE_RE.match(l)][:3]
    out = ok(pp, ["profile", "-F", "997", "--print-samples", "--top", "4", "--", workload("hotab"), "300"])
    lines = out.splitlines()
    n = sum(1 for l in lines if SAMPLE_RE.match(l))
    t = tables("\n".join(lines[n:]))
    assert len(t) == 1 and t[0][1] == n and t[0][2] == min(4, t[0][3]), (n, t)


def pprof_top(text):
    """`go tool pprof -top`'s rows: name -> (flat, flat%, cum, cum%)."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s+([\d.]+)%\s+[\d.]+%\s+(\d+)\s+([\d.]+)%\s+(\S.*)$", line)
        if m:
            rows[m.group(5)] = (int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4)))
    return rows


def test_table_agrees_with_go_pprof_top(pp, needs_root, workload, go_pprof, tmp_path):
    """The same samples in both: the same functions in the same order by flat, the same
    counts; the header's File: is the program."""
    pb = str(tmp_path / "cpu.pb.gz")
    hotab = workload("hotab")
    out = ok(pp, ["profile", "-F", "997", "-g", "--top", "1000", "--pprof", pb, "--", hotab, "1000"])
    ts = tables(out)
    assert len(ts) == 1
    ours = by_name(ts[0])
    text = go_pprof("-top", "-sample_index=samples", "-nodefraction=0", "-nodecount=1000", pb)
    assert re.search(r"^File: hotab$", text, re.M), text[:500]
    theirs = pprof_top(text)
    big = [r[5] for r in ts[0][4] if r[4] >= 5.0]
    assert {"work", "hot_a", "hot_b", "main"} <= set(big), big
    for name in big:
        flat, flat_pct, _, cum, cum_pct, _ = ours[name]
        assert name in theirs, (name, sorted(theirs)[:20])
        assert theirs[name][0] == flat and theirs[name][2] == cum, (name, ours[name], theirs[name])
        assert abs(theirs[name][1] - flat_pct) <= 0.5 and abs(theirs[name][3] - cum_pct) <= 0.5
    # The ranking of the functions with self time, the same (pprof sorts by flat too).
    ranked = [r[5] for r in ts[0][4] if r[0] > 0]
    pranked = [n for n, v in sorted(theirs.items(), key=lambda kv: -kv[1][0]) if v[0] > 0]
    assert ranked[0] == pranked[0] == "work"
    assert set(ranked) == set(pranked)


def test_pprof_main_binary_is_the_profiled_program(pp, needs_root, workload, go_pprof, tmp_path):
    """A shell that spins, then runs hotab as its child: the child holds most samples and is
    symbolized first (at its exit), yet the profiled program is the shell."""
    pb = str(tmp_path / "sh.pb.gz")
    script = 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; "$1" 600; true'
    ok(pp, ["profile", "-F", "997", "-g", "--pprof", pb, "--", "/bin/sh", "-c", script, "sh", workload("hotab")])
    sh = os.path.basename(os.path.realpath("/bin/sh"))
    text = go_pprof("-top", "-sample_index=samples", pb)
    assert re.search(r"^File: %s$" % re.escape(sh), text, re.M), text[:500]
    raw = go_pprof("-raw", pb)
    mappings = raw[raw.index("\nMappings\n"):].splitlines()[2:]
    assert mappings[0].split()[2] == os.path.realpath("/bin/sh"), mappings[:3]
    rows = pprof_top(text)
    assert rows["hot_a"][2] > rows["main"][2] / 3, "hotab is not sampled"  # the child's samples are there
    # hotab run directly: hotab.
    pb2 = str(tmp_path / "p.pb.gz")
    ok(pp, ["profile", "-F", "997", "-g", "--pprof", pb2, "--", workload("hotab"), "300"])
    assert re.search(r"^File: hotab$", go_pprof("-top", pb2), re.M)


def test_table_on_sigint(pp, needs_root, workload):
    """Attached with -p and stopped by Ctrl-C: the table is printed, whole."""
    hot = subprocess.Popen([workload("hotab"), "20000"])
    try:
        p = pp.start(["profile", "-F", "997", "-g", "-p", str(hot.pid)])
        time.sleep(1.0)
        p.send(signal.SIGINT)
        rc, out, err = p.finish(timeout=20)
    finally:
        hot.kill()
        hot.wait()
    assert rc == 0 and err == "", (rc, err)
    ts = tables(out)
    assert len(ts) == 1 and ts[0][1] > 300, out[-1000:]
    check_table(ts[0])
    assert by_name(ts[0])["work"][1] >= 85.0


def test_off_cpu_waits_in_the_table(pp, needs_root, workload):
    """--off-cpu: the waits count under their [off-cpu: STATE] frame, weighted in periods as in
    the flame graph: `offcpu split` naps in one thread while another spins, both for 1 s."""
    out = ok(pp, ["profile", "-F", "997", "-g", "--off-cpu", "--top", "1000", "--", workload("offcpu"), "split",
                  "1000"])
    # The workload says how long it spun.
    ts = tables("\n".join(l for l in out.splitlines() if not l.startswith("spin_ns=")))
    assert len(ts) == 1
    check_table(ts[0], 1000)
    f = by_name(ts[0])
    total = ts[0][1]
    # The sleeping thread's second of S is about half of the wall time of both threads.
    assert 35.0 <= f["[off-cpu: S]"][4] <= 60.0, (f["[off-cpu: S]"], total)
    assert f["[off-cpu: S]"][0] == 0 and f["nap_work"][3] >= f["[off-cpu: S]"][3] * 0.9
    assert f["spin_work"][4] >= 25.0, f["spin_work"]


@pytest.mark.parametrize("interval", [[], ["-i", "200"]], ids=["at-exit", "interval"])
def test_no_table_in_folded_stacks_on_stdout(pp, needs_root, workload, interval):
    """--flame-graph "": stdout holds folded stacks only, every line `frames count`."""
    out = ok(pp, ["profile", "-F", "997", "-g", "--flame-graph", ""] + interval + ["--", workload("hotab"), "400"])
    lines = out.splitlines()
    assert len(lines) >= 2 and all(re.match(r"^\S.* \d+$", l) and ";" in l for l in lines), lines[:5]
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) > 250
