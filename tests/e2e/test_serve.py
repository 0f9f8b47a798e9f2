"""perf-prof serve: pprof's remote endpoints (gperftools' /pprof/* and Go's /debug/pprof/*) for
processes that link neither, read by the real clients: google-pprof (which also calls
/pprof/symbol and /pprof/cmdline), `go tool pprof` and curl.

Workloads: hotab (CPU time split 3:1 between hot_a and hot_b by construction, see
test_profile.py) and heap_live (known live allocations: 20,000 x 1,024 bytes from
alloc_small, 6,000 x 4,096 from alloc_large).

Heap sampling error. An allocation of s bytes is sampled with probability p = 1 - exp(-s/R)
(R: --heap-rate) and pprof scales a sampled stack back by 1/p, so for n allocations of s bytes
the estimate of n*s has a relative standard deviation of sqrt((1-p)/(n*p)). At R = 4096:
alloc_small p = 0.221, 1.33 %; alloc_large p = 0.632, 0.99 %. The tests allow 5 standard
deviations (a false failure once in ~1.7 million runs): 6.6 % and 4.9 %."""

import collections
import glob
import http.client
import math
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import Bg, asan_build, assert_not_crashed, run

SMALL_N, SMALL_SIZE, LARGE_N, LARGE_SIZE = 20000, 1024, 6000, 4096
RATE = 4096


# ---------------------------------------------------------------- helpers


class Serve:
    """A running `perf-prof serve --listen 127.0.0.1:0 ARGS`: its base URL (with the secret
    prefix under --all) from the first stdout line."""

    def __init__(self, pp, args):
        self.bg = pp.start(["serve", "--listen", "127.0.0.1:0"] + list(args))
        line = self.bg.wait_line(r"^serving http://", timeout=20)
        self.url = line.split()[1].rstrip("/")
        m = re.match(r"http://([\d.]+):(\d+)(/.*)?$", self.url)
        self.host, self.port, self.prefix = m.group(1), int(m.group(2)), m.group(3) or ""

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def rss_kb(self):
        with open("/proc/%d/status" % self.bg.pid) as f:
            return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))

    def children(self):
        with open("/proc/%d/task/%d/children" % (self.bg.pid, self.bg.pid)) as f:
            return f.read().split()

    def stop(self):
        """SIGTERM: a clean stop, nothing on stderr."""
        self.bg.send(signal.SIGTERM)
        rc, out, err = self.bg.finish(timeout=20)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", (rc, err)
        return out


@pytest.fixture
def serve(pp, needs_root):
    started = []

    def start(*args):
        s = Serve(pp, args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.bg.kill()


@pytest.fixture
def google_pprof(tmp_path):
    exe = "/usr/bin/google-pprof"
    if not os.access(exe, os.X_OK):
        pytest.fail("google-pprof not installed (Debian google-perftools; `make deps` installs it)")
    env = dict(os.environ, HOME=str(tmp_path), PPROF_TMPDIR=str(tmp_path / "gpprof"))

    def call(*args, timeout=120):
        r = subprocess.run([exe] + list(args), capture_output=True, text=True, timeout=timeout, env=env)
        assert r.returncode == 0, "google-pprof %s: rc=%d\n%s\n%s" % (" ".join(args), r.returncode, r.stdout,
                                                                       r.stderr)
        return r.stdout

    return call


def gperf_text(text):
    """google-pprof --text: function -> (flat, cum) in the profile's unit."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d.]+)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)\s+[\d.]+%\s+(\S+)", line)
        if m:
            rows[m.group(3)] = (float(m.group(1)), float(m.group(2)))
    return rows


def go_top(text):
    """go tool pprof -top: function -> (flat, cum) as printed (counts with -sample_index=samples)."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\S+)\s+[\d.]+%\s+[\d.]+%\s+(\S+)\s+[\d.]+%\s+(.+?)\s*$", line)
        if m and m.group(1) != "flat":
            rows[m.group(3)] = (m.group(1), m.group(2))
    return rows


