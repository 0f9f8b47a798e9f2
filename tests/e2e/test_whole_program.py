"""Whole programs: with `-- COMMAND` or `-p PID` every profiler sees the threads and the
processes that the program creates after exec, and after the attach (inherited events, or
ptrace following for task-state), as perf record does; `--no-inherit` keeps to the tasks that
exist at the start.

The workload (tests/workloads/family.c) does its work only in the tasks it creates: THREADS
threads and FORKS child processes each burn MS ms of CPU in family_spin(), raise SIGUSR1 NAPS
times and make NAPS clock_nanosleep calls; its main thread does none of that."""

import re
import subprocess

import pytest

from conftest import Bg

THREADS, FORKS, MS, NAPS = 2, 2, 150, 10
WORKERS = THREADS + FORKS
ARGS = [str(THREADS), str(FORKS), str(MS), str(NAPS)]
FREQ = 997

LINE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} +(?P<comm>\S+) +(?P<pid>\d+) ")


def lines_of(out, needle):
    return [m for m in (LINE_RE.match(l) for l in out.splitlines() if needle in l) if m]


def ok(pp, args, timeout=60):
    rc, out, err = pp.run(args, timeout=timeout)
    assert rc == 0 and err == "", (rc, err, out[-2000:])
    return out


def run_attached(pp, args, workload, timeout=60):
    """perf-prof attached with -p to a family that creates its tasks only after the attach."""
    target = Bg([workload("family"), *ARGS, "go"], stdin=subprocess.PIPE)
    target.wait_line(r"^ready$")
    prof = pp.start_ready([*args, "-v", "-p", str(target.pid)])
    target.p.stdin.write("go\n")
    target.p.stdin.flush()
    assert target.finish(timeout=timeout)[0] == 0
    rc, out, err = prof.finish(timeout=20)  # the attached process is gone: it ends by itself
    assert rc == 0 and err == "", (rc, err, out[-2000:])
    return out


# The exact counts: every clock_nanosleep and every SIGUSR1 of the created tasks.
EXACT = [
    ("trace", ["trace", "-e", "syscalls:sys_enter_clock_nanosleep"], "sys_enter_clock_nanosleep"),
    ("signal", ["signal"], "sig=10 "),
]


@pytest.mark.parametrize("name,args,needle", EXACT, ids=[e[0] for e in EXACT])
def test_command_tasks_counted_exactly(pp, needs_root, workload, name, args, needle):
    out = ok(pp, [*args, "--", workload("family"), *ARGS])
    evs = lines_of(out, needle)
    assert len(evs) == WORKERS * NAPS, out[-3000:]
    assert {m.group("comm") for m in evs} == {"fam-thread", "fam-child"}
    assert len({m.group("pid") for m in evs}) == WORKERS
    # --no-inherit: only the command's own task, which makes none of these calls.
    out = ok(pp, [*args, "--no-inherit", "--", workload("family"), *ARGS])
    assert lines_of(out, needle) == []


@pytest.mark.parametrize("name,args,needle", EXACT, ids=[e[0] for e in EXACT])
def test_attached_process_tasks_counted_exactly(pp, needs_root, workload, name, args, needle):
    out = run_attached(pp, args, workload)
    evs = lines_of(out, needle)
    assert len(evs) == WORKERS * NAPS, out[-3000:]
    assert len({m.group("pid") for m in evs}) == WORKERS


def profile_samples(out):
    """The per-sample header lines of `profile -g` whose stack is in family_spin."""
    samples, head = [], None
    for line in out.splitlines():
        m = LINE_RE.match(line)
        if m:
            head = m
        elif head is not None and " family_spin+" in line:
            samples.append(head)
            head = None
    return samples


def check_profile(samples):
    # Each worker burns MS ms of its own CPU time: the cpu-clock samples of the created tasks,
    # at FREQ a second, come to WORKERS x MS x FREQ / 1000 (a sample is a period of task clock).
    expected = WORKERS * MS * FREQ / 1000
    assert 0.8 * expected <= len(samples) <= 1.15 * expected, (len(samples), expected)
    comms = {m.group("comm") for m in samples}
    assert comms == {"fam-thread", "fam-child"}, comms
    assert len({m.group("pid") for m in samples}) == WORKERS


