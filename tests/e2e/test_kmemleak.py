"""kmemleak (SPEC §4.5) on the kernel's allocators: pairing of --alloc and --free events by
pointer, the statistics, the per-allocation and leaked-bytes reports, --than, --comm, the flame
graph, SIGUSR1 and SIGINT, and the usage errors.

The kalloc workload (tests/workloads/kalloc.c) makes the kernel allocate known objects:
`files N` opens and closes /dev/null N times (one struct file from the filp cache each time,
freed by the close), `pipes N` creates and closes N pipes (two kmallocs from alloc_pipe_info
each), `hold N MS M H` creates N eventfds (one kmalloc from do_eventfd each), M more after MS
ms, prints "held" and keeps them all H ms longer."""

import os
import re
import signal
import time

import pytest

from conftest import WALL_RE, assert_not_crashed, perf_stat_count, run
from test_pprof import pprof  # noqa: F401 (the go tool pprof fixture)

FILP_ALLOC = 'kmem:kmem_cache_alloc/name=="filp"/'
FILP_FREE = 'kmem:kmem_cache_free/name=="filp"/'
PIPE_KMALLOC = "call_site.function==alloc_pipe_info"
EVENTFD_ALLOC = "kmem:kmalloc/call_site.function==do_eventfd/"

STATS_RE = re.compile(r"^" + WALL_RE + r" \nKMEMLEAK STATS:\n(?:ALLOC LIST num (\d+) mem (\d+)\n)?"
                      r"TOTAL alloc (\d+) free (\d+)\n\n", re.M)
# The standard event line of a reported allocation: no WALL in front (SPEC §4.5.3 step 5).
EVENT_RE = re.compile(r"^(?P<comm>.{16}) (?P<pid>[ \d]{5}\d) (?P<lat>\S{4,5}) \[(?P<cpu>\d{3})\] "
                      r"(?P<ts>\d+\.\d{6}): (?P<event>\w+:\w+): (?P<info>.*)$")
KERNEL_FRAME_RE = re.compile(r"^    [0-9a-f]{16} \S+\+0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$")
STACK_LINE_RE = re.compile(r"^    ([0-9a-f]{16}( .*)?|\[truncated\])$")
LEAK_RE = re.compile(r"^Leak of (\d+) bytes in (\d+) objects allocated from:$")
NEED_G = "Support LEAKED BYTES REPORT, need -g to enable callchain."
NO_FLAME = "Support LEAKED BYTES REPORT, will disable flame graph."


def stats(out):
    """Every statistics block of `out` as (alloc, free, alloc-list-num or None)."""
    return [(int(m.group(3)), int(m.group(4)), None if m.group(1) is None else int(m.group(1)))
            for m in STATS_RE.finditer(out)]


def final_stats(out):
    s = stats(out)
    assert s, "no KMEMLEAK STATS block:\n" + out
    return s[-1]


def report_events(out):
    """The event lines after `KMEMLEAK REPORT: n`: (n, [match])."""
    lines = out.splitlines()
    heads = [i for i, l in enumerate(lines) if l.startswith("KMEMLEAK REPORT: ")]
    assert len(heads) == 1, out
    n = int(lines[heads[0]].split(": ")[1])
    events = []
    for line in lines[heads[0] + 1:]:
        m = EVENT_RE.match(line)
        if m:
            events.append(m)
        elif not STACK_LINE_RE.match(line):
            break
    return n, events


def leak_groups(out):
    """The groups of the leaked-bytes report: [(bytes, objects, comms line or None, [stack lines])]."""
    lines = out.splitlines()
    assert lines.count("LEAKED BYTES REPORT:") == 1, out
    groups = []
    for line in lines[lines.index("LEAKED BYTES REPORT:") + 1:]:
        m = LEAK_RE.match(line)
        if m:
            groups.append([int(m.group(1)), int(m.group(2)), None, []])
        elif groups and line.startswith("    comms: ") and not groups[-1][3]:
            groups[-1][2] = line
        elif groups and STACK_LINE_RE.match(line):
            groups[-1][3].append(line)
        else:
            break
    return groups


def tracefs_probes():
    """The dynamic probe definitions of tracefs, which no kmemleak run may leave changed."""
    res = {}
    for name in ("kprobe_events", "uprobe_events"):
        p = os.path.join("/sys/kernel/tracing", name)
        res[name] = open(p).read() if os.path.exists(p) else None
    return res


def hold_run(pp, workload, args, n, ms, m, hold=4000, before_int=None):
    """kmemleak ARGS -- kalloc hold N MS M HOLD, interrupted as soon as the workload says "held"
    (its eventfds all still open); `before_int(b)` runs first. Returns stdout."""
    b = pp.start(["kmemleak", *args, "--", workload("kalloc"), "hold", str(n), str(ms), str(m), str(hold)])
    b.wait_line(r"^held$", timeout=15 + ms / 1000)
    if before_int:
        before_int(b)
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    return out


