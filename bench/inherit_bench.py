#!/usr/bin/env python3
"""What following a whole program costs: `perf-prof profile -F F -g -- family ...` (inherited
events on every CPU for each task the command creates) beside `perf record -F F -g -- family`
plus `perf script`, on tests/workloads/family.c: THREADS threads and FORKS processes created
after exec, each burning MS ms of its own CPU time.

For each tool, medians over --repeat runs: the samples of the created tasks (frames in
family_spin), the tool's CPU seconds beyond the load's own (the load is reaped by the tool, so
its CPU counts in the tool's rusage: the untraced load's CPU, measured alike, is subtracted),
CPU per sample, and the load's wall time against its untraced wall time.

Needs root (or perf_event_paranoid <= -1) and /usr/bin/perf.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, stdout=subprocess.DEVNULL):
    """Runs cmd to its end; (wall s, CPU s of it and its reaped children, stdout text)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE)
    out = b""
    if stdout is None:
        out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("inherit_bench: %s exited %d: %s" % (" ".join(cmd), p.returncode, err.decode()[-500:]))
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, out.decode(errors="replace")


def spin_samples(text):
    """Samples (per-sample blocks of `profile -g` or `perf script`) with family_spin in the stack."""
    n, in_spin = 0, False
    for line in text.splitlines():
        if line and not line[0].isspace():
            n += in_spin
            in_spin = False
        elif "family_spin" in line:
            in_spin = True
    return n + in_spin


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/workloads/family")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--forks", type=int, default=4)
    ap.add_argument("--ms", type=int, default=500)
    ap.add_argument("-F", "--freq", type=int, default=997)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    load = [os.path.abspath(args.load), str(args.threads), str(args.forks), str(args.ms), "0"]
    expected = (args.threads + args.forks) * args.ms * args.freq / 1000
    rows = {"untraced": [], "perf-prof": [], "perf": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        for _ in range(args.repeat):
            wall, cpu, _ = run(load)
            rows["untraced"].append((wall, cpu, 0, 0.0))
            wall, cpu, out = run([args.perf_prof, "profile", "-F", str(args.freq), "-g", "--print-samples", "--", *load],
                                 stdout=None)
            rows["perf-prof"].append((wall, cpu, spin_samples(out), cpu))
            wall, cpu, _ = run(["perf", "record", "-q", "-F", str(args.freq), "-g", "-o", data, "--", *load])
            _, post, out = run(["perf", "script", "-i", data], stdout=None)
            rows["perf"].append((wall, cpu + post, spin_samples(out), cpu + post))
    med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in rows.items()}
    base_wall, base_cpu = med["untraced"][0], med["untraced"][1]
    print("family %d threads + %d processes x %d ms at -F %d: %.0f samples expected; medians of %d runs"
          % (args.threads, args.forks, args.ms, args.freq, expected, args.repeat))
    print("%-10s %9s %8s %12s %14s %12s" % ("tool", "samples", "of exp.", "tool CPU s", "CPU/sample us",
                                             "load wall"))
    for k in ("perf-prof", "perf"):
        wall, _, samples, cpu = med[k]
        extra = max(cpu - base_cpu, 0.0)
        print("%-10s %9d %7.1f%% %12.3f %14.1f %11.2fx" % (k, samples, 100.0 * samples / expected, extra,
                                                           1e6 * extra / max(samples, 1), wall / base_wall))
    print("untraced load: %.2f s wall, %.2f s CPU" % (base_wall, base_cpu))


if __name__ == "__main__":
    main()
