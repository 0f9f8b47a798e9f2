"""Session behaviour shared by every profiler, exercised through `signal`: lost-event
accounting, SIGUSR1 log rotation, the SIGUSR2 state dump, stdin markers, SIGINT in a script's
background job."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import assert_not_crashed, signal_events_in
from test_signal import need_cpu1, sigself_argv, unique_comm

LOST_TOTAL_RE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} signal: lost (\d+) events \(total\)$")


def run_workload(argv):
    w = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert w.returncode == 0, (argv, w.stdout, w.stderr)


def overflow_then_finish(prof, workload, comm, burst, settle=0.5):
    """Stops perf-prof while `burst` signals flood CPU 1, resumes it, sends one more signal
    (the kernel writes the LOST record with the next sample that fits, after perf-prof has
    drained the full ring), waits `settle` s, and stops it. Returns (printed, stderr)."""
    prof.send(signal.SIGSTOP)
    try:
        run_workload(sigself_argv(workload, burst, comm, cpu=1))
    finally:
        prof.send(signal.SIGCONT)
    time.sleep(0.5)
    run_workload(sigself_argv(workload, 1, comm, cpu=1))
    time.sleep(settle)
    prof.send(signal.SIGINT)
    rc, out, err = prof.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0
    return len([e for e in signal_events_in(out) if e.tcomm == comm]), err


def test_lost_events_are_counted_exactly(pp, needs_root, workload):
    """A 1-page ring (~46 samples) overflows while perf-prof is stopped: every one of the
    1000 signals is either printed or counted in the lost notice, never both or neither."""
    need_cpu1()
    comm = unique_comm()
    prof = pp.start_ready(["signal", "-v", "-C", "1", "-m", "1", "--filter", comm], timeout=20)
    printed, err = overflow_then_finish(prof, workload, comm, 1000)
    # -v reports each loss at once, per CPU; the exact total is the sum.
    per_cpu = re.findall(r"signal: lost (\d+) events on CPU #1$", err, re.M)
    assert per_cpu, "a 1000-signal burst into a 1-page ring must lose events:\n" + err
    lost = sum(int(n) for n in per_cpu)
    assert printed + lost == 1001, (printed, lost, err)
    assert 0 < printed < 1001


def test_lost_total_notice_without_verbose(pp, needs_root, workload):
    need_cpu1()
    comm = unique_comm()
    prof = pp.start(["signal", "-C", "1", "-m", "1", "--filter", comm])
    time.sleep(1.0)  # no -v, so no readiness line: give it time to enable
    printed, err = overflow_then_finish(prof, workload, comm, 500, settle=1.5)  # 1/s notice
    totals = [int(m.group(1)) for m in map(LOST_TOTAL_RE.match, err.splitlines()) if m]
    assert totals and len(totals) == len(err.splitlines()), "only lost notices on stderr:\n" + err
    assert printed + totals[-1] == 501, (printed, totals, err)


def test_sigusr1_reopens_output_file(pp, needs_root, workload, tmp_path):
    log = tmp_path / "signals.log"
    rotated = tmp_path / "signals.log.1"
    comm = unique_comm()
    prof = pp.start(["signal", "-v", "-o", str(log), "--filter", comm])
    deadline = time.monotonic() + 15
    while "enabled after" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "perf-prof never became ready"
        time.sleep(0.05)
    run_workload(sigself_argv(workload, 10, comm))
    time.sleep(0.5)
    os.rename(log, rotated)
    prof.send(signal.SIGUSR1)
    time.sleep(0.5)
    run_workload(sigself_argv(workload, 20, comm))
    time.sleep(0.5)
    prof.send(signal.SIGINT)
    rc, out, err = prof.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and out == "" and err == ""
    first = [e for e in signal_events_in(rotated.read_text()) if e.tcomm == comm]
    second = [e for e in signal_events_in(log.read_text()) if e.tcomm == comm]
    assert (len(first), len(second)) == (10, 20)


def test_sigusr2_dumps_state_on_stdout(pp, needs_root):
    prof = pp.start_ready(["signal", "-v", "-C", "0", "--filter", "pp_nothing"], timeout=20)
    prof.send(signal.SIGUSR2)
    prof.wait_line(r"^device signal: 1 ring\(s\), 1 event\(s\), 8 pages per ring", timeout=10)
    prof.send(signal.SIGINT)
    rc, out, err = prof.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == ""
    assert re.search(r"CPU %usr \d+\.\d\d %sys \d+\.\d\d MAXRSS \d+k$", out, re.M), out
    assert "event signal:signal_generate" in out and 'comm=="pp_nothing"' in out


def test_sigint_stops_a_background_job_of_a_script(pp, needs_root, tmp_path):
    """`cmd &` in a shell without job control starts cmd with SIGINT ignored. perf-prof
    blocks the signal and reads it from a signalfd, and Linux queues a blocked signal even
    when it is ignored: `kill -INT` still ends the run cleanly, with its output complete."""
    fg = str(tmp_path / "bg")
    script = ('"$1" profile -F 100 -g --flame-graph "$2" >/dev/null 2>"$2.err" & p=$!; sleep 1; '
              'kill -INT $p; wait $p; echo "rc=$?"')
    r = subprocess.run(["bash", "-c", script, "bash", pp.path, fg], capture_output=True, text=True, timeout=20)
    assert r.stdout.strip() == "rc=0", (r.stdout, r.stderr)
    with open(fg + ".err") as f:
        assert f.read() == ""
    assert os.path.exists(fg + ".folded")


def test_stdin_lines_are_markers(pp, needs_root):
    prof = pp.start(["signal", "-v", "-C", "0", "--filter", "pp_nothing"], stdin=subprocess.PIPE)
    prof.wait_line(r"signal: enabled after", timeout=15)
    prof.p.stdin.write("first marker\nsecond marker\n")
    prof.p.stdin.flush()
    prof.wait_line(r"second marker$", timeout=10)
    prof.p.stdin.close()  # EOF must not make perf-prof spin or exit
    time.sleep(0.3)
    assert prof.alive()
    prof.send(signal.SIGINT)
    rc, out, err = prof.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == ""
    markers = [l for l in out.splitlines() if l.endswith("marker")]
    assert len(markers) == 2
    for l in markers:
        assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} (first|second) marker$", l), l
