"""sched-migrate (SPEC §P19): a workload that moves itself between CPU 0 and 1 N times."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import ENABLED_RE, Bg, perf_prof_path, run, workloads_dir

PP = perf_prof_path()
N = 40
LINE = re.compile(r"^\S+ \S+ sched-migrate total (\d+), same LLC (\d+) hit (\d+)%, same L2 (\d+) hit (\d+)%$")


def cpu_list(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def shared(level, a, b):
    """Whether CPUs a and b share the cache of `level`, read as the profiler must (level files)."""
    def lst(cpu):
        d = "/sys/devices/system/cpu/cpu%d/cache" % cpu
        for idx in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if cpu_list(os.path.join(d, idx, "level")) == str(level) and \
                    cpu_list(os.path.join(d, idx, "type")) != "Instruction":
                return cpu_list(os.path.join(d, idx, "shared_cpu_list"))
        return None
    la, lb = lst(a), lst(b)
    return la is not None and la == lb


@pytest.fixture(scope="module")
def hops():
    """hopper N started once sched-migrate --detail is enabled, selected by --filter pid==PID."""
    w = subprocess.Popen(["sh", "-c", "read go; exec %s %d" % (os.path.join(workloads_dir(), "hopper"), N)],
                         stdin=subprocess.PIPE)
    p = Bg([PP, "sched-migrate", "-v", "--detail", "--filter", "pid==%d" % w.pid])
    p.wait_line(ENABLED_RE, timeout=15)
    w.stdin.write(b"go\n")
    w.stdin.close()
    w.wait()
    time.sleep(0.3)
    p.send(signal.SIGINT)
    rc, out, err = p.finish(timeout=10)
    return w.pid, rc, out, err


def test_counts_the_workloads_migrations(hops):
    pid, rc, out, err = hops
    assert rc == 0 and err == ""
    totals = [LINE.match(l) for l in out.splitlines() if "sched-migrate total" in l]
    assert len(totals) == 1 and totals[0], out
    t, llc, lp, l2, l2p = (int(x) for x in totals[0].groups())
    assert t >= N
    assert lp == llc * 100 // t and l2p == l2 * 100 // t
    # every hop is 0 <-> 1: all or none share each cache
    assert llc == (t if shared(3, 0, 1) else 0)
    assert l2 == (t if shared(2, 0, 1) else 0)
    crossing = [l for l in out.splitlines() if "sched:sched_migrate_task:" in l]
    assert len(crossing) == t - llc  # --detail: the migrations leaving the LLC
    for l in crossing:
        assert "pid=%d " % pid in l


def test_spec_command_line():
    p = subprocess.Popen([PP, "sched-migrate", "--detail", "-i", "300"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.2)  # a tick or more, and the table at exit
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0 and err == ""
    lines = [l for l in out.splitlines() if "sched-migrate total" in l]
    assert len(lines) >= 2 and all(LINE.match(l) for l in lines), out


def test_help_and_bad_input():
    rc, out, err = run([PP, "sched-migrate", "-h"])
    assert rc == 129 and "--detail" in err and "level" in err  # help on stderr
    for bad in (["--filter", "nosuch==1"], ["--detail=3"], ["--bogus"]):
        rc, out, err = run([PP, "sched-migrate", "-N", "1"] + bad, timeout=10)
        assert rc != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, (bad, err)
