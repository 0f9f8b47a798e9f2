#!/usr/bin/python3
"""Sampled heap profiles (kmemleak --user --rate 524288, serve's default): what they cost a
realistic allocation-heavy program, and how close their in-use totals come to the truth.

1. Cost. The program: Debian's perl (built with the system malloc, no frame pointers) building a
   hash of --keys string keys and values of 1..100 bytes, then summing the values' lengths in key
   order: a script interpreter's allocation pattern (many small blocks of many sizes, frees in
   between). Also bench/mallocbench.c's malloc loop (the microbenchmark of heap_bench.py). Rows,
   each --repeat times, alternating, medians reported:
     alone                the program
     perf-prof sampled    perf-prof kmemleak --user --rate 524288 -- PROGRAM (the agent preloaded)
     perf-prof full       perf-prof kmemleak --user -- PROGRAM (every allocation with its stack)
     heaptrack            heaptrack -o FILE PROGRAM (records every call; no sampling mode)
     gperftools heap      LD_PRELOAD=libtcmalloc.so.4 HEAPPROFILE=FILE: gperftools' heap profiler
                          (it records every allocation with its stack; one dump at exit; its
                          allocator replaces glibc's, so its "alone" differs)
   work s = the program's own time for its work (it prints it: start-up, perf-prof's attach and
   report excluded); slowdown = work s / alone's (the targets: sampled <= 1.03 on perl, <= 1.10
   on mallocbench); wall s = the whole command; CPU s counts everything the row ran (the tool,
   the program, their children).

2. Accuracy. A program keeping 64 MiB live through one function (keep_live: blocks of random
   sizes, 256 B..64 KiB, a new seed each run) until exit, profiled --repeat-accuracy times with
   --pprof; `go tool pprof -sample_index=inuse_space -top` gives keep_live's in-use bytes (the
   target: 64 MiB +- 10 % in every run).

Run with: make bench, or /usr/bin/python3 bench/heap_sampled_bench.py --perf-prof ./perf-prof
Needs root (the agent's channel, and perf-prof's eBPF fallback); rows of a missing tool are
skipped with a note.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchproc import Proc, describe_exit, private_perf_prof, read_text, run_bench

RATE = 512 * 1024
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
PERL_SCRIPT = ('use Time::HiRes qw(time); my $t0 = time; '
               'my %h; my $n = shift; for my $i (1 .. $n) { $h{"key$i"} = "v" x ($i % 100 + 1) } '
               'my $s = 0; for my $k (sort keys %h) { $s += length $h{$k} } '
               'for my $i (1 .. $n) { delete $h{"key$i"} if $i % 3 } '
               'printf "sum=%d seconds=%.6f\\n", $s, time - $t0')
WORK_RE = re.compile(r"seconds=([\d.]+)")
LIVE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define TOTAL (64u << 20)
static void* blocks[TOTAL / 256 + 1];
__attribute__((noinline)) static size_t keep_live(unsigned seed) {
    size_t used = 0, n = 0;
    srand(seed);
    while (used < TOTAL) {
        size_t s = 256 + (size_t)rand() % (65536 - 256 + 1);
        if (s > TOTAL - used) s = TOTAL - used;
        blocks[n] = malloc(s);
        memset(blocks[n], 1, s);
        used += s, n++;
    }
    return n;
}
__attribute__((noinline)) static void churn(void) {
    for (int i = 0; i < 200000; i++) {
        void* volatile p = malloc(64 + i % 4000);
        free(p);
    }
}
int main(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    size_t n = keep_live((unsigned)(t.tv_nsec ^ getpid()));
    churn();
    printf("blocks=%zu bytes=%u\n", n, TOTAL);
    return 0;
}
"""


def build(tmp, name, src_text=None, src_path=None):
    exe = os.path.join(tmp, name)
    if src_text is not None:
        src_path = os.path.join(tmp, name + ".c")
        with open(src_path, "w") as f:
            f.write(src_text)
    subprocess.run(["cc", "-O2", "-g", "-Wall", "-o", exe, src_path], check=True)
    return exe