def test_help_lists_own_options(pp):
    rc, out, err = pp.run(["kmemleak", "-h"])
    assert rc == 129 and out == "", out  # help goes to stderr and exits as usage does (SPEC §1.8)
    out = err
    assert out.startswith("\n Usage: perf-prof kmemleak --alloc"), out
    for opt in ("--alloc <EVENT,...>", "--free <EVENT,...>", "--than <TIME>", "--comm", "--user",
                "  -g  ", "--call-graph <fp|dwarf[,size]>", "--flame-graph <file>"):
        assert opt in out, opt
    assert "perf-prof kmemleak --alloc kmem:kmalloc//stack/ --free kmem:kfree -g" in out
    # No call-chain switches for kmemleak (SPEC §4.5.1).
    assert "--user-callchain" not in out


def test_filp_objects_are_all_freed(pp, needs_root, workload):
    """Every struct file the workload opens is freed by its close: what is outstanding at exit
    are only the files the exec opened (the program, ld.so, libc: mapped until the exit, which
    frees them where the events no longer see it), none from a frame of the workload itself.
    The counts agree with `perf stat` up to the exec's own opens (perf stat enables at the
    exec, we before it)."""
    n = 200
    argv = [workload("kalloc"), "files", str(n)]
    rc, out, err = pp.run(["kmemleak", "--alloc", FILP_ALLOC, "--free", FILP_FREE, "-g", "--", *argv])
    assert rc == 0 and err == "", err
    alloc, free, _ = final_stats(out)
    assert n <= alloc <= n + 8, out
    assert free >= n, out
    groups = leak_groups(out) if "LEAKED BYTES REPORT:" in out else []
    assert sum(g[1] for g in groups) <= 4, out
    for nbytes, objects, _, stack in groups:
        assert not any(argv[0] in l for l in stack), "a file the workload opened was not freed:\n" + out
    ref = perf_stat_count("kmem:kmem_cache_alloc", argv, 'name=="filp"')
    assert ref is not None, "perf stat gave no count"
    assert ref <= alloc <= ref + 4, (ref, out)


def test_kmalloc_counts_match_perf_stat(pp, needs_root, workload):
    """pipe() kmallocs twice in alloc_pipe_info, the last close kfrees both: exactly 2N
    allocations, as `perf stat` counts them, and none outstanding."""
    n = 150
    argv = [workload("kalloc"), "pipes", str(n)]
    rc, out, err = pp.run(["kmemleak", "--alloc", "kmem:kmalloc/%s/" % PIPE_KMALLOC, "--free", "kmem:kfree",
                           "--", *argv])
    assert rc == 0 and err == "", err
    alloc, free, _ = final_stats(out)
    assert alloc == 2 * n, out
    assert free >= 2 * n, out
    assert "KMEMLEAK REPORT" not in out, out
    assert perf_stat_count("kmem:kmalloc", argv, PIPE_KMALLOC) == alloc


@pytest.mark.parametrize("than", [None, "700ms"])
def test_per_allocation_report_and_than(pp, needs_root, workload, than):
    """Without -g every outstanding allocation is printed as a standard event line, oldest first;
    --than leaves out those younger than it (the M created just before the report)."""
    n, m = 5, 3
    args = ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree"] + (["--than", than] if than else [])
    out = hold_run(pp, workload, args, n, 1500, m)
    assert NEED_G in out.splitlines(), out
    alloc, free, _ = final_stats(out)
    assert alloc == n + m, out
    count, events = report_events(out)
    assert count == n + m, out
    assert len(events) == (n if than else n + m), out
    for e in events:
        assert e.group("comm").strip() == "kalloc" and e.group("event") == "kmem:kmalloc", e.group(0)
        assert "bytes_alloc=" in e.group("info"), e.group(0)
    ts = [float(e.group("ts")) for e in events]
    assert ts == sorted(ts), out
    if not than:
        # The young ones came MS later than the old ones.
        assert ts[n] - ts[n - 1] >= 1.4, ts


def test_than_reports_nothing_younger(pp, needs_root, workload):
    out = hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", "--than", "30s"], 2, 10, 2)
    count, events = report_events(out)
    assert count == 4 and events == [], out


