#!/usr/bin/env python3
"""Flame-graph rendering at scale: `perf-prof flamegraph` on folded files of 10k to 300k
distinct stacks (deterministic, call-tree shaped: 3000 functions, depth 3-24), with the default
minimum width (narrow frames merged) and with merging off. Reports the CPU time and peak RSS of
each render (median of --repeat runs, from wait4), the time per stack, the SVG's size and frame
count, and the growth from one size to the next: a render linear in its input (n log n for the
sort) grows about 3x from 100k to 300k stacks; a quadratic one would grow 9x.

There is no peer in Debian to run beside it (FlameGraph's flamegraph.pl and inferno are not
packaged); the bounds it checks are our own: SVG frames <= levels x width / minwidth, and a peak
RSS at 300k stacks of at most 100 MB at 0.1 px and 200 MB with merging off. --vs OTHER runs a
second build (an older perf-prof) on the same files, prints its CPU and RSS beside ours and
checks that both draw the same bytes."""

import argparse
import hashlib
import os
import random
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


RSS_BOUND_MB = {"0.1px": 100, "off": 200}  # at 300k stacks


def render(perf_prof, path, extra):
    """CPU seconds, peak RSS in KiB, the SVG's size, frames and digest. A child's peak RSS starts
    from its parent's at exec (the kernel keeps the high-water mark of the memory it replaces),
    so the bench stays small: the folded files are written by a child, and the SVG is read in
    pieces, never whole."""
    out = tempfile.TemporaryFile()
    p = subprocess.Popen([perf_prof, "flamegraph"] + extra + [path], stdout=out, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    if p.returncode != 0:
        raise RuntimeError("perf-prof flamegraph failed: %s" % err)
    out.seek(0)
    size, frames, digest, tail = 0, 0, hashlib.sha256(), b""
    while piece := out.read(1 << 20):
        size += len(piece)
        digest.update(piece)
        frames += (tail + piece).count(b"<g data-s=") - tail.count(b"<g data-s=")
        tail = piece[-16:]
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, size, frames, digest.hexdigest()


def median_run(perf_prof, path, extra, repeat):
    runs = [render(perf_prof, path, extra) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs) / 1024) + runs[0][2:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--sizes", default="10000,30000,100000,300000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vs", metavar="OTHER", help="a second perf-prof to run on the same files, side by side")
    ap.add_argument("--write-folded", nargs=2, metavar=("STACKS", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_folded:
        with open(args.write_folded[1], "w") as f:
            f.write(folded(int(args.write_folded[0])))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        head = "%-8s %-10s %10s %10s %9s %10s %9s %8s" % ("stacks", "minwidth", "cpu_ms", "us/stack", "rss_MB",
                                                         "svg_KB", "frames", "growth")
        print(head + (" %10s %9s %5s" % ("vs_cpu_ms", "vs_rss_MB", "same") if args.vs else ""))
        for extra, label in (([], "0.1px"), (["--minwidth", "0"], "off")):
            prev = None
            for n in sizes:
                path = os.path.join(tmp, "%d.folded" % n)
                if not os.path.exists(path):
                    subprocess.run([sys.executable, __file__, "--write-folded", str(n), path], check=True)
                cpu, rss, size, frames, svg = median_run(args.perf_prof, path, extra, args.repeat)
                growth = "%.1fx" % (cpu / prev[1]) if prev and prev[1] > 0 else "-"
                line = "%-8d %-10s %10.1f %10.2f %9.1f %10.0f %9d %8s" % (n, label, cpu * 1e3, cpu * 1e6 / n, rss,
                                                                         size / 1024, frames, growth)
                if args.vs:
                    vs_cpu, vs_rss, _, _, vs_svg = median_run(args.vs, path, extra, args.repeat)
                    line += " %10.1f %9.1f %5s" % (vs_cpu * 1e3, vs_rss, "yes" if vs_svg == svg else "NO")
                print(line, flush=True)
                if args.vs and vs_svg != svg:
                    print("FAIL: %s and %s drew different pictures" % (args.perf_prof, args.vs))
                    failed = True
                prev = (n, cpu)
                if extra == [] and frames > 25 * 1180 / 0.1:
                    print("FAIL: %d frames exceed the bound levels x width / minwidth" % frames)
                    failed = True
                if n == 300000 and rss > RSS_BOUND_MB[label]:
                    print("FAIL: %.0f MB peak RSS for 300k stacks, over the %d MB bound" % (rss, RSS_BOUND_MB[label]))
                    failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
