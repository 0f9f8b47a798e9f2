"""End-to-end tests of `perf-prof sql` (SPEC-PROFILERS §P2): every command line of the SPEC
(Form A, Form B, the JSON vectors; the Form A queries of one event list batched into one
--query), exact row counts against `perf stat` on the syscalls workload, the --output2 file
read by Python's sqlite3 and by the sqlite3 CLI, a SIGINT at a random moment leaving a
consistent file, help and bad input. The runs of the SPEC's lines go in parallel (module
fixture): each is interrupted after its first interval."""

import concurrent.futures
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import WALL_RE, assert_not_crashed, perf_stat_count

FORM_A = """
sched:sched_wakeup  ::  SELECT COUNT(*) as count FROM sched_wakeup
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm ORDER BY count DESC LIMIT 10
sched:sched_switch  ::  SELECT _cpu, COUNT(*) as count FROM sched_switch GROUP BY _cpu
sched:sched_wakeup/prio<10/  ::  SELECT comm, prio, COUNT(*) as count FROM sched_wakeup GROUP BY comm, prio LIMIT 10
sched:sched_wakeup  ::  SELECT COUNT(*) as total FROM sched_wakeup; SELECT AVG(prio) as avg_prio FROM sched_wakeup
sched:sched_wakeup,sched:sched_switch  ::  SELECT COUNT(*) as wakeups FROM sched_wakeup; SELECT COUNT(*) as switches FROM sched_switch
sched:sched_wakeup,sched:sched_switch  ::  SELECT w.comm, COUNT(*) as count FROM sched_wakeup w, sched_switch s WHERE w.pid = s.next_pid GROUP BY w.comm LIMIT 5
sched:sched_wakeup//alias=wakeup/  ::  SELECT comm, COUNT(*) as count FROM wakeup GROUP BY comm LIMIT 10
sched:sched_wakeup/prio<10/alias=high_prio/,sched:sched_wakeup/prio>=10/alias=low_prio/  ::  SELECT COUNT(*) as high FROM high_prio; SELECT COUNT(*) as low FROM low_prio
sched:sched_wakeup/prio<10/alias=high_prio/,sched:sched_wakeup/prio>=10/alias=low_prio/  ::  SELECT "high" as type, COUNT(*) as count FROM high_prio UNION SELECT "low", COUNT(*) as count FROM low_prio
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup WHERE prio < 100 GROUP BY comm LIMIT 10
sched:sched_wakeup  ::  SELECT MIN(prio) as min_prio, MAX(prio) as max_prio, AVG(prio) as avg_prio, COUNT(*) as total FROM sched_wakeup
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm ORDER BY count DESC LIMIT 5
sched:sched_wakeup  ::  SELECT _cpu, _pid, COUNT(*) as count FROM sched_wakeup GROUP BY _cpu, _pid LIMIT 10
sched:sched_wakeup/pid<prio/  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm LIMIT 10
sched:sched_wakeup//cpus=0/  ::  SELECT _cpu, COUNT(*) as count FROM sched_wakeup GROUP BY _cpu
sched:sched_wakeup  ::  SELECT COUNT(DISTINCT comm) as unique_comms FROM sched_wakeup
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm HAVING count > 1 LIMIT 10
irq:softirq_entry  ::  SELECT symbolic('vec', vec) as irq_name, vec, COUNT(*) as count FROM softirq_entry GROUP BY vec ORDER BY count DESC LIMIT 10
irq:softirq_entry  ::  SELECT symbolic('softirq_entry.vec', vec) as irq_name, vec FROM softirq_entry LIMIT 5
irq:softirq_entry,irq:softirq_exit  ::  SELECT symbolic('vec', e.vec) as irq_name, COUNT(*) as entry_count FROM softirq_entry e GROUP BY e.vec LIMIT 10
irq:softirq_entry  ::  SELECT symbolic('vec', 999) as result FROM softirq_entry LIMIT 1
irq:softirq_entry  ::  SELECT symbolic('vec', vec) as irq_name, COUNT(*) as count FROM softirq_entry GROUP BY irq_name ORDER BY count DESC
irq:softirq_entry  ::  SELECT vec as vec_num, symbolic('vec', vec) as vec_name, _cpu, COUNT(*) as count FROM softirq_entry GROUP BY vec, _cpu LIMIT 20
irq:softirq_entry/vec<5/  ::  SELECT symbolic('vec', vec) as irq_name, vec, COUNT(*) as count FROM softirq_entry GROUP BY vec ORDER BY count DESC
timer:hrtimer_expire_entry  ::  SELECT ksymbol(function) as func_name, function, COUNT(*) as count FROM hrtimer_expire_entry GROUP BY function ORDER BY count DESC LIMIT 10
workqueue:workqueue_execute_start  ::  SELECT ksymbol(function) as work_func, COUNT(*) as executions FROM workqueue_execute_start GROUP BY function ORDER BY executions DESC LIMIT 10
sched:sched_wakeup//index=pid/  ::  SELECT target_cpu, COUNT(*) as count FROM sched_wakeup WHERE target_cpu < 4 GROUP BY target_cpu
kvm:kvm_exit  ::  SELECT symbolic(exit_reason) as reason, COUNT(*) as count FROM kvm_exit GROUP BY exit_reason ORDER BY count DESC LIMIT 10
irq:softirq_entry  ::  SELECT symbolic(vec) as irq_type, COUNT(*) as count FROM softirq_entry GROUP BY vec ORDER BY count DESC LIMIT 10
kvm:kvm_exit  ::  SELECT table_name, function_list FROM event_metadata
syscalls:sys_enter_openat  ::  SELECT syscall(__syscall_nr) as sys_name, COUNT(*) as count FROM sys_enter_openat
sched:sched_wakeup  ::  SELECT pid, comm, COUNT(*) as count FROM sched_wakeup WHERE pid > 100 AND prio = 120 GROUP BY pid LIMIT 10
sched:sched_wakeup  ::  SELECT pid, comm, COUNT(*) as count FROM sched_wakeup WHERE pid < 100 OR pid > 2000 GROUP BY pid
sched:sched_wakeup  ::  SELECT pid, comm, COUNT(*) as count FROM sched_wakeup WHERE pid = 1 GROUP BY pid, comm LIMIT 10
sched:sched_wakeup  ::  SELECT pid, COUNT(*) as count FROM sched_wakeup WHERE pid > 100 AND pid < 2000 GROUP BY pid
sched:sched_wakeup  ::  SELECT _time, COUNT(*) as count FROM sched_wakeup GROUP BY _time ORDER BY _time ASC LIMIT 10
sched:sched_wakeup  ::  SELECT _time, COUNT(*) as count FROM sched_wakeup GROUP BY _time ORDER BY _time DESC LIMIT 10
sched:sched_wakeup  ::  SELECT _time, COUNT(*) as count FROM sched_wakeup WHERE pid < 1000 GROUP BY _time ORDER BY _time DESC LIMIT 10
sched:sched_wakeup  ::  SELECT pid, COUNT(*) as count FROM sched_wakeup WHERE pid != 0 AND pid > 10 AND pid < 100 GROUP BY pid
sched:sched_wakeup  ::  SELECT pid, COUNT(*) as count FROM sched_wakeup WHERE pid > 100 AND pid <= 500 AND pid != 200 AND pid != 10 AND pid != 500 GROUP BY pid
sched:sched_wakeup  ::  SELECT pid, COUNT(*) as count FROM sched_wakeup WHERE pid > 0 GROUP BY pid ORDER BY pid LIMIT 20
"""

