#!/usr/bin/env python3
"""Flame-graph rendering at scale: `perf-prof flamegraph` on folded files of 10k to 300k
distinct stacks (deterministic, call-tree shaped: 3000 functions, depth 3-24), with the default
minimum width (narrow frames merged) and with merging off. Reports the CPU time and peak RSS of
each render (median of --repeat runs, from wait4), the time per stack, the SVG's size and frame
count, and the growth from one size to the next: a render linear in its input (n log n for the
sort) grows about 3x from 100k to 300k stacks; a quadratic one would grow 9x.

There is no peer in Debian to run beside it (FlameGraph's flamegraph.pl and inferno are not
packaged); the bound it checks is our own: SVG frames <= levels x width / minwidth."""

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile


def folded(n, seed=7):
    rnd = random.Random(seed)
    funcs = ["fn_%d" % i for i in range(3000)]
    stacks = set()
    while len(stacks) < n:
        depth = rnd.randint(3, 24)
        stacks.add(";".join(["app"] + [rnd.choice(funcs[:30 * (d + 1)]) for d in range(depth)]))
    return "".join("%s %d\n" % (s, rnd.randint(1, 50)) for s in sorted(stacks))


def render(perf_prof, path, extra):
    out = tempfile.TemporaryFile()
    p = subprocess.Popen([perf_prof, "flamegraph"] + extra + [path], stdout=out, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    if p.returncode != 0:
        raise RuntimeError("perf-prof flamegraph failed: %s" % err)
    out.seek(0)
    svg = out.read().decode()
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, len(svg), len(re.findall(r"<g data-s=", svg))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--sizes", default="10000,30000,100000,300000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        print("%-8s %-10s %10s %10s %9s %10s %9s %8s" % ("stacks", "minwidth", "cpu_ms", "us/stack", "rss_MB",
                                                         "svg_KB", "frames", "growth"))
        for extra, label in (([], "0.1px"), (["--minwidth", "0"], "off")):
            prev = None
            for n in sizes:
                path = os.path.join(tmp, "%d.folded" % n)
                if not os.path.exists(path):
                    with open(path, "w") as f:
                        f.write(folded(n))
                runs = [render(args.perf_prof, path, extra) for _ in range(args.repeat)]
                cpu = statistics.median(r[0] for r in runs)
                rss = statistics.median(r[1] for r in runs) / 1024
                size, frames = runs[0][2], runs[0][3]
                growth = "%.1fx" % (cpu / prev[1]) if prev and prev[1] > 0 else "-"
                print("%-8d %-10s %10.1f %10.2f %9.1f %10.0f %9d %8s" % (n, label, cpu * 1e3, cpu * 1e6 / n, rss,
                                                                          size / 1024, frames, growth))
                prev = (n, cpu)
                if extra == [] and frames > 25 * 1180 / 0.1:
                    print("FAIL: %d frames exceed the bound levels x width / minwidth" % frames)
                    return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
