"""Events that Linux 6.1 merged into others (issue 24 item 9): kmem:kmalloc_node and
kmem:kmem_cache_alloc_node, gone from the running kernel, are accepted as kmem:kmalloc and
kmem:kmem_cache_alloc filtered on `node != -1` (lib/event/merged_events.h), with a note on stdout
under -v and nothing on stderr.

The kalloc workload's `perf N` opens N dummy perf events on CPU 0 and maps their ring buffers:
each allocates the event (kmem_cache_alloc from perf_event_alloc) and the buffer (kmalloc from
rb_alloc) on CPU 0's node, so with an explicit node."""

import os
import re

import pytest

from conftest import assert_not_crashed
from test_trace import TRACE_RE

EVENTS = "/sys/kernel/tracing/events/kmem"


@pytest.fixture
def merged_kernel(needs_root):
    if not os.path.isdir(EVENTS + "/kmalloc"):
        pytest.skip("no kmem:kmalloc tracepoint")
    if os.path.isdir(EVENTS + "/kmalloc_node"):
        pytest.skip("this kernel still has kmem:kmalloc_node (before Linux 6.1)")


def events(out):
    return [m for m in map(TRACE_RE.match, out.splitlines()) if m]


def test_trace_old_names_verbose(pp, merged_kernel, workload):
    n = 4
    rc, out, err = pp.run(["trace", "-v", "-e", "kmem:kmalloc_node,kmem:kmem_cache_alloc_node",
                           "--", workload("kalloc"), "perf", str(n)], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s" % (rc, err)
    lines = out.splitlines()
    assert "kmem:kmalloc_node is kmem:kmalloc/node != -1/ on this kernel" in lines, out
    assert "kmem:kmem_cache_alloc_node is kmem:kmem_cache_alloc/node != -1/ on this kernel" in lines, out
    evs = events(out)
    # Only allocations with a node: the filter went to the kernel with the event.
    assert evs and all(" node=-1 " not in e.group("info") for e in evs), out
    perf_events = [e for e in evs if e.group("event") == "kmem:kmem_cache_alloc" and
                   " name=perf_event " in e.group("info")]
    assert len(perf_events) == n, out
    assert len([e for e in evs if e.group("event") == "kmem:kmalloc"]) >= n, out


def test_trace_old_name_with_user_filter_and_N(pp, merged_kernel, workload):
    # -N 1 on the old name; the user's filter joins the node condition (a symbol's name right
    # before a ')' was once read by the kernel as part of the name).
    rc, out, err = pp.run(["trace", "-e", "kmem:kmalloc_node/call_site.function==rb_alloc/", "-N", "1",
                           "--", workload("kalloc"), "perf", "3"], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s" % (rc, err)
    evs = events(out)
    assert len(evs) == 1 and len(out.splitlines()) == 1, out
    assert evs[0].group("event") == "kmem:kmalloc" and " node=-1 " not in evs[0].group("info"), out


def test_help_word_shows_the_merged_format(pp, merged_kernel):
    rc, out, err = pp.run(["trace", "-e", "kmem:kmalloc_node", "help"])
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert "\nkmem:kmalloc\nname: kmalloc\n" in out, out
    assert "field:int node;" in out, out


def test_list_does_not_invent_the_old_names(pp, merged_kernel):
    rc, out, err = pp.run(["list", "kmem:"])
    assert rc == 0 and err == "", err
    names = out.split()
    assert "kmem:kmalloc" in names and "kmem:kmalloc_node" not in names, out


def test_kmemleak_with_the_old_names(pp, merged_kernel, workload):
    n = 3
    rc, out, err = pp.run(["kmemleak", "--alloc", "kmem:kmalloc,kmem:kmalloc_node,kmem:kmem_cache_alloc,"
                           "kmem:kmem_cache_alloc_node", "--free", "kmem:kfree,kmem:kmem_cache_free",
                           "--", workload("kalloc"), "perf", str(n)], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s" % (rc, err)
    m = re.search(r"^TOTAL alloc (\d+) free (\d+)$", out, re.M)
    assert m, out
    # Each perf event and ring buffer on both its event and its _node alias; then the rest.
    assert int(m.group(1)) >= 4 * n, out
