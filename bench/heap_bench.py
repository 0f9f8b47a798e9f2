#!/usr/bin/python3
"""Heap profiling of one process: `perf-prof kmemleak --user -g` beside heaptrack, valgrind's
memcheck and the gperftools heap checker, on the same malloc-heavy workload, in one run.

Workload (bench/mallocbench.c, built here with `cc -O2 -g -fno-omit-frame-pointer`): --calls
malloc/calloc/realloc/free calls through four call paths, exactly 25 objects (22,000 bytes) leaked
from two more paths with their pointers dropped, and 8 objects (16,384 bytes) still reachable from a
global at exit. It prints the wall time of its work (the leaks and the loop) itself, so start-up
and exit-time reports do not count there. The rows, each --repeat times (medians reported):

  alone              the workload, before and after the profiled rows of each repetition
  perf-prof agent    perf-prof kmemleak --user -g -- WORKLOAD (launch: the agent preloaded, every
                     allocation with its stack, the leak report at the workload's exit), and -p PID
                     (attach: the agent injected; the workload waits on its stdin until the agent
                     is mapped in it, then works)
  perf-prof sampled  the same with --rate 524288: Poisson-sampled by bytes as tcmalloc and Go
                     sample (no leak report: the in-use profile, scaled back)
  perf-prof ebpf     the same as perf-prof agent with --probes=ebpf: uprobes and uretprobes on the
                     allocator (attach: once perf-prof's perf event fds have settled)
  heaptrack launch   heaptrack -o FILE WORKLOAD, then heaptrack_print on FILE for the leaks
  heaptrack attach   heaptrack -o FILE -p PID (injection through gdb; the workload starts once
                     heaptrack says "injection finished"), then heaptrack_print
  valgrind           valgrind --leak-check=full WORKLOAD ("definitely lost: X bytes in Y blocks")
  tcmalloc+pprof     LD_PRELOAD=libtcmalloc.so.4 HEAPCHECK=normal PPROF_PATH=google-pprof WORKLOAD
                     ("detected leaks of X bytes in Y objects"; pprof symbolizes the report)
  tcmalloc+perf-prof the same with PPROF_PATH=perf-prof (perf-prof --symbols symbolizes it)

perf-prof kmemleak --user may not be built yet: when perf-prof answers "not available yet" (or
does not know kmemleak), its rows read "n/a (not built)"; any other failure is shown as such.

Columns: work s = the workload's own wall time of its work; slowdown = work s / alone's; total s =
from the start of the command to the end of its report (heaptrack: + heaptrack_print); CPU s =
utime+stime from wait4 of everything the row ran (tool, workload, their children: pprof,
heaptrack_interpret, gdb, ...); extra CPU = CPU s - alone's CPU s (what profiling cost, wherever it
ran: uprobe handling is charged to the workload, valgrind and heaptrack run inside it); tool CPU =
the profiler process's own CPU where it is a separate process (attach rows); peak RSS = ru_maxrss
of the command's process tree (attach rows: the profiler's, without the workload); leaks = bytes
and objects the tool reports leaked (heaptrack cannot tell reachable from leaked: it counts all
that was not freed, i.e. 22,000 + 16,384 bytes in 33 objects; the gperftools and valgrind
numbers are "definitely lost"); sites = how many of the two leaking functions (leak_a_alloc,
leak_b_alloc) the report names; us/call = (work s - alone's work s) / calls.

Run with: make bench, or /usr/bin/python3 bench/heap_bench.py --perf-prof ./perf-prof
Needs root for perf-prof's uprobes and for heaptrack -p (ptrace); the rows of a missing tool are
skipped with a note.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchproc import Proc, describe_exit, perf_event_fds, private_perf_prof, read_text, run_bench

LEAKED = (22000, 25)  # bytes, objects: mallocbench's defaults (-a 20 -b 5)
REACHABLE = (16384, 8)
LEAK_SITES = ("leak_a_alloc", "leak_b_alloc")
SAMPLE_RATE = 512 * 1024  # serve's and tcmalloc's default
TCMALLOC = ["/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4", "/usr/lib/libtcmalloc.so.4",
            "/usr/lib64/libtcmalloc.so.4"]
NOT_BUILT = ("not available yet", "unknown profiler 'kmemleak'")
RESULT_RE = re.compile(r"calls=(\d+) leaked_bytes=(\d+) leaked_objects=(\d+) reachable_bytes=(\d+) "
                       r"reachable_objects=(\d+) seconds=([\d.]+) rate=([\d.]+)")


GNU_TIME = "/usr/bin/time"


class NotBuilt(Exception):
    pass


def with_rss(cmd, tmp, tag):
    """`cmd` under GNU time writing its %M to TAG.rss, when GNU time is there: a process forked from
    this Python process would carry Python's resident size into its ru_maxrss across exec."""
    if not os.access(GNU_TIME, os.X_OK):
        return cmd, None
    path = os.path.join(tmp, tag + ".rss")
    return [GNU_TIME, "-f", "%M", "-o", path] + cmd, path


