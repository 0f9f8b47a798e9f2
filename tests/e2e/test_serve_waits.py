"""perf-prof serve: Go's /debug/pprof/block and /debug/pprof/mutex for processes that link no
Go runtime, read by `go tool pprof`.

block: every wait of the target off the CPU, by the stack it waited in. Workload `offcpu split
MS`: its napper thread sleeps in nap_work() (5 ms naps) the whole time, its main thread spins
in spin_work() and never blocks. mutex: contended futex waits, by the stack that released
them (the holder's unlock), delayed by the wait each ended; workload `lockhold`."""

import re
import threading
import time

from conftest import Bg
from test_serve import Serve, go_top, serve  # noqa: F401 (serve is a fixture)


def seconds_of(v):
    """A -top time: "1.99s" / "250ms" / "12us" / "0" -> seconds."""
    m = re.match(r"^([\d.]+)(s|ms|us|ns|mins|hrs)?$", v)
    scale = {None: 1e-9, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
    return float(m.group(1)) * scale[m.group(2)]


def test_block_profile_of_a_sleeping_thread(serve, workload, go_pprof):
    target = Bg([workload("offcpu"), "split", "20000"])
    s = serve("-p", str(target.pid))
    t0 = time.monotonic()
    top = go_pprof("-top", "-nodefraction=0", "-sample_index=delay", "-seconds", "2", s.url + "/debug/pprof/block")
    took = time.monotonic() - t0
    assert "Type: delay" in top, top
    rows = go_top(top)
    # The napper slept the whole 2 s; the spinner never blocked.
    nap = seconds_of(rows["nap_work"][1])
    # (the window closes on serve's timer, which an idle vCPU can fire a little late)
    assert 1.8 <= nap <= 2.3 and took >= 2, (nap, took, top)
    assert "spin_work" not in rows, top
    counts = go_top(go_pprof("-top", "-nodefraction=0", "-sample_index=contentions",
                             s.url + "/debug/pprof/block?seconds=1"))
    # 1 s of 5 ms naps: about 200 waits (each nap a little longer than 5 ms).
    assert 150 <= int(counts["nap_work"][1]) <= 230, counts["nap_work"]
    status, headers, body = s.get("/debug/pprof/block?seconds=0")
    assert status == 400
    status, headers, body = s.get("/debug/pprof/")
    assert status == 200 and b"block?seconds=30" in body and b"mutex?seconds=30" in body
    target.kill()
    s.stop()


def test_one_profile_of_each_kind_at_a_time(serve, workload):
    target = Bg([workload("offcpu"), "split", "20000"])
    s = serve("-p", str(target.pid))
    got = {}

    def fetch(name, path):
        got[name] = s.get(path)

    first = threading.Thread(target=fetch, args=("block", "/debug/pprof/block?seconds=2"))
    cpu = threading.Thread(target=fetch, args=("cpu", "/debug/pprof/profile?seconds=2"))
    first.start()
    cpu.start()
    time.sleep(0.5)
    status, _, body = s.get("/debug/pprof/block?seconds=1")
    assert status == 409 and b"a block profile of process" in body, body
    first.join()
    cpu.join()
    assert got["block"][0] == 200 and got["cpu"][0] == 200
    assert got["block"][1]["Content-Disposition"] == 'attachment; filename="block"'
    target.kill()
    s.stop()


def test_mutex_profile_names_the_holder(serve, workload, go_pprof):
    # The holder keeps the mutex 5 ms at a time; the waiter blocks each time: the waits are
    # released by holder_thread's unlock, and add up to nearly all of the profile's 2 s.
    target = Bg([workload("lockhold"), "mutex", "100000", "5"])
    target.wait_line(r"^lockhold: pid")
    s = serve("-p", str(target.pid))
    top = go_pprof("-top", "-nodefraction=0", "-sample_index=delay", "-seconds", "2", s.url + "/debug/pprof/mutex")
    assert "Type: delay" in top, top
    rows = go_top(top)
    held = seconds_of(rows["holder_thread"][1])
    assert 1.7 <= held <= 2.3, (held, top)
    # The waiter's side is the block profile's, not this one's.
    assert "waiter_thread" not in rows, top
    counts = go_top(go_pprof("-top", "-nodefraction=0", "-sample_index=contentions",
                             s.url + "/debug/pprof/mutex?seconds=1"))
    # 1 s of 5 ms holds: about 200 hand-overs.
    assert 150 <= int(counts["holder_thread"][1]) <= 230, counts["holder_thread"]
    target.kill()
    s.stop()
