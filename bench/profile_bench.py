#!/usr/bin/python3
"""CPU overhead of `perf-prof profile -F 1000 -g` sampling every CPU under a CPU-bound load, side by
side with `perf record -e cpu-clock:I -F 1000 -g -a` and its `perf script` post-processing, in one run.

Load (bench/spin.c): one thread per online CPU spinning through a small call tree five to seven
frames deep (frame pointers kept), so every CPU is busy and every sample carries a user stack.
Each row below runs while the load runs for --seconds; the profiler is started first, the load is
started once the profiler holds its perf event fds and --settle seconds more (1 s: perf record
synthesizes the existing tasks after opening them), and the profiler is stopped with SIGINT 0.1 s
after the load exits. The rows, in this order (all of them --repeat times):

  untraced           the load alone, before and after the profiled rows: iterations/s
  pp --flame-graph   perf-prof profile -F 1000 -g --flame-graph OUT (stdout, which still gets one
                     line per sample, to /dev/null): samples = the sum of the counts in OUT.folded
                     (the last field of each line), i.e. the samples that made it into the graph
  pp -g >file        perf-prof profile -F 1000 -g, every sample printed with its symbolized stack
                     to a file: samples = lines containing ": profile: " (one per sample; the
                     stack lines below it are indented). A file rather than /dev/null, because only
                     the output itself counts the samples this way; the page-cache writes are in
                     the row's CPU (a few MB over the run)
  perf record        perf record -e cpu-clock:I -F 1000 -g -a -o FILE (SIGINT; :I = exclude_idle,
                     as perf-prof: otherwise perf also samples the idle task, 1000/s per idle CPU):
                     samples = perf's "(N samples)", lost = LOST_SAMPLES in `perf report --stats`;
                     its CPU includes the build-id pass over FILE at exit
  perf script        perf script -i FILE >/dev/null, run after the record: the post-processing
                     that resolves symbols and prints every stack (same samples as the record)
  perf rec+script    the sum of the two: what perf spends to get the symbolized stacks that
                     perf-prof prints or folds by itself. Folding perf's output into a flame graph
                     (stackcollapse-perf.pl) would cost more again and is not measured.
  fixed cost         pp --flame-graph and perf record+script again with no load (settle, 0.1 s,
                     stop): their start-up and exit cost, which a run's samples amortize (kernel
                     symbols, the tasks' maps, ...). Reported as such and as the CPU per sample
                     beyond it, (CPU - fixed CPU) / (samples - fixed samples): a difference of two
                     noisy numbers (the fixed CPU varies by tens of ms from run to run in a VM),
                     so use --repeat 3 and/or more --seconds for it. --no-fixed skips it.

Per row: load speed relative to the mean untraced speed, samples, samples per second of load,
samples lost, profiler CPU (utime+stime from wait4, so it includes start-up and, for perf-prof,
the stack aggregation and symbolization at exit), profiler CPU seconds per second of load, CPU
microseconds per sample, peak RSS (ru_maxrss). The sampling itself (the timer interrupt and the
in-kernel stack walk) is charged to the interrupted load, not the profiler: it shows in load %.

cpu-clock with exclude_idle is what perf-prof samples on a host without a hardware PMU; perf gets
-e cpu-clock:I explicitly so both sample the same software event the same way (--no-perf or a
missing perf skips its rows).

Target (reported, not asserted): perf-prof --flame-graph <= 2 us of profiler CPU per sample,
aggregation and exit-time symbolization included (upstream perf-prof: about 5 us): the whole CPU
of the run over its samples, so it depends on --seconds (longer runs amortize the fixed cost).
With --repeat > 1 the verdict uses the medians over the repetitions.

The whole machine is profiled: keep it otherwise quiet. Needs root (or perf_event_paranoid -1);
the perf rows are skipped when perf is not installed. Run with: make bench, or
  /usr/bin/python3 bench/profile_bench.py --perf-prof ./perf-prof --load build/bench/spin
"""

import os
import re
import signal
import statistics
import subprocess
import sys
import time

from benchproc import (Proc, describe_exit, ncpus, perf_record_lost, perfprof_lost, profiling_bench_args,
                       profiling_bench_start, read_text, run_bench, stderr_problems, wait_ready)

TARGET_US = 2.0  # perf-prof --flame-graph CPU per sample
UPSTREAM_US = 5.0  # upstream perf-prof, for reference


# ---------------------------------------------------------------- load


