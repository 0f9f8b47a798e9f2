"""`perf-prof --symbols BINARY` (SPEC §6): the gperftools PPROF_PATH symbolizer protocol.

Differential against google-pprof on the same stdin, the real client (the tcmalloc heap
checker) with PPROF_PATH pointing at perf-prof, and hostile input.

SPEC §6 decides that perf-prof prints exactly what `pprof --symbols` prints. pprof names an
address with `addr2line -f -C` (DWARF, separate debug files included: the innermost inlined
function) and `nm` (its routine boundaries, versioned dynamic names, and its name wherever that
starts with addr2line's); perf-prof follows the same rules (lib/sym/pprof_symbols.cpp), so every
name must be identical. A mismatch is reported with addr2line's inline chain and the symbols
that nm and the debug file list around the address, to show which rule differs.
"""

import os
import random
import re
import shutil
import stat
import subprocess

import pytest

from conftest import REPO, asan_build, run, skip_or_fail

@pytest.fixture(scope="module")
def pprof():
    p = shutil.which("google-pprof") or shutil.which("pprof")
    if not p:
        skip_or_fail("google-pprof not installed (package google-perftools; run `make deps`)")
    return p


def need_tool(name):
    if not shutil.which(name):
        skip_or_fail("%s not installed (binutils)" % name)


def symbolize(tool, stdin, binary="/bin/true", timeout=120):
    rc, out, err = run([tool, "--symbols", binary], input=stdin, timeout=timeout)
    return rc, out, err


def own_maps():
    with open("/proc/self/maps") as f:
        return f.read()


def exec_mapping(maps, needle):
    """(start, end, file_offset, path) of the first r-xp mapping whose path contains needle."""
    for line in maps.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1][2] == "x" and needle in f[5]:
            s, e = (int(x, 16) for x in f[0].split("-"))
            return s, e, int(f[2], 16), f[5]
    return None


# --------------------------------------------------------------------------- library tables

_NAME_RE = re.compile(r"@.*$")


def base_name(n):
    return _NAME_RE.sub("", n)


def build_id(path):
    r = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
    m = re.search(r"Build ID:\s*([0-9a-f]+)", r.stdout)
    return m.group(1) if m else None


class LibTables:
    """Symbols (nm, binary and debug file by build-id) and the .text skew of one library."""

    def __init__(self, path):
        self.path = path
        files = [path]
        bid = build_id(path)
        if bid:
            dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
            if os.path.exists(dbg):
                files.append(dbg)
        self.syms = []  # (start, size, name)
        for f in files:
            for args in (["nm", "-S", "--defined-only", f], ["nm", "-D", "-S", "--defined-only", f]):
                r = subprocess.run(args, capture_output=True, text=True)
                for line in r.stdout.splitlines():
                    p = line.split()
                    if len(p) == 4:
                        self.syms.append((int(p[0], 16), int(p[1], 16), base_name(p[3])))
                    elif len(p) == 3 and p[1] not in "Uuw":
                        self.syms.append((int(p[0], 16), 0, base_name(p[2])))
        self.skew = 0
        r = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            m = re.search(r"\s\.text\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
            if m:
                self.skew = int(m.group(1), 16) - int(m.group(2), 16)

    def inline_chains(self, vaddrs):
        """vaddr -> [innermost, ..., outermost] function names from addr2line -i."""
        if not vaddrs:
            return {}
        r = subprocess.run(["addr2line", "-a", "-f", "-i", "-C", "-e", self.path],
                           input="".join("%x\n" % v for v in vaddrs), capture_output=True,
                           text=True, timeout=120)
        chains, cur, lines = {}, None, r.stdout.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("0x"):
                cur = int(lines[i], 16)
                chains[cur] = []
                i += 1
                continue
            if cur is not None:
                chains[cur].append(lines[i])
            i += 2
        return chains


def explain(maps_text, addrs, ours, theirs, lib_tables, limit=20):
    """The mismatches, each with addr2line's inline chain and the symbols around it."""
    ranges = []
    for line in maps_text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1][2] == "x" and f[5].startswith("/"):
            s, e = (int(x, 16) for x in f[0].split("-"))
            ranges.append((s, e, int(f[2], 16), f[5]))
    out = []
    for a, o, t in zip(addrs, ours, theirs):
        if o == t:
            continue
        if len(out) >= limit:
            break
        where = [(p, a - s + off) for s, e, off, p in ranges if s <= a < e]
        if not where:
            out.append((hex(a), o, t, "unmapped"))
            continue
        path, off = where[0]
        if path not in lib_tables:
            lib_tables[path] = LibTables(path)
        tb = lib_tables[path]
        v = off + tb.skew
        near = sorted((s, sz, n) for s, sz, n in tb.syms if s <= v)[-4:]
        out.append((hex(a), o, t, path, hex(v), tb.inline_chains([v]).get(v),
                    [(hex(s), sz, n) for s, sz, n in near]))
    return out


