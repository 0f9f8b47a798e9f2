#!/usr/bin/python3
"""`perf-prof profile --call-graph dwarf` against `perf record --call-graph dwarf` + `perf script`,
sampling the whole machine at 997 Hz while a load without frame pointers keeps every CPU busy,
in one run (one after the other, the same load).

Load (bench/nofp.c, built -O2 -fomit-frame-pointer): one thread per online CPU running a call tree
five to a dozen frames deep that only call-frame information unwinds, a third of it inside libc
(qsort calling back into the program, snprintf, strtod, memcpy). It runs already when each
profiler starts, as a service being profiled does; each profiler runs --settle seconds after it
holds its perf event fds (perf record synthesizes the existing tasks meanwhile) and --seconds more,
then gets SIGINT. With --load-after the load starts only then, for --seconds (its exec and mmaps
are seen as they happen: perf's unwinding fails there for most samples, the check below shows it).
The rows:

  perf-prof         perf-prof profile -F 997 --call-graph dwarf --flame-graph OUT -v: the user stack
                    of every sample unwound as it arrives (8 KB copies, perf's default too) and
                    counted into OUT.folded and OUT.svg (its output: the only files it writes).
                    samples = the counts in OUT.folded; lost = its "lost N events" reports on
                    stderr; the unwinding statistics from -v (stdout, read through a pipe with the
                    per-sample lines and dropped)
  perf record       perf record -e cpu-clock:I --call-graph dwarf -F 997 -a -o FILE (:I = exclude
                    idle, as perf-prof samples): every sample's registers and 8 KB of stack written
                    to FILE; samples = its "(N samples)", lost = LOST_SAMPLES of perf report --stats;
                    its CPU includes the build-id pass over FILE at exit
  perf script       perf script -i FILE >/dev/null: where perf unwinds those stacks (libdw or
                    libunwind), resolves symbols and prints every sample
  perf rec+script   the two together: what perf spends to get the unwound stacks

Per row: samples, lost, CPU (utime+stime from wait4: start-up,
exit-time symbolization and flame graph included), CPU microseconds per sample, peak RSS
(ru_maxrss), bytes written to disk. Under the table: how many of the load's samples were unwound
down to its thread function `worker` (perf's counted in a second, untimed perf script over the same
file), perf-prof's unwinding statistics, and bench/cfi_bench's costs of the CFI table itself
(indexing, lookups, compiling everything) on libLLVM-14 (when installed) and libc beside libdw's.

Targets (reported, not asserted): 0 samples lost at 997 Hz on 2 CPUs with default options;
<= 10 us of perf-prof CPU per unwound sample, everything included; >= 5x less CPU per sample than
perf record + perf script; nothing on disk but the output.

The whole machine is profiled: keep it otherwise quiet. Needs root (or perf_event_paranoid -1);
the perf rows are skipped when perf is not installed. Run with: make bench, or
  /usr/bin/python3 bench/unwind_bench.py --perf-prof ./perf-prof --load build/bench/nofp
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

from benchproc import (Proc, describe_exit, ncpus, perf_record_lost, perfprof_lost, profiling_bench_args,
                       profiling_bench_start, read_text, run_bench, stderr_problems, wait_ready)

TARGET_US = 10.0  # perf-prof CPU per unwound sample
TARGET_RATIO = 5.0  # perf record + perf script CPU per sample over perf-prof's
LOAD_ROOT = "worker"  # the load's thread function: a stack unwound this far is complete


def load_result(p, out):
    m = re.search(r"iterations=(\d+) seconds=([\d.]+) rate=([\d.]+)", out)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"load failed ({p.returncode}): {out!r}")
    return float(m.group(3))


def profiled(args, cmd, stdout, err_path):
    """Runs the profiler `cmd` (stdout to `stdout`, stderr to `err_path`) over the load as the module
    doc says; returns its Proc, stopped and reaped, and the load's iterations/s over its whole run."""
    load_cmd = [args.load, "-t", str(args.threads), "-d", str(args.seconds if args.load_after else 3600)]
    load = None
    if not args.load_after:
        load = subprocess.Popen(load_cmd, stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)  # its threads running
    with open(err_path, "wb") as err:
        proc = Proc(cmd, stdout, err)
    try:
        wait_ready(proc, ncpus(), args.settle, err_path)
        if load:
            time.sleep(args.seconds)
        else:
            load = subprocess.Popen(load_cmd, stdout=subprocess.PIPE, text=True)
            load.wait()
            time.sleep(0.1)
    finally:
        proc.stop()
        if load and load.poll() is None:
            load.send_signal(signal.SIGINT)
    return proc, load_result(load, load.communicate()[0])


