"""End-to-end tests of `perf-prof trace` (SPEC §4.3) and the event language (§2): exact counts
of syscall tracepoints, kernel filters, the user-space filter fallback, --order across CPUs,
-N, uprobes, exec=, nested profilers, --inherit, --overwrite, the help word, and the error
messages of bad event lists.

Workloads (tests/workloads): `syscalls MODE N [K]` makes an exact number of system calls
(getpid, close(1000+i%K), lseek(1000+i%K, i, 0), fork, two pinned threads); `ufunc N` calls
pp_target() N times and pp_other() N/2 times; `sigself N` sends itself N signals."""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import WALL_RE, assert_not_crashed, perf_stat_count

# {WALL} {M} {comm:>16} {pid:>6} {LAT} [{cpu:03}] {sec}.{usec:06}: {sys}:{name}: {INFO}
TRACE_RE = re.compile(
    r"^(?P<wall>" + WALL_RE + r") (?P<m>[ G]) "
    r"(?P<commf>.{16}) (?P<pidf> *\d+) "
    r"(?P<lat>[.Ddb][.BNLbnpl][.ZzHhs][.0-9a-f][0-9a-f]?) "
    r"\[(?P<cpu>\d{3}|---)\] "
    r"(?P<sec>\d+)\.(?P<usec>\d{6}): (?P<event>[^ :]+:[^ :]+): (?P<info>.*)$")


class Ev:
    __slots__ = ("line", "comm", "pid", "cpu", "ts", "event", "info")


def parse(text, allow=()):
    """Every stdout line must be a trace line, except those in `allow` (exact) or matching
    one of the regexes in `allow`."""
    events, bad = [], []
    for line in text.splitlines():
        if line in allow or any(isinstance(a, re.Pattern) and a.search(line) for a in allow):
            continue
        m = TRACE_RE.match(line)
        if not m or m.group("commf") != m.group("commf").lstrip().rjust(16):
            bad.append(line)
            continue
        e = Ev()
        e.line = line
        e.comm = m.group("commf").lstrip()
        e.pid = int(m.group("pidf"))
        e.cpu = -1 if m.group("cpu") == "---" else int(m.group("cpu"))
        e.ts = int(m.group("sec")) * 1000000 + int(m.group("usec"))
        e.event = m.group("event")
        e.info = m.group("info")
        events.append(e)
    assert not bad, "unexpected / malformed stdout lines:\n" + "\n".join(bad[:20])
    return events


def trace(pp, args, timeout=60):
    rc, out, err = pp.run(["trace"] + args, timeout=timeout)
    assert_not_crashed(rc)
    return rc, out, err


def ok(pp, args, timeout=60):
    rc, out, err = trace(pp, args, timeout)
    assert rc == 0, "rc=%d\n%s\n%s" % (rc, out[-2000:], err)
    assert err == "", "a normal run writes nothing on stderr:\n" + err
    return out


# --------------------------------------------------------------------------- exact counts

@pytest.mark.parametrize("n", [1, 2000])
def test_getpid_exact_count_matches_perf_stat(pp, needs_root, workload, n):
    wl = workload("syscalls")
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "--", wl, "getpid", str(n)])
    evs = parse(out)
    assert len(evs) == n
    assert {e.event for e in evs} == {"syscalls:sys_enter_getpid"}
    assert {e.comm for e in evs} == {"syscalls"}
    assert len({e.pid for e in evs}) == 1
    assert all(b.ts >= a.ts for a, b in zip(evs, evs[1:]))
    ref = perf_stat_count("syscalls:sys_enter_getpid", [wl, "getpid", str(n)])
    if ref is not None:
        assert ref == n == len(evs)


def test_kernel_filter_on_argument(pp, needs_root, workload):
    # close(1000 + i % 10) for i < 1000: exactly 100 calls have fd == 1003.
    out = ok(pp, ["-e", "syscalls:sys_enter_close/fd==1003/", "--", workload("syscalls"), "close", "1000", "10"])
    evs = parse(out)
    assert len(evs) == 100
    assert all("fd: 0x000003eb" in e.info for e in evs), evs[0].info


def test_kernel_filter_two_conditions(pp, needs_root, workload):
    out = ok(pp, ["-e", "syscalls:sys_enter_close/fd>=1003 && fd<1005/", "--", workload("syscalls"),
                  "close", "1000", "10"])
    assert len(parse(out)) == 200