def rss_mb(proc, path):
    m = re.search(r"(\d+)\s*$", read_text(path)) if path else None
    return int(m.group(1)) / 1024.0 if m else proc.rss_mb()


def command_pid(proc, wrapped, timeout=5.0):
    """The pid of the command itself: GNU time's child when wrapped."""
    if not wrapped:
        return proc.pid
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.005)
    return proc.pid


def build_workload(tmp):
    exe = os.path.join(tmp, "mallocbench")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mallocbench.c")
    subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-o", exe, src],
                   check=True)
    return exe


def workload_result(text, cmd):
    m = RESULT_RE.search(text)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)}: no result line from the workload; output: {text[-600:]!r}")
    return {"calls": int(m.group(1)), "work_s": float(m.group(6))}


def files(tmp, tag):
    return os.path.join(tmp, tag + ".out"), os.path.join(tmp, tag + ".err")


def run_launch(cmd, tmp, tag, env=None, ok_codes=(0,), timeout=300):
    """Runs `cmd` to its end (under GNU time for its peak RSS), stdout and stderr to TAG.out /
    TAG.err; returns (proc, out, err); proc.peak_mb is the command's peak RSS."""
    out_path, err_path = files(tmp, tag)
    full, rss_path = with_rss(cmd, tmp, tag)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = Proc(full, out, err, env=env)
    proc.wait(timeout)
    proc.peak_mb = rss_mb(proc, rss_path)
    out_text, err_text = read_text(out_path, 1 << 22), read_text(err_path, 1 << 22)
    if proc.exit_code() not in ok_codes:
        if any(s in err_text or s in out_text for s in NOT_BUILT):
            raise NotBuilt()
        raise RuntimeError(f"{' '.join(cmd)}: {describe_exit(proc)}; stderr: {err_text[-600:]!r}")
    return proc, out_text, err_text


def row(tool, mode, res, total_s, cpu_s, rss_mb, leaks, sites, tool_cpu=None):
    return {"tool": tool, "mode": mode, "calls": res["calls"], "work_s": res["work_s"], "total_s": total_s,
            "cpu_s": cpu_s, "tool_cpu": tool_cpu, "rss_mb": rss_mb, "leaks": leaks, "sites": sites}


def sites_named(text):
    return sum(1 for s in LEAK_SITES if s in text)


# ---------------------------------------------------------------- the rows


def measure_alone(args, tmp, tag):
    cmd = [args.workload, "-n", str(args.calls)]
    proc, out, _ = run_launch(cmd, tmp, tag)
    res = workload_result(out, cmd)
    return row("alone", "-", res, proc.t_exit - proc.t0, proc.cpu_s(), proc.peak_mb, None, None)


def start_waiting_workload(args, tmp, tag):
    """The workload with -w, waiting on a pipe for its go; returns (proc, its stdout path)."""
    out_path = os.path.join(tmp, tag + ".app.out")
    with open(out_path, "wb") as out:
        proc = Proc([args.workload, "-w", "-n", str(args.calls)], out, subprocess.STDOUT, stdin=subprocess.PIPE)
    return proc, out_path