# --------------------------------------------------------------------------- (a) differential

def test_differential_libc_vs_pprof(perf_prof, pprof):
    need_tool("nm")
    need_tool("addr2line")
    need_tool("readelf")
    maps = own_maps()
    m = exec_mapping(maps, "libc.so")
    assert m, "no libc text mapping in this python process"
    start, end, _, _ = m
    rnd = random.Random(20261123)
    addrs = [rnd.randrange(start, end) for _ in range(1000)]
    stdin = maps + "".join("0x%x\n" % a for a in addrs)

    rc, out, err = symbolize(perf_prof, stdin)
    assert rc == 0 and err == ""
    prc, pout, _ = symbolize(pprof, stdin, timeout=300)
    assert prc == 0
    ours, theirs = out.splitlines(), pout.splitlines()
    assert out.endswith("\n")
    assert len(ours) == len(addrs) == len(theirs)

    same = sum(1 for o, t in zip(ours, theirs) if o == t)
    print("\n--symbols vs google-pprof on %d libc addresses: identical %d (%.1f%%)"
          % (len(addrs), same, 100.0 * same / len(addrs)))
    assert same == len(addrs), "differences (address, ours, pprof, ...): %s" % explain(
        maps, addrs, ours, theirs, {})
    assert sum(1 for t in theirs if t != "??") > 900