class LineFilter(threading.Thread):
    """Reads a pipe to its end, keeping the lines that match `pattern` (the rest is dropped)."""

    def __init__(self, pipe, pattern):
        super().__init__(daemon=True)
        self.pipe, self.pattern, self.lines, self.count = pipe, re.compile(pattern), [], 0
        self.start()

    def run(self):
        for line in self.pipe:
            self.count += 1
            if self.pattern.search(line):
                self.lines.append(line.decode(errors="replace").rstrip())


def comm_of_load(args):
    return os.path.basename(args.load)[:15]


def measure_perfprof(args, tmp):
    base = os.path.join(tmp, "pp")
    err_path = os.path.join(tmp, "pp.err")
    call_graph = "dwarf" if not args.stack_size else f"dwarf,{args.stack_size}"
    cmd = [args.perf_prof, "profile", "-F", str(args.freq), "--call-graph", call_graph, "--flame-graph", base, "-v"]
    before = set(os.listdir(tmp))
    r, w = os.pipe()
    out = LineFilter(os.fdopen(r, "rb"), rb"^unwound ")  # -v's statistics; one line per sample besides
    try:
        prof, speed = profiled(args, cmd, w, err_path)
    finally:
        os.close(w)
    out.join(timeout=60)
    if prof.exit_code() != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({describe_exit(prof)}); its stderr: {read_text(err_path)!r}")
    written = sorted(set(os.listdir(tmp)) - before - {"pp.err"})
    folded = base + ".folded"
    if folded[len(tmp) + 1:] not in written:
        raise RuntimeError(f"{' '.join(cmd)} wrote no {folded} (files: {written})")
    samples = complete = load_samples = 0
    with open(folded, "rb") as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(b" ")
            if not count.isdigit():
                continue
            n = int(count)
            samples += n
            frames = stack.split(b";")
            if frames[0] == comm_of_load(args).encode():
                load_samples += n
                complete += n if LOAD_ROOT.encode() in frames else 0
    stats = {}
    if out.lines:
        m = re.search(r"unwound (\d+) user stacks: (\d+) frames, (\d+) steps through CFI, (\d+) through frame "
                      r"pointers, (\d+) truncated, (\d+) broken", out.lines[-1])
        if m:
            stats = dict(zip(("stacks", "frames", "cfi", "fp", "truncated", "broken"), map(int, m.groups())))
    if samples == 0:
        raise RuntimeError(f"{' '.join(cmd)} captured no samples; its stderr: {read_text(err_path)!r}")
    return {
        "tool": "perf-prof",
        "speed": speed,
        "samples": samples,
        "lost": perfprof_lost(err_path),
        "cpu_s": prof.cpu_s(),
        "rss_mb": prof.rss_mb(),
        "disk_mb": sum(os.path.getsize(os.path.join(tmp, f)) for f in written) / 1e6,
        "files": written,
        "load_samples": load_samples,
        "complete": complete,
        "unwind": stats,
        "stdout_lines": out.count,
        "problems": stderr_problems(err_path),
    }