def go(app):
    app.p.stdin.write(b"go\n")
    app.p.stdin.close()


def attach_run(args, tmp, tag, tool_cmd, ready):
    """The waiting workload, `tool_cmd(pid)` attached to it; `ready(tool, err_path)` returns once
    the tool is in place (raises if it failed). Then the go; both are waited for. Returns (app,
    tool, workload result, tool stdout, tool stderr, seconds from the go to the tool's end)."""
    app, app_out = start_waiting_workload(args, tmp, tag)
    out_path, err_path = files(tmp, tag)
    try:
        full, rss_path = with_rss(tool_cmd(app.pid), tmp, tag)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            tool = Proc(full, out, err)
        tool.command_pid = command_pid(tool, rss_path is not None)
        ready(tool, out_path, err_path)
        t_go = time.monotonic()
        go(app)
        app.wait(300)
        try:
            tool.wait(30)  # it reports once the process is gone
        except RuntimeError:
            os.kill(tool.command_pid, signal.SIGINT)
            tool.wait(30)
    finally:
        if app.poll() is None:
            app.send(signal.SIGKILL)
            app.wait(10)
    tool.peak_mb = rss_mb(tool, rss_path)
    out_text, err_text = read_text(out_path, 1 << 22), read_text(err_path, 1 << 22)
    res = workload_result(read_text(app_out, 1 << 16), app.cmd)
    return app, tool, res, out_text, err_text, tool.t_exit - t_go


def wait_perf_fds(tool, out_path, err_path, timeout=30.0):
    """Until perf-prof holds perf event fds and their number has not changed for 0.3 s."""
    deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while True:
        if tool.poll() is not None:
            text = read_text(err_path) + read_text(out_path)
            if any(s in text for s in NOT_BUILT):
                raise NotBuilt()
            raise RuntimeError(f"{' '.join(tool.cmd)} exited early ({describe_exit(tool)}): {text[-600:]!r}")
        n = perf_event_fds(tool.command_pid)
        if n != last:
            last, since = n, time.monotonic()
        elif n > 0 and time.monotonic() - since >= 0.3:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(tool.cmd)}: no settled perf event fds within {timeout:g}s")
        time.sleep(0.02)


def perfprof_leaks(text):
    """The sum of the "Leak of N bytes in M objects" groups before any in-use report."""
    b = o = 0
    for line in text.splitlines():
        if re.search(r"in.?use", line, re.I) and not line.startswith("Leak of"):
            break
        m = re.match(r"Leak of (\d+) bytes in (\d+) objects", line)
        if m:
            b, o = b + int(m.group(1)), o + int(m.group(2))
    return b, o


def measure_perfprof(args, tmp, tag, attach, name="perf-prof agent", extra=()):
    """kmemleak --user -g with the options `extra` (e.g. --probes=ebpf, --rate N)."""
    base = [args.perf_prof, "kmemleak", "--user", "-g", *extra]
    if not attach:
        cmd = base + ["--", args.workload, "-n", str(args.calls)]
        proc, out, err = run_launch(cmd, tmp, tag)
        res = workload_result(out + err, cmd)
        return row(name, "launch", res, proc.t_exit - proc.t0, proc.cpu_s(), proc.peak_mb,
                   perfprof_leaks(out), sites_named(out))
    app, tool, res, out, err, total = attach_run(args, tmp, tag, lambda pid: base + ["-p", str(pid)], wait_attached)
    if tool.exit_code() not in (0, -signal.SIGINT, 128 + signal.SIGINT):
        raise RuntimeError(f"perf-prof kmemleak --user -p: {describe_exit(tool)}; stderr: {err[-600:]!r}")
    return row(name, "attach", res, total, tool.cpu_s() + app.cpu_s(), tool.peak_mb,
               perfprof_leaks(out), sites_named(out), tool.cpu_s())


