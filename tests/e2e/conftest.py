"""Shared helpers for the perf-prof end-to-end tests.

Environment:
  PERF_PROF  absolute path of the binary under test (default: <repo>/perf-prof)
  WORKLOADS  directory of the built workloads (default: <repo>/build/workloads)
  CI=true    a test that would be skipped for lack of privileges / perf_event_open
             (or for a missing binary or workload) fails instead.

Helpers (module level, and through the fixtures below):
  run(argv, timeout=, input=)       -> (rc, stdout, stderr); fails the test on timeout
  Bg(argv, ...)                     background process with line-by-line stdout capture
  parse_signal_line(line) / parse_signal_lines(text)   strict signal_generate line parser
"""

import contextlib
import ctypes
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


# A shell's background job (`make test &` in a script) starts with SIGINT and SIGQUIT ignored,
# and every program the tests start would inherit that: a SIGINT that reaches perf-prof before
# its first instruction blocks it would be dropped instead of ending the run. The tests send
# signals to programs started as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def in_ci():
    return os.environ.get("CI", "").lower() == "true"


def skip_or_fail(reason):
    """Skip, except under CI=true, where a skip would hide that the real thing was not tested."""
    if in_ci():
        pytest.fail("CI=true, refusing to skip: " + reason, pytrace=False)
    pytest.skip(reason)


# --------------------------------------------------------------------------- paths

def perf_prof_path():
    return os.path.abspath(os.environ.get("PERF_PROF") or os.path.join(REPO, "perf-prof"))


def workloads_dir():
    return os.path.abspath(os.environ.get("WORKLOADS") or os.path.join(REPO, "build", "workloads"))


@pytest.fixture(scope="session")
def perf_prof():
    path = perf_prof_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        skip_or_fail("perf-prof binary not found at %s (run `make`, or set PERF_PROF)" % path)
    return path


@pytest.fixture(scope="session")
def workloads():
    d = workloads_dir()
    if not os.path.isdir(d):
        skip_or_fail("workloads directory %s not found (run `make all`, or set WORKLOADS)" % d)
    return d


@pytest.fixture(scope="session")
def workload(workloads):
    """workload('sigself') -> absolute path of a built workload (checked to exist)."""

    def get(name):
        p = os.path.join(workloads, name)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            skip_or_fail("workload %s not built (run `make all`)" % p)
        return p

    return get


# --------------------------------------------------------------------------- root / perf_event_open

_NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "i386": 336, "i686": 336,
                       "ppc64le": 319, "ppc64": 319, "s390x": 331, "riscv64": 241,
                       "loongarch64": 241}


def _perf_event_open_works():
    """Open (and close) a disabled software cpu-clock counter on ourselves."""
    nr = _NR_PERF_EVENT_OPEN.get(platform.machine())
    if nr is None:
        return True, ""  # unknown arch: let the real test find out
    if not os.path.exists("/proc/sys/kernel/perf_event_paranoid"):
        return False, "kernel has no perf_event support (/proc/sys/kernel/perf_event_paranoid missing)"
    attr = bytearray(64)  # PERF_ATTR_SIZE_VER0
    attr[0:4] = (1).to_bytes(4, "little")  # type = PERF_TYPE_SOFTWARE
    attr[4:8] = (64).to_bytes(4, "little")  # size
    # config = 0 (PERF_COUNT_SW_CPU_CLOCK); flags bit 0 = disabled
    attr[40:48] = (1).to_bytes(8, "little")
    libc = ctypes.CDLL(None, use_errno=True)
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    fd = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(0), ctypes.c_int(-1),
                      ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        err = ctypes.get_errno()
        return False, "perf_event_open failed: %s" % os.strerror(err)
    os.close(fd)
    return True, ""


_root_state = None