def perf_script_stacks(data, comm):
    """A second perf script over `data` (untimed), read as it streams: the load's samples and those
    whose stack reaches LOAD_ROOT."""
    p = subprocess.Popen(["perf", "script", "-F", "comm,ip,sym", "-i", data], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    samples = complete = 0
    in_load = seen_root = False
    for raw in p.stdout:
        line = raw.decode(errors="replace")
        if not line.strip():
            continue
        if not line[0].isspace():  # a sample's header line: its comm
            if in_load:
                complete += seen_root
            in_load, seen_root = line.split()[0] == comm, False
            samples += in_load
        elif in_load and f" {LOAD_ROOT}" in line:
            seen_root = True
    if in_load:
        complete += seen_root
    p.wait()
    return samples, complete


def measure_perf(args, tmp):
    data = os.path.join(tmp, "perf.data")
    err_path = os.path.join(tmp, "perf-record.err")
    call_graph = "dwarf" if not args.stack_size else f"dwarf,{args.stack_size}"
    cmd = ["perf", "record", "-e", "cpu-clock:I", "--call-graph", call_graph, "-F", str(args.freq), "-a", "-o", data]
    rec, speed = profiled(args, cmd, subprocess.DEVNULL, err_path)
    err_text = read_text(err_path, 1 << 20)
    m = re.search(r"\((\d+) samples\)", err_text)
    # perf record re-raises the SIGINT once it has written its file: that is a clean stop.
    if rec.exit_code() not in (0, -2) or not m:
        raise RuntimeError(f"{' '.join(cmd)} failed ({describe_exit(rec)}): {err_text[-2000:]!r}")
    samples = int(m.group(1))
    lost = perf_record_lost(data, err_text, "cpu-clock:I")
    data_mb = os.path.getsize(data) / 1e6

    script_err = os.path.join(tmp, "perf-script.err")
    with open(script_err, "wb") as err:
        scr = Proc(["perf", "script", "-i", data], subprocess.DEVNULL, err)
        scr.wait(timeout=600)
    if scr.exit_code() != 0:
        raise RuntimeError(f"perf script -i {data} failed ({describe_exit(scr)}): {read_text(script_err)!r}")
    load_samples, complete = perf_script_stacks(data, comm_of_load(args))
    os.unlink(data)

    base = {"samples": samples, "lost": lost, "problems": []}
    return [
        dict(base, tool="perf record", speed=speed, cpu_s=rec.cpu_s(), rss_mb=rec.rss_mb(), disk_mb=data_mb),
        dict(base, tool="perf script", speed=None, cpu_s=scr.cpu_s(), rss_mb=scr.rss_mb(), disk_mb=0.0),
        dict(base, tool="perf rec+script", speed=speed, cpu_s=rec.cpu_s() + scr.cpu_s(),
             rss_mb=max(rec.rss_mb(), scr.rss_mb()), disk_mb=data_mb, load_samples=load_samples, complete=complete),
    ]


def us_per_sample(r):
    return 1e6 * r["cpu_s"] / max(r["samples"], 1)


HEADER = (f"{'tool':<16} {'load it/s':>10} {'samples':>8} {'lost':>6} {'CPU s':>7} {'us/sample':>9} "
          f"{'RSS MB':>7} {'disk MB':>8}")


def print_row(r):
    load = f"{r['speed']:,.0f}" if r.get("speed") else "-"
    print(f"{r['tool']:<16} {load:>10} {r['samples']:>8,} {r['lost']:>6,} {r['cpu_s']:>7.3f} "
          f"{us_per_sample(r):>9.2f} {r['rss_mb']:>7.1f} {r['disk_mb']:>8.2f}")
    for p in r.get("problems", [])[:3]:
        print(f"    stderr: {p}")


def verdict(ok):
    return "met" if ok else "NOT met"


def main():
    ap = profiling_bench_args(__doc__, "build/bench/nofp", 10.0, 997)
    ap.add_argument("--cfi-bench", default="build/bench/cfi_bench",
                    help="bench/cfi_bench.cpp's binary (skipped when missing)")
    ap.add_argument("--stack-size", type=int, default=0, help="bytes of stack per sample (default: 8192, both)")
    ap.add_argument("--load-after", action="store_true",
                    help="start the load once the profiler is ready instead of before it")
    args = ap.parse_args()
    if args.seconds <= 0 or args.freq <= 0 or args.threads < 1 or args.settle < 0 or args.stack_size < 0:
        ap.error("--seconds, --freq and --threads must be positive, --settle and --stack-size >= 0")

    started = profiling_bench_start(args, "unwind")
    if isinstance(started, int):
        return started
    tmp, shown, use_perf = started
    t_start = time.monotonic()
    print(f"bench: {ncpus()} CPUs, load {args.load} ({args.threads} threads, no frame pointers), "
          f"{args.seconds:g} s per run, -F {args.freq} --call-graph dwarf; perf-prof {shown} (a private copy)")

    def measure():
        rows = [measure_perfprof(args, tmp)]
        if use_perf:
            rows += measure_perf(args, tmp)
        when = "started once the profiler was ready" if args.load_after else "running before the profiler started"
        print(f"\n== {args.settle:g} + {args.seconds:g} s profiled, the load {when}")
        print(HEADER)
        print("-" * len(HEADER))
        for r in rows:
            print_row(r)
        pp = rows[0]
        print("\ncolumns: load it/s = the load's iterations/s over its run; samples = folded counts (perf-prof),"
              "\n  perf's \"(N samples)\"; CPU s = utime+stime from wait4, start-up and exit included; us/sample ="
              "\n  CPU s / samples; RSS = ru_maxrss; disk MB = what the tool wrote (perf-prof: its output files;"
              "\n  perf: perf.data)")

        u = pp["unwind"]
        if u:
            print(f"\nperf-prof unwinding (-v): {u['stacks']:,} user stacks, {u['frames'] / max(u['stacks'], 1):.1f} "
                  f"frames each, {u['cfi']:,} CFI steps, {u['fp']:,} frame-pointer steps, {u['truncated']:,} "
                  f"truncated, {u['broken']:,} broken")
        by = {r["tool"]: r for r in rows}
        for tool in ("perf-prof", "perf rec+script"):
            r = by.get(tool)
            if r and r.get("load_samples"):
                print(f"  {tool:<16} {r['complete']:,} of the load's {r['load_samples']:,} samples "
                      f"({100.0 * r['complete'] / r['load_samples']:.1f}%) unwound down to {LOAD_ROOT}()")
        print(f"  perf-prof wrote {', '.join(pp['files'])} ({pp['disk_mb']:.2f} MB) and nothing else; "
              f"its stdout ({pp['stdout_lines']:,} lines, one per sample) went to a pipe")

        pp_us = us_per_sample(pp)
        lines = [f"result: lost {pp['lost']:,} of {pp['samples']:,} samples at {args.freq} Hz on {ncpus()} CPUs: "
                 f"target 0 {verdict(pp['lost'] == 0)}",
                 f"result: perf-prof {pp_us:.2f} us CPU per unwound sample, all included: target <= {TARGET_US:g} us "
                 f"{verdict(pp_us <= TARGET_US)}"]
        if "perf rec+script" in by:
            p = by["perf rec+script"]
            ratio = us_per_sample(p) / pp_us
            lines.append(f"result: perf record + perf script {us_per_sample(p):.2f} us per sample "
                         f"(record {us_per_sample(by['perf record']):.2f}, script "
                         f"{us_per_sample(by['perf script']):.2f}), {ratio:.1f}x perf-prof's: target >= "
                         f"{TARGET_RATIO:g}x {verdict(ratio >= TARGET_RATIO)}; perf lost {p['lost']:,}")
            lines.append(f"result: on disk perf-prof {pp['disk_mb']:.2f} MB (its output), perf {p['disk_mb']:.1f} MB "
                         f"of perf.data ({1e6 * p['disk_mb'] / max(p['samples'], 1) / 1024:.1f} KB per sample)")
        else:
            lines.append("result: perf: not measured")
        print()
        print("\n".join(lines))

        if os.access(args.cfi_bench, os.X_OK):
            print(f"\n== the CFI table alone ({args.cfi_bench}): open + index, 200k random lookups, compile all; "
                  f"libdw's dwarf_cfi_addrframe at the same pcs")
            sys.stdout.flush()
            subprocess.run([args.cfi_bench], check=True, timeout=300)
        else:
            print(f"\n(bench: {args.cfi_bench} not built: make {args.cfi_bench})")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