def libstdcxx_maps_line(base):
    """A maps line placing libstdc++'s executable segment at `base`, and its [start, end)."""
    path = os.path.realpath("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    if not os.path.exists(path):
        skip_or_fail("libstdc++.so.6 not installed (g++)")
    return exec_maps_line(path, base)


def exec_maps_line(path, base):
    """A maps line placing the executable segment of the ELF `path` at load bias `base`, and
    that segment's [start, end) as mapped."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            break
    st = os.stat(path)
    start = (base + vaddr) & ~0xFFF
    end = (base + vaddr + filesz + 0xFFF) & ~0xFFF
    line = "%x-%x r-xp %08x %02x:%02x %d %s\n" % (start, end, off & ~0xFFF, os.major(st.st_dev),
                                                 os.minor(st.st_dev), st.st_ino, path)
    return line, base + vaddr, base + vaddr + filesz


def test_differential_large_batch_vs_pprof_and_one_cpu(perf_prof, pprof):
    """A batch large enough for several threads (SPEC §6 speed): libc through libdw (one
    thread), libstdc++ through its .dynsym (shared by all), unsorted, with repeats. The answers
    equal google-pprof's, and a run confined to one CPU gives the same bytes."""
    need_tool("readelf")
    maps = own_maps()
    start, end, _, _ = exec_mapping(maps, "libc.so")
    line, cstart, cend = libstdcxx_maps_line(0x7E0000000000)
    rnd = random.Random(20261124)
    addrs = [rnd.randrange(start, end) for _ in range(1500)]
    addrs += [rnd.randrange(cstart, cend) for _ in range(3000)]
    addrs += addrs[:200]
    rnd.shuffle(addrs)
    stdin = maps + line + "".join("0x%x\n" % a for a in addrs)

    rc, out, err = symbolize(perf_prof, stdin)
    assert rc == 0 and err == ""
    ours = out.splitlines()
    assert len(ours) == len(addrs)
    r = subprocess.run(["taskset", "-c", "0", perf_prof, "--symbols", "/bin/true"], input=stdin,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == out

    prc, pout, _ = symbolize(pprof, stdin, timeout=300)
    assert prc == 0
    theirs = pout.splitlines()
    assert len(theirs) == len(addrs)
    same = sum(1 for o, t in zip(ours, theirs) if o == t)
    print("\n--symbols vs google-pprof on %d libc + libstdc++ addresses: identical %d"
          % (len(addrs), same))
    assert same == len(addrs), "differences (address, ours, pprof, ...): %s" % explain(
        maps + line, addrs, ours, theirs, {})
    assert sum(1 for t in theirs if t != "??") > 4000


def test_repeated_and_unsorted_addresses_keep_order(perf_prof):
    maps = own_maps()
    start, end, _, _ = exec_mapping(maps, "libc.so")
    rnd = random.Random(7)
    addrs = [rnd.randrange(start, end) for _ in range(200)]
    addrs = addrs + addrs[::-1] + [addrs[0]] * 5
    rc, out, err = symbolize(perf_prof, maps + "".join("0x%x\n" % a for a in addrs))
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == len(addrs)
    seen = {}
    for a, n in zip(addrs, lines):
        assert seen.setdefault(a, n) == n


# --------------------------------------------------------------------------- (b) the real client

LEAK_RE = re.compile(r"^Leak of (\d+) bytes in (\d+) objects allocated from:")
FRAME_RE = re.compile(r"^\s+@ ([0-9a-f]+)(?: (.*))?$")


def parse_leaks(text):
    """[(bytes, objects, [(addr, name), ...]), ...] from a heap-checker report."""
    leaks = []
    for line in text.splitlines():
        m = LEAK_RE.match(line)
        if m:
            leaks.append((int(m.group(1)), int(m.group(2)), []))
            continue
        m = FRAME_RE.match(line)
        if m and leaks:
            leaks[-1][2].append((int(m.group(1), 16), (m.group(2) or "").strip()))
    return leaks


def heapcheck(leaker, tcmalloc, pprof_path, tmp_path, tag):
    env = dict(os.environ)
    env.update(LD_PRELOAD=tcmalloc, HEAPCHECK="draconian", PPROF_PATH=pprof_path,
               TMPDIR=str(tmp_path), HEAP_CHECK_DUMP_DIRECTORY=str(tmp_path))
    # ASLR off: both runs put every object at the same address, so frames pair up by address.
    argv = ["setarch", os.uname().machine, "-R", leaker]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path))
    assert "Leak check _main_ detected leaks" in r.stderr, "%s run: %s" % (tag, r.stderr[-3000:])
    return r.stderr


