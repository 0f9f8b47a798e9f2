"""--call-graph dwarf[,SIZE] (issue 15): the user part of each stack unwound from a copy of the
user stack and the user registers, through each object's .eh_frame / .debug_frame, where frame
pointers are missing; `[truncated]` where the copy ends first.

Workload: chain_nofp (tests/workloads/chain_nofp.c), built -O2 -fomit-frame-pointer as Debian
builds its packages, with libcfi_plt.so (linked, called through the PLT) and libcfi_plugin.so
(dlopen'd) beside it. Its modes have known stacks (innermost first):
  chain       hot <- b <- a <- main                 (a has 2 KiB of locals)
  dlopen      plugin_hot <- plugin_outer <- run_plugin <- main
  signal      hot <- on_alarm <- __restore_rt <- spin_wait <- main
  plt         cfi_inc or its PLT stub <- plt_loop <- main
  libc        cmp_hot <- msort_with_tmp (many) <- qsort_r <- sort_loop <- main
  deep        hot <- recurse (2000 frames of 528 bytes) <- main
  entry       probe_me <- entry_loop <- main
  sleep/hold  (libc's nanosleep / eventfd) <- nap / hold_fds <- b <- a <- main
Its busy loops end on an ITIMER_PROF, so they make no system call: a sample's user leaf is the
busy function. libc6-dbg (a `make deps` package) names libc's local functions (msort_with_tmp,
__restore_rt, the signal trampoline). The reference peer is `perf record --call-graph dwarf`
with `perf script`.
"""

import collections
import functools
import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import WALL_RE, append_line, assert_not_crashed, section, skip_or_fail, tracefs
from test_kmemleak import EVENTFD_ALLOC, leak_groups
from test_pprof import build_id, folded, traces
from test_stacks import FRAME_RE, UFRAME_RE, blocks
from test_task_state import blocks as state_blocks

TRUNC = "[truncated]"
HEAD_RE = WALL_RE + r" "  # every event line; stack lines start with 4 spaces
NO_SYMBOL_RE = re.compile(r"^\[(?P<dso>/[^\]]*)\+0x(?P<off>[0-9a-f]+)\]$")
DWARF = ["--call-graph", "dwarf"]
CHAIN = ["hot", "b", "a", "main"]


@pytest.fixture(scope="module")
def wl(workload):
    workload("libcfi_plt.so")
    workload("libcfi_plugin.so")
    return workload("chain_nofp")


def user_frames(frames):
    """The user part of a stack as (function, object) pairs, innermost first: the object None
    for `[truncated]` and for a frame without a symbol (named `[object+0xoff]`)."""
    res = []
    for line in frames:
        if line == "    " + TRUNC:
            res.append((TRUNC, None))
            continue
        m = FRAME_RE.match(line)
        if m.group("ip").startswith("ffff"):
            continue  # a kernel frame
        rest = m.group("rest") or ""
        u = UFRAME_RE.match(rest)
        res.append((u.group("sym"), u.group("dso")) if u else (rest, None))
    return res


def stacks_of(out, comm="chain_nofp"):
    """The user stacks (function names, innermost first) of every event of `comm` in stdout."""
    return [[f for f, _ in user_frames(frames)] for line, frames in blocks(out, HEAD_RE)
            if re.search(r"\s%s\s" % comm, line)]


def ok(pp, args, timeout=60):
    rc, out, err = pp.run(args, timeout=timeout)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s\n%s" % (rc, out[-2000:], err)  # nothing on stderr
    return out


def profile(pp, wl, cg, *mode):
    return ok(pp, ["profile", "--print-samples", "-F", "997", *cg, "--", wl, *mode])


def leaf_stacks(stacks, leaf):
    return [s for s in stacks if s and s[0] == leaf]


def runs_of(stack, seq):
    """True if `seq` occurs in `stack` as consecutive frames."""
    return any(stack[i:i + len(seq)] == seq for i in range(len(stack) - len(seq) + 1))


# ---------------------------------------------------------------- the chain, against frame pointers