FORM_B = """
sched:sched_wakeup  ::  SELECT COUNT(*) as count FROM sched_wakeup
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm ORDER BY count DESC LIMIT 10
sched:sched_wakeup  ::  SELECT pid, comm, COUNT(*) as count FROM sched_wakeup WHERE pid > 100 GROUP BY pid, comm LIMIT 10
sched:sched_wakeup//index=pid/  ::  SELECT pid, comm, COUNT(*) as count FROM sched_wakeup WHERE pid > 1000 GROUP BY pid ORDER BY pid LIMIT 10
sched:sched_wakeup//index=comm/  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup WHERE comm GLOB '*' GROUP BY comm ORDER BY comm LIMIT 10
sched:sched_wakeup  ::  SELECT COUNT(*) as total FROM sched_wakeup; SELECT comm, AVG(prio) as avg_prio FROM sched_wakeup GROUP BY comm LIMIT 5
sched:sched_wakeup  ::  SELECT MIN(prio) as min_p, MAX(prio) as max_p, AVG(prio) as avg_p, COUNT(*) as total FROM sched_wakeup
sched:sched_wakeup  ::  SELECT _time, pid FROM sched_wakeup ORDER BY _time ASC LIMIT 10
sched:sched_wakeup  ::  SELECT _time, pid FROM sched_wakeup ORDER BY _time DESC LIMIT 10
sched:sched_wakeup  ::  SELECT pid, COUNT(*) as count FROM sched_wakeup WHERE pid != 0 AND pid > 10 AND pid < 1000 GROUP BY pid LIMIT 10
sched:sched_wakeup,sched:sched_switch  ::  SELECT COUNT(*) as wakeups FROM sched_wakeup; SELECT COUNT(*) as switches FROM sched_switch
sched:sched_wakeup//alias=wakeup/  ::  SELECT comm, COUNT(*) as count FROM wakeup GROUP BY comm LIMIT 10
sched:sched_wakeup  ::  SELECT COUNT(DISTINCT comm) as unique_comms FROM sched_wakeup
sched:sched_wakeup  ::  SELECT comm, COUNT(*) as count FROM sched_wakeup GROUP BY comm HAVING count > 1 LIMIT 10
"""