def wait_attached(tool, out_path, err_path, timeout=30.0):
    """Until perf-prof is in place in the waiting workload: the agent mapped into it (the agent
    path), or perf-prof's perf event fds settled (the eBPF path)."""
    if "--probes=ebpf" in tool.cmd:
        return wait_perf_fds(tool, out_path, err_path, timeout)
    pid = int(tool.cmd[tool.cmd.index("-p") + 1])
    deadline = time.monotonic() + timeout
    while "perf-prof-heap" not in read_text(f"/proc/{pid}/maps", 1 << 20):
        if tool.poll() is not None or time.monotonic() > deadline:
            text = read_text(err_path) + read_text(out_path)
            if any(s in text for s in NOT_BUILT):
                raise NotBuilt()
            raise RuntimeError(f"{' '.join(tool.cmd)}: the agent is not in process {pid}: {text[-600:]!r}")
        time.sleep(0.005)
    time.sleep(0.05)  # the slots are patched after the dlopen returns


def heaptrack_report(tmp, tag, stats_text):
    """heaptrack_print on the run's file: leaked bytes from its flame graph of the leaked cost
    (exact bytes per stack), objects from heaptrack's own "leaked allocations" line. Returns
    (leaks, sites, print proc)."""
    found = glob.glob(os.path.join(tmp, tag + ".*"))
    data = [f for f in found if f.endswith((".zst", ".gz"))]
    if not data:
        raise RuntimeError(f"heaptrack wrote no data file for {tag} (files: {found})")
    flame = os.path.join(tmp, tag + ".leaked")
    proc, _, _ = run_launch(["heaptrack_print", "-f", data[0], "--flamegraph-cost-type", "leaked", "-F", flame],
                            tmp, tag + ".print")
    total, text = 0, read_text(flame, 1 << 22)
    for line in text.splitlines():
        f = line.rsplit(None, 1)
        if len(f) == 2 and f[1].isdigit():
            total += int(f[1])
    m = re.search(r"leaked allocations:\s*(\d+)", stats_text)
    return (total, int(m.group(1)) if m else None), sites_named(text), proc


def measure_heaptrack(args, tmp, tag, attach):
    out_file = os.path.join(tmp, tag)
    if not attach:
        cmd = ["heaptrack", "-o", out_file, args.workload, "-n", str(args.calls)]
        proc, out, err = run_launch(cmd, tmp, tag)
        res = workload_result(out + err, cmd)
        leaks, sites, pr = heaptrack_report(tmp, tag, out + err)
        return row("heaptrack", "launch", res, proc.t_exit - proc.t0 + pr.t_exit - pr.t0,
                   proc.cpu_s() + pr.cpu_s(), max(proc.peak_mb, pr.peak_mb), leaks, sites)

    def injected(tool, out_path, err_path, timeout=60.0):
        deadline = time.monotonic() + timeout
        while "injection finished" not in read_text(out_path) + read_text(err_path):
            if tool.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"heaptrack -p: no injection ({read_text(err_path)[-400:]!r})")
            time.sleep(0.02)

    app, tool, res, out, err, total = attach_run(
        args, tmp, tag, lambda pid: ["heaptrack", "-o", out_file, "-p", str(pid)], injected)
    leaks, sites, pr = heaptrack_report(tmp, tag, out + err)
    return row("heaptrack", "attach", res, total + pr.t_exit - pr.t0, tool.cpu_s() + app.cpu_s() + pr.cpu_s(),
               max(tool.peak_mb, pr.peak_mb), leaks, sites, tool.cpu_s() + pr.cpu_s())


def measure_valgrind(args, tmp, tag):
    log = os.path.join(tmp, tag + ".log")
    cmd = ["valgrind", "--leak-check=full", f"--log-file={log}", args.workload, "-n", str(args.calls)]
    proc, out, _ = run_launch(cmd, tmp, tag)
    text = read_text(log, 1 << 22)
    m = re.search(r"definitely lost: ([\d,]+) bytes in ([\d,]+) blocks", text)
    if m:
        leaks = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    elif "no leaks are possible" in text:
        leaks = (0, 0)
    else:
        raise RuntimeError(f"valgrind: no leak summary in {log}: {text[-400:]!r}")
    return row("valgrind", "launch", workload_result(out, cmd), proc.t_exit - proc.t0, proc.cpu_s(),
               proc.peak_mb, leaks, sites_named(text))


