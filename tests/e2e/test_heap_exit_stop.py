"""kmemleak --user never leaves the process it profiles stopped: the stop at exit() (the leak
scan's, eBPF path) or the agent's wait there is for a perf-prof that is still running. perf-prof
is interrupted (SIGINT, SIGTERM) while attached with -p, and the process calls exit() shortly
after, or just before: it must end normally whatever the timing.
"""
import signal
import subprocess
import time

import pytest

from conftest import assert_not_crashed
from heap_peers import probes  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("needs_root")


def state(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        pass
    return None


# delay: seconds from perf-prof's signal to the process's exit() (its stdin closed); negative:
# the exit comes first.
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("delay", [-0.05, 0.0, 0.3, 1.0])
def test_exit_after_perf_prof_is_interrupted(pp, workload, probes, sig, delay):
    w = subprocess.Popen([workload("leaks"), "3", "2", "50", "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        b = pp.start_ready(["kmemleak", "--user"] + probes + ["-v", "-p", str(w.pid)])
        w.stdin.write(b"g")
        w.stdin.flush()
        assert w.stdout.readline() == b"leaks done\n"
        if delay < 0:
            w.stdin.close()
            time.sleep(-delay)
            b.send(sig)
        else:
            b.send(sig)
            time.sleep(delay)
            w.stdin.close()
        rc, out, err = b.finish(60)
        assert_not_crashed(rc)
        # perf-prof is gone: the process must end by itself, never wait stopped.
        try:
            rc_w = w.wait(10)
        except subprocess.TimeoutExpired:
            pytest.fail("the process is left in state %s after perf-prof ended\n%s" % (state(w.pid), err))
        assert rc_w == 0
    finally:
        if w.poll() is None:
            w.send_signal(signal.SIGCONT)
            w.kill()
            w.wait()