def require_root():
    global _root_state
    if _root_state is None:
        if os.geteuid() != 0:
            _root_state = (False, "needs root (tracepoints, tracefs mount)")
        else:
            _root_state = _perf_event_open_works()
    ok, reason = _root_state
    if not ok:
        skip_or_fail(reason)


@pytest.fixture
def needs_root():
    require_root()


# --------------------------------------------------------------------------- processes

_live = []  # processes started by the helpers, killed at test teardown if still alive


def _crashed(rc):
    return rc is not None and rc < 0


def run(argv, timeout=30, input=None, env=None):
    """Run argv to completion. Returns (rc, stdout, stderr) as text.

    rc is negative (-SIGNO) if the process was killed by a signal. The test fails if the
    process does not finish within `timeout` seconds (it is killed first)."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         text=True, errors="replace")
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail("timeout after %ss: %s\n--- stdout (tail) ---\n%s\n--- stderr ---\n%s"
                    % (timeout, " ".join(argv), out[-3000:], err[-3000:]), pytrace=False)
    return p.returncode, out, err


@contextlib.contextmanager
def spinning(cpus, ms):
    """Busy vCPUs beside a test: `spin MS` pinned to each CPU in `cpus` (a CPU named twice gets
    two, taking turns there all along). This VM loses the scheduler events raised on an idle
    vCPU (a wake-up, often the switch-in after it) and fires an idle vCPU's timers late; a busy
    one loses very few. Yields the spinners (Popen); kills those left on exit."""
    spin = os.path.join(workloads_dir(), "spin")
    procs = [subprocess.Popen(["taskset", "-c", str(cpu), spin, str(ms)]) for cpu in cpus]
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


class Bg:
    """A background process whose stdout is read line by line by a thread.

    Bg(argv) starts it (stdin=DEVNULL unless stdin=subprocess.PIPE is given).
    wait_line(regex, timeout)   -> first stdout line matching (re.search); fails on timeout/exit
    lines()                     -> stdout lines read so far
    send(sig)                   -> send a signal
    finish(timeout)             -> (rc, stdout, stderr) after exit; fails (and kills) on timeout
    """

    def __init__(self, argv, stdin=subprocess.DEVNULL, env=None):
        self.argv = list(argv)
        self.p = subprocess.Popen(self.argv, stdin=stdin, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True,
                                  errors="replace", bufsize=1)
        self.started = time.monotonic()
        self._lines = []
        self._err = []
        self._cond = threading.Condition()
        self._eof = False
        self._t_out = threading.Thread(target=self._read_out, daemon=True)
        self._t_err = threading.Thread(target=self._read_err, daemon=True)
        self._t_out.start()
        self._t_err.start()
        _live.append(self)

    @property
    def pid(self):
        return self.p.pid

    def _read_out(self):
        for line in self.p.stdout:
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _read_err(self):
        for line in self.p.stderr:
            self._err.append(line)

    def lines(self):
        with self._cond:
            return list(self._lines)

    def _describe(self):
        return ("%s\n--- stdout so far (tail) ---\n%s\n--- stderr so far ---\n%s"
                % (" ".join(self.argv), "".join(self.lines()[-40:]), "".join(self._err)[-3000:]))

    def wait_line(self, regex, timeout=10.0):
        rx = re.compile(regex)
        deadline = time.monotonic() + timeout
        idx = 0
        with self._cond:
            while True:
                while idx < len(self._lines):
                    if rx.search(self._lines[idx]):
                        return self._lines[idx]
                    idx += 1
                if self._eof:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.2))
        why = "exited (rc=%s)" % self.p.poll() if self._eof else "timeout after %ss" % timeout
        pytest.fail("waiting for a line matching %r: %s\n%s" % (regex, why, self._describe()),
                    pytrace=False)

    def wait_count(self, regex, n, timeout=10.0):
        """Wait until at least n stdout lines match regex."""
        rx = re.compile(regex)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if sum(1 for x in self._lines if rx.search(x)) >= n:
                    return
                if self._eof or time.monotonic() >= deadline:
                    break
                self._cond.wait(0.2)
        pytest.fail("waiting for %d lines matching %r\n%s" % (n, regex, self._describe()),
                    pytrace=False)

    def send(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)

    def alive(self):
        return self.p.poll() is None

    def finish(self, timeout=10.0):
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            desc = self._describe()
            self.kill()
            pytest.fail("process did not exit within %ss: %s" % (timeout, desc), pytrace=False)
        self._t_out.join(5)
        self._t_err.join(5)
        if self in _live:
            _live.remove(self)
        return rc, "".join(self._lines), "".join(self._err)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self in _live:
            _live.remove(self)


@pytest.fixture(autouse=True)
def _kill_leftovers():
    yield
    for b in list(_live):
        b.kill()


@pytest.fixture(scope="session")
def pp(perf_prof):
    """pp.run(args...) / pp.start(args...) run the binary under test with the given args."""

    class PP:
        path = perf_prof

        @staticmethod
        def run(args, timeout=30, input=None, env=None):
            return run([perf_prof] + list(args), timeout=timeout, input=input, env=env)

        @staticmethod
        def start(args, stdin=subprocess.DEVNULL, env=None):
            return Bg([perf_prof] + list(args), stdin=stdin, env=env)

        @staticmethod
        def start_ready(args, timeout=15.0, env=None):
            """Start with args (which must contain -v) and wait for `<profiler>: enabled after`."""
            assert "-v" in args, "start_ready needs -v in args"
            b = Bg([perf_prof] + list(args), env=env)
            b.wait_line(ENABLED_RE, timeout=timeout)
            return b

    return PP


def assert_not_crashed(rc, what="perf-prof"):
    assert not _crashed(rc), "%s was killed by signal %d" % (what, -rc)


# --------------------------------------------------------------------------- output parsing

WALL_RE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}"
ENABLED_RE = r"(^|\s)[\w-]+: enabled after \d+\.\d{6}$"

# {WALL} {comm:>16} {pid:>6} {LAT} [{cpu:03}] {sec}.{usec:06}: signal:signal_generate: sig=N
#   errno=E code=C comm=TARGET pid=P grp=G res=R
SIGNAL_LINE_RE = re.compile(
    r"^(?P<wall>" + WALL_RE + r") "
    r"(?P<commf>.{16}) (?P<pidf> *\d+) "
    r"(?P<lat>[.Ddb][.BNLbnpl][.ZzHhs][.0-9a-f][0-9a-f]?) "
    r"\[(?P<cpu>\d{3})\] "
    r"(?P<sec>\d+)\.(?P<usec>\d{6}): signal:signal_generate: "
    r"sig=(?P<sig>\d+) errno=(?P<errno>-?\d+) code=(?P<code>-?\d+) "
    r"comm=(?P<tcomm>.*) pid=(?P<tpid>\d+) grp=(?P<grp>\d+) res=(?P<res>\d+)$")

USAGE_SELF_RE = re.compile(
    r"^" + WALL_RE + r" CPU %usr \d+\.\d\d %sys \d+\.\d\d MAXRSS \d+k$")


class SignalEvent:
    __slots__ = ("line", "wall", "comm", "pid", "lat", "cpu", "ts", "sig", "errno", "code",
                 "tcomm", "tpid", "grp", "res")

    def __repr__(self):
        return "SignalEvent(%r)" % self.line


def parse_signal_line(line):
    """Parse one signal_generate line strictly; returns a SignalEvent or None if it does not
    match the format. Field widths are checked, not just the regex."""
    line = line.rstrip("\n")
    m = SIGNAL_LINE_RE.match(line)
    if not m:
        return None
    commf, pidf = m.group("commf"), m.group("pidf")
    comm = commf.lstrip(" ")
    pid = pidf.lstrip(" ")
    if not comm or commf != comm.rjust(16):
        return None
    if pidf != pid.rjust(6) or (len(pid) > 1 and pid.startswith("0")):
        return None
    e = SignalEvent()
    e.line = line
    e.wall = datetime.datetime.strptime(m.group("wall"), "%Y-%m-%d %H:%M:%S.%f")
    e.comm = comm
    e.pid = int(pid)
    e.lat = m.group("lat")
    e.cpu = int(m.group("cpu"))
    e.ts = int(m.group("sec")) + int(m.group("usec")) / 1e6
    for k in ("sig", "errno", "code", "tpid", "grp", "res"):
        setattr(e, k, int(m.group(k)))
    e.tcomm = m.group("tcomm")
    return e


def _parse_strict(lines, what):
    """Parse each of `lines` as a signal_generate line; any that does not match fails."""
    events, bad = [], []
    for line in lines:
        e = parse_signal_line(line)
        if e is None:
            bad.append(line)
        else:
            events.append(e)
    assert not bad, what + ":\n" + "\n".join(bad[:20])
    return events


def parse_signal_lines(text, allow=()):
    """Parse every line of `text` as a signal_generate line.

    Lines equal to an entry of `allow` (e.g. a workload's own "done" output, which shares
    perf-prof's stdout) are skipped. Any other line that does not match fails the test."""
    return _parse_strict([l for l in text.splitlines() if l not in allow],
                         "unexpected / malformed stdout lines")


def signal_events_in(text):
    """Parse only the lines that claim to be signal_generate events (for -v runs whose stdout
    also carries debug notices); every such line must match the strict format."""
    return _parse_strict([l for l in text.splitlines() if "signal:signal_generate:" in l],
                         "malformed signal_generate lines")


def check_wall_clock(events, t_before, t_after, slack=2.0):
    """WALL(ev) must lie within the test's own wall-clock window and track the event clock:
    WALL(ev) - EVTS is the same for every event (one calibration) up to rounding."""
    lo = t_before - datetime.timedelta(seconds=slack)
    hi = t_after + datetime.timedelta(seconds=slack)
    for e in events:
        assert lo <= e.wall <= hi, "WALL %s outside the run window [%s, %s]: %s" % (
            e.wall, t_before, t_after, e.line)
    if events:
        offs = [e.wall.timestamp() - e.ts for e in events]
        assert max(offs) - min(offs) < 0.002, \
            "WALL(ev) does not follow the event timestamps (spread %.6fs)" % (max(offs) - min(offs))


def signal_process(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def mountpoints(fstype=None):
    res = []
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and (fstype is None or parts[2] == fstype):
                res.append(parts[1])
    return res


def tracefs():
    """The mount point of tracefs, None if it is not mounted."""
    for d in mountpoints("tracefs"):
        if os.path.isdir(os.path.join(d, "events")):
            return d
    return None


def append_line(path, line):
    """Appends a line to a tracefs control file (uprobe_events): O_APPEND, never O_TRUNC (which
    clears every uprobe event); not open(path, "a"), whose seek to the end tracefs refuses."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def section(path, name):
    """(address, file offset, size) of section `name` from `readelf -SW`."""
    text = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+) ", line)
        if m and m.group(1) == name:
            return int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)
    raise AssertionError("no section %s in %s" % (name, path))


def perf_stat_count(event, argv, filt=None):
    """The count of `event` (with the kernel filter `filt`) for argv under `perf stat` (the
    reference peer), None without perf."""
    perf = shutil.which("perf") or "/usr/bin/perf"
    if not os.path.exists(perf):
        return None
    p = subprocess.run([perf, "stat", "-x,", "-e", event] + (["--filter", filt] if filt else []) + ["--"] + argv,
                       capture_output=True, text=True, timeout=60)
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] == event and f[0].isdigit():
            return int(f[0])
    return None


__all__ = ["run", "Bg", "perf_stat_count", "require_root", "skip_or_fail", "parse_signal_line", "parse_signal_lines",
           "signal_events_in", "check_wall_clock", "assert_not_crashed", "ENABLED_RE",
           "USAGE_SELF_RE", "WALL_RE", "mountpoints", "signal_process", "perf_event_cgroup_mount"]


def perf_event_cgroup_mount():
    """The hierarchy perf-prof uses: a v1 perf_event controller, else the v2 unified one."""
    v2 = None
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype, opts = line.split()[:4]
            if fstype == "cgroup" and "perf_event" in opts.split(","):
                return mnt
            if fstype == "cgroup2" and v2 is None:
                v2 = mnt
    return v2


# --------------------------------------------------------------------------- peers

TCMALLOC_CANDIDATES = [
    "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
    "/usr/lib/libtcmalloc.so.4",
    "/usr/lib64/libtcmalloc.so.4",
]


def asan_build(path):
    """Whether the binary at `path` is an AddressSanitizer build (make sanitize): its runtime must
    come first, so it refuses to start under another malloc in LD_PRELOAD, and its quarantine
    keeps freed memory resident (up to 256 MB), so its RSS says nothing of leaks."""
    with open(path, "rb") as f:
        return b"libasan.so" in f.read()


@pytest.fixture(scope="session")
def tcmalloc():
    """Path of gperftools' libtcmalloc.so.4 (the heap checker), for LD_PRELOAD."""
    for c in TCMALLOC_CANDIDATES:
        if os.path.exists(c):
            return c
    skip_or_fail("libtcmalloc.so.4 not installed (package libgoogle-perftools4; run `make deps`)")


@pytest.fixture
def go_pprof(tmp_path):
    """go_pprof(args...) -> stdout of `go tool pprof args...`, offline, with a private HOME."""
    go = "/usr/bin/go" if os.access("/usr/bin/go", os.X_OK) else shutil.which("go")
    if not go:
        skip_or_fail("go not installed (Debian golang-go; `make deps` installs it)")
    home = tmp_path / "pprof-home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), PPROF_TMPDIR=str(home), TZ="UTC", GOFLAGS="", GOPROXY="off",
               GOCACHE=str(home / "gocache"))
    env.pop("PPROF_BINARY_PATH", None)

    def call(*args):
        r = subprocess.run([go, "tool", "pprof"] + list(args), capture_output=True, text=True, timeout=120,
                           env=env)
        assert r.returncode == 0, "go tool pprof %s: rc=%d\n%s" % (" ".join(args), r.returncode, r.stderr)
        return r.stdout

    return call


def perf_fds(pid):
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]"
            except OSError:
                pass
    except OSError:
        pass
    return n


def wait_opened(bgs, timeout=15.0):
    """Until every process holds a perf event per CPU (its events are open), then a moment for
    the enable; a busy machine may take a while to start many at once."""
    deadline = time.monotonic() + timeout
    want = os.cpu_count() or 1
    for b in bgs:
        while perf_fds(b.pid) < want and b.p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    time.sleep(0.2)


def where_stuck(pid):
    """What a process that does not end is doing: its state and signal masks, each thread's
    kernel wait channel and stack, and (gdb present) each thread's user stack."""
    out = []
    try:
        out += [l for l in open("/proc/%d/status" % pid).read().splitlines()
                if l.startswith(("State", "Sig", "Shd"))]
        for t in sorted(os.listdir("/proc/%d/task" % pid)):
            base = "/proc/%d/task/%s/" % (pid, t)
            try:
                out.append("thread %s wchan %s" % (t, open(base + "wchan").read()))
                out.append(open(base + "stack").read().strip())
            except OSError:
                pass
    except OSError as e:
        out.append(str(e))
    if shutil.which("gdb"):
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=60)
        out += [l for l in r.stdout.splitlines() if l.startswith(("#", "Thread"))]
    return "\n".join(out)
