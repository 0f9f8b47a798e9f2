"""kmemprof (SPEC-PROFILERS §P6): multi-trace --impl kmemprof as a profiler. A pipe workload
(tests/workloads/kalloc.c `pipes N`: pipe() then close() of both ends, N times) allocates the
pipe and its buffer array once per pipe under alloc_pipe_info and frees both under
pipe_release: exact counts per stack. SPEC's command lines, help and bad input."""
import signal
import time

import pytest

from conftest import assert_not_crashed
from test_multi_trace_impls import WALL_LINE_RE, kmem_sections

N = 800


def test_pipes_bytes_and_counts_per_stack(pp, needs_root, workload):
    rc, out, err = pp.run(["kmemprof", "-e", "kmem:kmalloc//size=bytes_alloc/stack/", "-e", "kmem:kfree//stack/",
                           "-k", "ptr", "--order", "--", workload("kalloc"), "pipes", str(N)], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert WALL_LINE_RE.match(lines[0]), lines[0]
    assert lines[1] == "kmem:kmalloc => kmem:kfree"
    ab, an, allocs, i = kmem_sections(lines, 2, "kmem:kmalloc", "alloc", "Allocate", "alloc")
    fb, fn, frees, i = kmem_sections(lines, i, "kmem:kfree", "free", "Free", "free")
    assert (ab, an) == (fb, fn)
    pipe_allocs = [e for e in allocs if any(" alloc_pipe_info+" in l for l in e[2])]
    assert len(pipe_allocs) >= 2 and all(e[1] == N for e in pipe_allocs[:2]), allocs
    # Bytes of a block are its count times the object size (bytes_alloc: a power of two here).
    for e in pipe_allocs[:2]:
        assert e[0] % N == 0 and e[0] // N in (64, 128, 192, 256, 512, 640, 1024, 2048, 4096), e[:2]
    assert sum(e[1] for e in frees if any(" pipe_release+" in l for l in e[2])) >= 2 * N


SPEC_LINES = [
    # kmalloc_node / kmem_cache_alloc_node were merged into kmalloc / kmem_cache_alloc (Linux 6.1):
    # perf-prof's merged-event table maps them (node != -1), so these run here.
    ["-e", "kmem:kmalloc//ptr=ptr/size=bytes_req/stack/,kmem:kmalloc_node//ptr=ptr/size=bytes_req/stack/",
     "-e", "kmem:kfree//ptr=ptr/stack/", "-m", "512", "--order", "-i", "1000", "-k", "ptr"],
    ["-e", "kmem:kmem_cache_alloc//ptr=ptr/size=bytes_req/stack/,"
     "kmem:kmem_cache_alloc_node//ptr=ptr/size=bytes_req/stack/",
     "-e", "kmem:kmem_cache_free//ptr=ptr/stack/", "-m", "512", "--order", "-i", "1000", "-k", "ptr"],
    ["-e", "kmem:mm_page_alloc//ptr=pfn/size=4096<<order/key=pfn/stack/", "-e",
     "kmem:mm_page_free//ptr=pfn/key=pfn/stack/", "-m", "512", "--order", "-i", "1000"],
    ["-e", "percpu:percpu_alloc_percpu//ptr=ptr/size=size/stack/", "-e",
     "percpu:percpu_free_percpu//ptr=ptr/stack/", "-m", "512", "--order", "-i", "1000", "-k", "ptr"],
]


def test_spec_command_lines(pp, needs_root):
    runs = [pp.start(["kmemprof"] + a) for a in SPEC_LINES]
    time.sleep(1.5)
    for b in runs:
        b.send(signal.SIGINT)
        rc, out, err = b.finish(timeout=20)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", err
        # The machine makes kmalloc/kmem_cache/page allocations all the time; a percpu
        # allocation only now and then: a run without one says so instead of a table.
        assert " => " in out or "nothing paired" in out, out


@pytest.mark.parametrize("args,msg", [
    (["-e", "kmem:kmalloc//stack/", "-e", "kmem:kfree//stack/", "-k", "ptr"],
     "kmem:kmalloc//size=?/ size attribute is not set"),
    (["-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "--than", "1ms"], "not usable"),
    (["-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "--perins"], "not usable"),
    (["-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "--detail"], "not usable"),
    (["-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "--impl", "pair"], "not usable"),
    (["-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "-C", "0-1"], "--order"),
])
def test_bad_input(pp, needs_root, args, msg):
    rc, out, err = pp.run(["kmemprof"] + args + (["--", "true"] if "-C" not in args else []))
    assert_not_crashed(rc)
    assert rc != 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and msg in lines[0], err


def test_help(pp):
    rc, out, err = pp.run(["kmemprof", "-h"])
    assert_not_crashed(rc)
    assert "size=EXPR is required" in out + err
    rc, out, err = pp.run(["kmemprof", "-e", "kmem:kmalloc//size=bytes_req/", "-e", "kmem:kfree", "-k", "ptr", "help"])
    assert rc == 0 and err == ""
    assert "\nperf-prof kmemprof -e \"kmem:kmalloc/./size=bytes_req/stack/" in out, out
