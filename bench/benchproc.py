"""Process helpers shared by the benches (bench/trace_bench.py, bench/profile_bench.py,
bench/task_state_bench.py, bench/multi_trace_bench.py): start a profiler or a tool, wait until it
holds its perf event fds, stop it with SIGINT and reap it with wait4 for its CPU time and peak RSS,
sample its VmRSS, kill whatever is left on the way out; count tracepoints system-wide with perf
stat alongside; run bench/pingpong.c (the context-switch storm), free or paced; read perf-prof's
state dump (SIGUSR2) and loss reports and perf record's; the scheduler benches' common part (the
untraced rates, perf sched record and its post-processing, the table); the bench's set-up and
ending (root check, private perf-prof copy, the error report and exit status, the temporary
directory's removal).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

started = []  # every process the bench started and has not reaped yet


# ---------------------------------------------------------------- processes


class Proc:
    """A started process; stop() interrupts it, wait() lets it finish; both return its rusage."""

    def __init__(self, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=None, env=None):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, stdin=stdin, env=env)
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
                self.send(signal.SIGKILL)
                _, status, ru = os.wait4(self.pid, 0)
                self._reaped(status, ru)
                raise RuntimeError(f"{self.cmd[0]} did not {what}")
            time.sleep(0.01)
        return self.rusage

    def send(self, sig):
        """Sends `sig` unless the process was reaped. Not Popen.send_signal: that polls first and
        may reap the process behind wait4's back."""
        if self.status is None:
            try:
                os.kill(self.pid, sig)  # not reaped: the pid is still ours, even as a zombie
            except ProcessLookupError:
                pass  # reaped this moment by another thread's poll()

    def stop(self, sig=signal.SIGINT, timeout=60.0):
        if self.poll() is None:
            self.t_signal = time.monotonic()
            self.send(sig)
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
    if proc.poll() is not None:  # e.g. perf-prof failing after a first perf event
        stderr = f"; its stderr: {read_text(err_path)!r}" if err_path else ""
        raise RuntimeError(f"{' '.join(proc.cmd)} exited early ({describe_exit(proc)}){stderr}")


def vm_rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


class RssSampler(threading.Thread):
    """VmRSS of a process now and every `period` seconds until stopped (and once more then);
    `hook()`, if given, is called after each sample (e.g. to ask the process for its statistics)."""

    def __init__(self, pid, period, hook=None):
        super().__init__(daemon=True)
        self.pid, self.period, self.hook = pid, period, hook
        self.samples = []  # (seconds since start, MB)
        self.done = threading.Event()
        self.t0 = time.monotonic()
        self.start()

    def sample(self):
        mb = vm_rss_mb(self.pid)
        if mb is not None:
            self.samples.append((time.monotonic() - self.t0, mb))
            if self.hook:
                self.hook()

    def run(self):
        self.sample()
        while not self.done.wait(self.period):
            self.sample()

    def stop(self):
        self.done.set()
        self.join()
        self.sample()
        return self.samples


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


def paced_load(args, rate, seconds=None, per_trip=2.0):
    """A same-CPU copy of the load on each of (up to) two CPUs, paced so that together they make
    `rate` events/s (`per_trip` of them per round trip: by default the two switches) while leaving
    each CPU partly idle for the profiler. Returns the round trips/s per copy, the CPUs, and the
    function that runs the load (it returns the round trips/s of all the copies)."""
    cpus = list(range(min(2, ncpus())))
    trips = int(rate / per_trip / len(cpus))
    return trips, cpus, lambda: run_load(args, "same", rate=trips, cpus=cpus, seconds=seconds)


class CountedLoad:
    """Wraps a load function: while it runs, `perf stat -a` counts `events`; `per_s` is then their
    rate over the load's own window (a profiler's perf stat also covers its start-up and exit)."""

    def __init__(self, tmp, tag, run, events=("sched:sched_switch",)):
        self.tmp, self.tag, self.run, self.events = tmp, tag, run, events
        self.per_s = None
        self.counts = {}  # per event, over `seconds`
        self.seconds = None

    def __call__(self):
        stat = SwitchCounter(self.tmp, self.tag, self.events)
        t0 = time.monotonic()
        speed = self.run()
        n = stat.stop()
        self.seconds = time.monotonic() - t0
        self.counts = stat.counts
        self.per_s = n / self.seconds
        return speed


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