def test_heap_checker_with_perf_prof_as_pprof(perf_prof, pprof, tcmalloc, workload, tmp_path):
    need_tool("setarch")
    need_tool("nm")
    need_tool("addr2line")
    leaker = workload("leaker")
    # PPROF_PATH is a wrapper that records what the heap checker sends, then execs perf-prof:
    # the exchange stays the real one and the test can replay it.
    capture = tmp_path / "stdin.txt"
    wrapper = tmp_path / "pp.sh"
    # An AddressSanitizer build (make sanitize) refuses to start under another malloc in
    # LD_PRELOAD; the symbolizer does not need tcmalloc, so that build runs without it.
    unset = "env -u LD_PRELOAD " if asan_build(perf_prof) else ""
    wrapper.write_text('#!/bin/sh\ntee "%s" | exec %s"%s" "$@"\n' % (capture, unset, perf_prof))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)

    ours_txt = heapcheck(leaker, tcmalloc, str(wrapper), tmp_path, "perf-prof")
    theirs_txt = heapcheck(leaker, tcmalloc, pprof, tmp_path, "google-pprof")
    ours, theirs = parse_leaks(ours_txt), parse_leaks(theirs_txt)
    assert ours and theirs

    # The leaking functions of the workload are named, with their callers.
    stacks = [[n for _, n in frames] for _, _, frames in ours]
    assert any(s[:3] == ["leaker_alloc_small", "leak_twice", "main"] for s in stacks), ours_txt
    assert any(s[:2] == ["leaker_alloc_big", "main"] for s in stacks), ours_txt
    small = [(b, o) for b, o, f in ours if f and f[0][1] == "leaker_alloc_small"]
    assert sum(o for _, o in small) == 2 and all(b == 48 * o for b, o in small)

    # Every frame: the same address in both runs, and the same name.
    # Leaks are paired by their stack addresses; a few of tcmalloc's own start-up leaks
    # (copies of the environment, which holds PPROF_PATH) differ in size between the runs.
    theirs_by = {}
    for lk in theirs:
        theirs_by.setdefault(tuple(a for a, _ in lk[2]), lk)
    addrs, on, tn, paired = [], [], [], 0
    for lk in ours:
        k = tuple(a for a, _ in lk[2])
        if k not in theirs_by:
            assert not any(n.startswith("leak") for _, n in lk[2]), (
                "workload leak %s not in the google-pprof run:\n%s" % (lk, theirs_txt))
            continue
        paired += 1
        for (a, n), (_, m) in zip(lk[2], theirs_by[k][2]):
            addrs.append(a)
            on.append(n)
            tn.append(m)
    assert paired >= max(3, len(ours) * 2 // 3), (ours_txt, theirs_txt)

    maps = capture.read_text()
    same = sum(1 for o, t in zip(on, tn) if o == t)
    print("\nheap-checker frames: %d, identical %d" % (len(addrs), same))
    assert same == len(addrs), "frames (address, perf-prof, google-pprof, ...): %s" % explain(
        maps, addrs, on, tn, {})

    # Replaying the captured exchange gives the names the report shows, in order.
    addr_lines = [ln for ln in maps.splitlines() if ln.lower().startswith("0x")]
    rc, out, err = symbolize(perf_prof, maps, binary=leaker)
    assert rc == 0 and err == ""
    assert len(out.splitlines()) == len(addr_lines)


# --------------------------------------------------------------------------- (c) bad input

def test_bad_input_defined_output(perf_prof, tmp_path):
    maps = own_maps()
    start, end, _, _ = exec_mapping(maps, "libc.so")
    inside = (start + end) // 2
    corrupt = tmp_path / "corrupt.elf"
    with open("/bin/true", "rb") as f:
        data = bytearray(f.read())
    random.Random(3).shuffle(data)
    corrupt.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(data[:5000]))
    garbage = "\x00\x01 \xff\xfe garbage line \x1b[31m"
    body = "\n".join([
        "0x%x" % inside,
        "0xffffffffffffffff",
        "0x0",
        "0x",
        "0xzz",
        "0x1234567890abcdef0123",
        "0X%X\r" % inside,
        "",
        garbage,
        "   ",
        "0x%x" % inside,
    ])
    n_addr = 8
    for binary in ["/nonexistent/binary", str(corrupt), "/bin/true", "/dev/null", str(tmp_path)]:
        for prefix in [maps, "", "not a maps line\n" + maps]:
            rc, out, err = run([perf_prof, "--symbols", binary], input=prefix + body, timeout=30)
            assert rc == 0, (binary, rc, err)
            assert err == ""
            lines = out.splitlines()
            assert len(lines) == n_addr, (binary, out)
            assert lines[1:6] == ["??"] * 5
            if prefix == maps:
                assert lines[0] != "??" and lines[0] == lines[6] == lines[7]
            else:
                assert lines[0] == "??"


def test_empty_and_binary_only_input(perf_prof, tmp_path):
    for inp in ["", "\n\n\n", own_maps(), "\r\n"]:
        rc, out, err = run([perf_prof, "--symbols", "/nonexistent"], input=inp, timeout=30)
        assert (rc, out, err) == (0, "", "")
    # Random bytes: one answer per 0x line, never a hang or a crash.
    rnd = random.Random(11)
    blob = bytes(rnd.randrange(256) for _ in range(20000))
    p = subprocess.run([perf_prof, "--symbols", "/bin/true"], input=blob, capture_output=True,
                       timeout=30)
    assert p.returncode == 0 and p.stderr == b""