def test_profile_of_a_command_sees_its_threads_and_children(pp, needs_root, workload):
    out = ok(pp, ["profile", "--print-samples", "-F", str(FREQ), "-g", "--", workload("family"), *ARGS])
    check_profile(profile_samples(out))
    out = ok(pp, ["profile", "--print-samples", "-F", str(FREQ), "-g", "--no-inherit", "--", workload("family"), *ARGS])
    assert profile_samples(out) == []


def test_profile_of_an_attached_process_sees_tasks_created_later(pp, needs_root, workload):
    check_profile(profile_samples(run_attached(pp, ["profile", "--print-samples", "-F", str(FREQ), "-g"], workload)))


def test_profile_flame_graph_of_a_command(pp, needs_root, workload, tmp_path):
    """README's first example on a program whose work runs in its threads and children."""
    name = str(tmp_path / "fam")
    ok(pp, ["profile", "-F", str(FREQ), "-g", "--flame-graph", name, "--", workload("family"), *ARGS])
    by_root = {}
    for line in open(name + ".folded"):
        stack, count = line.rsplit(" ", 1)
        if "family_spin" in stack:
            # The root frame names the process: the threads' is the command's own name.
            frames = stack.split(";")
            root = frames[0] + (";thread" if "thread_main" in frames else "")
            by_root[root] = by_root.get(root, 0) + int(count)
    assert set(by_root) == {"family;thread", "fam-child"}, by_root
    expected = WORKERS * MS * FREQ / 1000
    assert 0.8 * expected <= sum(by_root.values()) <= 1.15 * expected, (by_root, expected)


NAPS_PAIR = ["multi-trace", "-e", "syscalls:sys_enter_clock_nanosleep",
             "-e", "syscalls:sys_exit_clock_nanosleep", "-k", "common_pid"]


def nanosleep_pairs(out):
    rows = [l.split() for l in out.splitlines() if l.startswith("sys_enter_clock_nanosleep =>")]
    assert len(rows) == 1, out
    return int(rows[0][3])


def test_multi_trace_pairs_of_a_command(pp, needs_root, workload):
    out = ok(pp, [*NAPS_PAIR, "--", workload("family"), *ARGS])
    assert nanosleep_pairs(out) == WORKERS * NAPS
    out = ok(pp, [*NAPS_PAIR, "--no-inherit", "--", workload("family"), *ARGS])
    assert "sys_enter_clock_nanosleep =>" not in out or nanosleep_pairs(out) == 0


def test_multi_trace_pairs_of_an_attached_process(pp, needs_root, workload):
    assert nanosleep_pairs(run_attached(pp, NAPS_PAIR, workload)) == WORKERS * NAPS


def test_kmemleak_of_a_command(pp, needs_root, workload):
    """kmemleak's alloc/free pairing over any events: each nap of a created task is an
    'allocation' (sys_enter, keyed by the task) freed by its sys_exit."""
    out = ok(pp, ["kmemleak", "--alloc", "syscalls:sys_enter_clock_nanosleep//ptr=common_pid/",
                  "--free", "syscalls:sys_exit_clock_nanosleep//ptr=common_pid/",
                  "--", workload("family"), *ARGS])
    m = re.search(r"TOTAL alloc (\d+) free (\d+)", out)
    assert m and int(m.group(1)) == WORKERS * NAPS and int(m.group(2)) == WORKERS * NAPS, out


def task_state_rows(out, comm):
    """(state, calls) of --perins rows of the tasks named comm."""
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) > 3 and f[1] == comm and f[3].isdigit():
            rows.append((f[2], int(f[3])))
    return rows


@pytest.mark.parametrize("attach", ["command", "pid"])
def test_task_state_follows_created_tasks(pp, needs_root, workload, attach):
    args = ["task-state", "--perins"]
    if attach == "command":
        out = ok(pp, [*args, "--", workload("family"), *ARGS])
    else:
        out = run_attached(pp, args, workload)
    for comm in ("fam-thread", "fam-child"):
        rows = task_state_rows(out, comm)
        assert any(state == "R" for state, _ in rows), (comm, out[-3000:])
