"""End-to-end tests of the checked printf()/system() formats of the expression language
(SPEC §2.7.6, issue 24): a format whose conversions do not match the arguments is refused when
the expression is compiled, before any event is opened, with one stderr line; a correct one
prints what C's printf would."""

import pytest

from conftest import assert_not_crashed

CRASHER = r'sched:sched_switch//exec=printf("%s[%f] -> %s\n", prev_comm, prev_pid, next_comm)/'


def refused(pp, args):
    rc, out, err = pp.run(["trace"] + args, timeout=30)
    assert_not_crashed(rc)
    # The tree's convention for an expression that does not compile (exec=, key=, the filter
    # fallback): exit 1, one line on stderr, the §2.7.8 diagnostics on stdout.
    assert rc == 1, "rc=%d\n%s\n%s" % (rc, out, err)
    assert len(err.splitlines()) == 1, err
    return out, err


def test_mismatched_format_is_refused_before_opening(pp, needs_root):
    # Once SIGSEGV at the first context switch.
    out, err = refused(pp, ["-e", CRASHER, "-N", "1"])
    assert err.startswith("perf-prof: sched:sched_switch: exec=printf("), err
    assert "'%f' needs a floating-point value" in err, err
    # Nothing was opened, so no event line: stdout is the caret diagnostics only.
    assert "sched:sched_switch:" not in out
    assert "^ printf format: '%f'" in out and "Available variables:" in out


@pytest.mark.parametrize("expr,message", [
    (r'printf("%s\n", prev_pid)', "'%s' needs a string (char *), argument 1 is an integer"),
    (r'printf("%d\n", prev_comm)', "'%d' needs an integer, argument 1 is a string"),
    (r'printf("%d %d\n", prev_pid)', "the format reads 2 arguments, 1 given"),
    (r'printf("%n", prev_pid)', "'%n' writes to memory"),
    (r'printf("%1$d", prev_pid)', "positional arguments"),
    (r'printf("100%")', "lone '%'"),
    (r'printf(prev_comm)', "format must be a string literal"),
    (r'system("kill %s", prev_pid)', "system format: '%s' needs a string"),
])
def test_format_errors_name_the_conversion(pp, needs_root, expr, message):
    out, err = refused(pp, ["-e", "sched:sched_switch//exec=%s/" % expr, "-N", "1"])
    assert message in err, err


def test_correct_printf_prints_the_text(pp, needs_root, workload):
    expr = (r'printf("comm=%s pid_ok=%d prio=%3d|%-5x|%hhd|%c%%\n", comm, pid == _pid, prio, prio, '
            r'255, 65)')
    rc, out, err = pp.run(["trace", "-e", "sched:sched_process_exit//exec=%s/" % expr,
                           "--", workload("syscalls"), "getpid", "1"], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s\n%s" % (rc, out, err)
    lines = out.splitlines()
    assert len(lines) == 2, out
    assert "sched:sched_process_exit: comm=syscalls" in lines[0]
    assert lines[1] == "comm=syscalls pid_ok=1 prio=120|78   |-1|A%"
