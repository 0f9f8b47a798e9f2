"""debuginfod (issue 29, item 1): a stripped binary whose debug file only a debuginfod server
holds is named through it when DEBUGINFOD_URLS is set, in stacks (profile -g, --call-graph
dwarf), `--symbols` and `serve`.

The server is the real one (elfutils' `debuginfod`, Debian package debuginfod) on a loopback
port, serving a directory that holds the debug file (`objcopy --only-keep-debug`) of a copy of
the workload `hotab` (CPU split between the static functions hot_a and hot_b) whose own copy is
`strip --strip-all`ed. Every test has its own libdebuginfod cache (DEBUGINFOD_CACHE_PATH), so
what the server's /metrics count is what this test asked."""

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import Bg, assert_not_crashed, run
from test_serve import Serve, load_base, nm_address

DEBUGINFOD = "/usr/bin/debuginfod"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(text, name):
    """The value of one /metrics line, e.g. 'http_requests_total{type="debuginfo"}'; 0 if absent."""
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else 0


class Server:
    """`debuginfod -F DIR` on 127.0.0.1:PORT, once it has scanned DIR."""

    def __init__(self, tmp_path, srv_dir):
        if not os.access(DEBUGINFOD, os.X_OK):
            pytest.fail("debuginfod not installed (Debian package debuginfod; `make deps` installs it)")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        # -t 0 -g 0: one scan at start, no grooming; the database in the test's folder.
        self.proc = subprocess.Popen([DEBUGINFOD, "-F", str(srv_dir), "-p", str(self.port),
                                      "-d", str(tmp_path / "debuginfod.sqlite"), "-t", "0", "-g", "0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                m = self.metrics()
                if (metric(m, 'scanned_files_total{source="file"}') >= 1
                        and metric(m, 'thread_work_pending{role="scan"}') == 0):
                    break
            except OSError:
                pass
            assert self.proc.poll() is None, "debuginfod exited"
            assert time.time() < deadline, "debuginfod did not scan %s within 30 s" % srv_dir
            time.sleep(0.1)

    def metrics(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            return r.read().decode()

    def debuginfo_requests(self):
        return metric(self.metrics(), 'http_requests_total{type="debuginfo"}')

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def stripped(workload, tmp_path):
    """(stripped copy of hotab, its unstripped copy, the server's folder with its debug file)."""
    full = str(tmp_path / "hotab.full")
    shutil.copy(workload("hotab"), full)
    exe = str(tmp_path / "hotab")
    srv = tmp_path / "srv"
    srv.mkdir()
    subprocess.run(["objcopy", "--only-keep-debug", full, str(srv / "hotab.debug")], check=True)
    shutil.copy(full, exe)
    subprocess.run(["strip", "--strip-all", exe], check=True)
    return exe, full, srv


@pytest.fixture
def server(tmp_path, stripped):
    s = Server(tmp_path, stripped[2])
    yield s
    s.stop()


def client_env(tmp_path, urls):
    """The environment of a perf-prof run: this test's cache, `urls` (None: unset), and none
    of the user's debuginfod settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env["DEBUGINFOD_CACHE_PATH"] = str(tmp_path / "cache")
    if urls is not None:
        env["DEBUGINFOD_URLS"] = urls
    return env


def profile_folded(pp, tmp_path, exe, env, extra=(), ms=400, name="cpu"):
    """profile -g of `exe` into a folded file: (stacks -> count, stdout, stderr, seconds)."""
    out = str(tmp_path / name)
    t0 = time.monotonic()
    rc, stdout, err = pp.run(["profile", "-F", "999", "-g", "--flame-graph", out] + list(extra)
                             + ["--", exe, str(ms)], timeout=120, env=env)
    took = time.monotonic() - t0
    assert_not_crashed(rc)
    assert rc == 0, err
    stacks = {}
    with open(out + ".folded") as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            stacks[stack] = stacks.get(stack, 0) + int(n)
    return stacks, stdout, err, took


def named_share(stacks):
    """Of the samples in hot_a/hot_b's time (stacks through main), the share that names one."""
    total = sum(n for s, n in stacks.items() if "main" in s or "[" in s and "hotab+0x" in s)
    named = sum(n for s, n in stacks.items() if re.search(r"\bhot_[ab]\b", s))
    return named, total


def test_profile_names_functions_through_the_server_then_from_the_cache(pp, needs_root, stripped, server,
                                                                         tmp_path):
    exe = stripped[0]
    # Without DEBUGINFOD_URLS: the frames stay [hotab+0x...].
    stacks, out, err, _ = profile_folded(pp, tmp_path, exe, client_env(tmp_path, None), name="plain")
    assert err == "", err
    folded = "\n".join(stacks)
    assert "[%s+0x" % exe in folded and "hot_a" not in folded, folded[:2000]
    assert server.debuginfo_requests() == 0

    env = client_env(tmp_path, server.url)
    stacks, out, err, _ = profile_folded(pp, tmp_path, exe, env, name="cold")
    assert err == "", err
    named, total = named_share(stacks)
    assert total > 100 and named >= 0.95 * total, (named, total, list(stacks.items())[:10])
    assert any("hot_a" in s for s in stacks) and any("hot_b" in s for s in stacks)
    assert "[%s+0x" % exe not in "\n".join(stacks)
    assert server.debuginfo_requests() == 1
    assert os.path.getsize(tmp_path / "cache" / build_id(exe) / "debuginfo") > 0

    # Second run: from libdebuginfod's cache, no request reaches the server.
    stacks, out, err, _ = profile_folded(pp, tmp_path, exe, env, name="warm")
    assert err == "", err
    named, total = named_share(stacks)
    assert total > 100 and named >= 0.95 * total, (named, total)
    assert server.debuginfo_requests() == 1


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def test_verbose_says_where_the_debug_info_came_from(pp, needs_root, stripped, server, tmp_path):
    exe = stripped[0]
    _, out, err, _ = profile_folded(pp, tmp_path, exe, client_env(tmp_path, server.url), extra=["-v"])
    assert err == "", err
    bid = build_id(exe)
    assert out.count("debuginfod: debug info of %s (build-id %s): from the cache or %s\n"
                     % (exe, bid, server.url)) == 1, out[-3000:]
    assert "debuginfod: %s: %s (" % (exe, tmp_path / "cache" / bid / "debuginfo") in out, out[-3000:]
    # Without -v, nothing about it anywhere.
    _, out, err, _ = profile_folded(pp, tmp_path, exe, client_env(tmp_path, server.url), name="quiet")
    assert err == "" and "debuginfod" not in out


def test_not_on_the_server_is_quiet(pp, needs_root, workload, server, tmp_path):
    """A stripped binary the server does not hold: [binary+0x...] frames, nothing on stderr."""
    other = str(tmp_path / "spin")
    shutil.copy(workload("spin"), other)
    subprocess.run(["strip", "--strip-all", other], check=True)
    rc, out, err = pp.run(["profile", "-F", "999", "-g", "--", other, "300"], timeout=60,
                          env=client_env(tmp_path, server.url))
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert "[%s+0x" % other in out
    assert server.debuginfo_requests() == 1


def test_unreachable_server_is_one_line(pp, needs_root, stripped, tmp_path):
    exe = stripped[0]
    url = "http://127.0.0.1:%d" % free_port()  # nothing listens there
    stacks, out, err, took = profile_folded(pp, tmp_path, exe, client_env(tmp_path, url))
    assert err == "perf-prof: debuginfod: %s: Connection refused\n" % url, err
    assert "[%s+0x" % exe in "\n".join(stacks)
    assert took < 30, took


def test_silent_server_times_out(pp, needs_root, stripped, tmp_path):
    """A server that accepts and never answers: given up after perf-prof's DEBUGINFOD_TIMEOUT
    (10 s, no retries) instead of libdebuginfod's 3 x 90 s."""
    exe = stripped[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        url = "http://127.0.0.1:%d" % s.getsockname()[1]
        stacks, out, err, took = profile_folded(pp, tmp_path, exe, client_env(tmp_path, url))
    assert err == "perf-prof: debuginfod: %s: no answer within DEBUGINFOD_TIMEOUT=10 s\n" % url, err
    assert "[%s+0x" % exe in "\n".join(stacks)
    assert 9 < took < 40, took


def test_dwarf_call_graph_unwinds_with_the_servers_debug_frame(pp, needs_root, tmp_path):
    """--call-graph dwarf through a binary without unwind tables or frame pointers: its CFI is
    only in the .debug_frame of the debug file, which only the server has. With it the stacks
    reach main (served a debug file without .debug_frame, they stop at `work`: checked by hand)."""
    src = os.path.join(os.path.dirname(__file__), "..", "workloads", "hotab.c")
    full = str(tmp_path / "hotab_nocfi.full")
    subprocess.run(["gcc", "-O1", "-g", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables",
                    "-fno-unwind-tables", "-o", full, src], check=True)
    exe = str(tmp_path / "hotab_nocfi")
    srv = tmp_path / "srv"
    srv.mkdir()
    subprocess.run(["objcopy", "--only-keep-debug", full, str(srv / "hotab_nocfi.debug")], check=True)
    subprocess.run(["strip", "--strip-all", "-o", exe, full], check=True)
    server = Server(tmp_path, srv)
    try:
        def through_main(env, name):
            stacks, out, err, _ = profile_folded(pp, tmp_path, exe, env, extra=["--call-graph", "dwarf"],
                                                 name=name)
            assert err == "", err
            return sum(n for s, n in stacks.items() if re.search(r"main;.*hot_[ab]\b", s)), sum(stacks.values())

        named, total = through_main(client_env(tmp_path, None), "plain")
        assert named == 0, (named, total)
        named, total = through_main(client_env(tmp_path, server.url), "served")
        assert total > 100 and named >= 0.9 * total, (named, total)
        assert server.debuginfo_requests() == 1
    finally:
        server.stop()


def test_symbols_protocol_names_through_the_server(perf_prof, needs_root, stripped, server, tmp_path):
    """`perf-prof --symbols` (pprof's PPROF_PATH symbolizer): the maps of a live process, then
    addresses."""
    exe, full, _ = stripped
    hot = Bg([exe, "20000"])
    try:
        base = load_base(hot.pid, exe)
        a, b = base + nm_address(full, "hot_a") + 3, base + nm_address(full, "hot_b") + 1
        with open("/proc/%d/maps" % hot.pid) as f:
            stdin = f.read() + "0x%x\n0x%x\n" % (a, b)
        rc, out, err = run([perf_prof, "--symbols", exe], input=stdin, timeout=60,
                           env=client_env(tmp_path, None))
        assert rc == 0 and err == "", err
        assert "hot_a" not in out, out
        rc, out, err = run([perf_prof, "--symbols", exe], input=stdin, timeout=60,
                           env=client_env(tmp_path, server.url))
        assert rc == 0 and err == "", err
        assert out.splitlines() == ["hot_a", "hot_b"], out
        assert server.debuginfo_requests() == 1
    finally:
        hot.kill()


class _EnvPP:
    """pp whose background runs get `env`."""

    def __init__(self, pp, env):
        self.pp, self.env = pp, env

    def start(self, args):
        return self.pp.start(args, env=self.env)


def test_serve_symbol_endpoint_names_through_the_server(pp, needs_root, stripped, server, tmp_path):
    exe, full, _ = stripped
    hot = Bg([exe, "20000"])
    s = None
    try:
        s = Serve(_EnvPP(pp, client_env(tmp_path, server.url)), ["-p", str(hot.pid)])
        base = load_base(hot.pid, exe)
        a, b = base + nm_address(full, "hot_a") + 3, base + nm_address(full, "hot_b") + 1
        status, _, body = s.request("POST", "/pprof/symbol", body="0x%x+0x%x" % (a, b))
        assert status == 200 and body == b"0x%x\thot_a\n0x%x\thot_b\n" % (a, b), body
        assert server.debuginfo_requests() == 1
        s.stop()
    finally:
        hot.kill()
        if s:
            s.bg.kill()
