"""kmemleak --user against valgrind's leak check: on every leak workload, launched and attached
(-p), the leak report's total is valgrind's "definitely lost" + "indirectly lost", in bytes and
blocks, and so is each allocating site's share. Each case runs on both paths of kmemleak --user
(--probes=ebpf, --probes=agent).

Workloads (tests/workloads): `leaks` (malloc and calloc leaks among every kind of freed call),
`leak_mix` (leaks through malloc, calloc, realloc, posix_memalign, aligned_alloc and strdup,
indirect losses, reachable and possibly-lost blocks, the holder of the leaked addresses freed,
a leak whose address stays in a dead stack frame just below exit()'s, blocks whose glibc
chunk's next header starts inside them), `leak_threads` (leaks in threads; blocks held on the
stacks of threads still waiting at exit), `leak_cxx` (operator new and new[]). All wait on stdin before they start when given
their `wait` argument, so that the attach comes first, and again before they exit.
"""
import subprocess

import pytest

from conftest import assert_not_crashed
from heap_peers import kmemleak_lost, kmemleak_sites, probes, valgrind_lost, valgrind_sites  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("needs_root")

# name: (arguments, the arguments that make it wait on stdin, the line it prints when done)
WORKLOADS = {
    "leaks": (["3", "2", "200"], ["3", "2", "200", "wait"], b"leaks done\n"),
    "leak_mix": ([], ["wait"], b"leak_mix done\n"),
    "leak_threads": ([], ["wait"], b"leak_threads done\n"),
    "leak_cxx": ([], ["wait"], b"leak_cxx done\n"),
}


def xfail_threads_on_ebpf(request, probes, name):
    """Uprobes fire in a process's main thread only on some kernels (6.18.44 here: a probe hit
    5 times in a thread and 3 times in main counts 3, for perf events with inherit and BPF
    uprobe_multi links alike): the eBPF path does not see the threads' allocations there."""
    if name == "leak_threads" and probes in ([], ["--probes=ebpf"]):
        request.applymarker(pytest.mark.xfail(reason="uprobes do not fire in threads other than the main one "
                                                     "on this kernel", strict=False))

_valgrind = {}


def valgrind_of(path, name):
    """valgrind's (total, sites) on the workload run without waiting; once per workload."""
    if name not in _valgrind:
        args = WORKLOADS[name][0]
        _valgrind[name] = (valgrind_lost([path] + args), valgrind_sites([path] + args, name))
    return _valgrind[name]


def check_same(out, path, name, probes):
    total, sites = valgrind_of(path, name)
    assert total[1] > 0, "valgrind finds no leak in %s" % name
    assert kmemleak_lost(out) == total, out
    # The eBPF path walks stacks by frame pointers: from inside a library built without them
    # (glibc's strdup, libstdc++'s operator new) it stops or skips the workload's frame. Those
    # blocks land under None, and must be the sites we did not name.
    ours = kmemleak_sites(out, name, first_frame_only=probes in ([], ["--probes=ebpf"]))
    unnamed = ours.pop(None, (0, 0))
    assert all(sites.get(fn) == v for fn, v in ours.items()), (ours, sites, out)
    rest = [v for fn, v in sites.items() if fn not in ours]
    assert (sum(b for b, _ in rest), sum(n for _, n in rest)) == unnamed, (ours, sites, out)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_launched_leaks_equal_valgrinds(request, pp, workload, probes, name):
    xfail_threads_on_ebpf(request, probes, name)
    path = workload(name)
    rc, out, err = pp.run(["kmemleak", "--user"] + probes + ["--", path] + WORKLOADS[name][0], timeout=120)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert WORKLOADS[name][2].decode() in out
    check_same(out, path, name, probes)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_attached_leaks_equal_valgrinds(request, pp, workload, probes, name):
    xfail_threads_on_ebpf(request, probes, name)
    path = workload(name)
    args, wait_args, done = WORKLOADS[name]
    w = subprocess.Popen([path] + wait_args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        b = pp.start_ready(["kmemleak", "--user"] + probes + ["-v", "-p", str(w.pid)])
        w.stdin.write(b"g")
        w.stdin.flush()
        assert w.stdout.readline() == done
        w.stdin.close()  # EOF: the workload exits, and perf-prof with it
        assert w.wait(60) == 0
        rc, out, err = b.finish(60)
    finally:
        if w.poll() is None:
            w.kill()
    assert_not_crashed(rc)
    assert rc == 0, err
    check_same(out, path, name, probes)