def dump_state(prof, out_path, profiler, timeout=10.0):
    """Sends SIGUSR2 to perf-prof running `profiler` and returns (events handled, lost) from the
    state dump it prints on stdout: "device PROFILER: 2 ring(s), ..., N samples, L lost" and, when
    it reads in time order, "order: D delivered, ...": handled is D (what reached the profiler),
    else N."""
    device_re = re.compile(r"^device " + re.escape(profiler) + r"\b[^:\n]*:.*?(\d+) samples, (\d+) lost", re.M)
    order_re = re.compile(r"^\s*order: (\d+) delivered", re.M)
    start = os.path.getsize(out_path)
    prof.send(signal.SIGUSR2)
    t_sent = time.monotonic()
    deadline = t_sent + timeout
    while True:
        with open(out_path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        m = device_re.search(text)
        if m:
            # The order line follows the device line in the same dump; wait for it briefly.
            o = order_re.search(text, m.end())
            if o or time.monotonic() > t_sent + 0.5:
                return int(o.group(1)) if o else int(m.group(1)), int(m.group(2))
        if prof.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(prof.cmd)}: no state dump on SIGUSR2 in {out_path}")
        time.sleep(0.02)


def fmt_int(v):
    """A count for the benches' tables: 1,234,567, or "-" when not measured."""
    return "-" if v is None else f"{v:,.0f}"


# ---------------------------------------------------------------- the scheduler benches


SWITCH = "sched:sched_switch"
# What task-state opens and what multi-trace's run-queue latency pairs: the events perf stat counts.
SCHED_EVENTS = [SWITCH, "sched:sched_wakeup", "sched:sched_wakeup_new"]


def measure_untraced(args, tmp, mode):
    """The load alone: its round trips/s; then, in a 1 s run with perf stat -a counting
    SCHED_EVENTS alongside, the switches and sched events per second and the load's speed under
    perf stat alone."""
    speed = run_load(args, mode)
    # The event rates in a second, shorter run: perf stat's own counting slows the load a little.
    stat = SwitchCounter(tmp, f"untraced-{mode}", SCHED_EVENTS)
    t0 = time.monotonic()
    counted_speed = run_load(args, mode, seconds=1)
    n = stat.stop()
    dt = time.monotonic() - t0
    return {"speed": speed, "counted_speed": counted_speed, "switches_per_s": stat.counts[SWITCH] / dt,
            "events_per_s": n / dt}


def measure_perf_sched(args, tmp, mode, posts, total):
    """perf sched record -a on the load (perf stat counting SCHED_EVENTS alongside, as for
    perf-prof), then each of `posts` ((row name, perf sched subcommand and options), e.g.
    ("perf sched latency", ["latency"])) on its file, each a process of its own. Returns the rows:
    record, the posts, and their sum named `total` (CPU summed, the largest RSS)."""
    tag = f"perf-sched-{mode}"
    data = os.path.join(tmp, tag + ".data")
    err_path = os.path.join(tmp, tag + ".err")
    stat = SwitchCounter(tmp, tag, SCHED_EVENTS)
    with open(err_path, "wb") as err:
        rec = Proc(["perf", "sched", "record", "-a", "-o", data], subprocess.DEVNULL, err)
        try:
            wait_ready(rec, ncpus(), 0.5, err_path)
            speed = run_load(args, mode)
            time.sleep(0.2)
        finally:
            rec.stop()
    occurred = stat.stop()
    with open(err_path, errors="replace") as f:
        err_text = f.read()
    m = re.search(r"\((\d+) samples\)", err_text)
    written = int(m.group(1)) if m else 0
    record = {
        "tool": "perf sched record",
        "speed": speed,
        "occurred": occurred,
        "events": written,
        "lost": perf_record_lost(data, err_text, SWITCH),
        "cpu_s": rec.cpu_s(),
        "rss_mb": rec.rss_mb(),
        "occ_basis": occurred,
        "data_mb": os.path.getsize(data) / 1e6 if os.path.exists(data) else 0,
        "problems": [] if m else [f"no \"(N samples)\" in perf's stderr: {err_text[-300:].strip()!r}"],
    }
    rows = [record]
    for tool, sub in posts:
        sub_err = os.path.join(tmp, f"{tag}-{sub[0]}.err")
        with open(sub_err, "wb") as err:
            p = Proc(["perf", "sched"] + sub + ["-i", data], subprocess.DEVNULL, err)
            p.wait(timeout=600)
        problems = [] if p.exit_code() == 0 else [f"{describe_exit(p)}: {read_text(sub_err, 300)!r}"]
        rows.append({"tool": tool, "speed": None, "occurred": None, "events": written, "lost": None,
                     "cpu_s": p.cpu_s(), "rss_mb": p.rss_mb(), "occ_basis": occurred, "problems": problems})
    rows.append({"tool": total, "speed": speed, "occurred": occurred, "events": written,
                 "lost": record["lost"], "cpu_s": sum(r["cpu_s"] for r in rows),
                 "rss_mb": max(r["rss_mb"] for r in rows), "occ_basis": occurred, "problems": []})
    os.unlink(data)  # hundreds of MB: keep the disk free between runs
    return rows


