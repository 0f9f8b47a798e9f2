"""rundelay (SPEC-PROFILERS §P4): run-queue latency from multi-trace's delay with automatic keys and
filters. Two CPU hogs pinned to one CPU wait for each other in the run queue: rundelay and
task-state run on the same workload at once and must report the same run-queue delays per task
(bounded: the guest kernel at times drops scheduler events). Also SPEC's command lines, the -v
filter echo, help and bad input."""
import re
import signal
import subprocess
import time

import pytest

from conftest import Bg, assert_not_crashed

RD = ["rundelay", "-e", "sched:sched_wakeup*,sched:sched_switch", "-e", "sched:sched_switch"]
RD_ROW = re.compile(r"^(?P<tid>\d+) +(?P<comm>.{16}) +(?P<s>\S+) => (?P<e>\S+) +(?P<calls>\d+) +(?P<total>\d+\.\d{3})")
TS_ROW = re.compile(r"^ *(?P<tid>\d+) +spin +RD +(?P<calls>\d+) +(?P<total>\d+\.\d{3})")


def stop(b):
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    return out


@pytest.fixture(scope="module")
def both(perf_prof, workloads):
    ts = Bg([perf_prof, "task-state", "--filter", "spin", "--perins", "-v"])
    rd = Bg([perf_prof] + RD + ["--filter", "spin", "--perins", "-v"])
    ts.wait_line(r"enabled after", timeout=15)
    rd.wait_line(r"enabled after", timeout=15)
    spins = [subprocess.Popen(["taskset", "-c", "1", workloads + "/spin", "1000"]) for _ in range(2)]
    for p in spins:
        p.wait()
    time.sleep(0.3)
    return stop(ts), stop(rd), {p.pid for p in spins}


def test_same_run_queue_delays_as_task_state(both):
    ts_out, rd_out, pids = both
    ts = {int(m.group("tid")): (int(m.group("calls")), float(m.group("total")))
          for m in map(TS_ROW.match, ts_out.splitlines()) if m}
    rd = {}
    for m in map(RD_ROW.match, rd_out.splitlines()):
        if m and m.group("comm").rstrip() == "spin":
            c, t = rd.get(int(m.group("tid")), (0, 0.0))
            rd[int(m.group("tid"))] = (c + int(m.group("calls")), t + float(m.group("total")))
    assert set(ts) == pids and set(rd) == pids, (ts_out, rd_out)
    for pid in pids:
        (tc, tt), (rc, rt) = ts[pid], rd[pid]
        # Each hog waits about half of the second in the run queue, preempted many times.
        assert tc >= 20 and rc >= 20
        assert 0.8 <= rc / tc <= 1.25, (pid, ts[pid], rd[pid])
        assert 0.8 <= rt / tt <= 1.25, (pid, ts[pid], rd[pid])
        assert 200000 <= rt <= 1000000


def test_filter_echo_and_trick_once(both):
    _, rd_out, _ = both
    lines = rd_out.splitlines()
    assert 'sched:sched_wakeup filter "comm=="spin""' in lines
    assert 'sched:sched_wakeup_new filter "comm=="spin""' in lines
    assert 'sched:sched_switch filter "(prev_state==0||prev_state==256) && (prev_comm=="spin")"' in lines
    assert 'sched:sched_switch filter "next_comm=="spin""' in lines
    assert sum(l.startswith("Trick: ") for l in lines) == 1
    head = next(l for l in lines if l.startswith("THREAD "))
    assert head.startswith("THREAD comm             ")


SPEC_LINES = [
    ["-i", "1000", "-m", "256", "--perins"],
    ["-p", "1", "-i", "1000", "--than", "4ms", "--detail=samekey"],
    ["--filter", "python", "-i", "1000", "--than", "4ms", "--detail=samekey"],
    ["--filter", "python", "-i", "1000", "--than", "4ms", "--detail=samekey", "--perins"],
]


def test_spec_command_lines(pp, needs_root):
    runs = [pp.start(RD + extra) for extra in SPEC_LINES]
    # The last one: a profiler as an untraced helper of position 2.
    runs.append(pp.start(["rundelay", "-e", "sched:sched_wakeup*,sched:sched_switch", "-e",
                          "sched:sched_switch,profile/-F 500 --watermark 50 -m 16 -g/untraced/",
                          "--filter", "python", "-i", "1000", "--than", "4ms", "--detail=samecpu"]))
    time.sleep(1.5)
    for b in runs:
        stop(b)


@pytest.mark.parametrize("args,msg", [
    (["-e", "sched:sched_wakeup", "-e", "sched:sched_switch"], "rundelay filter failed, found 2 matching events."),
    (RD[1:] + ["--impl", "pair"], "not usable"),
    (RD[1:] + ["-k", "pid"], "not usable"),
    (RD[1:] + ["--than", "0"], "must be above 0"),
])
def test_bad_input(pp, needs_root, args, msg):
    rc, out, err = pp.run(["rundelay"] + args + ["--", "true"])
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and msg in lines[0], err


def test_help(pp):
    rc, out, err = pp.run(["rundelay", "-h"])
    assert_not_crashed(rc)
    assert "Trick line is printed once" in out + err and "--filter" in out + err
    rc, out, err = pp.run(RD + ["help"])
    assert rc == 0 and err == ""
    assert "\nperf-prof rundelay -e " in out and "--impl" not in out.split("\n\n")[1]