def test_userspace_fallback_field_versus_field(pp, needs_root, workload):
    # lseek(1000 + i % 10, i, 0) for i < 3000: offset < fd holds for i < 1000 only.
    note = "syscalls:sys_enter_lseek filters 'offset<fd' in userspace"
    out = ok(pp, ["-e", "syscalls:sys_enter_lseek/offset<fd/", "--", workload("syscalls"), "lseek", "3000", "10"])
    assert out.splitlines()[0] == note
    evs = parse(out, allow=(note,))
    assert len(evs) == 1000
    offsets = sorted(int(re.search(r"offset: 0x([0-9a-f]+)", e.info).group(1), 16) for e in evs)
    assert offsets == list(range(1000))


def test_userspace_fallback_arithmetic_and_glob(pp, needs_root, workload):
    # fd - 1000 == 7 is arithmetic (kernel refuses it); comm glob keeps the workload only.
    f = '(fd-1000==7) && comm_get(_pid) ~ "sysc*"'
    out = ok(pp, ["-e", "syscalls:sys_enter_close/%s/" % f, "--", workload("syscalls"), "close", "500", "10"])
    evs = parse(out, allow=(re.compile(r"filters '.*' in userspace$"),))
    assert len(evs) == 50
    # Two task names alive in one expression, the workload's and init's.
    f = "comm_get(_pid) == comm_get(common_pid) && comm_get(_pid) != comm_get(1) && fd == 1002"
    out = ok(pp, ["-e", "syscalls:sys_enter_close/%s/" % f, "--", workload("syscalls"), "close", "500", "10"])
    assert len(parse(out, allow=(re.compile(r"filters '.*' in userspace$"),))) == 50


def test_exit_after_n(pp, needs_root, workload):
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "-N", "7", "--", workload("syscalls"), "getpid", "1000"])
    assert len(parse(out)) == 7


def test_exit_after_n_counts_only_kept_samples(pp, needs_root, workload):
    # The user-space filter drops samples before -N counts them (SPEC §2.6.2).
    out = ok(pp, ["-e", "syscalls:sys_enter_lseek/offset<fd/", "-N", "5", "--", workload("syscalls"),
                  "lseek", "3000", "10"])
    evs = parse(out, allow=(re.compile(r"filters '.*' in userspace$"),))
    assert len(evs) == 5


def test_several_e_are_joined_and_wildcards(pp, needs_root, workload):
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "-e", "syscalls:sys_exit_getpid", "--",
                  workload("syscalls"), "getpid", "300"])
    evs = parse(out)
    assert len(evs) == 600
    names = [e.event for e in evs]
    assert names.count("syscalls:sys_enter_getpid") == 300
    # One thread, one ring: enter and exit alternate.
    assert all(a != b for a, b in zip(names, names[1:]))
    out = ok(pp, ["-e", "syscalls:sys_*_getpid", "--", workload("syscalls"), "getpid", "300"])
    assert len(parse(out)) == 600


def test_inherit_follows_children(pp, needs_root, workload):
    """A command's children are followed by default (as perf record does); --no-inherit keeps
    to the command's own task; --inherit is still accepted."""
    wl = workload("syscalls")
    for extra in ([], ["--inherit"]):
        evs = parse(ok(pp, ["-e", "syscalls:sys_enter_getpid", *extra, "--", wl, "fork", "300"]))
        assert len(evs) == 600
        assert len({e.pid for e in evs}) == 2
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "--no-inherit", "--", wl, "fork", "300"])
    assert len(parse(out)) == 300


# --------------------------------------------------------------------------- ordering

