"""--timeline FILE (Chrome trace-event JSON, as Perfetto UI and chrome://tracing read it): the
file of task-state, multi-trace (and its presets rundelay and syscalls), trace and profile
checked against a small schema (required fields, numbers, durations, metadata naming every
track), task-state's slices summed per thread and state against its own --perins table (within
a microsecond), rundelay's and syscalls' slices against their tables, SIGINT mid-run leaving a
complete file, and a path that cannot be written giving one stderr line.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed

CPU0 = ["taskset", "-c", "0"]
ENTER = "syscalls:sys_enter_clock_nanosleep"
EXIT = "syscalls:sys_exit_clock_nanosleep"


def load(path):
    """The file parsed strictly (json rejects a missing bracket, a bare control character, an
    invalid escape), checked against the format's schema; returns its events."""
    with open(path, "rb") as f:
        raw = f.read()
    doc = json.loads(raw.decode("utf-8"))  # invalid UTF-8 raises here
    assert set(doc) == {"traceEvents", "displayTimeUnit"}, doc.keys()
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    named_threads, named_processes = set(), set()
    for e in events:
        for k in ("ph", "name", "pid", "tid", "ts"):
            assert k in e, e
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert e["ph"] in ("X", "i", "M"), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        elif e["ph"] == "i":
            assert e["s"] == "t", e
        else:
            assert e["name"] in ("thread_name", "process_name"), e
            assert isinstance(e["args"]["name"], str), e
            (named_threads if e["name"] == "thread_name" else named_processes).add(
                (e["pid"], e["tid"]) if e["name"] == "thread_name" else e["pid"])
        if "args" in e:
            assert isinstance(e["args"], dict), e
    data = [e for e in events if e["ph"] != "M"]
    # Every track is named, before or after its events (the format does not care which).
    for e in data:
        assert (e["pid"], e["tid"]) in named_threads, e
        assert e["pid"] in named_processes, e
    # Per track, slices start in time order and do not overlap.
    last_end = {}
    for e in data:
        if e["ph"] != "X":
            continue
        track = (e["pid"], e["tid"])
        assert e["ts"] >= last_end.get(track, 0) - 0.0015, (e, last_end[track])
        last_end[track] = e["ts"] + e["dur"]
    return events


def thread_names(events):
    return {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}


def table_totals(out):
    """task-state --perins's rows: {(tid, state): (calls, total us)}."""
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 10 and parts[0].isdigit() and parts[-8] in ("R", "S", "D", "T", "t", "I", "RD"):
            rows[(int(parts[0]), parts[-8])] = (int(parts[-7]), float(parts[-6]))
    return rows