def run(cmd, tmp, tag, env=None, timeout=600):
    """Runs `cmd` to its end; returns (wall s, CPU s, stdout, stderr). Raises on a failure."""
    out_path, err_path = os.path.join(tmp, tag + ".out"), os.path.join(tmp, tag + ".err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = Proc(cmd, out, err, env=env)
    p.wait(timeout)
    out, err = read_text(out_path, 1 << 22), read_text(err_path, 1 << 22)
    if p.exit_code() != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {describe_exit(p)}; stderr: {err[-500:]!r}")
    return p.t_exit - p.t0, p.cpu_s(), out, err


def cost_rows(args, tmp, program, argv):
    """The cost table of one program: [(row name, wall s median, CPU s median, note)]."""
    pp = [args.perf_prof, "kmemleak", "--user"]
    rows = [("alone", argv, None), ("perf-prof sampled", pp + ["--rate", str(RATE), "--"] + argv, None),
            ("perf-prof full", pp + ["--"] + argv, None)]
    if shutil.which("heaptrack"):
        rows.append(("heaptrack", ["heaptrack", "-o", os.path.join(tmp, "ht")] + argv, None))
    if os.path.exists(TCMALLOC):
        # No dump before the one at exit (an interval of 0 would dump on every allocation).
        env = dict(os.environ, LD_PRELOAD=TCMALLOC, HEAPPROFILE=os.path.join(tmp, "tc"),
                   HEAP_PROFILE_ALLOCATION_INTERVAL=str(1 << 50), HEAP_PROFILE_INUSE_INTERVAL=str(1 << 50))
        rows.append(("gperftools heap", argv, env))
    times = {name: [] for name, _, _ in rows}
    works = {name: [] for name, _, _ in rows}
    cpus = {name: [] for name, _, _ in rows}
    for rep in range(args.repeat):
        for name, cmd, env in rows:
            wall, cpu, out, err = run(cmd, tmp, f"{program}-{rep}-{name.replace(' ', '_')}", env)
            if name.startswith("perf-prof") and err.strip():
                raise RuntimeError(f"{name}: stderr not empty: {err[-300:]!r}")
            m = WORK_RE.search(out + err)
            if not m:
                raise RuntimeError(f"{name}: {program} printed no seconds=: {(out + err)[-300:]!r}")
            works[name].append(float(m.group(1)))
            times[name].append(wall)
            cpus[name].append(cpu)
        for f in os.listdir(tmp):
            if f.startswith(("ht.", "tc.")):
                os.unlink(os.path.join(tmp, f))
    alone = statistics.median(works["alone"])
    print(f"\n== {program}: medians over {args.repeat} run(s)")
    print(f"{'row':<19} {'work s':>8} {'slowdown':>9} {'wall s':>8} {'CPU s':>7}")
    for name, _, _ in rows:
        k, w, c = statistics.median(works[name]), statistics.median(times[name]), statistics.median(cpus[name])
        print(f"{name:<19} {k:>8.3f} {k / alone:>8.3f}x {w:>8.3f} {c:>7.2f}")


def accuracy(args, tmp):
    go = shutil.which("go")
    if not go:
        print("\n== accuracy: n/a (go, for go tool pprof, not installed)")
        return
    exe = build(tmp, "live64", LIVE_C)
    got = []
    for rep in range(args.repeat_accuracy):
        prof = os.path.join(tmp, f"live64-{rep}.pb.gz")
        run([args.perf_prof, "kmemleak", "--user", "--rate", str(RATE), "--pprof", prof, "--", exe], tmp,
            f"live64-{rep}")
        top = subprocess.run([go, "tool", "pprof", "-sample_index=inuse_space", "-top", "-unit=MB", prof],
                             capture_output=True, text=True, check=True).stdout
        m = re.search(r"^\s*([\d.]+)MB\s.*\bkeep_live\b", top, re.M)
        if not m:
            raise RuntimeError(f"go tool pprof -top names no keep_live: {top[-600:]!r}")
        got.append(float(m.group(1)) * 1e6 / (1 << 20))
    worst = max(abs(g - 64) / 64 for g in got)
    mean = statistics.mean(got)
    # Sampling alone spreads a run's estimate: a block of s bytes << rate is kept with probability
    # about s/rate and then stands for about rate bytes, so the estimate's variance is about
    # total * rate: sigma = sqrt(64 MiB * 512 KiB) = 5.7 MiB (8.8 %), for any sampler at this rate.
    sigma = (64 * RATE / (1 << 20)) ** 0.5
    print(f"\n== accuracy: keep_live's in-use space (true: 64 MiB) over {len(got)} runs at --rate {RATE}:")
    print("   " + " ".join(f"{g:.1f}" for g in got) + " MiB")
    print(f"   mean {mean:.1f} MiB ({100 * (mean - 64) / 64:+.1f} %; sampling sigma of the mean "
          f"{100 * sigma / 64 / len(got) ** 0.5:.1f} %), worst run {100 * worst:.1f} % off "
          f"(sampling sigma of one run: {100 * sigma / 64:.1f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--keys", type=int, default=400000, help="the perl program's hash keys")
    ap.add_argument("--calls", type=int, default=4000000, help="mallocbench's malloc-family calls")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--repeat-accuracy", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="perfprof-heap-sampled-")
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    here = os.path.dirname(os.path.abspath(__file__))

    def measure():
        t0 = time.monotonic()
        print(f"bench: sampled heap profiles at --rate {RATE}; load average {os.getloadavg()[0]:.2f}")
        cost_rows(args, tmp, "perl", ["/usr/bin/perl", "-e", PERL_SCRIPT, str(args.keys)])
        mb = build(tmp, "mallocbench", src_path=os.path.join(here, "mallocbench.c"))
        cost_rows(args, tmp, "mallocbench", [mb, "-n", str(args.calls)])
        accuracy(args, tmp)
        print(f"bench: done in {time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
