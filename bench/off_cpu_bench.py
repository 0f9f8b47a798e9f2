#!/usr/bin/python3
"""Cost of `perf-prof profile --off-cpu` under a context-switch storm: the profiler CPU each switch
of the watched tasks adds beyond plain `perf-prof profile -g`, and the speed the program keeps,
side by side with perf record recording the same data, in one run (issue 28).

What --off-cpu does: with -g, besides the on-CPU cpu-clock samples, one sched:sched_switch
sample (with its call stack) per switch-out of a watched task and PERF_RECORD_SWITCH records
(attr.context_switch) for the switch-ins; each wait becomes its switch-out stack under an
[off-cpu: STATE] frame, weighted in sampling periods (1/F s), in the same flame graph.

The peer: `perf record --off-cpu` needs a perf built with BUILD_BPF_SKEL=1, and Debian's perf 6.1
is not ("option `off-cpu' is being ignored because no BUILD_BPF_SKEL=1"). perf's way to record
the same data is used instead:
  perf record -g -e cpu-clock/freq=F/ -e sched:sched_switch -c 1 --switch-events -o FILE -p PID
(sampled on-CPU stacks, every switch-out with its stack, the switch-in records). -c 1 makes every
sched_switch a sample (-F would apply to the tracepoint too: perf 6.1 accepts no period term on a
tracepoint), cpu-clock/freq=F/ keeps the on-CPU sampling at F. Turning FILE into an off-CPU flame
graph would take a perf script pass and a folding script on top: not measured.

Load (bench/pingpong.c, futex hand-off): two threads pass the turn back and forth, both on CPU 0
("same": two switches per round trip) or one on CPU 0 and one on CPU 1 ("diff": each thread
sleeps at every hand-off, fewer than two switches when a futex wait finds the turn passed).

How the runs are made (the profilers' CPU without the load's): the load is started as
`sh -c 'read _; exec pingpong -m MODE -d SECONDS'`, the shell blocks in read, the profiler attaches
with -p to the shell (its events are inherited by the threads created later, as for a command),
and once it holds its perf event fds (and --settle s more) a line on the shell's stdin lets it
exec pingpong. So pingpong runs under the profiler from its first instruction (its printed
rate is all traced), and it is not the profiler's child: the profiler's rusage from wait4
(utime + stime + ru_maxrss, start-up and exit-time work included) holds none of the load's CPU,
whereas with `profiler -- pingpong` wait4 would add the reaped pingpong's CPU to the profiler's.
Both profilers exit by themselves when the attached process exits (SIGINT after 10 s otherwise).
The shell's own wait in read began before the attachment: no switch-out of it is seen, so it is
not counted off-CPU.

Every traced row is also run as `profiler ... -- pingpong` (the load the profiler's command, as
one profiles a program), for the load's speed only (cmd %): the attachment changes it for perf
(on this VM and kernel, perf record -g -- pingpong keeps about all of pingpong's speed in mode
same, perf record -g -p PID about a fifth), not visibly for perf-prof. The speed target is judged
on the command runs.

Rows, for each mode (every traced row --repeat times, untraced before each repetition and after
the last; the medians are tabled):

  untraced          pingpong alone: round trips/s (the mean of all its runs is the baseline)
  perf stat         pingpong under `perf stat -e sched:sched_switch -e context-switches` (a
                    separate run, counting the two threads' switch-outs): switches per round
                    trip, which turns each row's round trips into its switches
  pp profile        perf-prof profile -F 997 -g --flame-graph FILE -p PID (stdout, which still
                    gets a line per on-CPU sample, to /dev/null): samples = FILE.folded's counts
  pp --off-cpu      the same with --off-cpu: on = the on-CPU counts of FILE.folded, off = the
                    weight of its [off-cpu: ...] stacks (periods of 1/F s, not a count of waits)
  perf rec plain    perf record -F 997 -g -e cpu-clock -o FILE -p PID (perf's plain profile)
  perf rec off-cpu  the peer above; samples from `perf report --stats` (cpu-clock / sched_switch
                    samples, SWITCH records), lost = their LOST_SAMPLES (or perf's "lost N chunks")

Columns: load rt/s and load % (of the untraced baseline) from pingpong's own line in the -p run,
cmd % the same in the command run; switches = the -p run's round trips x the switches per round
trip of the perf stat run; on / off = on-CPU samples and off-CPU weight (pp rows), cpu-clock
samples and sched_switch samples (perf rows); lost; CPU s = the profiler's utime+stime (wait4);
us/switch = CPU s / switches; RSS = ru_maxrss; exit s = from the load's exit to the profiler's
(folding, symbolization, perf's build-id pass).

Derived: CPU us per switch beyond plain = (CPU(--off-cpu) - CPU(plain)) / switches(--off-cpu
run), for perf-prof and, alike, for perf record (perf record's includes writing the data and its
build-id pass at exit, not the post-processing into a flame graph); the load's speed under
--off-cpu (command runs) relative to untraced and to plain profile; the off-CPU flame graph's
sanity: (on + off weight) / (2 threads x seconds x F) should be about 1 (a wall-clock profile of
two threads; the excess, if any, is time counted both on and off the CPU).

Targets (issue 28; reported, not asserted): --off-cpu <= 0.5 us of profiler CPU per switch
beyond plain profile; the program keeps >= 90% of its untraced speed under --off-cpu.

The machine is shared and a VM: expect noise (medians of --repeat runs). Needs root (or
perf_event_paranoid -1: the sched_switch tracepoint) and perf (perf stat counts the switches;
--no-perf skips only the perf record rows). Run with: make bench, or
  /usr/bin/python3 bench/off_cpu_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchproc import (Proc, describe_exit, may_profile_system, ncpus, perfprof_lost, private_perf_prof, read_text,
                       run_bench, stderr_problems, tools_missing, wait_ready)

TARGET_US = 0.5  # --off-cpu profiler CPU per switch beyond plain profile
TARGET_SPEED = 90.0  # % of the untraced speed the load keeps under --off-cpu
THREADS = 2  # pingpong's threads
LINE_RE = re.compile(r"round_trips=(\d+) seconds=([\d.]+) rate=([\d.]+)")
TOOLS = ["pp profile", "pp --off-cpu", "perf rec plain", "perf rec off-cpu"]


# ---------------------------------------------------------------- the load


def load_cmd(args, mode):
    return [args.load, "-m", mode, "-k", "futex", "-d", str(args.seconds)]


def parse_load(out, what):
    m = LINE_RE.search(out or "")
    if not m:
        raise RuntimeError(f"{what}: no pingpong line in {out!r}")
    return {"round_trips": int(m.group(1)), "seconds": float(m.group(2)), "speed": float(m.group(3))}


def run_untraced(args, mode):
    p = subprocess.run(load_cmd(args, mode), stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{args.load} failed ({p.returncode}): {p.stdout!r}")
    return parse_load(p.stdout, args.load)["speed"]


def count_switches(args, tmp, mode):
    """perf stat -e sched:sched_switch -e context-switches -- pingpong: switches per round trip."""
    path = os.path.join(tmp, f"stat-{mode}.csv")
    p = subprocess.run(["perf", "stat", "-x,", "-o", path, "-e", "sched:sched_switch", "-e", "context-switches",
                        "--"] + load_cmd(args, mode), stdout=subprocess.PIPE, text=True)
    load = parse_load(p.stdout, "perf stat -- pingpong")
    counts = {}
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0].isdigit():
                counts[fields[2]] = int(fields[0])
    if p.returncode != 0 or "sched:sched_switch" not in counts:
        raise RuntimeError(f"perf stat failed ({p.returncode}): {read_text(path)!r}")
    return dict(load, counts=counts, per_rt=counts["sched:sched_switch"] / max(load["round_trips"], 1))


class HeldLoad:
    """pingpong behind `sh -c 'read _; exec pingpong ...'`: blocked until release()."""

    def __init__(self, args, mode):
        self.p = subprocess.Popen(["/bin/sh", "-c", 'read _; exec "$0" "$@"'] + load_cmd(args, mode),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.p.pid
        deadline = time.monotonic() + 5
        while self.state() != "S":  # blocked in read before the profiler attaches
            if time.monotonic() > deadline or self.p.poll() is not None:
                raise RuntimeError(f"the load's shell did not block in read (state {self.state()})")
            time.sleep(0.005)

    def state(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return "?"

    def release(self):
        self.p.stdin.write("go\n")
        self.p.stdin.close()

    def finish(self):
        out = self.p.stdout.read()
        self.p.wait()
        self.t_exit = time.monotonic()
        if self.p.returncode != 0:
            raise RuntimeError(f"the load failed ({self.p.returncode}): {out!r}")
        return parse_load(out, "pingpong")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


# ---------------------------------------------------------------- measurements


def folded_weights(path):
    """(on-CPU samples, off-CPU weight, off-CPU weight per state) of a folded flame graph."""
    on = off = 0
    states = {}
    with open(path, "rb") as f:
        for line in f:
            fields = line.rsplit(None, 1)
            if len(fields) != 2 or not fields[1].isdigit():
                continue
            n = int(fields[1])
            m = re.search(rb"\[off-cpu: ([^\]]*)\]", fields[0])
            if m:
                off += n
                st = m.group(1).decode(errors="replace")
                states[st] = states.get(st, 0) + n
            else:
                on += n
    return on, off, states


def perf_stats(data):
    """Per event of perf report --stats: SAMPLE and LOST_SAMPLES; and the SWITCH records."""
    text = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True, text=True).stdout
    r = {"cpu": 0, "switch": 0, "lost": 0, "records": 0}
    m = re.search(r"SWITCH events:\s+(\d+)", text)
    if m:
        r["records"] = int(m.group(1))
    for block in re.split(r"\n(?=\S[^\n]* stats:)", text):
        key = "cpu" if block.startswith("cpu-clock") else "switch" if block.startswith("sched:sched_switch") else None
        if key:
            m = re.search(r"SAMPLE events:\s+(\d+)", block)
            r[key] = int(m.group(1)) if m else 0
            m = re.search(r"LOST_SAMPLES events:\s+(\d+)", block)
            r["lost"] += int(m.group(1)) if m else 0
    return r


def profiler_cmd(args, tool, base, target):
    """The profiler's command line; `target` is ["-p", PID] or ["--", COMMAND...]."""
    if tool.startswith("pp"):
        cmd = [args.perf_prof, "profile", "-F", str(args.freq), "-g", "--flame-graph", base]
        return cmd + (["--off-cpu"] if tool == "pp --off-cpu" else []) + target
    if tool == "perf rec plain":
        return ["perf", "record", "-F", str(args.freq), "-g", "-e", "cpu-clock", "-o", base + ".data"] + target
    return ["perf", "record", "-g", "-e", f"cpu-clock/freq={args.freq}/", "-e", "sched:sched_switch", "-c", "1",
            "--switch-events", "-o", base + ".data"] + target