def measure_sched_mode(args, tmp, mode, measure_profiler, posts, total):
    """One storm mode of a scheduler bench: the load untraced, `measure_profiler(tag, load,
    count)` with perf stat alongside and alone, perf sched record and its `posts` (unless
    --no-perf), and the load untraced again (the baseline drifts on a shared machine: its speed
    becomes the mean of both). Returns (untraced, rows)."""
    untraced = measure_untraced(args, tmp, mode)
    rows = [measure_profiler(f"perfprof-{mode}", lambda: run_load(args, mode), True),
            measure_profiler(f"perfprof-{mode}-alone", lambda: run_load(args, mode), False)]
    if not args.no_perf:
        rows += measure_perf_sched(args, tmp, mode, posts, total)
    after = run_load(args, mode)
    untraced["before"], untraced["after"] = untraced["speed"], after
    untraced["speed"] = (untraced["speed"] + after) / 2
    return untraced, rows


def measure_perfprof(args, tmp, tag, profiler, pp_args, load, rss_period=None, count=True, rss_hook=None):
    """`args.perf_prof PROFILER PP_ARGS...` on the whole machine while `load()` runs (it returns the
    load's round trips/s), stdout and stderr to TAG.out and TAG.err in `tmp`, with (`count`) perf
    stat counting SCHED_EVENTS alongside and (`rss_period`) its VmRSS sampled, `rss_hook(proc)`
    after each sample. The events handled are those of a SIGUSR2 dump taken just before the SIGINT
    that ends it. Returns a row for print_sched_table and the run's details: out_path, err_path,
    rss_series; problems holds stderr's lines other than loss reports and a non-zero exit."""
    out_path = os.path.join(tmp, tag + ".out")
    err_path = os.path.join(tmp, tag + ".err")
    stat = SwitchCounter(tmp, tag, SCHED_EVENTS) if count else None
    rss = None
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            prof = Proc([args.perf_prof, profiler] + list(pp_args), out, err)
            try:
                wait_ready(prof, ncpus(), 0.3, err_path)
                if rss_period:
                    rss = RssSampler(prof.pid, rss_period, (lambda: rss_hook(prof)) if rss_hook else None)
                speed = load()
                time.sleep(0.2)
                handled, dump_lost = dump_state(prof, out_path, profiler)
            finally:
                if rss:
                    rss.stop()
                prof.stop()
    except BaseException:
        if stat:
            stat.proc.stop()  # perf-prof failed: the caller may try again
        raise
    occurred = stat.stop() if stat else None
    problems = stderr_problems(err_path)
    if prof.exit_code() != 0:
        problems.append(describe_exit(prof))
    return {
        "tool": f"perf-prof {profiler}" if stat else f"{profiler}, no perf stat",
        "speed": speed,
        "occurred": occurred,
        "events": handled,
        "lost": max(perfprof_lost(err_path), dump_lost),
        "cpu_s": prof.cpu_s(),
        "rss_mb": prof.rss_mb(),
        "rss_series": rss.samples if rss else None,
        "out_path": out_path,
        "err_path": err_path,
        "problems": problems,
    }


SCHED_HEADER = (f"{'tool':<27} {'load rt/s':>11} {'load %':>7} {'occurred':>11} {'handled':>11} {'lost':>9} "
                f"{'CPU s':>7} {'CPU/event':>10} {'CPU/occ':>9} {'RSS MB':>7}")


def per_us(cpu_s, basis):
    """CPU microseconds per event, for the tables: "0.321us", or "-" without a basis."""
    return "-" if not basis else f"{1e6 * cpu_s / basis:.3f}us"


def print_problems(r):
    for p in r["problems"][:3]:
        print(f"    problem: {p}")