def test_whole_chain_with_dwarf_broken_with_frame_pointers(pp, wl):
    """No function of chain_nofp keeps a frame pointer (rbp holds main's argc), so -g sees hot
    alone; --call-graph dwarf sees hot <- b <- a <- main in (measured) every sample."""
    whole = {}
    for cg in (DWARF, ["-g"]):
        hot = leaf_stacks(stacks_of(profile(pp, wl, cg, "chain", "1500")), "hot")
        assert len(hot) > 1000, len(hot)
        whole[cg[0]] = (sum(s[:4] == CHAIN for s in hot), len(hot))
    print("\nwhole chain in hot's samples: dwarf %d/%d, frame pointers %d/%d" % (*whole[DWARF[0]], *whole["-g"]))
    assert whole[DWARF[0]][0] >= 0.95 * whole[DWARF[0]][1], whole
    assert whole["-g"][0] < 0.5 * whole["-g"][1], whole


# ---------------------------------------------------------------- differential: perf record


def perf_stacks(wl, mode, tmp_path):
    """The user stacks of the workload's process from `perf record --call-graph dwarf`, as
    (function, object) pairs, innermost first; the object None where perf has no symbol."""
    perf = shutil.which("perf")
    if not perf:
        skip_or_fail("perf not installed")
    data = str(tmp_path / "perf.data")
    r = subprocess.run([perf, "record", "-q", "-F", "997", "--call-graph", "dwarf", "-o", data, "--", wl, *mode],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([perf, "script", "-i", data, "-F", "comm,pid,ip,sym,dso", "--no-inline"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = []
    for sample in re.split(r"\n\s*\n", r.stdout):
        lines = [l for l in sample.splitlines() if l.strip()]
        if not lines or lines[0].split()[0] != "chain_nofp":
            continue
        stack = []
        for line in lines[1:]:
            m = re.match(r"^\s*[0-9a-f]+ (.*) \((.*)\)$", line)
            assert m, line
            sym, dso = m.groups()
            if dso == "[kernel.kallsyms]":
                continue
            # perf names a versioned symbol of .dynsym with its version: __libc_start_main@@GLIBC_2.34.
            sym = sym.split("@")[0]
            stack.append((sym, None if sym == "[unknown]" else dso))
        res.append(stack)
    return res


@functools.lru_cache(maxsize=None)
def symbol_addresses(path):
    """name -> address of every symbol of the object and of its debug file (by build-id)."""
    files = [path]
    try:
        bid = build_id(path)
        files.append("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:]))
    except (AttributeError, subprocess.CalledProcessError):
        pass  # no build-id
    names = {}
    for f in filter(os.path.exists, files):
        for opt in ([], ["-D"]):
            r = subprocess.run(["nm", "--defined-only", *opt, f], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                parts = line.split()
                if len(parts) == 3:
                    names.setdefault(parts[2].split("@")[0], int(parts[0], 16))
    return names


def edge_shares(stacks):
    """(caller, callee) -> the share of the samples with that call in their stack. A function is
    (object, address) where known, so that aliases agree (perf names libc's __libc_start_main
    what perf-prof names __libc_start_main_alias_2: two names of one address)."""
    def key(frame):
        sym, dso = frame
        return (dso, symbol_addresses(dso).get(sym, sym)) if dso else (None, sym)

    counts, names = collections.Counter(), {}
    for s in stacks:
        frames = [f for f in s if f[0] != TRUNC]
        edges = set()
        for callee, caller in zip(frames, frames[1:]):
            e = (key(caller), key(callee))
            names.setdefault(e, "%s -> %s" % (caller[0], callee[0]))
            edges.add(e)
        counts.update(edges)
    return {e: n / len(stacks) for e, n in counts.items()}, names


@pytest.mark.parametrize("mode", [["chain", "1500"], ["libc", "1500"]])
def test_call_edges_agree_with_perf_record(pp, wl, tmp_path, mode):
    """The calls seen in more than 1 % of the samples are the same for both tools. An edge over
    1 % in one and under it in the other is sampling jitter only if the other still sees it in
    over 0.25 % of its samples."""
    out = profile(pp, wl, DWARF, *mode)
    ours = [user_frames(frames) for line, frames in blocks(out, HEAD_RE) if " chain_nofp " in line]
    theirs = perf_stacks(wl, mode, tmp_path)
    assert len(ours) > 1000 and len(theirs) > 1000, (len(ours), len(theirs))
    a, names = edge_shares(ours)
    b, names_b = edge_shares(theirs)
    names.update(names_b)
    major_a = {e for e, f in a.items() if f > 0.01}
    major_b = {e for e, f in b.items() if f > 0.01}
    print("\n%s: %d edges over 1 %% (perf-prof %d samples, perf %d)" % (mode[0], len(major_a | major_b), len(ours),
                                                                     len(theirs)))
    for e in sorted(major_a | major_b, key=lambda e: -a.get(e, 0)):
        print("  %5.1f%% %5.1f%%  %s" % (100 * a.get(e, 0), 100 * b.get(e, 0), names[e]))
    assert major_a and major_b
    assert all(b.get(e, 0) > 0.0025 for e in major_a - major_b), [names[e] for e in major_a - major_b]
    assert all(a.get(e, 0) > 0.0025 for e in major_b - major_a), [names[e] for e in major_b - major_a]


# ---------------------------------------------------------------- through a plugin, a signal, the PLT, libc


def plt_stub(wl):
    """A predicate: is a frame in chain_nofp's PLT (named `cfi_inc@plt`, or `[chain_nofp+0xoff]`)?"""
    ranges = []
    for name in (".plt", ".plt.sec"):
        try:
            addr, _, size = section(wl, name)
            ranges.append((addr, addr + size))
        except AssertionError:
            pass  # no .plt.sec without -fcf-protection

    def in_plt(frame):
        m = NO_SYMBOL_RE.match(frame)
        if frame == "cfi_inc@plt":
            return True
        return bool(m) and m.group("dso") == wl and any(a <= int(m.group("off"), 16) < b for a, b in ranges)

    return in_plt


def check_reaches_main(stacks, what, expect):
    """>= 90 % of `stacks` (at least 50) start with `expect` (a list of names or predicates)."""
    def matches(s):
        return len(s) >= len(expect) and all(e(f) if callable(e) else e == f for e, f in zip(expect, s))

    good = sum(map(matches, stacks))
    print("  %s: %d/%d samples unwound to main" % (what, good, len(stacks)))
    assert len(stacks) >= 50, (what, len(stacks))
    assert good >= 0.9 * len(stacks), (what, collections.Counter(";".join(s) for s in stacks).most_common(5))


def test_dlopened_library(pp, wl):
    stacks = stacks_of(profile(pp, wl, DWARF, "dlopen", "1000"))
    check_reaches_main(leaf_stacks(stacks, "plugin_hot"), "plugin_hot",
                       ["plugin_hot", "plugin_outer", "run_plugin", "main"])


def test_signal_handler_frame(pp, wl):
    """From the handler through libc's signal trampoline (__restore_rt, its FDE marked 'S') to
    the instruction the signal interrupted."""
    stacks = stacks_of(profile(pp, wl, DWARF, "signal", "1000"))
    check_reaches_main(leaf_stacks(stacks, "hot"), "hot in the handler",
                       ["hot", "on_alarm", "__restore_rt", "spin_wait", "main"])


def test_plt_stub(pp, wl):
    """cfi_inc() of libcfi_plt.so called through the PLT in a tight loop: about 1 sample in 8
    lands in the PLT stub itself (a jmp with no frame of its own), 1 in 8 in cfi_inc."""
    stacks = stacks_of(profile(pp, wl, DWARF, "plt", "1500"))
    in_plt = plt_stub(wl)
    stub = [s for s in stacks if s and in_plt(s[0])]
    assert len(stub) >= 0.03 * len(stacks), collections.Counter(s[0] for s in stacks if s)
    check_reaches_main(stub, "PLT stub", [in_plt, "plt_loop", "main"])
    check_reaches_main(leaf_stacks(stacks, "cfi_inc"), "cfi_inc", ["cfi_inc", "plt_loop", "main"])


def test_frames_in_libc(pp, wl):
    """qsort's merge sort (msort_with_tmp, recursive) between the comparator and its caller:
    libc has .eh_frame and no frame pointers. qsort itself tail-calls qsort_r: not a frame."""
    out = profile(pp, wl, DWARF, "libc", "1000")
    stacks = [user_frames(frames) for line, frames in blocks(out, HEAD_RE) if " chain_nofp " in line]
    hot = [s for s in stacks if s and s[0][0] == "cmp_hot"]

    def through_libc(s):
        names = [f for f, _ in s]
        if "sort_loop" not in names:
            return False
        j = names.index("sort_loop")
        libc = s[1:j]
        return (names[j + 1:j + 2] == ["main"] and libc and all("/libc.so" in (d or "") for _, d in libc)
                and all(f.startswith("msort_with_tmp") for f, _ in libc[:-1]) and "qsort" in libc[-1][0])

    good = sum(map(through_libc, hot))
    print("\ncmp_hot: %d/%d samples unwound through libc to main" % (good, len(hot)))
    assert len(hot) > 500 and good >= 0.9 * len(hot), collections.Counter(
        ";".join(f for f, _ in s) for s in hot).most_common(5)


# ---------------------------------------------------------------- truncation


def test_deeper_than_the_copy_ends_in_truncated(pp, wl):
    """2000 frames of recurse, 528 bytes each, under hot (no frame of its own): the 8192 bytes
    copied hold the return addresses of 16 of them (at sp + 528 * i, i = 0..15), and every stack
    ends there in [truncated], with no frame that is not the workload's."""
    stacks = [s for s in stacks_of(profile(pp, wl, DWARF, "deep", "2000", "1000")) if "recurse" in s]
    assert len(stacks) > 700, len(stacks)
    depths = collections.Counter()
    shallow = 0
    for s in stacks:
        if s[-1] != TRUNC:
            # A sample taken while the recursion was still (or again) shallow, on its way down
            # or back: its whole stack fits the copy and reaches main.
            assert s[0] == "recurse" and "main" in s and s.count("recurse") <= 16, s
            shallow += 1
            continue
        assert s[0] in ("hot", "recurse") and set(s[1:-1]) <= {"recurse"}, s
        if s[0] == "hot":
            depths[len(s) - 2] += 1
    print("\nrecurse frames under hot: %s; shallow stacks: %d" % (dict(depths), shallow))
    assert shallow <= 3, shallow
    assert sum(depths.values()) >= 0.95 * len(stacks) and set(depths) <= {15, 16}, depths


def test_small_copy_cuts_the_chain(pp, wl):
    """With 1024 bytes copied, a's 2 KiB frame holds the return address into main beyond the
    copy: the stacks end in hot <- b <- a <- [truncated]."""
    hot = leaf_stacks(stacks_of(profile(pp, wl, ["--call-graph", "dwarf,1024"], "chain", "1000")), "hot")
    assert len(hot) > 700, len(hot)
    for s in hot:
        assert s[-1] == TRUNC and 1 <= len(s) - 1 <= 3 and s[:-1] == CHAIN[:len(s) - 1], s
    cut = sum(s == ["hot", "b", "a", TRUNC] for s in hot)
    print("\nhot <- b <- a <- [truncated]: %d/%d" % (cut, len(hot)))
    assert cut >= 0.95 * len(hot)


# ---------------------------------------------------------------- a function's first instruction


def symbol_value(path, name):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return int(next(l.split()[0] for l in out.splitlines() if l.split()[-1] == name), 16)


def test_uprobe_at_function_entry(pp, needs_root, wl):
    """A uprobe on probe_me's first instruction: the return address is at sp, no frame is set up
    yet (frame pointers see no caller there); the CFI of that address finds entry_loop and main."""
    if tracefs() is None:
        pp.run(["list", "no-such-tracepoint"])  # mounts tracefs (SPEC §1.12)
    events = os.path.join(tracefs(), "uprobe_events")
    addr, off, _ = section(wl, ".text")
    offset = symbol_value(wl, "probe_me") - (addr - off)
    if "cfitest/probe_me " in open(events).read():
        append_line(events, "-:cfitest/probe_me")  # left by an interrupted run
    append_line(events, "p:cfitest/probe_me %s:0x%x" % (wl, offset))
    try:
        out = ok(pp, ["trace", "-e", "cfitest:probe_me", "--call-graph", "dwarf", "--", wl, "entry", "50"])
    finally:
        append_line(events, "-:cfitest/probe_me")
    stacks = stacks_of(out)
    assert len(stacks) == 50, out[-2000:]
    assert all(s[:3] == ["probe_me", "entry_loop", "main"] for s in stacks), stacks[:3]


# ---------------------------------------------------------------- flame graph, pprof


def test_flame_graph_file(pp, wl, tmp_path):
    name = str(tmp_path / "cg")
    profile(pp, wl, DWARF + ["--flame-graph", name], "chain", "1000")
    counts = folded(name + ".folded")
    hot = {s: n for s, n in counts.items() if "hot" in s.split(";")}
    whole = sum(n for s, n in hot.items() if s.startswith("chain_nofp;") and ";main;a;b;hot" in s)
    print("\nfolded: %d of %d samples in hot under main;a;b" % (whole, sum(hot.values())))
    assert sum(hot.values()) > 700 and whole >= 0.95 * sum(hot.values()), sorted(hot.items())[:5]


def test_pprof(pp, wl, go_pprof, tmp_path):
    pb = str(tmp_path / "cg.pb.gz")
    profile(pp, wl, DWARF + ["--pprof", pb], "chain", "1000")
    counts = traces(go_pprof("-traces", "-sample_index=0", pb))
    hot = {s: n for s, n in counts.items() if "hot" in s.split(";")}
    whole = sum(n for s, n in hot.items() if ";main;a;b;hot" in s)
    print("\npprof: %d of %d samples in hot under main;a;b" % (whole, sum(hot.values())))
    assert sum(hot.values()) > 700 and whole >= 0.95 * sum(hot.values()), sorted(hot.items())[:5]


# ---------------------------------------------------------------- trace, task-state, kmemleak


def test_trace_syscall_stacks(pp, needs_root, wl):
    """Five clock_nanosleep system calls (230 on x86_64), each from nap <- b <- a <- main through
    libc's nanosleep."""
    out = ok(pp, ["trace", "-e", "raw_syscalls:sys_enter/id==230/", *DWARF, "--", wl, "sleep", "5", "10"])
    stacks = stacks_of(out)
    assert len(stacks) == 5, out[-3000:]
    for s in stacks:
        assert runs_of(s, ["nap", "b", "a", "main"]) and s.index("nap") >= 1, s


def test_task_state_sleep_stacks(pp, needs_root, wl):
    """Three sleeps of 100 ms: each reported one has the user stack of its switch-out."""
    out = ok(pp, ["task-state", "-S", "--than", "50ms", *DWARF, "--", "taskset", "-c", "0", wl, "sleep", "3", "100"])
    waits = [x for x in state_blocks(out) if x[0].group(3) == "WAIT" and x[0].group(2) == "chain_nofp"]
    assert 2 <= len(waits) <= 3, out[-3000:]  # a lost wake-up record leaves one out (see test_task_state)
    for m, events, stack in waits:
        names = [f for f, _ in user_frames(stack)]
        assert runs_of(names, ["nap", "b", "a", "main"]), stack


def test_kmemleak_allocation_stacks(pp, needs_root, wl):
    """Three eventfd contexts still held when perf-prof stops: one group whose stack is the
    kernel's do_eventfd, then the user part down to main."""
    b = pp.start(["kmemleak", "--alloc", EVENTFD_ALLOC, "--free", "kmem:kfree", *DWARF, "--", wl, "hold", "3",
                  "10000"])
    b.wait_line(r"^held$", timeout=15)
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=15)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    groups = leak_groups(out)
    assert [g[1] for g in groups] == [3], out
    stack = groups[0][3]
    assert any(" do_eventfd+0x" in l for l in stack), stack
    names = [f for f, _ in user_frames(stack)]
    assert runs_of(names, ["hold_fds", "b", "a", "main"]), stack


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("arg, msg", [
    ("foo", "--call-graph foo: expected fp or dwarf[,size]"),
    ("dwarf,0", "--call-graph dwarf,0: the stack size must be a number of bytes"),
    ("dwarf,70000", "--call-graph dwarf,70000: the stack size is at most 65528 bytes"),
])
def test_bad_input(pp, arg, msg):
    rc, out, err = pp.run(["profile", "-F", "997", "--call-graph", arg, "--", "true"])
    assert_not_crashed(rc)
    assert rc == 129 and out == "", (rc, out)  # a usage error (SPEC §1.8)
    assert err.splitlines() == ["perf-prof: %s (see 'perf-prof profile -h')" % msg], err