def run_load(args):
    """Runs the load for --seconds; returns (iterations per second, its own elapsed seconds)."""
    p = subprocess.run([args.load, "-t", str(args.threads), "-d", str(args.seconds)],
                       stdout=subprocess.PIPE, text=True)
    m = re.search(r"iterations=(\d+) seconds=([\d.]+) rate=([\d.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"load {args.load} failed ({p.returncode}): {p.stdout!r}")
    return float(m.group(3)), float(m.group(2))


# ---------------------------------------------------------------- measurements


def folded_samples(path):
    """Sum of the counts (last field) of a folded flame graph; also the number of stacks."""
    total = stacks = 0
    with open(path, "rb") as f:
        for line in f:
            fields = line.rsplit(None, 1)
            if len(fields) == 2 and fields[1].isdigit():
                total += int(fields[1])
                stacks += 1
    return total, stacks


def count_lines_with(path, needle):
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if needle in line:
                n += 1
    return n


def under_load(args, proc, want_fds, err_path, load):
    """Once `proc` holds its perf event fds and has settled, runs the load (or, without `load`,
    nothing) and stops `proc` with SIGINT. Returns the load's (iterations/s, seconds)."""
    try:
        wait_ready(proc, want_fds, args.settle, err_path)
        result = run_load(args) if load else (None, 0.0)
        time.sleep(0.1)
    finally:
        proc.stop()
    return result


def measure_perfprof(args, tmp, flame, rep, load=True):
    tag = f"perfprof-{'flame' if flame else 'stacks'}-{rep}"
    err_path = os.path.join(tmp, tag + ".err")
    out_path = os.path.join(tmp, tag + ".out")
    flame_base = os.path.join(tmp, tag)
    cmd = [args.perf_prof, "profile", "-F", str(args.freq), "-g"]
    # Without a flame graph: the stack of every sample printed, as perf script prints them.
    cmd += ["--flame-graph", flame_base] if flame else ["--print-samples"]
    cmd += args.profile_args.split()
    with open(os.devnull if flame else out_path, "wb") as out, open(err_path, "wb") as err:
        prof = Proc(cmd, out, err)
        speed, seconds = under_load(args, prof, ncpus(), err_path, load)
    if prof.exit_code() != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({describe_exit(prof)}); its stderr: "
                           f"{read_text(err_path)!r}")
    r = {
        "tool": "pp --flame-graph" if flame else "pp -g >file",
        "speed": speed,
        "seconds": seconds,
        "lost": perfprof_lost(err_path),
        "cpu_s": prof.cpu_s(),
        "rss_mb": prof.rss_mb(),
        "stop_s": prof.stop_s(),
        "problems": stderr_problems(err_path),
    }
    if flame:
        folded = flame_base + ".folded"
        if not os.path.exists(folded):
            written = sorted(f for f in os.listdir(tmp) if f.startswith(tag))
            raise RuntimeError(f"{' '.join(cmd)} wrote no {folded} (files: {written})")
        r["samples"], r["stacks"] = folded_samples(folded)
        os.unlink(folded)
    else:
        r["samples"] = count_lines_with(out_path, b": profile: ")
        r["out_mb"] = os.path.getsize(out_path) / 1e6
        os.unlink(out_path)
    if r["samples"] == 0 and load:
        raise RuntimeError(f"{' '.join(cmd)} captured no samples; its stderr: {read_text(err_path)!r}")
    return r