def measure_tcmalloc(args, tmp, tag, tcmalloc, pprof_path, name):
    env = dict(os.environ, LD_PRELOAD=tcmalloc, HEAPCHECK="normal", PPROF_PATH=pprof_path, TMPDIR=tmp,
               HEAP_CHECK_DUMP_DIRECTORY=tmp)
    cmd = [args.workload, "-n", str(args.calls)]
    # The checker exits with status 1 when it found leaks.
    proc, out, err = run_launch(cmd, tmp, tag, env=env, ok_codes=(0, 1))
    m = re.search(r"detected leaks of (\d+) bytes in (\d+) objects", err)
    if m:
        leaks = (int(m.group(1)), int(m.group(2)))
    elif "No leaks found" in err:
        leaks = (0, 0)
    else:
        raise RuntimeError(f"{name}: no leak check result on stderr: {err[-400:]!r}")
    return row(name, "launch", workload_result(out, cmd), proc.t_exit - proc.t0, proc.cpu_s(), proc.peak_mb,
               leaks, sites_named(err))


# ---------------------------------------------------------------- report


def median_row(rows):
    m = dict(rows[-1])
    for k in ("work_s", "total_s", "cpu_s", "rss_mb"):
        m[k] = statistics.median(r[k] for r in rows)
    if rows[0]["tool_cpu"] is not None:
        m["tool_cpu"] = statistics.median(r["tool_cpu"] for r in rows)
    m["leaks_vary"] = len({r["leaks"] for r in rows}) > 1
    return m


HEADER = (f"{'tool':<19} {'mode':<7} {'work s':>8} {'slowdown':>9} {'total s':>8} {'CPU s':>7} {'extra CPU':>9} "
          f"{'tool CPU':>8} {'RSS MB':>7} {'leaked bytes/objects':>21} {'sites':>5} {'us/call':>8}")