def measure_command(args, tmp, tool, mode, rep):
    """`profiler ... -- pingpong`: the load's speed when it is the profiler's command (round trips/s).
    The profiler's CPU is not taken from this run: wait4 would include the reaped load's."""
    base = os.path.join(tmp, f"cmd-{tool.replace(' ', '_').replace('-', '')}-{mode}-{rep}")
    cmd = profiler_cmd(args, tool, base, ["--"] + load_cmd(args, mode))
    # stdout: pingpong's line, and perf-prof's line per on-CPU sample (a file, then searched)
    with open(base + ".out", "wb") as out, open(base + ".err", "wb") as err:
        p = subprocess.run(cmd, stdout=out, stderr=err, timeout=60)
    with open(base + ".out", errors="replace") as f:
        text = f.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}); its stderr: {read_text(base + '.err')!r}")
    speed = parse_load(text, " ".join(cmd))["speed"]
    for suffix in (".out", ".err", ".data", ".folded", ".svg"):
        if os.path.exists(base + suffix) and not args.keep:
            os.unlink(base + suffix)
    return speed


def measure(args, tmp, tool, mode, rep, per_rt):
    tag = f"{tool.replace(' ', '_').replace('-', '')}-{mode}-{rep}"
    base = os.path.join(tmp, tag)
    err_path = base + ".err"
    load = HeldLoad(args, mode)
    cmd = profiler_cmd(args, tool, base, ["-p", str(load.pid)])
    try:
        with open(err_path, "wb") as err:
            prof = Proc(cmd, subprocess.DEVNULL, err)
            wait_ready(prof, ncpus(), args.settle, err_path)
            load.release()
            result = load.finish()
            deadline = time.monotonic() + 10
            while prof.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            prof.stop()  # no-op when it exited by itself
    finally:
        load.kill()
    pp = tool.startswith("pp")
    ok = (0,) if pp else (0, -signal.SIGINT)
    if prof.exit_code() not in ok:
        raise RuntimeError(f"{' '.join(cmd)} failed ({describe_exit(prof)}); its stderr: {read_text(err_path)!r}")
    r = dict(result, tool=tool, cpu_s=prof.cpu_s(), rss_mb=prof.rss_mb(), exit_s=prof.t_exit - load.t_exit,
             switches=result["round_trips"] * per_rt)
    if pp:
        folded = base + ".folded"
        if not os.path.exists(folded):
            raise RuntimeError(f"{' '.join(cmd)} wrote no {folded}; its stderr: {read_text(err_path)!r}")
        r["on"], r["off"], r["states"] = folded_weights(folded)
        r["lost"] = perfprof_lost(err_path)
        r["problems"] = stderr_problems(err_path)
        if tool == "pp --off-cpu" and not r["off"]:
            r["problems"].append("no [off-cpu: ...] stack in the flame graph")
    else:
        data = base + ".data"
        s = perf_stats(data)
        err_text = read_text(err_path, 1 << 16)
        m = re.search(r"lost (\d+) chunks", err_text)
        r.update(on=s["cpu"], off=s["switch"] if tool == "perf rec off-cpu" else None, records=s["records"],
                 lost=s["lost"], chunks_lost=int(m.group(1)) if m else 0, data_mb=os.path.getsize(data) / 1e6,
                 problems=[])
        os.unlink(data)
    for suffix in (".folded", ".svg"):
        if os.path.exists(base + suffix) and not args.keep:
            os.unlink(base + suffix)
    return r