@pytest.mark.parametrize("order", [True])
def test_order_across_cpus(pp, needs_root, workload, order):
    """Two threads on CPU 0 and CPU 1 make getpid calls; system-wide with --order the merged
    stream has non-decreasing timestamps and enter/exit strictly alternating per thread."""
    # The two threads keep both CPUs busy, so perf-prof may not run before they finish:
    # 2 x 1000 records of ~90 bytes per CPU must fit in the ring (-m 128 = 512 KiB).
    n = 1000
    args = ["trace", "-e", "syscalls:sys_enter_getpid,syscalls:sys_exit_getpid", "-C", "0-1", "-v",
            "-m", "128"]
    if order:
        args.append("--order")
    b = pp.start(args)
    b.wait_line(r"trace: enabled after")
    rc = subprocess.run([workload("syscalls"), "threads", str(n)], timeout=60).returncode
    assert rc == 0
    time.sleep(0.5)
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=20)
    assert rc == 0 and err == "", err
    evs = parse(out, allow=(re.compile(r"^trace: enabled after"),))
    assert all(b_.ts >= a.ts for a, b_ in zip(evs, evs[1:])), "timestamps go backwards"
    mine = [e for e in evs if e.comm == "syscalls"]
    per_tid = {}
    for e in mine:
        per_tid.setdefault(e.pid, []).append(e)
    busy = {t: l for t, l in per_tid.items() if len(l) >= 2 * n}
    assert len(busy) == 2, {t: len(l) for t, l in per_tid.items()}
    for tid, l in busy.items():
        assert len(l) == 2 * n
        names = [e.event for e in l]
        assert names[0] == "syscalls:sys_enter_getpid"
        assert all(a != b_ for a, b_ in zip(names, names[1:])), "enter/exit do not alternate for %d" % tid
        assert len({e.cpu for e in l}) == 1
    assert {l[0].cpu for l in busy.values()} == {0, 1}


# --------------------------------------------------------------------------- probes

def test_uprobe_counts(pp, needs_root, workload):
    wl = workload("ufunc")
    out = ok(pp, ["-e", 'uprobe:pp_target@"%s"' % wl, "--", wl, "400"])
    evs = parse(out)
    assert len(evs) == 400
    assert {e.event for e in evs} == {"uprobe:pp_target"}
    assert all(re.fullmatch(r"\(0x[0-9a-f]+\)", e.info) for e in evs)
    out = ok(pp, ["-e", 'uprobe:pp_other@"%s",uretprobe:pp_target@"%s"' % (wl, wl), "--", wl, "400"])
    evs = parse(out)
    assert sum(e.event == "uprobe:pp_other" for e in evs) == 200
    rets = [e for e in evs if e.event == "uretprobe:pp_target"]
    assert len(rets) == 400
    assert all(re.fullmatch(r"\(0x[0-9a-f]+ <- 0x[0-9a-f]+\)", e.info) for e in rets)


def test_uprobe_filter_on_common_pid(pp, needs_root, workload):
    wl = workload("ufunc")
    out = ok(pp, ["-e", 'uprobe:pp_target@"%s"/common_pid>0/' % wl, "--", wl, "50"])
    assert len(parse(out)) == 50


def test_kprobe_without_pmu_is_a_clear_error(pp, needs_root):
    if os.path.exists("/sys/bus/event_source/devices/kprobe"):
        pytest.skip("this kernel has a kprobe PMU")
    rc, out, err = trace(pp, ["-e", "kprobe:do_sys_openat2", "-N", "1"])
    assert rc != 0
    assert len(err.splitlines()) == 1 and "kprobe" in err, err


# --------------------------------------------------------------------------- attributes, nesting

def test_exec_printf_after_each_line(pp, needs_root, workload):
    out = ok(pp, ["-e", r'syscalls:sys_enter_close/fd==1003/exec=printf("fd=%d pid_ok=%d\n",fd,_pid>0)/',
                  "--", workload("syscalls"), "close", "100", "10"])
    lines = out.splitlines()
    assert len(lines) == 20
    for ev, ex in zip(lines[0::2], lines[1::2]):
        assert TRACE_RE.match(ev), ev
        assert ex == "fd=1003 pid_ok=1"


def test_nested_signal_profiler(pp, needs_root, workload):
    out = ok(pp, ["-e", "signal:signal_deliver,signal", "--", workload("sigself"), "5", "--silent"])
    deliver = [l for l in out.splitlines() if "signal:signal_deliver:" in l]
    generate = [l for l in out.splitlines() if "signal:signal_generate:" in l]
    assert len(deliver) == 5 and len(generate) == 5, out
    assert all(TRACE_RE.match(l) for l in deliver)
    # The nested profiler prints its own lines: WALL, then the task, no host/guest column.
    assert all(re.match(WALL_RE + r" {1,16}sigself ", l) for l in generate), generate
    assert len(out.splitlines()) == 10


def test_nested_profiler_options_apply_to_the_child(pp, needs_root, workload):
    out = ok(pp, ["-e", "signal:signal_deliver,signal/-N 2/", "--", workload("sigself"), "5", "--silent"])
    assert sum("signal:signal_deliver:" in l for l in out.splitlines()) == 5
    assert sum("signal:signal_generate:" in l for l in out.splitlines()) == 2