JSON = [
    ["sql", "-e", "sched:sched_wakeup", "--output2", "test_events.db", "-i", "1000", "-m", "64", "--query", "SELECT COUNT(*) as count FROM sched_wakeup"],
    ["sql", "-e", "sched:sched_wakeup", "--output2", "test_events_only.db", "-i", "2000", "-m", "64"],
    ["sql", "-e", "irq:softirq_entry", "--output2", "test_symbolic.db", "-i", "1000", "-m", "64", "--query", "SELECT symbolic('vec', vec) as irq_name, COUNT(*) as count FROM softirq_entry GROUP BY vec"],
    ["sql", "-e", "tcp:tcp_probe", "-i", "2000", "-m", "64", "--query", "SELECT ipsa_str(saddr) as source, ipsa_str(daddr) as dest, COUNT(*) as probes FROM tcp_probe GROUP BY source, dest ORDER BY probes DESC LIMIT 10"],
    ["sql", "-e", "sock:inet_sock_set_state", "-i", "2000", "-m", "64", "--query", "SELECT ipv4_str(saddr) as source_ip, ipv4_str(daddr) as dest_ip, COUNT(*) as transitions FROM inet_sock_set_state GROUP BY source_ip, dest_ip ORDER BY transitions DESC LIMIT 10"],
    ["sql", "-e", "sock:inet_sock_set_state/family==10/", "-i", "2000", "-m", "64", "--query", "SELECT ipv6_str(saddr_v6) as source_ipv6, ipv6_str(daddr_v6) as dest_ipv6, COUNT(*) as transitions FROM inet_sock_set_state GROUP BY source_ipv6, dest_ipv6 ORDER BY transitions DESC LIMIT 10"],
    ["sql", "-e", "raw_syscalls:sys_enter", "-i", "1000", "-m", "512", "--query", "SELECT syscall(id) as sys_name, COUNT(*) as count FROM sys_enter GROUP BY id ORDER BY count DESC LIMIT 10"],
    ["sql", "-e", "sched:sched_wakeup", "--output2", "test_verify_disabled.db", "--verify", "-i", "1000", "-m", "64", "--query", "SELECT COUNT(*) as count FROM sched_wakeup"],
]


def grouped(text):
    """(event list, [queries]) in first-seen order: the queries of one list run together."""
    groups = {}
    for line in text.strip().splitlines():
        e, q = line.split("  ::  ")
        groups.setdefault(e, []).append(q)
    return list(groups.items())


def statements(queries):
    """The statement texts perf-prof shows: split on '; ', the ';' kept on all but the last."""
    parts = "; ".join(queries).split("; ")
    return [p + ";" for p in parts[:-1]] + [parts[-1]]