# ---------------------------------------------------------------- report


def median_row(rows):
    m = dict(rows[-1])
    for k in ("speed", "round_trips", "seconds", "switches", "cpu_s", "rss_mb", "exit_s", "on", "lost"):
        m[k] = statistics.median(r[k] for r in rows)
    if rows[0].get("off") is not None:
        m["off"] = statistics.median(r["off"] for r in rows)
    for k in ("records", "data_mb", "chunks_lost", "cmd_speed"):
        if k in rows[0]:
            m[k] = statistics.median(r[k] for r in rows)
    m["problems"] = [p for r in rows for p in r["problems"]]
    return m


HEADER = (f"{'tool':<17} {'load rt/s':>10} {'load %':>7} {'cmd %':>7} {'switches':>9} {'on':>6} {'off':>8} {'lost':>6} "
          f"{'CPU s':>7} {'us/switch':>9} {'RSS MB':>7} {'exit s':>6}")


def fmt(v, spec=",.0f"):
    return "-" if v is None else format(v, spec)


def print_row(r, baseline):
    print(f"{r['tool']:<17} {r['speed']:>10,.0f} {100 * r['speed'] / baseline:>6.1f}% "
          f"{100 * r['cmd_speed'] / baseline:>6.1f}% {r['switches']:>9,.0f} "
          f"{fmt(r['on']):>6} {fmt(r.get('off')):>8} {fmt(r['lost']):>6} {r['cpu_s']:>7.3f} "
          f"{1e6 * r['cpu_s'] / max(r['switches'], 1):>9.3f} {r['rss_mb']:>7.1f} {r['exit_s']:>6.2f}")
    for p in r["problems"][:3]:
        print(f"    problem: {p}")