def test_task_state_slices_sum_to_its_table(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "ts.json")
    n, ms, pause = 10, 20, 100
    rc, out, err = pp.run(["task-state", "--perins", "--timeline", path, "--",
                           *CPU0, workload("sleeper"), str(n), str(ms), str(pause)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    rows = table_totals(out)
    assert rows, out
    sums = {}
    for e in events:
        if e["ph"] == "X":
            calls, total = sums.get((e["tid"], e["name"]), (0, 0.0))
            sums[(e["tid"], e["name"])] = (calls + 1, total + e["dur"])
    assert set(sums) == set(rows), (sorted(sums), sorted(rows))
    for k, (calls, total) in rows.items():
        assert sums[k][0] == calls, (k, sums[k], rows[k])
        assert abs(sums[k][1] - total) <= 1.0, (k, sums[k], rows[k])
    # The sleeper's S slices: the pause and N sleeps, the events that began and ended each.
    names = thread_names(events)
    sleeper = [tid for tid, name in names.items() if name == "sleeper"]
    assert len(sleeper) == 1, names
    s = [e for e in events if e["ph"] == "X" and e["name"] == "S" and e["tid"] == sleeper[0]]
    assert n <= len(s) <= n + 1, len(s)
    assert max(e["dur"] for e in s) >= pause * 1000 * 0.98
    for e in s:
        assert e["args"]["begin"]["event"] == "sched:sched_switch", e
        assert e["args"]["begin"]["prev_pid"] == sleeper[0], e
        assert e["args"]["end"]["event"] in ("sched:sched_wakeup", "sched:sched_switch"), e
    r = [e for e in events if e["ph"] == "X" and e["name"] == "R" and e["tid"] == sleeper[0]]
    assert r and all(e["args"]["begin"]["next_pid"] == sleeper[0] for e in r), r[:2]


def test_task_state_system_wide_sigint_leaves_a_complete_file(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "all.json")
    # Enabled before the load starts (under CI's load, opening every CPU's events took longer
    # than the sleeper's 0.4 s).
    prof = pp.start_ready(["task-state", "-v", "--timeline", path])
    # A known load beside whatever the machine does (an idle VM made 94 slices in 2 s): 200
    # sleeps of 2 ms, an S and an R slice each. Two spinners keep both vCPUs busy: this VM
    # loses the scheduler events raised on an idle vCPU (perf record lost every wake-up and
    # switch-in of the same sleeper on an idle machine), on a busy one it loses none.
    spinners = [subprocess.Popen([workload("spin"), "1500"]) for _ in range(2)]
    busy = subprocess.Popen([workload("sleeper"), "200", "2", "100"])
    time.sleep(2.0)
    busy.wait(timeout=10)
    for p in spinners:
        p.wait(timeout=10)
    size = os.path.getsize(path)
    prof.p.send_signal(signal.SIGINT)
    rc, out, err = prof.finish(timeout=20)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) > 100, len(slices)
    # The sleeper's own sleeps (a wake-up the VM lost still ends its S slice at the switch-in).
    # Busy vCPUs still lose a few: perf record beside the same load saw 199-201 of the 201
    # switch-ins in 8 runs; task-state's slices were 200-201 in 12.
    sleeper = [t for t, name in thread_names(events).items() if name == "sleeper"]
    assert len(sleeper) == 1, sleeper
    s = [e for e in slices if e["name"] == "S" and e["tid"] == sleeper[0]]
    assert 190 <= len(s) <= 201, len(s)  # the pause and the 200 sleeps, 5% of them lost at most
    assert {e["name"] for e in slices} <= {"R", "S", "D", "T", "t", "I", "RD"}
    assert os.path.getsize(path) > size  # streamed: the rest came at exit
    # Tracks of many of this machine's tasks, each named.
    names = thread_names(events)
    assert len({e["tid"] for e in slices}) >= 5 and all(names.values()), names


def test_multi_trace_pairs_and_detail(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "mt.json")
    n, ms, pause = 5, 10, 120
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT, "--than", "60ms", "--detail",
                           "--timeline", path, "--", workload("sleeper"), str(n), str(ms), str(pause)],
                          timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    pairs = [e for e in events if e["ph"] == "X"]
    assert len(pairs) == n + 1, pairs
    tid = pairs[0]["tid"]
    assert thread_names(events)[tid] == "sleeper"  # keyed by thread: the thread's track
    for e in pairs:
        assert e["name"] == "sys_enter_clock_nanosleep -> sys_exit_clock_nanosleep", e
        assert e["tid"] == tid and e["args"]["key"] == tid, e
        assert e["args"]["event1"]["event"] == ENTER and e["args"]["event2"]["event"] == EXIT, e
        assert e["dur"] >= ms * 1000, e
    assert pause * 1000 <= max(e["dur"] for e in pairs) <= pause * 1300
    # --detail printed the slow pair's two events: its instants.
    instants = [e for e in events if e["ph"] == "i"]
    assert [e["name"] for e in instants] == [ENTER, EXIT], instants
    slow = max(pairs, key=lambda e: e["dur"])
    assert abs(instants[0]["ts"] - slow["ts"]) < 0.0015
    assert abs(instants[1]["ts"] - (slow["ts"] + slow["dur"])) < 0.0015