def interrupted(argv, seconds, cwd):
    """Runs argv, SIGINT after `seconds`; (rc, out, err)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=cwd)
    time.sleep(seconds)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out, err + "\n(did not stop on SIGINT)"
    return p.returncode, out, err


@pytest.fixture(scope="module")
def spec_runs(pp, tmp_path_factory):
    """Every SPEC command line, run concurrently, each interrupted once its first 1 s (or 2 s)
    interval has printed. Returns {key: (argv, statements, rc, out, err)} and the directory."""
    d = tmp_path_factory.mktemp("sql")
    jobs = {}
    for i, (e, qs) in enumerate(grouped(FORM_A)):
        jobs["A%d" % i] = (["sql", "-e", e, "-i", "1000", "-m", "64", "--query", "; ".join(qs)], statements(qs))
    for i, (e, qs) in enumerate(grouped(FORM_B)):
        jobs["B%d" % i] = (["sql", "-e", e, "-i", "1000", "-m", "64", "--verify", "--query", "; ".join(qs)],
                           statements(qs))
    for i, argv in enumerate(JSON):
        q = argv[argv.index("--query") + 1] if "--query" in argv else None
        jobs["J%d" % i] = (argv, statements([q]) if q else [])
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as ex:
        futs = {}
        for key, (argv, st) in jobs.items():
            secs = 2.4 if "2000" in argv else 1.4
            futs[ex.submit(interrupted, [pp.path] + argv, secs, str(d))] = key
        for f in concurrent.futures.as_completed(futs):
            key = futs[f]
            results[key] = jobs[key] + f.result()
    return results, d


LOST_RE = re.compile(r"^" + WALL_RE + r" sql: lost \d+ events")


def check_blocks(argv, stmts, rc, out, err):
    what = " ".join(argv)
    assert rc == 0, "%s: rc=%s\n%s" % (what, rc, err)
    # The SPEC's lines use -m 64: a storm elsewhere on the machine (another bench) may overrun
    # those rings; a loss notice is then the only stderr line allowed.
    assert all(LOST_RE.search(l) for l in err.splitlines()), "%s: stderr %r" % (what, err)
    lines = out.splitlines()
    assert any(re.fullmatch(WALL_RE + " ", l) for l in lines), what
    for st in stmts:
        head = "=== %s ===" % st
        assert head in lines, "%s: no block %r in\n%s" % (what, head, out)
        i = lines.index(head)
        # The column line: the result's names; then the rule of dashes.
        assert lines[i + 1].strip(), what
        assert re.fullmatch(r"-+(-\+-+)*", lines[i + 2]), "%s: %r" % (what, lines[i + 2])
        names = [n.strip() for n in lines[i + 1].split(" | ")]
        assert len(names) == lines[i + 2].count("-+-") + 1


def test_form_a(spec_runs):
    results, _ = spec_runs
    keys = [k for k in results if k.startswith("A")]
    assert len(keys) == len(grouped(FORM_A))
    for k in keys:
        check_blocks(*results[k])


def test_form_b_verify(spec_runs):
    results, _ = spec_runs
    for k in [k for k in results if k.startswith("B")]:
        argv, stmts, rc, out, err = results[k]
        check_blocks(argv, stmts, rc, out, err)
        assert "Creating verification database: verify_temp.db" in out.splitlines()
    assert not os.path.exists(os.path.join(str(spec_runs[1]), "verify_temp.db"))


def test_json_vectors(spec_runs):
    results, d = spec_runs
    for k in [k for k in results if k.startswith("J")]:
        argv, stmts, rc, out, err = results[k]
        if stmts:
            check_blocks(argv, stmts, rc, out, err)
        else:
            assert rc == 0 and all(LOST_RE.search(l) for l in err.splitlines()), err
            assert re.search(r"^Total Inserts: \d+$", out, re.M), out
    assert "--verify disabled: cannot verify when SQL output is saved to file" in results["J7"][3]
    for name, table in [("test_events.db", "sched_wakeup"), ("test_events_only.db", "sched_wakeup"),
                        ("test_symbolic.db", "softirq_entry"), ("test_verify_disabled.db", "sched_wakeup")]:
        con = sqlite3.connect(os.path.join(str(d), name))
        assert con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] >= 1
        con.execute("SELECT COUNT(*) FROM %s" % table).fetchone()
        con.close()


def test_symbolic_and_function_list(spec_runs):
    results, _ = spec_runs
    out = "\n".join(r[3] for k, r in results.items() if r[0][2] == "kvm:kvm_exit")
    assert re.search(r"^kvm_exit +\| symbolic\('kvm_exit.exit_reason', exit_reason\), symbolic\(exit_reason\)", out,
                     re.M), out
    out = "\n".join(r[3] for k, r in results.items() if r[0][2] == "irq:softirq_entry" and k.startswith("A"))
    # symbolic('vec', 999) is UNKNOWN when a row exists; each named vec maps to its name.
    names = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}
    for m in re.finditer(r"^(\w+) +\| (\d+) +\| \d+ *$", out, re.M):
        assert m.group(1) in names, m.group(0)


SYSCALLS_N = 5000


@pytest.fixture(scope="module")
def getpid_db(pp, workload, tmp_path_factory):
    db = str(tmp_path_factory.mktemp("sqlcount") / "getpid.db")
    rc, out, err = pp.run(["sql", "-e", "syscalls:sys_enter_getpid", "-m", "256", "--output2", db, "--",
                           workload("syscalls"), "getpid", str(SYSCALLS_N)])
    assert rc == 0 and err == "", err
    return db, out


def test_count_equals_perf_stat(getpid_db, workload):
    db, out = getpid_db
    con = sqlite3.connect(db)
    n = con.execute("SELECT COUNT(*) FROM sys_enter_getpid").fetchone()[0]
    assert n == SYSCALLS_N
    assert out.splitlines()[-1] == "Total Inserts: %d" % SYSCALLS_N
    ref = perf_stat_count("syscalls:sys_enter_getpid", [workload("syscalls"), "getpid", str(SYSCALLS_N)])
    if ref is not None:
        assert n == ref
    row = con.execute("SELECT sample_count, field_count, event_system, function_list FROM event_metadata").fetchone()
    assert row == (SYSCALLS_N, 8 + 1, "syscalls", "syscall(__syscall_nr)")
    # One pid and one tid, every row the same syscall.
    assert con.execute("SELECT COUNT(DISTINCT _pid), COUNT(DISTINCT __syscall_nr), typeof(_time) "
                       "FROM sys_enter_getpid").fetchone() == (1, 1, "integer")


def test_sqlite3_cli_reads_the_file(getpid_db):
    if not shutil.which("sqlite3"):
        pytest.skip("no sqlite3 CLI")
    db, _ = getpid_db
    p = subprocess.run(["sqlite3", db, "SELECT COUNT(*) FROM sys_enter_getpid; PRAGMA integrity_check;"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and p.stdout.split() == [str(SYSCALLS_N), "ok"], p.stdout + p.stderr


def test_memory_mode_count(pp, workload):
    rc, out, err = pp.run(["sql", "-e", "syscalls:sys_enter_getpid", "-m", "256", "-i", "60000", "--query",
                           "SELECT COUNT(*) AS n, syscall(__syscall_nr) AS name FROM sys_enter_getpid", "--",
                           workload("syscalls"), "getpid", str(SYSCALLS_N)])
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    i = lines.index("=== SELECT COUNT(*) AS n, syscall(__syscall_nr) AS name FROM sys_enter_getpid ===")
    # Widths start at the names' lengths; the wider cells do not re-align printed lines.
    assert lines[i + 1:i + 5] == ["n | name", "--+-----", "%d | getpid" % SYSCALLS_N, ""]


def test_sigint_leaves_a_consistent_file(pp, workload, tmp_path):
    db = str(tmp_path / "kill.db")
    load = subprocess.Popen([workload("syscalls"), "getpid", "3000000"])
    b = pp.start(["sql", "-e", "raw_syscalls:sys_enter", "--output2", db, "-m", "64"])
    time.sleep(random.uniform(0.3, 1.2))
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=20)
    load.kill()
    load.wait()
    assert_not_crashed(rc)
    # A storm loses events; the notice is the only stderr line allowed.
    assert rc == 0 and all(re.search(r"sql: lost \d+ events", l) for l in err.splitlines()), err
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    n = con.execute("SELECT COUNT(*) FROM sys_enter").fetchone()[0]
    assert n > 0
    assert con.execute("SELECT sample_count FROM event_metadata WHERE table_name='sys_enter'").fetchone() == (n,)
    assert out.splitlines()[-1] == "Total Inserts: %d" % n


def test_help(pp):
    rc, out, err = pp.run(["sql", "-h"])
    assert rc == 129 and out == "", "help goes to stderr, as every profiler's"
    assert any(l.startswith(" Usage: perf-prof sql ") for l in err.splitlines()), err
    for opt in ("--query", "--output2", "--verify", "alias=", "table name"):
        assert opt in err, opt


BAD = [
    (["sql", "-e", "sched:sched_wakeup"], "Must specify either --query or --output2 (or both)."),
    (["sql", "-e", "sched:sched_wakeup", "--query", "SELECT 1"], "--query without --output2 requires -i"),
    (["sql", "-e", "sched:no_such_event", "-i", "100", "--query", "SELECT 1"], "sched:no_such_event not found"),
    (["sql", "-e", "sched:sched_wakeup", "--output2", "/nonexistent/dir/x.db"], "cannot open database"),
    (["sql", "-e", "sched:sched_wakeup,sched:sched_wakeup", "-i", "100", "--query", "SELECT 1"],
     "duplicate table name sched_wakeup, use alias="),
]


@pytest.mark.parametrize("argv,msg", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input(pp, argv, msg):
    rc, out, err = pp.run(argv)
    assert_not_crashed(rc)
    assert rc != 0
    assert msg in err.splitlines()[0], err


def test_bad_sql(pp, workload):
    rc, out, err = pp.run(["sql", "-e", "syscalls:sys_enter_getpid", "-m", "256", "-i", "60000", "--query",
                           "SELECT COUNT(*) FROM sys_enter_getpid; SELEKT 1", "--", workload("syscalls"), "getpid", "10"])
    assert rc == 0
    assert err == 'Failed to prepare query: near "SELEKT": syntax error\n'
    assert "=== SELECT COUNT(*) FROM sys_enter_getpid; ===" in out


def test_planner_pushdown_keeps_results(pp, workload):
    """close(1000 + i % 4) 4000 times: the WHERE becomes the kernel filter, and the count is the
    one the statement asks for (also on the --verify twin)."""
    q = "SELECT COUNT(*) AS n FROM sys_enter_close WHERE fd = 1001 AND __syscall_nr >= 0"
    rc, out, err = pp.run(["sql", "-e", "syscalls:sys_enter_close", "-m", "256", "-i", "60000", "--verify", "--query", q,
                           "--", workload("syscalls"), "close", "4000", "4"])
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert "syscalls:sys_enter_close: SQL Query planner filter: fd==1001&&__syscall_nr>=0" in lines
    assert "syscalls:sys_enter_close: Chosen 'fd' field for indexing" in lines or \
        "syscalls:sys_enter_close: Chosen '__syscall_nr' field for indexing" in lines
    i = lines.index("=== %s ===" % q)
    assert lines[i + 3] == "1000"


def test_sigint_in_memory_mode_completes_the_output(pp, workload):
    """A storm queried every 200 ms (each interval's database queried in a thread while the
    next fills): a SIGINT at a random moment still ends with the final interval's whole table."""
    load = subprocess.Popen([workload("syscalls"), "getpid", "3000000"])
    q = "SELECT COUNT(*) AS n FROM sys_enter"
    b = pp.start(["sql", "-e", "raw_syscalls:sys_enter", "-i", "200", "--query", q])
    time.sleep(random.uniform(0.5, 1.5))
    b.send(signal.SIGINT)
    rc, out, err = b.finish(timeout=20)
    load.kill()
    load.wait()
    assert_not_crashed(rc)
    assert rc == 0 and all(re.search(r"sql: lost \d+ events", l) for l in err.splitlines()), err
    lines = out.splitlines()
    heads = [i for i, l in enumerate(lines) if l == "=== %s ===" % q]
    assert len(heads) >= 2
    last = heads[-1]
    assert re.fullmatch(WALL_RE + " ", lines[last - 1])
    assert lines[last + 1].startswith("n") and re.fullmatch(r"\d+ *", lines[last + 3]) and lines[last + 4:] == [""]