def bytes_of(v):
    """A -top value with pprof's unit: "19.53MB" -> bytes, "0" -> 0, "123" -> 123."""
    m = re.match(r"^([\d.]+)([kKMGT]?B)?$", v)
    scale = {None: 1, "B": 1, "kB": 1024, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
    return float(m.group(1)) * scale[m.group(2)]


def folded_ratio(path):
    a = b = 0
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            frames = stack.split(";")
            a += int(n) if "hot_a" in frames else 0
            b += int(n) if "hot_b" in frames else 0
    return a, b


def sigma_bound(n, size, k=5.0):
    p = 1 - math.exp(-size / RATE)
    return k * math.sqrt((1 - p) / (n * p))


def check_heap(small, large):
    want_small, want_large = SMALL_N * SMALL_SIZE, LARGE_N * LARGE_SIZE
    assert abs(small - want_small) <= sigma_bound(SMALL_N, SMALL_SIZE) * want_small, (small, want_small)
    assert abs(large - want_large) <= sigma_bound(LARGE_N, LARGE_SIZE) * want_large, (large, want_large)
    print("\nin use: alloc_small %d (%+.2f%%), alloc_large %d (%+.2f%%)" % (
        small, 100.0 * (small - want_small) / want_small, large, 100.0 * (large - want_large) / want_large))


def heap_workload(workload):
    """heap_live in wait mode, started and waiting for SIGUSR1."""
    w = Bg([workload("heap_live"), "wait"])
    w.wait_line(r"^waiting$")
    return w


# ---------------------------------------------------------------- CPU profiles


def test_google_pprof_cpu_profile_names_hot_a_hot_b(serve, pp, workload, google_pprof, tmp_path):
    """google-pprof fetches /pprof/profile, then /pprof/cmdline and /pprof/symbol: hot_a and
    hot_b named with the ratio that a folded flame graph of the same seconds gives."""
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-F", "997", "-p", str(hot.pid))
    fold = str(tmp_path / "cpu")
    prof = pp.start(["profile", "-F", "997", "-g", "--flame-graph", fold, "-p", str(hot.pid)])
    text = google_pprof("--text", "--seconds=6", s.url + "/pid/%d/pprof/profile" % hot.pid)
    prof.send(signal.SIGINT)
    rc, _, err = prof.finish(timeout=20)
    assert rc == 0 and err == "", err
    rows = gperf_text(text)
    assert "hot_a" in rows and "hot_b" in rows, text
    a, b = rows["hot_a"][1], rows["hot_b"][1]
    fa, fb = folded_ratio(fold + ".folded")
    print("\nhot_a:hot_b google-pprof %d:%d = %.2f, folded %d:%d = %.2f" % (a, b, a / b, fa, fb, fa / fb))
    assert a + b > 2000 and fb > 400, (a, b, fa, fb)
    assert 2.4 <= a / b <= 3.75
    # Two samplings of the same seconds: log(a/b) - log(fa/fb) has a standard deviation of
    # sqrt(1/a + 1/b + 1/fa + 1/fb) (counts), ~4 % at 6 s of 997 Hz; allowed: 4 of those.
    sigma = math.sqrt(1 / a + 1 / b + 1 / fa + 1 / fb)
    assert abs(math.log((a / b) / (fa / fb))) <= 4 * sigma, (a / b, fa / fb, sigma)
    hot.kill()


def test_go_pprof_cpu_profile_with_labels(serve, workload, go_pprof, tmp_path):
    """`go tool pprof -top` on /debug/pprof/profile: the same names and ratio, and the labels the
    fleet engines group by (pid, comm, executable, build_id)."""
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-F", "997", "-p", str(hot.pid))
    top = go_pprof("-top", "-sample_index=samples", "-seconds", "3", s.url + "/debug/pprof/profile")
    rows = go_top(top)
    a, b = int(rows["hot_a"][1]), int(rows["hot_b"][1])
    print("\nhot_a:hot_b go tool pprof %d:%d = %.2f" % (a, b, a / b))
    assert a + b > 1000 and 2.4 <= a / b <= 3.75, (a, b)
    saved = glob.glob(str(tmp_path / "pprof-home" / "pprof.*.pb.gz"))
    assert len(saved) == 1, saved
    tags = go_pprof("-tags", saved[0])
    assert re.search(r"^\s*pid: Total", tags, re.M) and str(hot.pid) in tags, tags
    assert re.search(r"^\s*comm: Total", tags, re.M) and "hotab" in tags, tags
    assert re.search(r"^\s*executable: Total", tags, re.M) and workload("hotab") in tags, tags
    bid = subprocess.run(["readelf", "-n", workload("hotab")], capture_output=True, text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", bid).group(1)
    assert re.search(r"^\s*build_id: Total", tags, re.M) and bid in tags, tags
    # Go's conventions: the content type and the attachment name.
    status, headers, body = s.get("/debug/pprof/profile?seconds=1")
    assert status == 200 and body[:2] == b"\x1f\x8b"
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Content-Disposition"] == 'attachment; filename="profile"'
    assert headers["X-Content-Type-Options"] == "nosniff"
    hot.kill()


def test_dwarf_call_graph_is_passed_to_the_profile(serve, workload, go_pprof):
    """--call-graph dwarf: the profile's user stacks are unwound from CFI (chain_nofp has no
    frame pointers): main->a->b->hot in the samples of hot."""
    w = Bg([workload("chain_nofp"), "chain", "20000"])
    s = serve("-F", "497", "--call-graph", "dwarf", "-p", str(w.pid))
    traces = go_pprof("-traces", "-seconds", "2", s.url + "/debug/pprof/profile")
    stacks = [t for t in traces.split("-----------+-------------------------------------------------------")
              if re.search(r"^\s+(\S+\s+)?hot$", t, re.M)]
    assert stacks, traces[:3000]
    whole = [t for t in stacks if re.search(r"\bhot\n\s+b\n\s+a\n\s+main\n", t)]
    print("\n%d of %d stacks with hot reach main" % (len(whole), len(stacks)))
    assert len(whole) >= 0.95 * len(stacks)
    w.kill()


# ---------------------------------------------------------------- heap profiles


def test_google_pprof_heap_attached_on_first_request(serve, workload, google_pprof):
    """The first heap request attaches the uprobes; what is allocated after it is in the next
    heap profile, in-use bytes within the sampling error of the truth."""
    w = heap_workload(workload)
    s = serve("--heap-rate", str(RATE), "-p", str(w.pid))
    status, _, body = s.get("/pprof/heap")
    assert status == 200 and body.startswith(b"heap profile: "), body[:200]
    assert re.match(rb"heap profile: +0: +0 \[ +0: +0\] @ heap_v2/4096\n", body), body[:200]
    w.send(signal.SIGUSR1)
    w.wait_line(r"^allocated$")
    text = google_pprof("--text", "--inuse_space", s.url + "/pprof/heap")
    rows = gperf_text(text)
    # --text prints MB.
    check_heap(rows["alloc_small"][1] * 1024 * 1024, rows["alloc_large"][1] * 1024 * 1024)
    assert "churn" not in rows or rows["churn"][1] < 0.05, rows.get("churn")
    w.kill()


def test_go_pprof_heap_and_allocs(serve, workload, go_pprof):
    """/debug/pprof/heap and /debug/pprof/allocs as profile.proto, unsampled by us."""
    w = heap_workload(workload)
    s = serve("--heap-rate", str(RATE), "-p", str(w.pid))
    assert s.get("/debug/pprof/heap")[0] == 200
    w.send(signal.SIGUSR1)
    w.wait_line(r"^allocated$")
    rows = go_top(go_pprof("-top", "-sample_index=inuse_space", "-unit=B", s.url + "/debug/pprof/heap"))
    check_heap(bytes_of(rows["alloc_small"][1]), bytes_of(rows["alloc_large"][1]))
    # allocs: alloc_space first (pprof's default sample type there), and churn's 5 MB too.
    top = go_pprof("-top", "-unit=B", s.url + "/debug/pprof/allocs")
    assert "Type: alloc_space" in top, top[:500]
    rows = go_top(top)
    churn = bytes_of(rows["churn"][1])
    assert abs(churn - 10000 * 512) <= sigma_bound(10000, 512) * 10000 * 512, churn
    # debug=1: the text.
    status, _, body = s.get("/debug/pprof/heap?debug=1")
    assert status == 200 and body.startswith(b"heap profile: ")
    w.kill()


def test_heap_at_start_of_a_launched_command_and_growth(serve, workload, google_pprof):
    """--heap with a command: probes attached before it runs; /pprof/growth shows the heap's
    growth (brk and anonymous mmap) since then."""
    s = serve("--heap", "--heap-rate", str(RATE), "--", workload("heap_live"))
    s.bg.wait_line(r"^allocated$")
    rows = gperf_text(google_pprof("--text", "--inuse_space", s.url + "/pprof/heap"))
    check_heap(rows["alloc_small"][1] * 1024 * 1024, rows["alloc_large"][1] * 1024 * 1024)
    status, _, body = s.get("/pprof/growth")
    assert status == 200
    head = body.split(b"\n", 1)[0].decode()
    m = re.match(r"heap profile: +(\d+): +(\d+) \[ +(\d+): +(\d+)\] @ growthz$", head)
    assert m, head
    grown = int(m.group(2))
    assert grown >= 0.95 * (SMALL_N * SMALL_SIZE + LARGE_N * LARGE_SIZE), grown
    # google-pprof reads it as a growth profile.
    text = google_pprof("--text", s.url + "/pprof/growth")
    assert "Total:" in text, text
    s.stop()


def test_heap_probes_removed_when_idle_and_at_exit(serve, workload):
    w = heap_workload(workload)
    s = serve("--heap-idle", "1", "-p", str(w.pid))

    def heap_programs():
        r = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True)
        return len(re.findall(r"name heap_malloc\b", r.stdout))

    before = heap_programs()
    assert s.get("/pprof/heap")[0] == 200
    assert heap_programs() == before + 1
    deadline = time.monotonic() + 10
    while heap_programs() > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert heap_programs() == before
    assert s.get("/pprof/heap")[0] == 200  # attached again
    assert heap_programs() == before + 1
    s.stop()
    assert heap_programs() == before
    w.kill()


# ---------------------------------------------------------------- symbols, cmdline


def nm_address(binary, name):
    out = subprocess.run(["nm", binary], capture_output=True, text=True).stdout
    return int(re.search(r"^([0-9a-f]+) [tT] %s$" % name, out, re.M).group(1), 16)


def load_base(pid, binary):
    """The address at which `binary`'s file offset 0 is mapped in `pid`."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == binary:
                start, _ = parts[0].split("-")
                return int(start, 16) - int(parts[2], 16)
    raise AssertionError("%s not mapped in %d" % (binary, pid))


def test_symbol_endpoint_with_curl(serve, workload):
    hot = Bg([workload("hotab"), "20000"])
    exe = workload("hotab")
    s = serve("-p", str(hot.pid))
    base = load_base(hot.pid, exe)
    a, b = base + nm_address(exe, "hot_a") + 3, base + nm_address(exe, "hot_b") + 1
    r = subprocess.run(["curl", "-s", "-d", "0x%x+0x%x+0x10" % (a, b), s.url + "/pprof/symbol"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert r.stdout == "0x%x\thot_a\n0x%x\thot_b\n" % (a, b), r.stdout
    r = subprocess.run(["curl", "-s", s.url + "/pprof/symbol"], capture_output=True, text=True, timeout=30)
    assert r.stdout == "num_symbols: 1\n"
    # The same under /pid/N and Go's path.
    status, _, body = s.request("POST", "/pid/%d/debug/pprof/symbol" % hot.pid, body="0x%x" % a)
    assert status == 200 and body == b"0x%x\thot_a\n" % a
    hot.kill()


def test_cmdline(serve, workload):
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-p", str(hot.pid))
    status, headers, body = s.get("/pprof/cmdline")
    assert status == 200 and body == ("%s\n20000\n" % workload("hotab")).encode()
    status, headers, body = s.get("/debug/pprof/cmdline")
    assert status == 200 and body == ("%s\x0020000" % workload("hotab")).encode()
    status, headers, body = s.get("/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"hotab" in body and (b"/pid/%d/pprof/heap" % hot.pid) in body
    hot.kill()


# ---------------------------------------------------------------- who may see what


def test_all_processes_need_the_secret(serve, workload, google_pprof, go_pprof):
    hot = Bg([workload("hotab"), "20000"])
    s = serve("--all")
    assert re.fullmatch(r"/[0-9a-f]{32}", s.prefix), s.url
    dead = 4194000  # above any pid this machine has handed out
    refusals = set()
    for path in ["/pid/%d/pprof/heap" % hot.pid, "/pid/%d/pprof/heap" % dead, "/pid/%d/pprof/cmdline" % hot.pid,
                 "/pid/%d/pprof/cmdline" % dead, "/", "/pprof/symbol", "/x" + s.prefix[2:] + "/pid/1/pprof/heap",
                 s.prefix[:-1] + "/pid/%d/pprof/cmdline" % hot.pid]:
        status, headers, body = s.get(path)
        assert status == 403, (path, status)
        refusals.add(body)
    assert len(refusals) == 1, refusals  # nothing tells an existing pid from a missing one
    # With it, both clients work.
    status, _, body = s.get(s.prefix + "/pid/%d/pprof/cmdline" % hot.pid)
    assert status == 200 and body.startswith(workload("hotab").encode())
    assert s.get(s.prefix + "/pid/%d/pprof/cmdline" % dead)[0] == 404
    rows = gperf_text(google_pprof("--text", "--seconds=1", s.url + "/pid/%d/pprof/profile" % hot.pid))
    assert "hot_a" in rows, rows
    rows = go_top(go_pprof("-top", "-seconds", "1", s.url + "/pid/%d/debug/pprof/profile" % hot.pid))
    assert "hot_a" in rows, rows
    s.stop()
    hot.kill()


def test_named_targets_only(serve, workload):
    hot = Bg([workload("hotab"), "20000"])
    other = Bg([workload("hotab"), "20000"])
    s = serve("-p", str(hot.pid))
    a = s.get("/pid/%d/pprof/cmdline" % other.pid)
    b = s.get("/pid/%d/pprof/cmdline" % 4194000)
    assert a[0] == b[0] == 403 and a[2] == b[2]
    assert s.get("/pid/%d/pprof/cmdline" % hot.pid)[0] == 200
    hot.kill()
    other.kill()


# ---------------------------------------------------------------- concurrency and faults


def fetch_bg(url):
    """curl in the background: the status line and body come back when it ends."""
    return subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url], stdout=subprocess.PIPE,
                            text=True)


def test_two_clients_two_targets_and_a_conflict(serve, workload):
    one = Bg([workload("hotab"), "20000"])
    two = Bg([workload("hotab"), "20000"])
    s = serve("-p", "%d,%d" % (one.pid, two.pid))
    t0 = time.monotonic()
    c1 = fetch_bg(s.url + "/pid/%d/debug/pprof/profile?seconds=3" % one.pid)
    c2 = fetch_bg(s.url + "/pid/%d/pprof/profile?seconds=3" % two.pid)
    time.sleep(0.5)
    status, _, body = s.get("/pid/%d/debug/pprof/profile?seconds=1" % one.pid)
    assert status == 409 and b"already running" in body, body
    assert c1.communicate(timeout=30)[0] == "200"
    assert c2.communicate(timeout=30)[0] == "200"
    assert time.monotonic() - t0 < 6  # side by side, not one after the other
    # Free again.
    assert s.get("/pid/%d/debug/pprof/profile?seconds=1" % one.pid)[0] == 200
    s.stop()
    one.kill()
    two.kill()


def test_client_killed_mid_profile_frees_it(serve, workload):
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-p", str(hot.pid))
    c = fetch_bg(s.url + "/debug/pprof/profile?seconds=30")
    deadline = time.monotonic() + 5
    while not s.children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.children(), "no profiling child"
    c.kill()
    c.wait()
    deadline = time.monotonic() + 5
    while s.children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.children() == []  # the child (and its events) is gone
    status, _, _ = s.get("/debug/pprof/profile?seconds=1")
    assert status == 200  # not 409: the profile was forgotten
    s.stop()
    hot.kill()


def test_target_killed_mid_profile(serve, workload, go_pprof, tmp_path):
    """The client gets what was collected, at once, with a note saying why it is short; serve
    then ends, its only target gone."""
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-F", "997", "-p", str(hot.pid))
    out = tmp_path / "short.pb.gz"
    c = subprocess.Popen(["curl", "-s", "-D", "-", "-o", str(out), s.url + "/debug/pprof/profile?seconds=20"],
                         stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    t0 = time.monotonic()
    hot.kill()
    head = c.communicate(timeout=20)[0]
    assert time.monotonic() - t0 < 5
    assert head.startswith("HTTP/1.1 200"), head
    assert re.search(r"^X-Perf-Prof-Note: process %d exited after [\d.]+ s of the 20 s asked" % hot.pid, head,
                     re.M | re.I), head
    rows = go_top(go_pprof("-top", "-sample_index=samples", str(out)))
    assert int(rows["hot_a"][1]) > 500, rows
    rc, _, err = s.bg.finish(timeout=10)
    assert rc == 0 and err == "", (rc, err)


def test_malformed_requests_leave_it_answering_with_flat_rss(serve, workload, pp):
    hot = Bg([workload("hotab"), "60000"])
    s = serve("--client-timeout", "2", "-p", str(hot.pid))
    exe = workload("hotab")
    base = load_base(hot.pid, exe)
    good = "0x%x" % (base + nm_address(exe, "hot_a"))

    def raw(data):
        with socket.create_connection((s.host, s.port), timeout=10) as so:
            so.sendall(data)
            if b"\n" not in data:
                # No line end: the server waits for the rest of the line, and libmicrohttpd
                # notices the client's close only at --client-timeout. Hang up, unanswered.
                return b""
            try:
                so.shutdown(socket.SHUT_WR)
                return so.recv(65536)
            except OSError:
                return b""

    kinds = [
        b"GARBAGE\r\n\r\n",
        b"\x00\x01\x02\xff" * 64,
        b"GET /pprof/nothing HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /pid/1/pprof/heap HTTP/1.1\r\nHost: x\r\n\r\n",
        b"DELETE /pprof/heap HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /pprof/profile?seconds=-5 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /pprof/profile?seconds=abc HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /pprof/profile?seconds=99999999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /debug/pprof/profile?seconds=0 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n",
        b"POST /pprof/symbol HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nabc",
        b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % (b"%zz" * 3000),
        b"GET /pprof/heap HTTP/9.9\r\n\r\n",
        b"POST /pprof/symbol HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n0x+0x",
    ]
    statuses = collections.Counter()

    def round_(n):
        for i in range(n):
            reply = raw(kinds[i % len(kinds)])
            m = re.match(rb"HTTP/1\.[01] (\d+)", reply)
            statuses[m.group(1).decode() if m else "closed"] += 1

    round_(100)  # warm-up: the allocator's arenas settle
    before = s.rss_kb()
    # Slow clients: connections that send a byte now and then, never a whole head.
    slow = []
    for _ in range(20):
        so = socket.create_connection((s.host, s.port), timeout=10)
        so.sendall(b"GET /pprof/cmd")
        slow.append(so)
    round_(1000)
    middle = s.rss_kb()
    round_(1000)  # a leak per request would grow the second thousand's RSS as much as the first's
    after = s.rss_kb()
    t0 = time.monotonic()
    status, _, body = s.request("POST", "/pprof/symbol", body=good)
    assert status == 200 and body.endswith(b"\thot_a\n") and time.monotonic() - t0 < 2
    print("\nstatuses %s; RSS %d kB -> %d kB -> %d kB" % (dict(statuses), before, middle, after))
    assert statuses["400"] > 0 and statuses["404"] > 0 and statuses["403"] > 0 and statuses["405"] > 0
    # 5xx only for the HTTP version no server speaks (505): nothing here is a server error.
    assert not any(k.startswith("5") and k != "505" for k in statuses), statuses
    # An ASan build keeps what it frees in its quarantine: its RSS grows whatever is leaked.
    if not asan_build(pp.path):
        assert after - before < 1024 and after - middle < 256, (before, middle, after)
    # The slow clients are closed after --client-timeout.
    time.sleep(3)
    closed = 0
    for so in slow:
        try:
            so.settimeout(1)
            closed += so.recv(100) == b""
        except OSError:
            closed += 1
        so.close()
    assert closed == len(slow)
    assert s.children() == []  # no bad `seconds` started a profile
    s.stop()
    hot.kill()


# ---------------------------------------------------------------- bad use


def test_bad_use(pp, needs_root, workload):
    for args, msg, code in [
        (["serve", "--listen", "nonsense"], "--listen", 129),
        (["serve", "--listen", "127.0.0.1:99999", "-p", "1"], "--listen", 129),
        (["serve", "-p", "4194000", "--listen", "127.0.0.1:0"], "no process 4194000", 1),
        (["serve", "--listen", "127.0.0.1:0"], "give one of", 129),
        (["serve", "--all", "-p", "1", "--listen", "127.0.0.1:0"], "give one of", 129),
        (["serve", "-F", "0", "-p", "1"], "freq", 129),
        (["serve", "--max-seconds", "0", "-p", "1"], "max-seconds", 129),
    ]:
        rc, out, err = pp.run(args, timeout=20)
        assert rc == code, (args, rc, err)
        assert len(err.splitlines()) == 1 and msg in err, (args, err)
    # A port in use.
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        so.listen(1)
        port = so.getsockname()[1]
        rc, out, err = pp.run(["serve", "--listen", "127.0.0.1:%d" % port, "-p", "1"], timeout=20)
        assert rc == 1 and len(err.splitlines()) == 1 and str(port) in err, err


def test_sigint_mid_profile_answers_503_and_ends_cleanly(serve, workload):
    hot = Bg([workload("hotab"), "20000"])
    s = serve("-p", str(hot.pid))
    c = subprocess.Popen(["curl", "-s", "-w", " %{http_code}", s.url + "/debug/pprof/profile?seconds=20"],
                         stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    s.bg.send(signal.SIGINT)
    rc, _, err = s.bg.finish(timeout=10)
    assert rc == 0 and err == "", (rc, err)
    out = c.communicate(timeout=10)[0]
    assert out.endswith(" 503"), out
    hot.kill()