def test_leaked_bytes_report_with_stacks(pp, needs_root, workload):
    """With -g and a size for every allocation, the outstanding eventfd contexts are one group:
    their bytes, their count, the allocating task (--comm) and the kernel stack of do_eventfd."""
    n, m = 4, 2
    out = hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", "-g", "--comm"], n, 10, m)
    assert NEED_G not in out and "KMEMLEAK REPORT" not in out, out
    groups = leak_groups(out)
    # One group per call site of the workload (the old and the young ones may differ).
    assert 1 <= len(groups) <= 2 and sum(g[1] for g in groups) == n + m, out
    assert [g[0] for g in groups] == sorted((g[0] for g in groups), reverse=True), out
    for nbytes, objects, comms, stack in groups:
        assert nbytes % objects == 0 and nbytes // objects >= 48, out  # bytes_alloc of an eventfd_ctx
        assert comms == "    comms: kalloc(%d/%d)" % (nbytes, objects), out
        kernel = [l for l in stack if KERNEL_FRAME_RE.match(l)]
        assert kernel and stack[:len(kernel)] == kernel, stack  # kernel part first
        assert any(" do_eventfd+0x" in l for l in kernel), stack
        # Attached to the workload: the user part follows, down to its main.
        assert any(" main+0x" in l and "kalloc" in l for l in stack[len(kernel):]), stack


def test_flame_graph_in_leaked_bytes_mode(pp, needs_root, workload, tmp_path):
    """The flame graph counts the reported allocations by stack in the leaked-bytes report too
    (upstream drew none there and said so on stdout only), and --flame-graph implies -g."""
    name = str(tmp_path / "fg")
    n, m = 3, 2
    out = hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", "--flame-graph", name], n, 10, m)
    assert NO_FLAME not in out, out
    assert sum(g[1] for g in leak_groups(out)) == n + m, out
    assert "Flame graph: %s.svg (folded stacks: %s.folded)" % (name, name) in out, out
    folded = open(name + ".folded").read().splitlines()
    rows = [l for l in folded if ";do_eventfd_[k];" in l]  # a kernel frame: "_[k]"
    assert rows and all(r.startswith("kalloc;") for r in rows), folded
    assert sum(int(r.rsplit(" ", 1)[1]) for r in rows) == n + m, rows


def test_verbose_flame_graph_of_reported_allocations(pp, needs_root, workload, tmp_path):
    """-v lists every allocation even in leaked-bytes mode, and its stacks go to the flame
    graph, under the allocating task's name."""
    name = str(tmp_path / "fg")
    n, m = 3, 2
    out = hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", "-g", "-v",
                                  "--flame-graph", name], n, 10, m)
    count, events = report_events(out)
    assert count == n + m and len(events) == n + m, out
    assert sum(g[1] for g in leak_groups(out)) == n + m, out
    folded = open(name + ".folded").read().splitlines()
    rows = [l for l in folded if ";do_eventfd_[k];" in l]  # a kernel frame: "_[k]"
    assert rows and all(r.startswith("kalloc;") for r in rows), folded
    assert sum(int(r.rsplit(" ", 1)[1]) for r in rows) == n + m, rows


def test_sigusr1_prints_alloc_list(pp, needs_root, workload):
    n, m = 3, 4

    def usr1(b):
        # The samples reach kmemleak within the session's flush period: ask until they have.
        for i in range(50):
            b.send(signal.SIGUSR1)
            b.wait_count(r"^ALLOC LIST num \d+ mem \d+$", i + 1, timeout=10)
            if [l for l in b.lines() if l.startswith("ALLOC LIST ")][-1].startswith("ALLOC LIST num %d " % (n + m)):
                return
            time.sleep(0.1)

    out = hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree"], n, 10, m, before_int=usr1)
    blocks = stats(out)
    assert len(blocks) >= 2, out
    alloc, free, num = blocks[-2]
    assert num == n + m and alloc == n + m, out
    mem = int(re.findall(r"^ALLOC LIST num \d+ mem (\d+)$", out, re.M)[-1])
    assert mem > 0, out
    # SIGINT then prints the final block (no ALLOC LIST) and the report.
    assert blocks[-1][2] is None and report_events(out)[0] == n + m, out


def test_vv_prints_every_alloc_and_free(pp, needs_root, workload):
    n = 20
    rc, out, err = pp.run(["kmemleak", "-vv", "--alloc", "kmem:kmalloc/%s/" % PIPE_KMALLOC, "--free",
                           "kmem:kfree", "--", workload("kalloc"), "pipes", str(n)])
    assert rc == 0 and err == "", err
    alloc, free, _ = final_stats(out)
    lines = out.splitlines()
    assert sum(1 for l in lines if re.match(WALL_RE + r" .* kmem:kmalloc: ", l)) == alloc == 2 * n, out
    assert sum(1 for l in lines if re.match(WALL_RE + r" .* kmem:kfree: ", l)) == free, out