def test_stdin_closed_and_no_stdin(perf_prof):
    p = subprocess.run([perf_prof, "--symbols", "/bin/true"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=30)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")


def test_symbol_name_lookup_in_binary(perf_prof, workload):
    need_tool("nm")
    leaker = workload("leaker")
    rc, out, err = run([perf_prof, "--symbols", leaker],
                       input="leaker_alloc_big\nno_such_function_here\nmain\n", timeout=30)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 2 and all(ln.startswith("0x") for ln in lines), out
    # §5.4.4: the file offset is the symbol value minus the .text skew.
    nm = subprocess.run(["nm", leaker], capture_output=True, text=True).stdout
    vals = {p[2]: int(p[0], 16) for p in (ln.split() for ln in nm.splitlines()) if len(p) == 3}
    tb = LibTables(leaker)
    assert int(lines[0], 16) == vals["leaker_alloc_big"] - tb.skew
    assert int(lines[1], 16) == vals["main"] - tb.skew


# --------------------------------------------------------------------------- (d) beyond pprof's view
#
# Where pprof names nothing (`??`) because the names are only in MiniDebugInfo (.gnu_debugdata)
# or in a separate debug file that addr2line does not read for symbols, perf-prof answers from
# the object layer (SPEC §5.4.3). The reference: pprof itself on a twin of the file that keeps
# its .symtab in the file (`strip -g` of the unstripped build: no DWARF either), i.e. the names
# pprof would print had it seen those symbols.

FIXTURE_BASE = 0x555555554000


@pytest.fixture(scope="module")
def elf_fixtures(tmp_path_factory):
    """The ELF fixtures of tests/fixtures/build.sh, built afresh for this module."""
    for tool in ("gcc", "g++", "objcopy", "strip", "xz", "nm", "readelf"):
        if not shutil.which(tool):
            skip_or_fail("%s not installed (gcc, g++, binutils, xz-utils)" % tool)
    out = tmp_path_factory.mktemp("elf") / "fixtures"
    r = subprocess.run(["sh", os.path.join(REPO, "tests", "fixtures", "build.sh"), str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return str(out)


def functions(path):
    """[(value, size, raw name)] of the defined code symbols with a size in `path`'s .symtab."""
    r = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                       check=True)
    funcs = []
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTW" and int(p[1], 16) > 0:
            funcs.append((int(p[0], 16), int(p[1], 16), p[3]))
    return funcs


def inside_addresses(funcs, base=FIXTURE_BASE):
    """Each function's first, middle and last byte, mapped at `base`."""
    return [base + v + d for v, size, _ in funcs for d in sorted({0, size // 2, size - 1})]


def symbolize_at(tool, path, addrs, base=FIXTURE_BASE):
    """`tool --symbols` for addresses of the executable `path` mapped at `base`: its lines."""
    line = exec_maps_line(path, base)[0]
    rc, out, err = symbolize(tool, line + "".join("0x%x\n" % a for a in addrs), binary=path)
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == len(addrs)
    return lines, err


def symtab_twin(full, tmp_path):
    """`full` without DWARF but with its .symtab: what pprof names from symbols alone."""
    twin = str(tmp_path / (os.path.basename(full) + ".symtab-only"))
    subprocess.run(["strip", "-g", "-o", twin, full], check=True)
    return twin


def check_beyond_pprof(perf_prof, pprof, stripped, full, tmp_path, expect):
    funcs = functions(full)
    addrs = inside_addresses(funcs)
    theirs, _ = symbolize_at(pprof, stripped, addrs)
    # What this measures: pprof has no name for any of these addresses.
    assert set(theirs) == {"??"}, theirs
    ours, err = symbolize_at(perf_prof, stripped, addrs)
    assert err == ""
    twin = symtab_twin(full, tmp_path)
    reference, _ = symbolize_at(pprof, twin, addrs)
    assert "??" not in reference
    diffs = [(hex(a), o, r) for a, o, r in zip(addrs, ours, reference) if o != r]
    print("\n%s: pprof names 0 of %d addresses, perf-prof %d, as pprof names the symbol-table "
          "twin: %d" % (os.path.basename(stripped), len(addrs), len(addrs) - ours.count("??"),
                        len(addrs) - len(diffs)))
    assert not diffs, "(address, perf-prof on stripped, pprof on twin): %s" % diffs[:20]
    assert expect <= set(ours), expect - set(ours)
    # The symbol-table twin itself is pprof's to name: identical answers.
    again, err = symbolize_at(perf_prof, twin, addrs)
    assert err == "" and again == reference


C_FUNCS = {"main", "fixture_add", "fixture_loop", "fixture_print", "fixture_tiny",
           "static_helper", "static_other", "_start"}


@pytest.mark.parametrize("name,expect", [
    ("c_minidebug", C_FUNCS),
    ("cxx_localmini", {"main", "outer::inner::Widget::make", "outer::inner::overloaded",
                       "outer::Counter::count", "std::vector::vector", "joined"}),
])
def test_minidebuginfo_names_what_pprof_leaves_unnamed(perf_prof, pprof, elf_fixtures, tmp_path,
                                                      name, expect):
    """A stripped executable whose function names are only in .gnu_debugdata (xz): pprof's nm
    and addr2line see none of them; perf-prof names every function, demangled and shortened as
    pprof shortens."""
    path = os.path.join(elf_fixtures, name)
    check_beyond_pprof(perf_prof, pprof, path, path + ".full", tmp_path, expect)


def test_debuglink_symbols_without_dwarf(perf_prof, pprof, elf_fixtures, tmp_path):
    """A stripped executable whose .gnu_debuglink file holds symbols but no DWARF: addr2line
    finds nothing to read there, pprof answers `??`; perf-prof names the functions."""
    path = os.path.join(elf_fixtures, "c_symlink")
    check_beyond_pprof(perf_prof, pprof, path, path + ".full", tmp_path, C_FUNCS)


@pytest.mark.parametrize("name,named", [("c_debuglink", True), ("c_debugid", False)])
def test_separate_debuginfo_where_pprof_decides(perf_prof, pprof, elf_fixtures, name, named):
    """c_debuglink: the debug file next to it has DWARF, which pprof's addr2line reads: pprof
    names every function, and perf-prof prints exactly pprof's names. c_debugid: its debug file
    is in the fixtures' private debug root, which neither looks in: both answer `??` (the
    fallback invents nothing)."""
    path = os.path.join(elf_fixtures, name)
    addrs = inside_addresses(functions(path + ".full"))
    theirs, _ = symbolize_at(pprof, path, addrs)
    ours, err = symbolize_at(perf_prof, path, addrs)
    assert err == ""
    assert ours == theirs
    if named:
        assert "??" not in theirs and C_FUNCS <= set(theirs)
    else:
        assert set(theirs) == {"??"}


def test_build_id_debug_file_under_usr_lib_debug(perf_prof, pprof, elf_fixtures, tmp_path):
    """Separate debug files found by build-id under /usr/lib/debug/.build-id: one with DWARF
    (pprof's addr2line reads it: identical names) and one with symbols only (pprof: `??`,
    perf-prof: the names). Each binary gets a random build-id, so that the files put there
    (and removed after) are this run's own."""
    root = "/usr/lib/debug/.build-id"
    if not os.access("/usr/lib/debug", os.W_OK):
        skip_or_fail("/usr/lib/debug not writable (needs root)")
    src = os.path.join(REPO, "tests", "fixtures", "fixture_c.c")
    installed = []
    try:
        for variant in ("dwarf", "symbols"):
            bid = os.urandom(20).hex()
            full = str(tmp_path / ("c_bid_%s.full" % variant))
            stripped = str(tmp_path / ("c_bid_%s" % variant))
            subprocess.run(["gcc", "-O1", "-g", "-fno-inline", "-Wl,--build-id=0x" + bid, "-pie",
                            "-fPIE", "-I", os.path.dirname(src), '-DVARIANT="c_bid"', "-o", full,
                            src], check=True)
            assert build_id(full) == bid
            debug = os.path.join(root, bid[:2], bid[2:] + ".debug")
            os.makedirs(os.path.dirname(debug), exist_ok=True)
            installed.append(debug)
            subprocess.run(["objcopy", "--only-keep-debug", full, debug], check=True)
            if variant == "symbols":
                subprocess.run(["strip", "-g", debug], check=True)
            subprocess.run(["strip", "-o", stripped, full], check=True)
            if variant == "symbols":
                check_beyond_pprof(perf_prof, pprof, stripped, full, tmp_path, C_FUNCS)
            else:
                addrs = inside_addresses(functions(full))
                theirs, _ = symbolize_at(pprof, stripped, addrs)
                ours, err = symbolize_at(perf_prof, stripped, addrs)
                assert err == "" and ours == theirs
                assert "??" not in theirs and C_FUNCS <= set(theirs)
    finally:
        for debug in installed:
            try:
                os.unlink(debug)
                os.rmdir(os.path.dirname(debug))  # only if this run made it and it is empty
            except OSError:
                pass
