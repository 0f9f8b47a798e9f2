#!/usr/bin/env python3
"""`perf-prof serve`'s /pprof/symbol against google-pprof's own symbolization, same addresses.

The target is a running process (--target, default build/workloads/hotab spinning); 1,000
addresses are drawn at random from its executable file-backed mappings (its binary, libc,
ld.so). In the same run:
  serve      perf-prof serve -p PID; a client POSTs the 1,000 addresses ("0x..+0x..", what
             pprof posts) over one keep-alive connection, again and again for --seconds:
             requests per second as seen by the client, and serve's own CPU time per request
             (utime+stime from /proc/PID/stat), which bounds what more clients could get.
  pprof      google-pprof --symbols /proc/PID/exe with the process's maps and the same
             addresses on stdin (the PPROF_PATH protocol: how pprof names addresses when it
             has the binaries), best of --runs: requests per second = 1 / time per run.
The answers are compared address by address (pprof prints short names: the comparison is on
the name up to its first '(').
"""

import argparse
import http.client
import os
import random
import re
import shutil
import subprocess
import sys
import time


def exec_ranges(pid):
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and "x" in p[1] and p[5].startswith("/"):
                s, e = (int(x, 16) for x in p[0].split("-"))
                out.append((s, e))
    return out


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--target", default="build/workloads/hotab")
    ap.add_argument("--addresses", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    target = subprocess.Popen([args.target, "600000"])
    serve = None
    try:
        time.sleep(0.3)
        rnd = random.Random(1)
        ranges = exec_ranges(target.pid)
        addrs = []
        for _ in range(args.addresses):
            s, e = rnd.choice(ranges)
            addrs.append(rnd.randrange(s, e))
        body = "+".join("0x%x" % a for a in addrs)

        serve = subprocess.Popen([args.perf_prof, "serve", "--listen", "127.0.0.1:0", "-p", str(target.pid)],
                                 stdout=subprocess.PIPE, text=True)
        m = re.match(r"serving http://127\.0\.0\.1:(\d+)/", serve.stdout.readline())
        port = int(m.group(1))
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def post():
            c.request("POST", "/pprof/symbol", body=body)
            r = c.getresponse()
            data = r.read()
            assert r.status == 200, r.status
            return data.decode()

        first = post()  # reads the symbol tables once
        n = 0
        cpu0, t0 = cpu_seconds(serve.pid), time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            post()
            n += 1
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(serve.pid) - cpu0
        ours = {}
        for line in first.splitlines():
            a, name = line.split("\t", 1)
            ours[int(a, 16)] = name

        pprof = shutil.which("google-pprof") or shutil.which("pprof")
        times, theirs = [], {}
        if pprof:
            with open("/proc/%d/maps" % target.pid) as f:
                stdin = f.read() + "".join("0x%x\n" % a for a in addrs)
            for _ in range(args.runs):
                t = time.perf_counter()
                r = subprocess.run([pprof, "--symbols", "/proc/%d/exe" % target.pid], input=stdin,
                                   capture_output=True, text=True, timeout=600)
                times.append(time.perf_counter() - t)
            for a, name in zip(addrs, r.stdout.splitlines()):
                if name != "??" and not name.startswith("0x"):
                    theirs[a] = name

        print()
        print("%d addresses in the executable mappings of %s (pid %d)" % (len(addrs), args.target, target.pid))
        print("%-32s %12s %14s" % ("", "requests/s", "ms/request"))
        print("-" * 60)
        print("%-32s %12.0f %14.2f" % ("serve, one keep-alive client", n / wall, 1000 * wall / n))
        print("%-32s %12.0f %14.2f" % ("serve, its CPU per request", n / cpu if cpu else float("inf"),
                                       1000 * cpu / n))
        if times:
            best = min(times)
            print("%-32s %12.2f %14.1f" % ("google-pprof --symbols", 1 / best, 1000 * best))
            print("serve answers %.0fx as many requests per second as pprof's symbolization (client-side)"
                  % ((n / wall) * best))
            both = [a for a in addrs if a in ours and a in theirs]
            same = sum(1 for a in both if ours[a].split("(")[0] == theirs[a].split("(")[0])
            print("names: serve %d, pprof %d, both %d, same name %d (%.1f%%)" % (
                len(ours), len(theirs), len(both), same, 100.0 * same / max(1, len(both))))
        else:
            print("google-pprof not installed: no comparison")
    finally:
        if serve:
            serve.terminate()
            serve.wait(10)
        target.kill()
        target.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