def print_sched_table(args, mode, untraced, rows, profiler):
    """One mode's table: the title line (the untraced rates), then a row per measurement; under
    it perf sched record's file size and, for the row "perf-prof PROFILER", the events perf stat
    counted that the profiler neither handled nor lost."""
    print(f"\n== mode {mode}: pingpong ({args.via}) {'both threads on CPU 0' if mode == 'same' else 'threads on CPU 0 and 1'}"
          f", untraced {untraced['before']:,.0f} (before) / {untraced['after']:,.0f} (after) round trips/s,"
          f" {untraced['switches_per_s']:,.0f} switches/s, {untraced['events_per_s']:,.0f} sched events/s;"
          f" {untraced['counted_speed']:,.0f} round trips/s with perf stat alone counting them")
    print(SCHED_HEADER)
    print("-" * len(SCHED_HEADER))
    for r in rows:
        speed = f"{r['speed']:,.0f}" if r.get("speed") else "-"
        pct = f"{100.0 * r['speed'] / untraced['speed']:.1f}%" if r.get("speed") else "-"
        print(f"{r['tool']:<27} {speed:>11} {pct:>7} {fmt_int(r['occurred']):>11} {fmt_int(r['events']):>11} "
              f"{fmt_int(r['lost']):>9} {r['cpu_s']:>7.2f} {per_us(r['cpu_s'], r['events']):>10} "
              f"{per_us(r['cpu_s'], r.get('occ_basis', r['occurred'])):>9} {r['rss_mb']:>7.1f}")
        print_problems(r)
    for r in rows:
        if "data_mb" in r:
            print(f"  perf sched record wrote {r['data_mb']:,.0f} MB")
        elif r["tool"] == f"perf-prof {profiler}":
            gap = r["occurred"] - r["events"] - r["lost"]
            print(f"  {profiler}: occurred - handled - lost = {gap:,} ({100.0 * gap / max(r['occurred'], 1):.1f}% of occurred)")


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
    """Copies `perf_prof` (and the heap agent beside it) into `tmp` and returns the copy's path:
    others may relink ./perf-prof while the bench runs."""
    copy = os.path.join(tmp, "perf-prof")
    shutil.copy2(perf_prof, copy)
    # The heap agent, which perf-prof finds beside itself.
    agent = os.path.join(os.path.dirname(os.path.abspath(perf_prof)), "perf-prof-heap.so")
    if os.path.exists(agent):
        shutil.copy2(agent, os.path.join(tmp, "perf-prof-heap.so"))
    return copy


def profiling_bench_args(doc, load, seconds, freq):
    """The options the benches that sample the whole machine beside perf share (profile_bench,
    unwind_bench); the bench adds its own to the parser returned."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default=load)
    ap.add_argument("--seconds", type=float, default=seconds, help="load duration of each run")
    ap.add_argument("--freq", type=int, default=freq, help="samples per second per CPU (-F)")
    ap.add_argument("--threads", type=int, default=ncpus(), help="load threads (default: CPUs)")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds between the profiler opening its events and the load starting")
    ap.add_argument("--no-perf", action="store_true", help="skip perf record / perf script")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return ap


def profiling_bench_start(args, name):
    """The checks of a bench that samples the whole machine beside perf (profile_bench, unwind_bench):
    returns (its temporary directory, with args.perf_prof pointing at a private copy there, the
    perf-prof it was, whether perf's rows run: not --no-perf and perf installed), or an exit
    status when it cannot run."""
    if not may_profile_system():
        print("bench: skipped: system-wide profiling needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    use_perf = not args.no_perf
    if use_perf and not shutil.which("perf"):
        print("bench: perf not found: the perf record / perf script rows are skipped")
        use_perf = False
    tmp = tempfile.mkdtemp(prefix=f"perfprof-{name}-bench-")
    shown = args.perf_prof
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    print(f"bench: the machine is profiled as a whole: other activity adds samples and noise; "
          f"load average {os.getloadavg()[0]:.2f}")
    return tmp, shown, use_perf


def sched_bench_args(doc, rate_help, long_help, perf_help):
    """The command line the scheduler benches share (task_state_bench, multi_trace_bench)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/bench/pingpong")
    ap.add_argument("--seconds", type=float, default=2.0, help="load duration of each run")
    ap.add_argument("--rate", type=int, default=300000, help=rate_help)
    ap.add_argument("--modes", default="same,diff")
    ap.add_argument("--via", default="futex", choices=["futex", "pipe"], help="the load's hand-off")
    ap.add_argument("--long", type=float, default=0, metavar="SECONDS", help=long_help)
    ap.add_argument("--no-perf", action="store_true", help=perf_help)
    ap.add_argument("--no-rate", action="store_true", help="skip the rate test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.seconds <= 0 or args.rate <= 0 or args.long < 0:
        ap.error("--seconds and --rate must be positive, --long >= 0")
    return args


def sched_bench_start(args, name, what, perf_what):
    """The checks and the heading of a scheduler bench: returns its temporary directory (with
    args.perf_prof pointing at a private copy there), or an exit status when it cannot run."""
    if not may_profile_system():
        print("bench: skipped: system-wide tracing needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    if not shutil.which("perf"):
        print("bench: perf not found (it counts the events with perf stat and runs perf sched)", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix=f"perfprof-{name}-bench-")
    shown_perf_prof = args.perf_prof
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    print(f"bench: {ncpus()} CPUs, {args.seconds:g} s per load run, perf-prof {shown_perf_prof} (a private copy) "
          f"{what} on the whole machine, default options{'' if args.no_perf else '; ' + perf_what}")
    print(f"bench: the machine is profiled as a whole: other activity adds events and noise; "
          f"load average {os.getloadavg()[0]:.2f}")
    return tmp


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
