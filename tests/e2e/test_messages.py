"""Bad input gets one clear line on stderr and the tree's exit code (usage errors 129 through
Error::usage, runtime failures 1), or the right behaviour: never a silent exit 0 or a
misleading message (issue 24 item 8). The usdt cases are in test_usdt.py."""

import pytest

from conftest import assert_not_crashed


def fails(pp, args, rc, line, timeout=30):
    """perf-prof `args` exits `rc` with nothing on stdout and `line` as its stderr."""
    got_rc, out, err = pp.run(args, timeout=timeout)
    assert_not_crashed(got_rc)
    assert (got_rc, out, err) == (rc, "", line + "\n"), "rc=%d\nstdout:\n%s\nstderr:\n%s" % (got_rc, out, err)


def max_sample_rate():
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        return int(f.read())


# --------------------------------------------------------------------------- profile -F

def test_profile_freq_above_the_kernel_limit(pp):
    """perf_event_open answers EINVAL, which the explainer took for a bad sample type."""
    top = max_sample_rate()
    f = top * 10
    line = ("perf-prof: profile: -F %d is above kernel.perf_event_max_sample_rate (%d) (hint: use -F %d or "
            "less, or raise the limit: sysctl kernel.perf_event_max_sample_rate=%d)" % (f, top, top, f))
    fails(pp, ["profile", "-F", str(f), "-C", "0", "-N", "1"], 129, line)
    # The same profile nested in trace.
    fails(pp, ["trace", "-e", "profile/-F %d/" % f, "-N", "1"], 129, line)


def test_profile_freq_at_the_kernel_limit_runs(pp, needs_root, workload):
    rc, out, err = pp.run(["profile", "-F", str(max_sample_rate()), "-N", "3", "--", workload("spin"), "300"])
    assert (rc, err) == (0, ""), err
    assert len(out.splitlines()) == 3, out
