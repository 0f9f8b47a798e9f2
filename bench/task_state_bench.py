#!/usr/bin/python3
"""Overhead of `perf-prof task-state` on the whole machine under a context-switch storm, side by
side with `perf sched record -a` + `perf sched latency` and `perf sched timehist -s` on the same
load, in one run.

Loads (bench/pingpong.c): two threads hand the turn back and forth (futex by default), both on
one CPU ("same") or one on each of two CPUs ("diff"). A round trip is two sched_switch events
(more in diff mode, through idle) and one or two sched_wakeup (none when the waker is preempted
before the other thread sleeps), all of which task-state handles. For each mode:

  untraced     the load alone, before and after the traced runs (the mean is the baseline): round
               trips per second; then, in a 1 s run with perf stat -a counting alongside, the
               switches and sched events per second and the load's speed under perf stat alone
  perf-prof    perf-prof task-state (no -p: every CPU, default options), stdout and stderr to
   task-state  files; handled = the events its SIGUSR2 state dump (sent just before the SIGINT
               that ends it) says were delivered ("order: N delivered": task-state reads in time
               order; the device's "N samples" counts only for -N); lost = its "lost N events
               (total)" (stderr) or the dump's count
  task-state,  the same without the perf stat alongside: the load's speed under task-state alone
   no perf stat
  perf sched   perf sched record -a -o FILE (perf's own choice of tracepoints: sched_switch,
   record      sched_waking, sched_stat_runtime, sched_migrate_task, ... with perf 6.1):
               written = perf's "(N samples)", lost from PERF_RECORD_LOST (perf report --stats,
               sched:sched_switch) or perf's own warning
  perf sched   perf sched latency -i FILE >/dev/null, run after the recording as its own process
   latency     (handled = the samples written)
  perf sched   perf sched timehist -s -i FILE >/dev/null, likewise
   timehist -s
  perf sched   the three perf processes together: CPU summed, RSS the largest; what perf spends to
   rec+lat+th  get task-state's answer (latency per task, time per state) from the same load

The perf-prof task-state and the perf sched record runs have a `perf stat -a` counting
sched_switch, sched_wakeup and sched_wakeup_new alongside (occurred; it costs the load some speed,
alike in both: compare the untraced speed under perf stat alone in the mode's title line).
Every row reports: the load's speed relative to untraced, occurred, handled (or written), lost,
CPU time (utime+stime from wait4: start-up, the whole run and the exit-time work, here task-state's
table) and CPU per handled event, CPU per occurred event (the same basis for every row: perf sched
record writes more event types than the three), peak RSS (ru_maxrss). occurred - handled - lost
for task-state: the events perf stat counts outside task-state's window, and on a VM whose idle
vCPUs count scheduler events but sample none (perf record loses them alike, unreported: about
half the wake-ups in diff mode, those done on the idle CPU the woken thread runs on). Then:

  rate         a paced same-CPU load on each of (up to) two CPUs, about --rate switches/s in all
               (default 300k): task-state's losses with default options, and its CPU per event
  long         with --long SECONDS (e.g. 600): task-state -i 10000 under a paced load of --rate/2
               switches/s, its VmRSS sampled every 10 s (first, max, last), CPU per event, and
               the tables it printed every 10 s counted

Targets (reported, not asserted): no loss at 300k switches/s with default options, <= 0.4 us of
CPU per event all included (nothing is printed per event; perf record alone spends about 0.35 us
per event here just copying), the load keeps >= 90% of its untraced speed, RSS flat over a
10-minute run (--long 600).

The whole machine is profiled: keep runs short (--seconds). Needs root (or perf_event_paranoid
-1) and perf. Run with: make bench, or
  /usr/bin/python3 bench/task_state_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
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

from benchproc import (Proc, SwitchCounter, describe_exit, fmt_int, may_profile_system, ncpus,
                       perf_record_lost, perfprof_lost, private_perf_prof, read_text, run_bench, run_load,
                       stderr_problems, tools_missing, wait_ready)

SWITCH = "sched:sched_switch"
SCHED_EVENTS = [SWITCH, "sched:sched_wakeup", "sched:sched_wakeup_new"]  # what task-state opens
# The SIGUSR2 state dump: "device task-state: 2 ring(s), ..., 123456 samples, 0 lost": the events
# handed to the profiler and those the kernel dropped.
DUMP_RE = re.compile(r"^device task-state\b[^:\n]*:.*?(\d+) samples, (\d+) lost", re.M)
TABLE_RE = re.compile(rb"^St +calls ", re.M)  # the header of each table task-state prints
RSS_PERIOD = 10.0  # seconds between VmRSS samples in the long run (and -i of task-state there)


# ---------------------------------------------------------------- perf-prof task-state


def dump_samples(prof, out_path, timeout=10.0):
    """Sends SIGUSR2 and returns (events handled, lost) from the state dump perf-prof prints on
    stdout."""
    start = os.path.getsize(out_path)
    prof.p.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + timeout
    while True:
        with open(out_path, "rb") as f:
            f.seek(start)
            m = DUMP_RE.search(f.read().decode(errors="replace"))
        if m:
            return int(m.group(1)), int(m.group(2))
        if prof.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(prof.cmd)}: no state dump on SIGUSR2 in {out_path}")
        time.sleep(0.02)


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
    """VmRSS of a process now and every `period` seconds until stopped (and once more then)."""

    def __init__(self, pid, period):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples = []  # (seconds since start, MB)
        self.done = threading.Event()
        self.t0 = time.monotonic()
        self.start()

    def sample(self):
        mb = vm_rss_mb(self.pid)
        if mb is not None:
            self.samples.append((time.monotonic() - self.t0, mb))

    def run(self):
        self.sample()
        while not self.done.wait(self.period):
            self.sample()

    def stop(self):
        self.done.set()
        self.join()
        self.sample()
        return self.samples


def measure_task_state(args, tmp, tag, load, pp_args=(), rss_period=None, count=True):
    """perf-prof task-state on the whole machine while `load()` runs (it returns the load's round
    trips/s), with (`count`) perf stat counting the three sched events alongside. The events
    handled are those of a SIGUSR2 dump taken just before SIGINT."""
    out_path = os.path.join(tmp, tag + ".out")
    err_path = os.path.join(tmp, tag + ".err")
    stat = SwitchCounter(tmp, tag, SCHED_EVENTS) if count else None
    rss = None
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        prof = Proc([args.perf_prof, "task-state"] + list(pp_args), out, err)
        try:
            wait_ready(prof, ncpus(), 0.3, err_path)
            rss = RssSampler(prof.pid, rss_period) if rss_period else None
            speed = load()
            time.sleep(0.2)
            handled, dump_lost = dump_samples(prof, out_path)
        finally:
            if rss:
                rss.stop()
            prof.stop()
    occurred = stat.stop() if stat else None
    with open(out_path, "rb") as f:
        tables = len(TABLE_RE.findall(f.read()))
    problems = stderr_problems(err_path)
    if prof.exit_code() != 0:
        problems.append(f"exit status {prof.exit_code()}")
    if not tables:
        problems.append(f"no table on stdout ({out_path})")
    return {
        "tool": "perf-prof task-state" if stat else "task-state, no perf stat",
        "speed": speed,
        "occurred": occurred,
        "events": handled,
        "lost": max(perfprof_lost(err_path), dump_lost),
        "cpu_s": prof.cpu_s(),
        "rss_mb": prof.rss_mb(),
        "tables": tables,
        "rss_series": rss.samples if rss else None,
        "problems": problems,
    }


# ---------------------------------------------------------------- perf sched


def measure_perf_sched(args, tmp, mode):
    """perf sched record -a on the load (perf stat alongside, as for perf-prof), then perf sched
    latency and perf sched timehist -s on its file, each a process of its own. Returns the rows:
    record, latency, timehist, and their sum."""
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
    for tool, sub in (("perf sched latency", ["latency"]), ("perf sched timehist -s", ["timehist", "-s"])):
        sub_err = os.path.join(tmp, f"{tag}-{sub[0]}.err")
        with open(sub_err, "wb") as err:
            p = Proc(["perf", "sched"] + sub + ["-i", data], subprocess.DEVNULL, err)
            p.wait(timeout=600)
        problems = [] if p.exit_code() == 0 else [f"{describe_exit(p)}: {read_text(sub_err, 300)!r}"]
        rows.append({"tool": tool, "speed": None, "occurred": None, "events": written, "lost": None,
                     "cpu_s": p.cpu_s(), "rss_mb": p.rss_mb(), "occ_basis": occurred, "problems": problems})
    rows.append({"tool": "perf sched rec+lat+timehist", "speed": speed, "occurred": occurred, "events": written,
                 "lost": record["lost"], "cpu_s": sum(r["cpu_s"] for r in rows),
                 "rss_mb": max(r["rss_mb"] for r in rows), "occ_basis": occurred, "problems": []})
    os.unlink(data)  # hundreds of MB: keep the disk free between runs
    return rows


# ---------------------------------------------------------------- measurements


def measure_untraced(args, tmp, mode):
    speed = run_load(args, mode)
    # The event rates in a second, shorter run: perf stat's own counting slows the load a little.
    stat = SwitchCounter(tmp, f"untraced-{mode}", SCHED_EVENTS)
    t0 = time.monotonic()
    counted_speed = run_load(args, mode, seconds=1)
    n = stat.stop()
    dt = time.monotonic() - t0
    return {"speed": speed, "counted_speed": counted_speed, "switches_per_s": stat.counts[SWITCH] / dt,
            "events_per_s": n / dt}


def paced_load(args, rate, seconds=None):
    """A same-CPU copy of the load on each of (up to) two CPUs, paced so that together they make
    `rate` switches/s (two per round trip) while leaving each CPU partly idle for the profiler.
    Returns the round trips/s per copy and the CPUs."""
    cpus = list(range(min(2, ncpus())))
    trips = int(rate / 2 / len(cpus))
    return trips, cpus, lambda: run_load(args, "same", rate=trips, cpus=cpus, seconds=seconds)


def measure_rate(args, tmp, untraced_same):
    trips, cpus, run = paced_load(args, args.rate)
    note = ""
    if untraced_same and untraced_same < trips * 1.05:
        note = f"(one copy tops out at {2 * untraced_same / 1000:.0f}k switches/s untraced)"
    window = {}

    def load():
        # sched_switch/s while the load runs (the perf stat of the whole run also covers start-up).
        stat = SwitchCounter(tmp, "rate-load")
        t0 = time.monotonic()
        speed = run()
        window["per_s"] = stat.stop() / (time.monotonic() - t0)
        return speed

    r = measure_task_state(args, tmp, "rate-perfprof", load)
    r.update(cpus=cpus, note=note, rate_per_s=window["per_s"], load_rate_per_s=2 * r["speed"])
    return r


def measure_long(args, tmp):
    trips, cpus, run = paced_load(args, args.rate / 2, seconds=args.long)
    r = measure_task_state(args, tmp, "long-perfprof", run, ["-i", str(int(RSS_PERIOD * 1000))], RSS_PERIOD)
    r.update(cpus=cpus, target=args.rate / 2)
    return r


# ---------------------------------------------------------------- report


HEADER = (f"{'tool':<27} {'load rt/s':>11} {'load %':>7} {'occurred':>11} {'handled':>11} {'lost':>9} "
          f"{'CPU s':>7} {'CPU/event':>10} {'CPU/occ':>9} {'RSS MB':>7}")


def per_us(cpu_s, basis):
    return "-" if not basis else f"{1e6 * cpu_s / basis:.3f}us"


def print_mode_table(args, mode, untraced, rows):
    print(f"\n== mode {mode}: pingpong ({args.via}) {'both threads on CPU 0' if mode == 'same' else 'threads on CPU 0 and 1'}"
          f", untraced {untraced['before']:,.0f} (before) / {untraced['after']:,.0f} (after) round trips/s,"
          f" {untraced['switches_per_s']:,.0f} switches/s, {untraced['events_per_s']:,.0f} sched events/s;"
          f" {untraced['counted_speed']:,.0f} round trips/s with perf stat alone counting them")
    print(HEADER)
    print("-" * len(HEADER))
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
        elif r["tool"] == "perf-prof task-state":
            gap = r["occurred"] - r["events"] - r["lost"]
            print(f"  task-state: occurred - handled - lost = {gap:,} ({100.0 * gap / max(r['occurred'], 1):.1f}% of occurred)")


def print_columns():
    print("\ncolumns: load % = load speed / mean untraced speed; occurred = sched_switch + sched_wakeup +")
    print("  sched_wakeup_new counted by a perf stat -a over the profiler's lifetime (alongside both")
    print("  recorders alike); handled = events delivered to task-state (its SIGUSR2 dump before SIGINT)")
    print("  or perf's samples written (sched_stat_runtime, sched_waking, ... included); CPU s = utime +")
    print("  stime from wait4, everything included; CPU/event = CPU s / handled; CPU/occ = CPU s /")
    print("  occurred (one basis for every row); RSS = ru_maxrss; no perf stat = task-state again without")
    print("  perf stat alongside (the load's speed under task-state alone); rec+lat+timehist = the three perf")
    print("  processes: CPU summed, largest RSS. occurred - handled - lost: events perf stat counted outside")
    print("  task-state's window (start-up, exit) and, on a VM whose idle vCPUs count scheduler events but")
    print("  write none to a ring (perf record misses them alike), the wake-ups sent to an idle CPU")


def print_problems(r):
    for p in r["problems"][:3]:
        print(f"    problem: {p}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/bench/pingpong")
    ap.add_argument("--seconds", type=float, default=2.0, help="load duration of each run")
    ap.add_argument("--rate", type=int, default=300000, help="switches/s of the rate test (the long run: half)")
    ap.add_argument("--modes", default="same,diff")
    ap.add_argument("--via", default="futex", choices=["futex", "pipe"], help="the load's hand-off")
    ap.add_argument("--long", type=float, default=0, metavar="SECONDS",
                    help="also a long run of task-state -i 10000 for RSS (e.g. 600; default 0: skipped)")
    ap.add_argument("--no-perf", action="store_true", help="skip perf sched record / latency / timehist")
    ap.add_argument("--no-rate", action="store_true", help="skip the rate test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.seconds <= 0 or args.rate <= 0 or args.long < 0:
        ap.error("--seconds and --rate must be positive, --long >= 0")

    if not may_profile_system():
        print("bench: skipped: system-wide tracing needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    if not shutil.which("perf"):
        print("bench: perf not found (it counts the events with perf stat and runs perf sched)", file=sys.stderr)
        return 1

    tmp = tempfile.mkdtemp(prefix="perfprof-task-state-bench-")
    shown_perf_prof = args.perf_prof
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    t_start = time.monotonic()
    print(f"bench: {ncpus()} CPUs, {args.seconds:g} s per load run, perf-prof {shown_perf_prof} (a private copy) "
          f"task-state on the whole machine, default options"
          f"{'' if args.no_perf else '; perf sched record -a + perf sched latency / timehist -s'}")
    print(f"bench: the machine is profiled as a whole: other activity adds events and noise; "
          f"load average {os.getloadavg()[0]:.2f}")

    def measure():
        untraced_same = None
        modes = [m for m in args.modes.split(",") if m]
        for mode in modes:
            untraced = measure_untraced(args, tmp, mode)
            if mode == "same":
                untraced_same = untraced["speed"]
            rows = [measure_task_state(args, tmp, f"perfprof-{mode}", lambda: run_load(args, mode)),
                    measure_task_state(args, tmp, f"perfprof-{mode}-alone", lambda: run_load(args, mode), count=False)]
            if not args.no_perf:
                rows += measure_perf_sched(args, tmp, mode)
            # Untraced again: on a shared machine the baseline drifts; compare with the mean.
            after = run_load(args, mode)
            untraced["before"], untraced["after"] = untraced["speed"], after
            untraced["speed"] = (untraced["speed"] + after) / 2
            print_mode_table(args, mode, untraced, rows)
            sys.stdout.flush()

        if modes:
            print_columns()

        if not args.no_rate:
            r = measure_rate(args, tmp, untraced_same)
            print(f"\n== rate: paced same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target "
                  f"{args.rate:,} switches/s, measured {r['rate_per_s']:,.0f}/s system-wide while the load ran "
                  f"({r['load_rate_per_s']:,.0f}/s by the load) {r['note']}".rstrip())
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"   perf-prof task-state (default options): lost {r['lost']:,} of {r['occurred']:,} events "
                  f"({pct:.3f}%), handled {r['events']:,}, CPU {r['cpu_s']:.2f} s = "
                  f"{per_us(r['cpu_s'], r['events'])}/event, RSS {r['rss_mb']:.1f} MB")
            print_problems(r)

        if args.long:
            r = measure_long(args, tmp)
            series = r["rss_series"]
            mbs = [mb for _, mb in series]
            pct = 100.0 * r["lost"] / max(r["occurred"], 1)
            print(f"\n== long: {args.long:g} s of perf-prof task-state -i {int(RSS_PERIOD * 1000)} under a paced "
                  f"same-CPU load on CPU {' and CPU '.join(map(str, r['cpus']))}, target {r['target']:,.0f} switches/s "
                  f"({2 * r['speed']:,.0f}/s by the load)")
            print(f"   VmRSS every {RSS_PERIOD:g} s: first {mbs[0]:.1f} MB, max {max(mbs):.1f} MB, last {mbs[-1]:.1f} MB "
                  f"({len(mbs)} samples); peak RSS {r['rss_mb']:.1f} MB")
            print(f"   handled {r['events']:,}, lost {r['lost']:,} of {r['occurred']:,} ({pct:.3f}%), "
                  f"CPU {r['cpu_s']:.2f} s = {per_us(r['cpu_s'], r['events'])}/event; "
                  f"{r['tables']} tables on stdout ({int(args.long / RSS_PERIOD) + 1} expected: every 10 s and at exit)")
            print("   RSS series (s:MB): " + " ".join(f"{t:.0f}:{mb:.1f}" for t, mb in series))
            print_problems(r)

        print(f"\ntargets: 0 lost at 300k switches/s with default options, <=0.4 us CPU per event all included "
              f"(perf record alone ~0.35 us/event copying), load >=90% of untraced, RSS flat over 10 minutes "
              f"(--long 600{'' if args.long else ': not run'})")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