def measure_perf(args, tmp, rep, load=True):
    """perf record while the load runs, then perf script over its file; returns three rows.
    cpu-clock:I sets exclude_idle, as perf-prof does: without it perf also samples the idle task."""
    data = os.path.join(tmp, f"perf-{rep}.data")
    err_path = os.path.join(tmp, f"perf-record-{rep}.err")
    cmd = ["perf", "record", "-e", "cpu-clock:I", "-F", str(args.freq), "-g", "-a", "-o", data]
    with open(err_path, "wb") as err:
        rec = Proc(cmd, subprocess.DEVNULL, err)
        # cpu-clock on every CPU (perf opens a dummy sideband event per CPU as well; the settle
        # covers it and the synthesis of the existing tasks)
        speed, seconds = under_load(args, rec, ncpus(), err_path, load)
    err_text = read_text(err_path, 1 << 20)
    m = re.search(r"\((\d+) samples\)", err_text)
    # perf record re-raises the SIGINT once it has written its file: that is a clean stop.
    if rec.exit_code() not in (0, -signal.SIGINT) or not m:
        raise RuntimeError(f"{' '.join(cmd)} failed ({describe_exit(rec)}): {err_text[-2000:]!r}")
    samples = int(m.group(1))
    lost = perf_record_lost(data, err_text, "cpu-clock")
    data_mb = os.path.getsize(data) / 1e6

    script_err = os.path.join(tmp, f"perf-script-{rep}.err")
    with open(script_err, "wb") as err:
        scr = Proc(["perf", "script", "-i", data], subprocess.DEVNULL, err)
        scr.wait()
    if scr.exit_code() != 0:
        raise RuntimeError(f"perf script -i {data} failed ({describe_exit(scr)}): {read_text(script_err)!r}")
    os.unlink(data)

    base = {"seconds": seconds, "samples": samples, "lost": lost}
    rec_row = dict(base, tool="perf record", speed=speed, cpu_s=rec.cpu_s(), rss_mb=rec.rss_mb(),
                   stop_s=rec.stop_s(), data_mb=data_mb, problems=[])
    scr_row = dict(base, tool="perf script", speed=None, cpu_s=scr.cpu_s(), rss_mb=scr.rss_mb(),
                   stop_s=None, wall_s=scr.t_exit - scr.t0, problems=[])
    sum_row = dict(base, tool="perf rec+script", speed=speed, cpu_s=rec.cpu_s() + scr.cpu_s(),
                   rss_mb=max(rec.rss_mb(), scr.rss_mb()), stop_s=None, problems=[])
    return [rec_row, scr_row, sum_row]


# ---------------------------------------------------------------- report


def us_per_sample(r):
    return 1e6 * r["cpu_s"] / max(r["samples"], 1)


HEADER = (f"{'tool':<17} {'seconds':>7} {'load %':>7} {'samples':>8} {'samples/s':>9} {'lost':>5} "
          f"{'CPU s':>7} {'CPU s/s':>8} {'us/sample':>9} {'RSS MB':>7}")


def print_row(r, untraced_speed, name=None):
    load = f"{100.0 * r['speed'] / untraced_speed:6.1f}%" if r.get("speed") else "      -"
    print(f"{name or r['tool']:<17} {r['seconds']:>7.2f} {load:>7} {r['samples']:>8,} "
          f"{r['samples'] / r['seconds']:>9,.0f} {r['lost']:>5,} {r['cpu_s']:>7.3f} "
          f"{r['cpu_s'] / r['seconds']:>8.4f} {us_per_sample(r):>9.2f} {r['rss_mb']:>7.1f}")
    for p in r.get("problems", [])[:3]:
        print(f"    stderr: {p}")


def median_row(rows):
    """A row of per-run medians (us/sample from the median CPU and samples)."""
    m = dict(rows[0])
    for k in ("seconds", "cpu_s", "rss_mb"):
        m[k] = statistics.median(r[k] for r in rows)
    for k in ("samples", "lost"):
        m[k] = int(statistics.median(r[k] for r in rows))
    for k in ("speed", "stop_s"):
        m[k] = statistics.median(r[k] for r in rows) if rows[0].get(k) is not None else None
    m["problems"] = []
    return m


