#!/usr/bin/python3
"""Cost of `perf-prof sql` in memory mode (rows batched into SQLite per interval) under a
context-switch storm, side by side with `perf record` + `perf script` piped into sqlite3 for the
same query, in one run. The query (at every -i 1000 interval, and at exit):

  SELECT prev_comm, COUNT(*) AS n FROM sched_switch GROUP BY prev_comm ORDER BY n DESC LIMIT 5

Load: bench/pingpong.c, a paced same-CPU copy on each of (up to) two CPUs making about --rate
sched_switch/s together (benchproc.paced_load, as the other sched benches).

  perf-prof sql      perf-prof sql -e sched:sched_switch -i 1000 --query Q (stdout to a file);
   memory            handled = the events its SIGUSR2 state dump says were delivered, lost from
                     its "lost N events" line; CPU = utime+stime from wait4, all included
                     (reading, inserting, querying every second, exit)
  perf-prof sql      the same with --output2 FILE (no query): every row written to a database file
   file
  perf record        perf record -e sched:sched_switch -a -o FILE (trace_bench's measurement)
  perf script |      perf script -F trace -i FILE | sed (to CSV) | sqlite3 (.import, then Q): the
   sqlite3           CPU of the three (their rusage), to get the same answer from the recording
  perf total         record + script + sed + sqlite3

Target (reported, not asserted): memory mode <= 2 us CPU per event at 300k events/s with 0 lost.
The whole machine is profiled: keep runs short (--seconds). Needs root and perf. Run with:
  /usr/bin/python3 bench/sql_bench.py --perf-prof ./perf-prof --load build/bench/pingpong
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from benchproc import may_profile_system, measure_perfprof, ncpus, paced_load, private_perf_prof, run_bench, tools_missing
from trace_bench import measure_perf_record

QUERY = "SELECT prev_comm, COUNT(*) AS n FROM sched_switch GROUP BY prev_comm ORDER BY n DESC LIMIT 5"
# perf script's sched_switch text → the CSV of its seven fields.
SED = (r's/^ *prev_comm=(.*) prev_pid=([0-9]+) prev_prio=([0-9]+) prev_state=([^ ]+) ==> '
       r'next_comm=(.*) next_pid=([0-9]+) next_prio=([0-9]+)$/"\1",\2,\3,"\4","\5",\6,\7/')


def perf_pipeline(data, tmp):
    """perf script | sed | sqlite3 over the recording: (CPU s of the three, rows imported, answer)."""
    db = os.path.join(tmp, "perf.db")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["sqlite3", db, "CREATE TABLE sched_switch (prev_comm TEXT, prev_pid INTEGER, prev_prio INTEGER,"
                    " prev_state TEXT, next_comm TEXT, next_pid INTEGER, next_prio INTEGER)"], check=True)
    pipe = (f"perf script -F trace -i {data} 2>/dev/null | sed -E '{SED}' | "
            f"sqlite3 -cmd '.mode csv' -cmd '.import /dev/stdin sched_switch' {db} "
            f"'SELECT COUNT(*) FROM sched_switch; {QUERY}'")
    out = subprocess.run(["bash", "-c", pipe], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = out.splitlines()
    return cpu, int(lines[0]) if lines else 0, lines[1:]


def us(cpu_s, n):
    return f"{1e6 * cpu_s / n:.3f}" if n else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--load", default="build/bench/pingpong")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rate", type=int, default=300000, help="sched_switch/s of the load")
    ap.add_argument("--via", default="futex", choices=["futex", "pipe"])
    ap.add_argument("--sql-args", default="", help="extra perf-prof sql options, e.g. '-m 64'")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not may_profile_system():
        print("bench: skipped: system-wide tracing needs root or kernel.perf_event_paranoid=-1")
        return 0
    if tools_missing(args.perf_prof, args.load):
        return 1
    for tool in ("perf", "sqlite3"):
        if not shutil.which(tool):
            print(f"bench: {tool} not found", file=sys.stderr)
            return 1
    tmp = tempfile.mkdtemp(prefix="perfprof-sqlbench-")
    args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    print(f"bench: {ncpus()} CPUs, {args.seconds:g} s per run, about {args.rate:,} sched_switch/s, "
          f"load average {os.getloadavg()[0]:.2f}")

    def measure():
        trips, cpus, load = paced_load(args, args.rate)
        extra = args.sql_args.split()
        rows = []
        mem = measure_perfprof(args, tmp, "sql-memory", "sql",
                               ["-e", "sched:sched_switch", "-i", "1000", "--query", QUERY] + extra, load)
        mem["tool"] = "perf-prof sql memory"
        rows.append(mem)
        f = measure_perfprof(args, tmp, "sql-file", "sql",
                             ["-e", "sched:sched_switch", "--output2", os.path.join(tmp, "sql.db")] + extra, load)
        f["tool"] = "perf-prof sql file"
        rows.append(f)
        rec = measure_perf_record(args, tmp, "same", tag="sql-perf-record", rate=trips, cpus=cpus)
        data = os.path.join(tmp, "sql-perf-record.data")
        t0 = time.monotonic()
        cpu, imported, answer = perf_pipeline(data, tmp)
        wall = time.monotonic() - t0
        hdr = f"{'tool':<24} {'load rt/s':>11} {'occurred':>11} {'handled':>11} {'lost':>9} {'CPU s':>7} {'us/event':>9} {'RSS MB':>7}"
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            print(f"{r['tool']:<24} {r['speed']:>11,.0f} {r['occurred']:>11,} {r['events']:>11,} {r['lost']:>9,} "
                  f"{r['cpu_s']:>7.2f} {us(r['cpu_s'], r['events']):>9} {r['rss_mb']:>7.1f}")
            for p in r["problems"][:3]:
                print(f"    problem: {p}")
        print(f"{'perf record':<24} {rec['speed']:>11,.0f} {'-':>11} {rec['events']:>11,} {rec['lost']:>9,} "
              f"{rec['cpu_s']:>7.2f} {us(rec['cpu_s'], rec['events']):>9} {rec['rss_mb']:>7.1f}")
        print(f"{'perf script | sqlite3':<24} {'-':>11} {'-':>11} {imported:>11,} {'-':>9} {cpu:>7.2f} "
              f"{us(cpu, imported):>9} {'-':>7}   ({wall:.1f} s wall)")
        total = rec["cpu_s"] + cpu
        print(f"{'perf total':<24} {'-':>11} {'-':>11} {rec['events']:>11,} {'-':>9} {total:>7.2f} "
              f"{us(total, rec['events']):>9}")
        m = mem["cpu_s"] / mem["events"] if mem["events"] else 0
        p = total / rec["events"] if rec["events"] else 0
        print(f"\nCPU per event, sql memory mode / (perf record + script + sqlite3): "
              f"{1e6 * m:.3f} / {1e6 * p:.3f} us" + (f" = {m / p:.2f}" if p else ""))
        print("perf's answer:", "; ".join(answer[:5]))
        with open(mem["out_path"]) as fh:
            last = fh.read().strip().split("\n\n")[-2:]
        print("perf-prof's last interval (partial):", " / ".join(x.replace("\n", " ; ")[:300] for x in last))
        print("\ntarget: sql memory mode <= 2 us CPU per event at 300k events/s with 0 lost")

    return run_bench(measure, tmp, args.keep, (RuntimeError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