def test_cpus_attribute(pp, needs_root, workload):
    # Only CPU 1 for the event: a workload pinned to CPU 0 is not seen.
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid/common_pid>0/cpus=1/", "-N", "1", "-i", "200",
                  "--", "taskset", "-c", "1", workload("syscalls"), "getpid", "10"])
    evs = parse(out)
    assert evs and all(e.cpu == 1 for e in evs)


def test_overwrite_keeps_the_newest(pp, needs_root, workload):
    out = ok(pp, ["-e", "syscalls:sys_enter_getpid", "--overwrite", "-m", "1", "--",
                  workload("syscalls"), "getpid", "20000"])
    evs = parse(out)
    # One page holds far fewer than 20000 samples: only the newest survive, oldest first.
    assert 10 < len(evs) < 20000
    assert all(b.ts >= a.ts for a, b in zip(evs, evs[1:]))


# --------------------------------------------------------------------------- help word, list

def test_help_word_prints_template_and_format(pp, needs_root):
    rc, out, err = pp.run(["trace", "-e", "sched:sched_wakeup/pid>1/", "--order", "help"])
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0] == ""
    assert lines[1].startswith('perf-prof trace -e "sched:sched_wakeup/pid>1/[stack/]" --order ')
    assert "[-C .]" in lines[1]
    i = lines.index("sched:sched_wakeup")
    assert lines[i + 1] == "name: sched_wakeup"
    assert any(l.strip().startswith("field:pid_t pid;") for l in lines)
    assert any(l.startswith("print fmt:") for l in lines)


def test_help_word_without_events_says_how_it_is_used(pp):
    # SPEC §1.10 step 1 printed nothing and exited 0.
    rc, out, err = pp.run(["trace", "help"])
    assert (rc, out) == (129, "")
    assert err == ("perf-prof: help describes the events given with -e before it (e.g. perf-prof trace -e "
                   "sched:sched_switch help); 'perf-prof trace -h' lists trace's options\n")


def test_help_word_uprobe_synthetic_format(pp, needs_root, workload):
    wl = workload("ufunc")
    rc, out, err = pp.run(["trace", "-e", 'uretprobe:pp_target@"%s"' % wl, "help"])
    assert rc == 0 and err == "", err
    assert "field:unsigned long __probe_func;\toffset:8;" in out
    assert "field:unsigned long __probe_ret_ip;\toffset:16;" in out


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("spec,message", [
    ("nosuch:event", "nosuch:event not found"),
    ("sched:sched_wakeup//bogus=1/", "Syntax error: Unknown attr bogus"),
    ("sched:sched_wakeup/pid>1", "sched:sched_wakeup/pid>1"),
    ("sched:sched_wakeup/pid>1/stack", "Syntax error: stack"),
    ("nosuchprofiler", "profiler nosuchprofiler not found"),
    ("signal:no_such_tracepoint", "signal:no_such_tracepoint not found"),
    ("sched:nosuch_*", "No events matching pattern 'sched:nosuch_*'"),
])
def test_bad_event_lists(pp, needs_root, spec, message):
    rc, out, err = trace(pp, ["-e", spec, "-N", "1"])
    assert rc != 0
    assert len(err.splitlines()) == 1, err
    assert message in err, err


def test_malformed_filter(pp, needs_root):
    rc, out, err = trace(pp, ["-e", "syscalls:sys_enter_close/fd===3/", "-N", "1"])
    assert rc != 0
    assert "syscalls:sys_enter_close filter 'fd===3' failed" in err
    assert len(err.splitlines()) == 1, err
    # The expression compiler's diagnostics go to stdout (SPEC §2.7.8).
    assert "Available variables:" in out


def test_bad_exec_expression(pp, needs_root):
    rc, out, err = trace(pp, ["-e", "syscalls:sys_enter_close//exec=nosuch+1/", "-N", "1"])
    assert rc != 0
    assert len(err.splitlines()) == 1 and "exec" in err, err
    assert "^" in out and "Available variables:" in out


def test_missing_event_list(pp, needs_root):
    rc, out, err = trace(pp, ["-N", "1"])
    assert rc != 0 and len(err.splitlines()) == 1 and "-e" in err, err
