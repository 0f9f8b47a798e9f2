"""Process helpers shared by the benches (bench/trace_bench.py, bench/profile_bench.py,
bench/task_state_bench.py): start a profiler or a tool, wait until it holds its perf event fds,
stop it with SIGINT and reap it with wait4 for its CPU time and peak RSS, kill whatever is left on
the way out; count tracepoints system-wide with perf stat alongside; run bench/pingpong.c (the
context-switch storm); read perf-prof's and perf record's loss reports; the bench's set-up and
ending (root check, private perf-prof copy, the error report and exit status, the temporary
directory's removal).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

started = []  # every process the bench started and has not reaped yet


# ---------------------------------------------------------------- processes


class Proc:
    """A started process; stop() interrupts it, wait() lets it finish; both return its rusage."""

    def __init__(self, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr)
        self.pid = self.p.pid
        self.status = None
        self.rusage = None
        self.t0 = time.monotonic()
        self.t_signal = None
        self.t_exit = None
        started.append(self)

    def poll(self):
        if self.status is None:
            pid, status, ru = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self._reaped(status, ru)
        return self.status

    def _reaped(self, status, ru):
        self.status, self.rusage = status, ru
        self.t_exit = time.monotonic()
        self.p.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        if self in started:
            started.remove(self)

    def _wait_until(self, deadline, what):
        while self.poll() is None:
            if time.monotonic() > deadline:
                self.p.kill()
                _, status, ru = os.wait4(self.pid, 0)
                self._reaped(status, ru)
                raise RuntimeError(f"{self.cmd[0]} did not {what}")
            time.sleep(0.01)
        return self.rusage

    def stop(self, sig=signal.SIGINT, timeout=60.0):
        if self.poll() is None:
            self.t_signal = time.monotonic()
            self.p.send_signal(sig)
            self._wait_until(self.t_signal + timeout, f"stop within {timeout:g}s of SIGINT")
        return self.rusage

    def wait(self, timeout=300.0):
        return self._wait_until(time.monotonic() + timeout, f"finish within {timeout:g}s")

    def exit_code(self):
        return os.waitstatus_to_exitcode(self.status)

    def cpu_s(self):
        return self.rusage.ru_utime + self.rusage.ru_stime

    def rss_mb(self):
        return self.rusage.ru_maxrss / 1024.0

    def stop_s(self):
        """Seconds from SIGINT to exit: the exit-time work (folding, symbolization, build-ids)."""
        return self.t_exit - self.t_signal if self.t_signal and self.t_exit else None


def describe_exit(proc):
    code = proc.exit_code()
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def kill_started():
    for p in list(started):
        try:
            p.p.kill()
            p.p.wait(timeout=5)
        except Exception:
            pass
        started.remove(p)


def ncpus():
    return os.cpu_count() or 1


def perf_event_fds(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def read_text(path, limit=4000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-limit:].strip()
    except OSError:
        return ""


def wait_ready(proc, want_fds, settle, err_path=None, timeout=15.0):
    """Wait until `proc` holds `want_fds` perf event fds, then `settle` more seconds (enable).
    A failure names the process and, given its `err_path`, quotes the end of its stderr."""
    deadline = time.monotonic() + timeout
    while perf_event_fds(proc.pid) < want_fds:
        if proc.poll() is not None:
            failure = f"exited early ({describe_exit(proc)})"
        elif time.monotonic() > deadline:
            failure = f"opened no perf events within {timeout:g}s"
        else:
            time.sleep(0.02)
            continue
        stderr = f"; its stderr: {read_text(err_path)!r}" if err_path else ""
        raise RuntimeError(f"{' '.join(proc.cmd)} {failure}{stderr}")
    time.sleep(settle)


class SwitchCounter:
    """`perf stat -a -e EVENT,... -x,` running alongside, read when stopped: stop() returns the sum
    of the counts of `events` (by default sched:sched_switch alone) and keeps each in `counts`."""

    def __init__(self, tmp, name, events=("sched:sched_switch",)):
        self.events = list(events)
        self.path = os.path.join(tmp, name + ".stat")
        self.proc = Proc(["perf", "stat", "-a", "-e", ",".join(self.events), "-x,", "-o", self.path])
        self.t0 = time.monotonic()
        wait_ready(self.proc, 1, 0.1)

    def stop(self):
        self.proc.stop()
        self.seconds = time.monotonic() - self.t0
        self.counts = {}
        with open(self.path) as f:
            for line in f:
                # count,unit,event,...; the count is "<not counted>" when the event never ran.
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2] in self.events:
                    self.counts[fields[2]] = int(fields[0]) if fields[0].isdigit() else 0
        missing = [e for e in self.events if e not in self.counts]
        if missing:
            raise RuntimeError(f"no {','.join(missing)} count in {self.path}")
        return sum(self.counts.values())


def run_load(args, mode, rate=None, cpus=None, seconds=None):
    """Runs bench/pingpong.c (args.load, args.via; mode same or diff) for `seconds` (default
    args.seconds), or, with a list of cpus, one paced copy per CPU at once; returns the round trips
    per second, summed over the copies."""
    cpu_list = cpus if isinstance(cpus, list) else [cpus]
    procs = []
    for cpu in cpu_list:
        cmd = [args.load, "-m", mode, "-k", args.via, "-d", str(seconds or args.seconds)]
        if rate:
            cmd += ["-r", str(rate)]
        if cpu is not None:
            cmd += ["-c", str(cpu)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    total = 0.0
    for p in procs:
        out = p.communicate()[0]
        m = re.search(r"round_trips=(\d+) seconds=([\d.]+) rate=([\d.]+)", out)
        if p.returncode != 0 or not m:
            raise RuntimeError(f"load failed ({p.returncode}): {out!r}")
        total += float(m.group(3))
    return total


# ---------------------------------------------------------------- the profilers' reports


def perfprof_lost(err_path):
    """perf-prof prints "... lost N events (total)" (cumulative) at most once a second."""
    lost = 0
    with open(err_path, errors="replace") as f:
        for line in f:
            m = re.search(r"lost (\d+) events \(total\)", line)
            if m:
                lost = max(lost, int(m.group(1)))
    return lost


def stderr_problems(err_path):
    """stderr lines that are not loss reports (a clean run prints nothing)."""
    with open(err_path, errors="replace") as f:
        return [l.rstrip() for l in f if l.strip() and "lost" not in l]


def perf_record_lost(data_path, err_text, event):
    """Samples of `event` lost by perf record. `perf report --stats` lists per event a
    "LOST_SAMPLES events:" line holding the sum of the PERF_RECORD_LOST counts (the aggregated
    line above it counts records); failing that, perf record's own "Processed N samples and lost
    P%!" warning."""
    rep = subprocess.run(["perf", "report", "--stats", "-i", data_path], capture_output=True, text=True)
    text = rep.stdout
    i = text.find(event + " stats:")
    if i >= 0:
        m = re.search(r"LOST_SAMPLES events:\s+(\d+)", text[i:])
        return int(m.group(1)) if m else 0
    m = re.search(r"Processed (\d+) samples and lost ([\d.]+)%", err_text)
    return round(int(m.group(1)) * float(m.group(2)) / 100) if m else 0


