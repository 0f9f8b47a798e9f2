"""End-to-end tests of expr (SPEC-PROFILERS §P13): the start-up listing, per-sample lines and
results checked against the event line itself, -N (5 by default), -v, printf, ksymbol,
syscall_name, comm_get, user-space filters with _cpu/_pid, help, and bad input."""

import re
import subprocess

import pytest

from conftest import assert_not_crashed

LINE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} +(\S.*?) +(\d+) (\S{4}) \[(\d{3})\] "
                     r"[\d.]+: (\w+:\w+): (.*)$")
WAKEUP_INFO_RE = re.compile(r"^(.*):(\d+) \[(\d+)\] CPU:(\d+)$")


@pytest.fixture(scope="module")
def busy():
    """Wake-ups, write() and exec()s all the time: a shell looping on echo, sleep and true."""
    p = subprocess.Popen(["sh", "-c", "while :; do echo x; /bin/true; sleep 0.01; done"],
                         stdout=subprocess.DEVNULL)
    yield p
    p.kill()
    p.wait()


def expr(pp, args, rc=0, timeout=20):
    code, out, err = pp.run(["expr"] + args, timeout=timeout)
    assert_not_crashed(code)
    assert code == rc, "rc=%d\n%s\n%s" % (code, out, err)
    if rc == 0:
        assert err == "", err
    return out, err


def samples(out):
    """(event line match, the text between it and 'result: ', the result) per sample."""
    lines = out.splitlines()
    res = []
    i = 0
    while i < len(lines):
        m = LINE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        body = []
        while not lines[j].startswith("result: ") and "result: " not in lines[j]:
            body.append(lines[j])
            j += 1
        pre, _, value = lines[j].rpartition("result: ")
        body.append(pre)
        res.append((m, "\n".join(body), int(value, 16)))
        i = j + 1
    return res


def test_default_five_samples_and_listing(pp, needs_root, busy):
    out, _ = expr(pp, ["-e", "sched:sched_wakeup", "pid"])
    lines = out.splitlines()
    assert lines[0] == "expression: pid"
    assert lines[1] == "Instruction:"
    assert "Global variable:" in lines and "Strings:" in lines
    assert "    %0 = LOAD (int) @pid" in lines
    got = samples(out)
    assert len(got) == 5, out
    for m, body, value in got:
        assert m.group(5) == "sched:sched_wakeup"
        info = WAKEUP_INFO_RE.match(m.group(6))
        assert info and int(info.group(2)) == value, (m.group(0), value)
        assert body == ""


def test_N_and_printf(pp, needs_root, busy):
    out, _ = expr(pp, ["-e", "sched:sched_wakeup", 'printf("%s/%d ", comm, pid)', "-N", "2"])
    got = samples(out)
    assert len(got) == 2
    for m, body, value in got:
        info = WAKEUP_INFO_RE.match(m.group(6))
        text = "%s/%s " % (info.group(1), info.group(2))
        assert body == text and value == len(text), (body, value)
    assert '    @str0 "%s/%d "' in out.splitlines()


def test_verbose_traces_each_node(pp, needs_root, busy):
    out, _ = expr(pp, ["-e", "sched:sched_wakeup", "pid + 1", "-v", "-N", "1"])
    (m, body, value), = samples(out)
    pid = int(WAKEUP_INFO_RE.match(m.group(6)).group(2))
    assert value == pid + 1
    assert "%%2 = ADD (long) %%0 %%1 -> %d (0x%x)" % (pid + 1, pid + 1) in body, body
    assert "%%0 = LOAD (int) @pid -> %d" % pid in body


@pytest.mark.parametrize("filt,check", [
    ("_cpu==0", lambda m, pid: m.group(4) == "000"),
    ("_cpu>=0&&_cpu<=3", lambda m, pid: int(m.group(4)) <= 3),
    ("_pid>1", lambda m, pid: True),
    ("_cpu==target_cpu", lambda m, pid: int(m.group(4)) == int(WAKEUP_INFO_RE.match(m.group(6)).group(4))),
])
def test_user_space_filters_with_cpu_and_pid(pp, needs_root, busy, filt, check):
    out, _ = expr(pp, ["-e", "sched:sched_wakeup/%s/" % filt, "pid", "-N", "3"])
    got = samples(out)
    assert len(got) == 3
    for m, _, value in got:
        assert check(m, value), m.group(0)


def test_syscall_name_and_comm_get(pp, needs_root, busy):
    out, _ = expr(pp, ["-e", "raw_syscalls:sys_enter/id==1/", "-p", str(busy.pid),
                       'printf("%s %s ", syscall_name(id), comm_get(_pid)), comm_get(_pid) ~ "s?"', "-N", "2"])
    got = samples(out)
    assert len(got) == 2
    for m, body, value in got:
        assert body == "write sh " and value == 1, (body, value)


def test_ksymbol(pp, needs_root):
    out, _ = expr(pp, ["-e", "timer:hrtimer_expire_entry", 'printf("=%s=", ksymbol(function))', "-N", "2"])
    got = samples(out)
    assert len(got) == 2
    names = set()
    with open("/proc/kallsyms") as f:
        for line in f:
            names.add(line.split()[2])
    for m, body, _ in got:
        name = re.fullmatch(r"=(\S+)=", body).group(1)
        assert name in names, body


def test_exec_filename(pp, needs_root, busy):
    out, _ = expr(pp, ["-e", "sched:sched_process_exec", 'printf("=%s= ", filename), filename ~ "*/true"',
                       "-N", "2"])
    got = samples(out)
    assert len(got) == 2
    for m, body, value in got:
        assert re.fullmatch(r"=/\S+= ", body), body
        assert value == (1 if body.endswith("/true= ") else 0)


def test_compile_error(pp):
    out, err = expr(pp, ["-e", "sched:sched_wakeup", "pid + success"], rc=1)
    assert "^ undefined variable 'success'" in out and "Available variables:" in out
    assert "     int pid\n" in out
    assert len(err.splitlines()) == 1 and "undefined variable 'success'" in err


def test_missing_expression(pp):
    out, err = expr(pp, ["-e", "sched:sched_wakeup"], rc=129)
    assert err.splitlines()[0] == " {expression} needs to be specified."
    assert "Usage: perf-prof expr" in err


def test_single_event_only(pp):
    out, err = expr(pp, ["-e", "sched:sched_wakeup,sched:sched_switch", "pid"], rc=129)
    assert err.strip() == "perf-prof: Only a single event is allowed to be specified."


def test_help(pp):
    code, _, err = pp.run(["expr", "-h"])
    assert code == 129 and "Usage: perf-prof expr" in err and "-N, --exit-N" in err


@pytest.mark.parametrize("events", ["kmem:kmalloc", "sched:sched_wakeup,sched:sched_switch"])
def test_help_word(pp, events):
    out, _ = expr(pp, ["-e", events, "help"])
    first = events.split(",")[0]
    assert 'perf-prof expr -e "%s/./" \'EXPRESSION\'' % first in out
    assert first + "\n" in out and "format:" in out
