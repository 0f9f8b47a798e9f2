"""perf-prof list [SUBSTRING] (SPEC §1.12), checked against tracefs itself."""
import os

from conftest import assert_not_crashed


def tracefs_events():
    """sys:name for every events/SYS/NAME directory with an id file, sorted byte-wise."""
    with open("/proc/mounts") as f:
        dirs = [l.split()[1] for l in f if l.split()[2] == "tracefs"]
    assert dirs, "perf-prof mounts tracefs in earlier tests; it must be mounted by now"
    events = os.path.join(dirs[0], "events")
    out = []
    for sys in os.listdir(events):
        p = os.path.join(events, sys)
        if not os.path.isdir(p):
            continue
        for name in os.listdir(p):
            if os.path.isfile(os.path.join(p, name, "id")):
                out.append(sys + ":" + name)
    return sorted(out, key=lambda s: s.encode())


def test_list_is_every_tracepoint_sorted(pp, needs_root):
    pp.run(["signal", "-N", "1", "--", "true"], timeout=30)  # mounts tracefs if needed
    rc, out, err = pp.run(["list"], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines == tracefs_events()
    assert "signal:signal_generate" in lines and "sched:sched_switch" in lines


def test_list_substring(pp, needs_root):
    rc, out, err = pp.run(["list", "sched_sw"], timeout=30)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "sched:sched_switch" in lines
    assert lines == [e for e in tracefs_events() if "sched_sw" in e]
    # Nothing found: said, with grep's exit status (SPEC §1.12 exited 0 in silence).
    rc, out, err = pp.run(["list", "no_such_tracepoint_substring"], timeout=30)
    assert (rc, out, err) == (1, "", "perf-prof: no tracepoint contains 'no_such_tracepoint_substring'\n")
    # One SUBSTRING: a second word was silently dropped.
    rc, out, err = pp.run(["list", "sched_sw", "irq"], timeout=30)
    assert (rc, out) == (129, "")
    assert err == "perf-prof: list takes one SUBSTRING, got 2 words ('sched_sw' 'irq') (see 'perf-prof list -h')\n"


def test_list_help_and_options(pp):
    rc, out, err = pp.run(["list", "-h"], timeout=10)
    assert rc == 129 and out == ""
    assert err.splitlines()[1].startswith(" Usage: perf-prof list")
    assert any(l.strip() == "EXAMPLES" for l in err.splitlines())
    assert "--cpus" not in err  # list takes only -V -v -q -h (SPEC §1.7)
    rc, out, err = pp.run(["list", "-C", "0"], timeout=10)
    assert rc == 129 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("perf-prof: ")