def beyond(off, plain):
    """CPU us per switch that the off-CPU row adds to the plain one."""
    return 1e6 * (off["cpu_s"] - plain["cpu_s"]) / max(off["switches"], 1)


def report_mode(args, mode, untraced, stat, by_tool):
    baseline = statistics.mean(untraced)
    rows = {t: median_row(rs) for t, rs in by_tool.items()}
    many = f"medians of {args.repeat} runs" if args.repeat > 1 else "one run"
    print(f"\n== mode {mode}: pingpong (futex) {'both threads on CPU 0' if mode == 'same' else 'threads on CPU 0 and 1'}, "
          f"{args.seconds:g} s runs, {many}")
    print(f"untraced {', '.join(f'{u:,.0f}' for u in untraced)} round trips/s (baseline: mean {baseline:,.0f}); "
          f"perf stat: {stat['counts'].get('sched:sched_switch', 0):,} sched_switch, "
          f"{stat['counts'].get('context-switches', 0):,} context-switches in {stat['round_trips']:,} round trips "
          f"= {stat['per_rt']:.2f} switches per round trip ({stat['speed']:,.0f} rt/s under perf stat)")
    print(HEADER)
    print("-" * len(HEADER))
    for t in TOOLS:
        if t in rows:
            print_row(rows[t], baseline)
    pp, off = rows["pp profile"], rows["pp --off-cpu"]
    us = beyond(off, pp)
    runs = [beyond(o, p) for o, p in zip(by_tool["pp --off-cpu"], by_tool["pp profile"])]
    expected = THREADS * by_tool["pp --off-cpu"][-1]["seconds"] * args.freq
    print(f"  perf-prof --off-cpu: {us:.3f} us CPU per switch beyond plain profile (runs: "
          f"{', '.join(f'{u:.3f}' for u in runs)}); load {100 * off['cmd_speed'] / baseline:.1f}% of untraced as "
          f"the command ({100 * off['speed'] / baseline:.1f}% attached), {100 * off['cmd_speed'] / pp['cmd_speed']:.1f}% "
          f"of its speed under plain profile ({100 * off['speed'] / pp['speed']:.1f}% attached)")
    runs_off = by_tool["pp --off-cpu"]
    last = runs_off[-1]
    ratios = [(r["on"] + r["off"]) / (THREADS * r["seconds"] * args.freq) for r in runs_off]
    by_state = ", ".join(f"{k} {v:,}" for k, v in sorted(last["states"].items())) or "-"
    print(f"  off-CPU flame graph (last run): on {last['on']:,} + off {last['off']:,} = {last['on'] + last['off']:,} "
          f"periods vs {THREADS} threads x {last['seconds']:g} s x {args.freq} = {expected:,.0f}: ratio "
          f"{ratios[-1]:.3f} (runs: {', '.join(f'{x:.3f}' for x in ratios)}); off-CPU by state: {by_state}")
    result = {"mode": mode, "us": us, "speed_pct": 100 * off["cmd_speed"] / baseline,
              "speed_vs_plain": 100 * off["cmd_speed"] / pp["cmd_speed"]}
    if "perf rec off-cpu" in rows:
        pr, po = rows["perf rec plain"], rows["perf rec off-cpu"]
        result["perf_us"] = beyond(po, pr)
        result["perf_speed_pct"] = 100 * po["cmd_speed"] / baseline
        cover = 100 * po["off"] / max(po["switches"], 1)
        print(f"  perf record off-cpu: {result['perf_us']:.3f} us CPU per switch beyond perf record plain; "
              f"load {result['perf_speed_pct']:.1f}% of untraced as the command ({100 * po['speed'] / baseline:.1f}% "
              f"attached); {po['off']:,.0f} sched_switch samples "
              f"({cover:.0f}% of the switches), {po['records']:,.0f} SWITCH records, "
              f"{po['chunks_lost']:,.0f} chunks lost, {po['data_mb']:.1f} MB written")
    sys.stdout.flush()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/bench/pingpong")
    ap.add_argument("--seconds", type=float, default=2.0, help="load duration of each run")
    ap.add_argument("--freq", type=int, default=997, help="-F of every profiler")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each traced row (medians)")
    ap.add_argument("--modes", default="same,diff")
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds between the profiler opening its events and the load starting")
    ap.add_argument("--no-perf", action="store_true", help="skip the perf record rows")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.seconds <= 0 or args.freq <= 0 or args.repeat < 1 or args.settle < 0:
        ap.error("--seconds, --freq and --repeat must be positive, --settle >= 0")
    if not may_profile_system():
        print("bench: skipped: needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    if not shutil.which("perf"):
        print("bench: perf not found (it counts the switches with perf stat)", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="perfprof-off-cpu-bench-")
    shown = args.perf_prof
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    t_start = time.monotonic()
    tools = TOOLS[:2] if args.no_perf else TOOLS
    print(f"bench: {ncpus()} CPUs, perf-prof {shown} (a private copy), load {args.load} attached with -p "
          f"(behind sh -c 'read; exec'), -F {args.freq} -g, {args.seconds:g} s per run, {args.repeat} repetition(s); "
          f"perf record --off-cpu needs BUILD_BPF_SKEL=1 (not Debian's perf): its peer is perf record "
          f"-e cpu-clock -e sched:sched_switch -c 1 --switch-events; load average {os.getloadavg()[0]:.2f}")

    def run():
        results = []
        for mode in [m for m in args.modes.split(",") if m]:
            stat = count_switches(args, tmp, mode)
            untraced, by_tool = [], {}
            for rep in range(args.repeat):
                untraced.append(run_untraced(args, mode))
                for tool in tools:
                    r = measure(args, tmp, tool, mode, rep, stat["per_rt"])
                    r["cmd_speed"] = measure_command(args, tmp, tool, mode, rep)
                    by_tool.setdefault(tool, []).append(r)
            untraced.append(run_untraced(args, mode))
            results.append(report_mode(args, mode, untraced, stat, by_tool))

        print("\ncolumns: load rt/s = pingpong's round trips/s under the profiler attached with -p, load % = of")
        print("  the untraced mean; cmd % = the same with pingpong as the profiler's command (-- pingpong);")
        print("  switches = the -p run's round trips x switches per round trip (perf stat run); on = on-CPU")
        print("  samples (flame graph counts / perf's cpu-clock samples); off = off-CPU weight in 1/F s periods")
        print("  (pp) / sched_switch samples (perf); lost = perf-prof's \"lost N events\" / perf's LOST_SAMPLES;")
        print("  CPU s = the profiler's utime+stime from wait4 (the load is not its child: not included);")
        print("  us/switch = CPU s / switches; RSS = ru_maxrss; exit s = from the load's exit to the profiler's.")
        print("  Medians over the repetitions.")
        for r in results:
            v = "met" if r["us"] <= TARGET_US else "NOT met"
            s = "met" if r["speed_pct"] >= TARGET_SPEED else "NOT met"
            line = (f"result {r['mode']}: --off-cpu {r['us']:.3f} us CPU per switch beyond plain profile: target "
                    f"<= {TARGET_US:g} us {v}; the command keeps {r['speed_pct']:.1f}% of its untraced speed: target >= "
                    f"{TARGET_SPEED:g}% {s} ({r['speed_vs_plain']:.1f}% of plain profile's)")
            if "perf_us" in r:
                line += (f"; perf record peer {r['perf_us']:.3f} us per switch beyond its plain record, "
                         f"load {r['perf_speed_pct']:.1f}%")
            print(line)
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(run, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
