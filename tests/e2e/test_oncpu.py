"""oncpu (SPEC §P3): CPU mode and thread mode against busy workloads pinned with taskset."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import perf_prof_path, run, spinning, workloads_dir

PP = perf_prof_path()
ROW = re.compile(r"^(\d{3}) (\d+)\s+(.*)$")


def spin(cpu, ms):
    return subprocess.Popen(["taskset", "-c", str(cpu), os.path.join(workloads_dir(), "spin"), str(ms)])


def sigint_run(args, secs):
    p = subprocess.Popen([PP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(secs)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    return p.returncode, out, err


def cpu_rows(out):
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows.setdefault(int(m.group(1)), []).append(m.group(3))
    return rows


@pytest.fixture(scope="module")
def pinned():
    """spin pinned to CPU 1 for 1.2 s under `oncpu -C 0-1 -i 5000` (one table, at exit).
    A run counts from a switch-in oncpu saw: a second spinner on CPU 1 makes them take turns
    (alone, one would be seen only if something preempted it)."""
    with spinning((1, 1), 1200) as (w, _):
        rc, out, err = sigint_run(["oncpu", "-m", "128", "-C", "0-1", "-i", "5000"], 1.6)
    return w.pid, rc, out, err


def test_pinned_task_shows_only_on_cpu1(pinned):
    pid, rc, out, err = pinned
    assert rc == 0 and err == ""
    rows = cpu_rows(out)
    on1 = [c for c in " ".join(rows.get(1, [])).split() if c.startswith("spin:%d(" % pid)]
    on0 = [c for c in " ".join(rows.get(0, [])).split() if c.startswith("spin:%d(" % pid)]
    assert len(on1) == 1 and on0 == [], out
    ms = float(re.search(r"\(([\d.]+)ms\)", on1[0]).group(1))
    # it burnt up to 1200 ms, taking turns with the other: at least a quarter of it
    assert 300 <= ms <= 1300, out


def test_thread_mode_shows_the_threads_cpus():
    w = spin(1, 1500)
    time.sleep(0.1)
    rc, out, err = run([PP, "oncpu", "-m", "128", "-t", str(w.pid), "-i", "500"], timeout=10)
    w.wait()
    assert rc == 0 and err == "", err
    rows = [l for l in out.splitlines() if l.startswith("%-6d " % w.pid)]
    assert rows and out.count("THREAD COMM             SUM(ms) CPUS(ms) ") == len(rows)
    for r in rows:
        cells = re.findall(r" (\d+)\((\d+)ms\)", r)
        assert [c for c, _ in cells] == ["1"], r  # pinned: CPU 1 only
    assert sum(int(ms) for r in rows for ms in re.findall(r" 1\((\d+)ms\)", r)) >= 300


@pytest.mark.parametrize("args", [
    [], ["--only-comm"], ["-C", "0"], ["--prio", "1-99"], ["--prio", "100"], ["-C", "0", "--prio", "1-99"],
    ["--detail"], ["--only-comm", "--detail"],
])
def test_spec_command_lines(args):
    # A run needs a task's switch-in and its switch-out on one CPU. This VM can lose the
    # switch-ins raised on an idle vCPU, so on a quiet machine a table can be empty: two
    # spinners sharing CPU 0 keep it busy and switching between tasks of known pids.
    with spinning((0, 0), 1500) as ws:
        rc, out, err = sigint_run(["oncpu", "-m", "128", "-i", "300"] + args, 0.8)
    assert rc == 0 and err == "", err
    for line in out.splitlines():
        assert "<...>" not in line
    if "--prio" not in args:  # prio 120: the spinners are counted
        assert "CPU SUM(ms" in out, out
        hdr = [l for l in out.splitlines() if l.startswith("CPU ")][0]
        assert ("COMM(" in hdr) == ("--only-comm" in args) and ("/sws" in hdr) == ("--detail" in args)
        cells = " ".join(l for l in out.splitlines() if re.match(r"\d{3} ", l))  # --detail's SUM too
        if "--only-comm" in args:
            assert re.search(r"(^| )spin\(", cells), out
        else:
            for w in ws:
                assert "spin:%d(" % w.pid in cells, out
    else:  # RT (1-99) or prio 100: the spinners (120) are not
        assert "spin" not in out, out
    if args == ["-C", "0"]:
        assert all(r.startswith("000 ") for r in out.splitlines() if ROW.match(r))


def test_prio_filter_echo_and_rt_only():
    # no RT task runs here normally: --prio 1-99 accounts nothing, and -v shows the filter
    rc, out, err = sigint_run(["oncpu", "-v", "-i", "300", "--prio", "1-99,120"], 0.5)
    assert rc == 0 and err == ""
    assert "filter: ((prev_prio>=1&&prev_prio<=99)||prev_prio==120) || " \
           "((next_prio>=1&&next_prio<=99)||next_prio==120)" in out


def test_prio_warn_in_thread_mode_and_exclusive_with_filter():
    rc, out, err = run([PP, "oncpu", "--prio", "1-99", "-i", "200", "--", "true"], timeout=10)
    assert rc == 0 and err == "WARN: --prio is only valid when bound to cpu\n"
    rc, out, err = run([PP, "oncpu", "--prio", "1-99", "--filter", "prev_pid==1", "-C", "0"], timeout=10)
    assert rc != 0 and "--prio and --filter are mutually exclusive" in err and len(err.splitlines()) == 1


def test_help_and_bad_input():
    rc, out, err = run([PP, "oncpu", "-h"])
    assert rc == 129 and "--only-comm" in err and "--prio" in err and "sched_vmf_sib" in err  # help on stderr, as every profiler's
    for bad in (["--prio", "200"], ["--prio", "x"], ["--filter", "nosuchfield==1", "-C", "0"], ["--bogus"]):
        rc, out, err = run([PP, "oncpu", "-i", "100", "-N", "1"] + bad, timeout=10)
        assert rc != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, (bad, err)