@pytest.mark.parametrize("alloc,free", [
    ("kmem:kmalloc", "kmem:kfree"),
    ("kmem:kmem_cache_alloc", "kmem:kmem_cache_free"),
    ("kmem:mm_page_alloc//ptr=pfn/size=4096<<order/", "kmem:mm_page_free//ptr=pfn/"),
    ("percpu:percpu_alloc_percpu", "percpu:percpu_free_percpu"),
    ("kmem:kmalloc,kmem:kmem_cache_alloc", "kmem:kfree,kmem:kmem_cache_free"),
])
def test_allocators(pp, needs_root, workload, alloc, free):
    """Each allocator pair of the kernel runs cleanly; several events a side are allowed."""
    args = ["kmemleak", "--alloc", alloc, "--free", free, "-g"]
    if alloc.startswith("percpu:"):
        # A command's percpu memory is its mm's counters, freed when the last lazy user of the
        # old mm lets go after exec: in whichever task the CPU switches to next, often not the
        # command. The whole machine, then, while a shell forks and execs 20 times.
        b = pp.start_ready(args + ["-v"])
        run(["sh", "-c", "for i in $(seq 20); do /bin/true; done"])
        time.sleep(0.3)
        b.send(signal.SIGINT)
        rc, out, err = b.finish(timeout=20)
    else:
        rc, out, err = pp.run(args + ["--", workload("kalloc"), "pipes", "20"])
    assert rc == 0 and err == "", err
    a, f, _ = final_stats(out)
    assert a > 0 and f > 0, out
    if "LEAKED BYTES REPORT:" in out:
        for nbytes, objects, _, stack in leak_groups(out):
            assert objects > 0 and stack and KERNEL_FRAME_RE.match(stack[0]), out


@pytest.mark.parametrize("args,message", [
    (["--alloc", "kmem:kmalloc"], "--free"),
    (["--free", "kmem:kfree"], "--alloc"),
    (["--alloc", "kmem:mm_page_alloc", "--free", "kmem:mm_page_free"],
     "kmem:mm_page_alloc//ptr=?/ ptr attribute is not set"),
    (["--alloc", "kmem:kmalloc", "--free", "kmem:mm_page_free"],
     "kmem:mm_page_free//ptr=?/ ptr attribute is not set"),
    (["--alloc", "kmem:kmalloc//ptr=nosuchfield/", "--free", "kmem:kfree"], "ptr=nosuchfield"),
    (["--user", "--alloc", "kmem:kmalloc", "-p", "1"], "--alloc"),
    (["--alloc", "kmem:kmalloc", "--free", "kmem:kfree", "-p", "999999"], "999999"),
])
def test_bad_input(pp, needs_root, args, message):
    """One clear line on stderr, a failure status, and tracefs as it was found."""
    before = tracefs_probes()
    rc, out, err = pp.run(["kmemleak", *args, "--", "true"] if "-p" not in args else ["kmemleak", *args])
    assert_not_crashed(rc)
    assert rc != 0, out
    lines = err.splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert tracefs_probes() == before


def test_lost_events_report_in_advance(pp, needs_root, workload):
    """A one-page ring loses events under 3000 pipes: before the loss window each time, the
    outstanding allocations are reported early (SPEC §4.5.4); the loss itself is said on stderr."""
    rc, out, err = pp.run(["kmemleak", "--alloc", "kmem:kmalloc", "--free", "kmem:kfree", "-g", "-m", "1", "--",
                           workload("kalloc"), "pipes", "3000"])
    assert rc == 0, err
    assert err and all(re.match(WALL_RE + r" kmemleak: lost \d+ events \(total\)$", l) for l in err.splitlines()), err
    lines = out.splitlines()
    early = [i for i, l in enumerate(lines) if re.fullmatch(WALL_RE + " Report memory leaks in advance due to lost", l)]
    assert early, out
    for i in early:
        # A full report follows at once: the statistics, then the leaked-bytes report.
        assert re.fullmatch(WALL_RE + " ", lines[i + 1]) and lines[i + 2] == "KMEMLEAK STATS:", lines[i:i + 4]
        assert lines[i + 5] == "LEAKED BYTES REPORT:", lines[i:i + 7]
    assert len(stats(out)) == len(early) + 1, out


def test_pprof_counts_reported_objects(pp, needs_root, workload, pprof, tmp_path):
    """--pprof with -g writes the reported allocations' stacks as a pprof profile: a count of
    leaked objects per stack, which go tool pprof reads back."""
    path = str(tmp_path / "leaks.pb.gz")
    n, m = 3, 2
    hold_run(pp, workload, ["--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", "-g", "--pprof", path], n, 10, m)
    top = pprof("-top", path)
    assert "Type: leaked_objects" in top, top
    assert re.search(r"^ +0 +0%% +\S+ +%d +100%% +do_eventfd$" % (n + m), top, re.M), top