def fmt_int(v):
    """A count for the benches' tables: 1,234,567, or "-" when not measured."""
    return "-" if v is None else f"{v:,.0f}"


# ---------------------------------------------------------------- set-up and clean-up


def may_profile_system():
    """Whether this process may open system-wide perf events: root or perf_event_paranoid -1."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
    except OSError:
        paranoid = 2
    return os.geteuid() == 0 or paranoid <= -1


def tools_missing(perf_prof, load):
    """Whether perf-prof or the load binary is not there to run: says which (to stderr)."""
    for tool, hint in ((perf_prof, "make all"), (load, f"make {load}")):
        if not os.access(tool, os.X_OK):
            print(f"bench: {tool} not found or not executable ({hint})", file=sys.stderr)
            return True
    return False


def private_perf_prof(perf_prof, tmp):
    """Copies `perf_prof` into `tmp` and returns the copy's path: others may relink ./perf-prof
    while the bench runs."""
    copy = os.path.join(tmp, "perf-prof")
    shutil.copy2(perf_prof, copy)
    return copy


def run_bench(measure, tmp, keep, errors):
    """Runs `measure()` and returns the bench's exit status: 0, or 1 after printing an exception of
    the types in `errors` as "bench: error: ...". Either way then kills what is still running and
    removes `tmp` (or, with `keep`, says where it is)."""
    try:
        measure()
    except errors as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 1
    finally:
        kill_started()
        if keep:
            print(f"bench: files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0