def main():
    ap = profiling_bench_args(__doc__, "build/bench/spin", 5.0, 1000)
    ap.add_argument("--repeat", type=int, default=1, help="measure every row this many times")
    ap.add_argument("--profile-args", default="", help="extra perf-prof profile options, e.g. '-m 64'")
    ap.add_argument("--no-fixed", action="store_true", help="skip the runs without load")
    args = ap.parse_args()
    if args.seconds <= 0 or args.freq <= 0 or args.repeat < 1 or args.threads < 1 or args.settle < 0:
        ap.error("--seconds, --freq, --repeat and --threads must be positive, --settle >= 0")

    started = profiling_bench_start(args, "profile")
    if isinstance(started, int):
        return started
    tmp, shown_perf_prof, use_perf = started
    t_start = time.monotonic()
    print(f"bench: {ncpus()} CPUs, load {args.load} with {args.threads} threads, {args.seconds:g} s per run, "
          f"-F {args.freq} -g, {args.repeat} repetition(s); perf-prof {shown_perf_prof} (a private copy)")

    def measure():
        untraced = []
        by_tool = {}  # tool -> rows over the repetitions
        fixed_by_tool = {}  # the same for the runs without load
        for rep in range(args.repeat):
            untraced.append(run_load(args)[0])
            rows = [measure_perfprof(args, tmp, True, rep), measure_perfprof(args, tmp, False, rep)]
            if use_perf:
                rows += measure_perf(args, tmp, rep)
            untraced.append(run_load(args)[0])  # again: on a shared machine the baseline drifts
            for r in rows:
                by_tool.setdefault(r["tool"], []).append(r)
            # The fixed part: the same runs with no load (start-up, settle, exit), to split the CPU
            # per sample into that and the cost that grows with the samples.
            if not args.no_fixed:
                idle = [measure_perfprof(args, tmp, True, f"idle-{rep}", load=False)]
                if use_perf:
                    idle += measure_perf(args, tmp, f"idle-{rep}", load=False)
                for r in idle:
                    fixed_by_tool.setdefault(r["tool"], []).append(r)
            speed = statistics.mean(untraced[-2:])
            title = f" (repetition {rep + 1} of {args.repeat})" if args.repeat > 1 else ""
            print(f"\n== {args.seconds:g} s of load on {args.threads} threads{title}: untraced "
                  f"{untraced[-2]:,.0f} (before) / {untraced[-1]:,.0f} (after) iterations/s")
            print(HEADER)
            print("-" * len(HEADER))
            for r in rows:
                print_row(r, speed)
            sys.stdout.flush()

        speed = statistics.mean(untraced)
        rows = {t: (median_row(rs) if len(rs) > 1 else rs[0]) for t, rs in by_tool.items()}
        if args.repeat > 1:
            print(f"\n== medians over {args.repeat} repetitions (load % against the mean untraced "
                  f"{speed:,.0f} iterations/s)")
            print(HEADER)
            print("-" * len(HEADER))
            for r in rows.values():
                print_row(r, speed)
            for t, rs in by_tool.items():
                us = [us_per_sample(r) for r in rs]
                print(f"  {t:<17} us/sample over the runs: {', '.join(f'{u:.2f}' for u in us)}")

        print("\ncolumns: seconds = the load's own run time (rates are per second of load); load % = load")
        print("  iterations/s / mean untraced; samples = folded counts (--flame-graph), printed samples (-g),")
        print("  perf's \"(N samples)\" (perf rows); CPU s = the profiler's utime+stime from wait4, exit-time")
        print("  work included; us/sample = CPU s / samples; RSS = ru_maxrss; pp = perf-prof profile")

        marginal = {}
        if fixed_by_tool:
            many = " (medians)" if args.repeat > 1 else ""
            print(f"\nfixed cost{many}: the same runs without load ({args.settle:g} s settle + 0.1 s); "
                  f"per sample beyond it = (CPU - fixed CPU) / (samples - fixed samples)")
            for t, fs in fixed_by_tool.items():
                f, r = median_row(fs), rows[t]
                marginal[t] = 1e6 * (r["cpu_s"] - f["cpu_s"]) / max(r["samples"] - f["samples"], 1)
                note = "  (< 0: run-to-run noise exceeds it; use more --seconds)" if marginal[t] < 0 else ""
                print(f"  {t:<17} fixed {f['cpu_s']:.3f} s CPU ({f['samples']:,} samples), "
                      f"per sample beyond it {marginal[t]:.2f} us{note}")

        fg, st = rows["pp --flame-graph"], rows["pp -g >file"]
        rss = max(r["rss_mb"] for r in by_tool["pp --flame-graph"] + by_tool["pp -g >file"])
        print(f"\nperf-prof max RSS {rss:.1f} MB over all runs; median {fg['rss_mb']:.1f} MB with --flame-graph "
              f"({by_tool['pp --flame-graph'][-1]['stacks']:,} distinct stacks in the last run), "
              f"{st['rss_mb']:.1f} MB with -g >file; SIGINT to exit {fg['stop_s']:.3f} s / {st['stop_s']:.3f} s")
        fg_us = us_per_sample(fg)
        verdict = "met" if fg_us <= TARGET_US else "NOT met"
        line = (f"result: perf-prof --flame-graph {fg_us:.2f} us CPU per sample: target <= {TARGET_US:g} us "
                f"{verdict} (upstream perf-prof about {UPSTREAM_US:g} us)")
        if "perf rec+script" in rows:
            p = rows["perf rec+script"]
            p_us, r_us = us_per_sample(p), us_per_sample(rows["perf record"])
            line += (f"; perf record+script {p_us:.2f} us ({p_us / fg_us:.1f}x), "
                     f"perf record alone {r_us:.2f} us ({r_us / fg_us:.1f}x)")
        else:
            line += "; perf: not measured"
        print(line)
        if "pp --flame-graph" in marginal:
            line = f"  beyond the fixed start-up/exit cost: perf-prof --flame-graph {marginal['pp --flame-graph']:.2f} us"
            if "perf rec+script" in marginal:
                line += f", perf record+script {marginal['perf rec+script']:.2f} us"
            print(line + " per sample")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