def print_table(rows, alone, calls):
    print(HEADER)
    print("-" * len(HEADER))
    for name, r in rows:
        if isinstance(r, str):
            print(f"{name[0]:<19} {name[1]:<7} {r}")
            continue
        slow = r["work_s"] / alone["work_s"] if alone["work_s"] else float("nan")
        extra = r["cpu_s"] - alone["cpu_s"]
        tool_cpu = "-" if r["tool_cpu"] is None else f"{r['tool_cpu']:.2f}"
        if r["leaks"] is None:
            leaks = "-"
        else:
            b, o = r["leaks"]
            leaks = f"{b:,}/{'?' if o is None else o}" + ("*" if r.get("leaks_vary") else "")
        sites = "-" if r["sites"] is None else f"{r['sites']}/2"
        us = "-" if r["tool"] == "alone" else f"{1e6 * (r['work_s'] - alone['work_s']) / calls:.3f}"
        print(f"{r['tool']:<19} {r['mode']:<7} {r['work_s']:>8.3f} {slow:>8.1f}x {r['total_s']:>8.2f} "
              f"{r['cpu_s']:>7.2f} {extra:>9.2f} {tool_cpu:>8} {r['rss_mb']:>7.1f} {leaks:>21} {sites:>5} {us:>8}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf-prof", default="./perf-prof")
    ap.add_argument("--calls", type=int, default=1000000, help="malloc-family calls of the workload")
    ap.add_argument("--repeat", type=int, default=3, help="runs of every row (medians reported)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--only", default="", help="only the rows whose tool name contains this (e.g. agent)")
    args = ap.parse_args()
    if args.calls < 1000 or args.repeat < 1:
        ap.error("--calls must be >= 1000 and --repeat >= 1")

    tmp = tempfile.mkdtemp(prefix="perfprof-heap-bench-")
    t_start = time.monotonic()
    shown = args.perf_prof
    have_pp = os.access(args.perf_prof, os.X_OK)
    if have_pp:
        args.perf_prof = private_perf_prof(args.perf_prof, tmp)
    args.workload = build_workload(tmp)
    tcmalloc = next((c for c in TCMALLOC if os.path.exists(c)), None)
    pprof = shutil.which("google-pprof") or shutil.which("pprof")

    # (tool, mode) -> function(tag) or a reason it does not run
    plan = []
    for name, extra in (("perf-prof agent", ()), ("perf-prof sampled", ("--rate", str(SAMPLE_RATE))),
                        ("perf-prof ebpf", ("--probes=ebpf",))):
        for attach in (False, True):
            plan.append(((name, "attach" if attach else "launch"),
                         (lambda tag, a=attach, n=name, x=extra: measure_perfprof(args, tmp, tag, a, n, x))
                         if have_pp else f"n/a ({shown} not found)"))
    for mode, attach in (("launch", False), ("attach", True)):
        ok = shutil.which("heaptrack") and shutil.which("heaptrack_print") and (not attach or shutil.which("gdb"))
        plan.append((("heaptrack", mode), (lambda tag, a=attach: measure_heaptrack(args, tmp, tag, a)) if ok
                     else "n/a (heaptrack, heaptrack_print or gdb not installed)"))
    plan.append((("valgrind", "launch"), (lambda tag: measure_valgrind(args, tmp, tag)) if shutil.which("valgrind")
                 else "n/a (valgrind not installed)"))
    for name, pp in (("tcmalloc+pprof", pprof), ("tcmalloc+perf-prof", args.perf_prof if have_pp else None)):
        if tcmalloc and pp:
            plan.append(((name, "launch"),
                         lambda tag, pp=pp, name=name: measure_tcmalloc(args, tmp, tag, tcmalloc, pp, name)))
        else:
            plan.append(((name, "launch"), "n/a (libtcmalloc.so.4 or the symbolizer not installed)"))

    plan = [(key, how) for key, how in plan if args.only in key[0]]
    print(f"bench: workload {os.path.basename(args.workload)}: {args.calls:,} malloc-family calls, leaks "
          f"{LEAKED[0]:,} bytes in {LEAKED[1]} objects, {REACHABLE[0]:,} bytes in {REACHABLE[1]} objects still "
          f"reachable; {args.repeat} run(s) per row; perf-prof {shown}; load average {os.getloadavg()[0]:.2f}")

    def measure():
        alone_rows, results = [], {key: [] for key, _ in plan}
        failed = {}
        for rep in range(args.repeat):
            alone_rows.append(measure_alone(args, tmp, f"alone-{rep}a"))
            for key, how in plan:
                if isinstance(how, str) or key in failed:
                    continue
                tag = f"{key[0]}-{key[1]}-{rep}".replace("+", "_")
                try:
                    results[key].append(how(tag))
                except NotBuilt:
                    failed[key] = "n/a (not built)"
                except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                    failed[key] = f"failed: {str(e)[:300]}"
            alone_rows.append(measure_alone(args, tmp, f"alone-{rep}b"))
            sys.stdout.flush()
        alone = median_row(alone_rows)
        table = [(("alone", "-"), alone)]
        for key, how in plan:
            if isinstance(how, str):
                table.append((key, how))
            elif results[key]:
                table.append((key, median_row(results[key])))
            else:
                table.append((key, failed.get(key, "no result")))
        calls = alone["calls"]
        print(f"\n== medians over {args.repeat} run(s); alone: {alone['work_s'] * 1e3:.1f} ms of work, "
              f"{calls / alone['work_s']:,.0f} calls/s")
        print_table(table, alone, calls)
        print(f"\nexpected: definitely lost {LEAKED[0]:,}/{LEAKED[1]}; heaptrack counts the still reachable "
              f"too ({LEAKED[0] + REACHABLE[0]:,}/{LEAKED[1] + REACHABLE[1]}); * = differed between runs")
        for key, r in table:
            if isinstance(r, str) and r.startswith("failed"):
                print(f"  {key[0]} {key[1]}: {r}")
        print(f"bench: done in {time.monotonic() - t_start:.0f} s, load average {os.getloadavg()[0]:.2f}")

    return run_bench(measure, tmp, args.keep, (RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