def test_multi_trace_expression_keys_get_named_tracks(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "key.json")
    rc, out, err = pp.run(["multi-trace", "-e", ENTER, "-e", EXIT, "-k", "common_pid", "--timeline", path, "--",
                           workload("sleeper"), "3", "10", "20"], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    pairs = [e for e in events if e["ph"] == "X"]
    assert len(pairs) == 4, pairs
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    key = pairs[0]["args"]["key"]
    assert key == pairs[0]["args"]["event1"]["tid"], pairs[0]
    for e in pairs:
        assert names[(e["pid"], e["tid"])] == "key %d" % key, e
        assert processes[e["pid"]] == "multi-trace common_pid", processes


def test_syscalls_slices_named_by_call(pp, needs_root, workload, tmp_path):
    """syscalls: a slice per call on the thread's track, named by the syscall; as many getpid()
    and failing close() slices as the workload made and the table counts."""
    path = str(tmp_path / "sys.json")
    n, m = 300, 40
    rc, out, err = pp.run(["syscalls", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit",
                           "--timeline", path, "--", workload("syscalls"), "mixed", str(n), str(m)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    slices = [e for e in events if e["ph"] == "X"]
    getpid = [e for e in slices if e["name"] == "getpid"]
    assert len(getpid) == n, [e["name"] for e in slices]
    failed = [e for e in slices if e["name"] == "close" and e["args"]["event2"]["ret"] == -9]
    assert len(failed) == m
    tid = getpid[0]["tid"]
    assert thread_names(events)[tid] == "syscalls"
    for e in getpid + failed:
        assert e["tid"] == tid and e["args"]["key"] == tid, e
        assert e["args"]["event1"]["event"] == "raw_syscalls:sys_enter", e
        assert e["args"]["event1"]["id"] == e["args"]["event2"]["id"] == (39 if e["name"] == "getpid" else 3), e
    # Each slice is a call the table counts: per name, the same number.
    table = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and "(" in f[0] and f[0].endswith(")") and f[1].isdigit():
            table[f[0].split("(")[0]] = int(f[1])
    counted = {}
    for e in slices:
        counted[e["name"]] = counted.get(e["name"], 0) + 1
    assert table["getpid"] == n and table["close"] == counted["close"], (table, counted)
    assert all(counted.get(k, 0) == v for k, v in table.items() if k != "exit_group"), (table, counted)


def test_rundelay_waits_on_each_tasks_track(pp, needs_root, workload, tmp_path):
    """rundelay: two hogs on one CPU wait for each other; each wait is a slice on the waiting
    task's track, as many per task as its table rows count and summing to their total."""
    path = str(tmp_path / "rd.json")
    rd = Bg([pp.path, "rundelay", "-e", "sched:sched_wakeup*,sched:sched_switch", "-e", "sched:sched_switch",
             "--filter", "spin", "--perins", "-v", "--timeline", path])
    try:
        rd.wait_line(r"enabled after", timeout=15)
        spins = [subprocess.Popen(["taskset", "-c", "1", workload("spin"), "500"]) for _ in range(2)]
        for p in spins:
            p.wait()
        time.sleep(0.3)
    finally:
        rd.send(signal.SIGINT)
    rc, out, err = rd.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    pids = {p.pid for p in spins}
    events = load(path)
    slices = [e for e in events if e["ph"] == "X" and e["tid"] in pids]
    names = thread_names(events)
    table = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].isdigit() and f[1] == "spin" and f[3] == "=>":
            c, t = table.get(int(f[0]), (0, 0.0))
            table[int(f[0])] = (c + int(f[5]), t + float(f[6]))
    assert set(table) == pids, out
    for pid in pids:
        mine = [e for e in slices if e["tid"] == pid]
        assert names[pid] == "spin" and all(e["args"]["key"] == pid for e in mine)
        calls, total = table[pid]
        assert calls >= 20 and len(mine) == calls, (pid, len(mine), table[pid])
        assert abs(sum(e["dur"] for e in mine) - total) <= 0.001 * calls + 0.01, (pid, table[pid])
        assert {e["name"] for e in mine} <= {"sched_wakeup -> sched_switch", "sched_wakeup_new -> sched_switch",
                                             "sched_switch -> sched_switch"}, {e["name"] for e in mine}


def test_trace_instants_with_fields_and_awkward_names(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "trace.json")
    # A task name with a quote, a backslash and a byte that is not UTF-8 (prctl takes any).
    name = b'we"ird\\\xff'
    rc, out, err = pp.run(["trace", "-e", "sched:sched_process_exec,sched:sched_process_exit",
                           "--timeline", path, "--", "/usr/bin/python3", "-c",
                           "import ctypes; ctypes.CDLL(None).prctl(15, %r, 0, 0, 0)" % name], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    inst = [e for e in events if e["ph"] == "i"]
    assert [e["name"] for e in inst] == ["sched:sched_process_exec", "sched:sched_process_exit"], inst
    exec_, exit_ = inst
    assert exec_["args"]["filename"] == "/usr/bin/python3" and exec_["args"]["pid"] == exec_["tid"], exec_
    assert exit_["args"]["comm"] == 'we"ird\\\ufffd', exit_
    assert exec_["ts"] <= exit_["ts"]
    assert isinstance(exec_["args"]["cpu"], int)


def test_profile_samples_with_stacks(pp, needs_root, workload, tmp_path):
    path = str(tmp_path / "prof.json")
    rc, out, err = pp.run(["profile", "-F", "500", "-g", "--timeline", path, "--", workload("hotab"), "400"],
                          timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    events = load(path)
    inst = [e for e in events if e["ph"] == "i"]
    # 400 ms of CPU at 500 Hz: ~200 samples.
    assert 120 <= len(inst) <= 260, len(inst)
    assert all(e["name"] == "cpu-clock" or e["name"].endswith("cycles") for e in inst), inst[0]
    assert all(e["args"]["period"] > 0 for e in inst)
    assert all(thread_names(events)[e["tid"]] == "hotab" for e in inst)
    stacks = [e["args"]["stack"] for e in inst]
    assert all(isinstance(s, list) and s for s in stacks)
    # Leaf first: work() called by hot_a() or hot_b() (3:1), called by main().
    a = sum(1 for s in stacks if s[:3] == ["work", "hot_a", "main"])
    b = sum(1 for s in stacks if s[:3] == ["work", "hot_b", "main"])
    assert a + b >= len(stacks) * 0.8 and 1.8 <= a / max(b, 1) <= 5.0, (a, b, stacks[:3])
    ts = [e["ts"] for e in inst]
    assert ts == sorted(ts)


@pytest.mark.parametrize("profiler", [["task-state"], ["trace", "-e", "sched:sched_switch"],
                                      ["profile", "-F", "99"]])
def test_bad_path_is_one_line(pp, needs_root, profiler, tmp_path):
    for path, why in (("/nonexistent-dir/t.json", "No such file or directory"), (str(tmp_path), "directory")):
        rc, out, err = pp.run([*profiler, "--timeline", path, "--", "true"], timeout=20)
        assert_not_crashed(rc)
        assert rc != 0
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("perf-prof: ") and "timeline" in lines[0] \
            and why in lines[0], err


def test_profilers_without_a_timeline_refuse_it(pp, tmp_path):
    rc, out, err = pp.run(["signal", "--timeline", str(tmp_path / "x.json")], timeout=20)
    assert rc == 129 and len(err.splitlines()) == 1 and "timeline" in err, (rc, err)
    assert not os.path.exists(str(tmp_path / "x.json"))
