"""End-to-end tests of `perf-prof usdt list|add|del` (SPEC §7): the probes listed against
`readelf -n` (binutils, the reference peer), the uprobe events added to and removed from
<tracefs>/uprobe_events, exact counts and argument values of the probes traced as
`-e provider:name` tracepoints, and the usage errors.

Workload (tests/workloads/usdt_app.c): `usdt_app N` fires ppapp:start once, ppapp:tick(i, ptr),
ppapp:value(3i, -1, 7, 6i) and ppapp:sem(i) (only while its semaphore is held) N times each,
then ppapp:done(N) and ppodd:konst(5, N) once; the constant 5 is an operand `$5`, which has
no uprobe form.

Every test that touches tracefs uses the `uprobes` fixture: whatever it finds in uprobe_events
for this workload or the ppapp group is what it leaves there, and no line it found is lost."""

import os
import re
import subprocess

import pytest

from conftest import append_line, assert_not_crashed, section, skip_or_fail, tracefs
from test_trace import parse

GROUP = "ppapp"
NAMES = ["tick", "value", "sem", "start", "done"]  # note order in the workload
ALL = [(GROUP, n) for n in NAMES] + [("ppodd", "konst")]
SKIP_KONST = "Skipping unsupported SDT argument: $5\n"


def usdt(pp, args, timeout=30):
    rc, out, err = pp.run(["usdt"] + args, timeout=timeout)
    assert_not_crashed(rc)
    return rc, out, err


def ok(pp, args):
    rc, out, err = usdt(pp, args)
    assert rc == 0 and err == "", "rc=%d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err)
    return out


def readelf_notes(path):
    """The stapsdt notes as readelf prints them: [{provider, name, pc, base, sem, args}]."""
    try:
        text = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        skip_or_fail("readelf (binutils) is not installed")
    notes, cur = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Provider: "):
            cur = {"provider": line[10:]}
            notes.append(cur)
        elif line.startswith("Name: ") and cur is not None:
            cur["name"] = line[6:]
        elif line.startswith("Location: ") and cur is not None:
            m = re.fullmatch(r"Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)", line)
            cur["pc"], cur["base"], cur["sem"] = (int(x, 16) for x in m.groups())
        elif line.startswith("Arguments:") and cur is not None:
            cur["args"] = line[len("Arguments:"):].strip()
    return notes


def uprobe_lines(path):
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


@pytest.fixture
def app(workload):
    return workload("usdt_app")


@pytest.fixture
def uprobes(pp, needs_root, app):
    """The path of <tracefs>/uprobe_events. At the end: our events removed, the file as found."""
    if tracefs() is None:
        pp.run(["list", "no-such-tracepoint"])  # mounts tracefs (SPEC §1.12)
    d = tracefs()
    assert d, "tracefs is not mounted and perf-prof did not mount it"
    path = os.path.join(d, "uprobe_events")
    before = uprobe_lines(path)

    def ours(lines):
        return [l for l in lines if l[2:].startswith((GROUP + "/", "ppodd/")) or (" " + app + ":") in l]

    try:
        yield path
    finally:
        for line in ours(uprobe_lines(path)):
            if line not in before:
                append_line(path, "-:" + line[2:].split(" ", 1)[0])
        after = uprobe_lines(path)
        assert ours(after) == ours(before), "uprobe_events not left as found"
        assert all(l in after for l in before), "uprobe_events lost lines"


# --------------------------------------------------------------------------- list

def test_list_matches_readelf(pp, app):
    notes = readelf_notes(app)
    assert [(n["provider"], n["name"]) for n in notes] == ALL
    out = ok(pp, ["list", app])
    assert out.splitlines() == ["%s:%s@%s" % (n["provider"], n["name"], app) for n in notes]


def test_list_verbose_matches_readelf(pp, app):
    notes = readelf_notes(app)
    base_addr, base_off, _ = section(app, ".stapsdt.base")
    probes_addr, probes_off, _ = section(app, ".probes")
    for opts in (["-v", "list"], ["list", "-v"]):
        rc, out, err = usdt(pp, opts + [app])
        assert rc == 0 and err == SKIP_KONST, err
        lines = out.splitlines()
        assert len(lines) == 4 * len(notes), lines
        for i, n in enumerate(notes):
            head, addr, args, uprobe = lines[4 * i:4 * i + 4]
            assert head == "%s:%s@%s" % (n["provider"], n["name"], app)
            assert addr == "    Addr: 0x%016x, Base: 0x%016x, Semaphore: 0x%016x" % (n["pc"], n["base"], n["sem"])
            assert args.rstrip() == ("    Arguments: " + n["args"]).rstrip()
            off = n["pc"] - n["base"] + base_off
            want = "    Uprobe: p:%s/%s %s:0x%016x" % (n["provider"], n["name"], app, off)
            if n["sem"]:
                want += "(0x%x)" % (n["sem"] - probes_addr + probes_off)
            assert uprobe.startswith(want + (" " if n["args"] else "")) and (n["args"] or uprobe == want), uprobe
            # One fetch argument per note argument but constants, named by its position, its
            # type from the note's signed size.
            fetch = uprobe[len(want):].split()
            items = [a.split("@") for a in n["args"].split()]
            expect = [(j + 1, int(size)) for j, (size, op) in enumerate(items) if not op.startswith("$")]
            assert len(fetch) == len(expect)
            for f, (j, s) in zip(fetch, expect):
                assert re.fullmatch(r"arg%d=[-+%%].*:%s%d" % (j, "s" if s < 0 else "u", 8 * abs(s)), f), f
    # Exactly one probe (ppapp:sem) has a semaphore, and the Uprobe line above gives its offset.
    assert sum(1 for n in notes if n["sem"]) == 1


def test_list_filters(pp, app):
    notes = {n["name"]: n for n in readelf_notes(app)}
    tick = "%s:tick@%s\n" % (GROUP, app)
    assert ok(pp, ["list", "ppapp:tick@" + app]) == tick
    assert ok(pp, ["list", "tick@" + app]) == tick
    assert ok(pp, ["list", "ppapp:tick@%s@%#x" % (app, notes["tick"]["pc"])]) == tick
    # A filter that selects nothing is a mistake, said on stderr with exit 1 (not SPEC §7.1's
    # silent exit 0).
    for spec, shown in [("ppapp:tick@%s@%#x" % (app, notes["tick"]["pc"] + 1),
                         "ppapp:tick@%#x" % (notes["tick"]["pc"] + 1)),
                        ("other:tick@" + app, "other:tick"), ("nosuch@" + app, "nosuch"),
                        ("other:@" + app, "other:*")]:
        rc, out, err = usdt(pp, ["list", spec])
        assert (rc, out) == (1, ""), (spec, rc, out, err)
        assert err == "perf-prof: usdt: no USDT probe %s in '%s' (see 'perf-prof usdt list %s')\n" % (
            shown, app, app), err
    # Two SPECs: both, in order.
    assert ok(pp, ["list", "done@" + app, "start@" + app]) == "ppapp:done@%s\nppapp:start@%s\n" % (app, app)


def test_list_unreadable_binpath_is_an_error(pp, tmp_path):
    # Not SPEC §7.1's silent exit 0: a mistyped path gets its line and exit 1.
    missing = str(tmp_path / "missing")
    text = tmp_path / "text"
    text.write_text("not an ELF\n")
    for path, why in [(missing, "cannot open '%s': No such file or directory" % missing),
                      (str(text), "'%s' is not an ELF file" % text),
                      (str(tmp_path), "'%s' is a directory, not an ELF file" % tmp_path)]:
        for sub in ["list", "add", "del"]:
            rc, out, err = usdt(pp, [sub, path])
            assert (rc, out, err) == (1, "", "perf-prof: usdt: %s\n" % why), (sub, path)


def test_list_binary_without_notes(pp):
    rc, out, err = usdt(pp, ["list", "/bin/true"])
    assert (rc, out, err) == (1, "", "perf-prof: usdt: '/bin/true' has no USDT probes\n")


# --------------------------------------------------------------------------- add / trace / del

def test_add_trace_del(pp, uprobes, app):
    n = 137
    specs = ["ppapp:%s@%s" % (name, app) for name in NAMES]
    out = ok(pp, ["add"] + specs)
    assert out.splitlines() == ["ppapp:%s@%s" % (name, app) for name in NAMES]
    mine = [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/")]
    assert sorted(l.split()[0] for l in mine) == sorted("p:ppapp/" + name for name in NAMES)
    assert all(l.split()[1].startswith(app + ":0x") for l in mine)
    events = ",".join("ppapp:" + name for name in NAMES)
    rc, out, err = pp.run(["trace", "-e", events, "--", app, str(n)], timeout=60)
    assert rc == 0 and err == "", err
    evs = parse(out)
    counts = {name: sum(e.event == "ppapp:" + name for e in evs) for name in NAMES}
    # The semaphore is incremented while the uprobe is attached: ppapp:sem fires too.
    assert counts == {"tick": n, "value": n, "sem": n, "start": 1, "done": 1}
    assert all(e.comm == "usdt_app" for e in evs)
    ticks = [e for e in evs if e.event == "ppapp:tick"]
    assert [int(re.search(r" arg1=(-?\d+)", e.info).group(1)) for e in ticks] == list(range(n))
    values = [e for e in evs if e.event == "ppapp:value"]
    for i, e in enumerate(values):
        assert re.search(r" arg1=%d " % (3 * i), e.info) and re.search(r" arg3=7 ", e.info), e.info
        assert e.info.endswith(" arg4=%d" % (6 * i)), e.info  # a memory operand: -N(%bp)
    done = [e for e in evs if e.event == "ppapp:done"]
    assert done[0].info.endswith(" arg1=%d" % n)

    out = ok(pp, ["del"] + specs)
    assert out.splitlines() == ["ppapp:%s@%s" % (name, app) for name in NAMES]
    assert not [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/")]
    assert not os.path.exists(os.path.join(os.path.dirname(uprobes), "events", GROUP))
    rc, out, err = pp.run(["trace", "-e", "ppapp:tick", "--", app, "1"])
    assert rc != 0 and "ppapp:tick not found" in err


def test_add_or_del_of_no_probe_changes_nothing(pp, uprobes, app, tmp_path):
    """A SPEC that selects no probe, or names no readable binary, fails the whole command
    before anything is written: the good SPECs beside it are not added either."""
    for bad, why in [("nosuch:probe@" + app,
                      "no USDT probe nosuch:probe in '%s' (see 'perf-prof usdt list %s')" % (app, app)),
                     ("ppapp:tick@" + str(tmp_path / "nobin"),
                      "cannot open '%s': No such file or directory" % (tmp_path / "nobin"))]:
        rc, out, err = usdt(pp, ["add", "ppapp:start@" + app, bad])
        assert (rc, out, err) == (1, "", "perf-prof: usdt: %s\n" % why), bad
        assert not [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/")]
    ok(pp, ["add", "ppapp:start@" + app])
    rc, out, err = usdt(pp, ["del", "ppapp:start@" + app, "ppapp:nosuch@" + app])
    assert rc == 1 and out == "" and "no USDT probe ppapp:nosuch in" in err
    assert [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/start ")]
    ok(pp, ["del", "ppapp:start@" + app])


def test_semaphore_gates_the_probe(pp, uprobes, app):
    """Without the uprobe on ppapp:sem its semaphore stays 0 and the workload skips it."""
    ok(pp, ["add", "ppapp:tick@" + app, "ppapp:sem@" + app])
    rc, out, err = pp.run(["trace", "-e", "ppapp:tick", "--", app, "20"])
    assert rc == 0 and err == ""
    assert len(parse(out)) == 20
    rc, out, err = pp.run(["trace", "-e", "ppapp:sem", "--", app, "20"])
    assert rc == 0 and err == ""
    assert [e.event for e in parse(out)] == ["ppapp:sem"] * 20
    ok(pp, ["del", "ppapp:tick@" + app, "ppapp:sem@" + app])


def test_add_verbose_echo_and_argfmt(pp, uprobes, app):
    spec = "ppapp:tick@%s i=%%s where=%%s:x64" % app
    out = ok(pp, ["add", "-v", spec])
    lines = out.splitlines()
    assert lines[0] == "ppapp:tick@" + app
    m = re.fullmatch(r"    echo '(p:ppapp/tick %s:0x[0-9a-f]{16} i=%%di where=%%si:x64)' > (.*)" % re.escape(app), lines[1])
    assert m, lines[1]
    assert m.group(2) == uprobes  # the path really written
    assert len(lines) == 2
    line = [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/tick ")]
    assert line == [m.group(1)]
    rc, out, err = pp.run(["trace", "-e", "ppapp:tick", "--", app, "5"])
    assert rc == 0 and err == ""
    evs = parse(out)
    # No type given: the kernel's default, u64 printed in hex.
    assert [int(re.search(r" i=(0x[0-9a-f]+) ", e.info).group(1), 16) for e in evs] == [0, 1, 2, 3, 4]
    assert all(re.search(r" where=0x[0-9a-f]+$", e.info) for e in evs)
    out = ok(pp, ["del", "-v", spec])
    assert out.splitlines()[1] == "    echo '-%s' > %s" % (m.group(1)[1:], uprobes)
    assert not [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/")]


def test_add_existing_and_del_missing_fail(pp, uprobes, app):
    spec = "ppapp:start@" + app
    ok(pp, ["add", spec])
    rc, out, err = usdt(pp, ["add", spec])
    assert rc == 1 and out == "ppapp:start@%s\n" % app
    assert re.fullmatch(r"    echo 'p:ppapp/start %s:0x[0-9a-f]{16}' > %s failed, -17\(File exists\)\n"
                        % (re.escape(app), re.escape(uprobes)), err), err
    ok(pp, ["del", spec])
    rc, out, err = usdt(pp, ["del", spec])
    assert rc == 1
    assert re.fullmatch(r"    echo '-:ppapp/start %s:0x[0-9a-f]{16}' > %s failed, -2\(No such file or directory\)\n"
                        % (re.escape(app), re.escape(uprobes)), err), err


def test_unsupported_operand_is_skipped(pp, uprobes, app):
    spec = "ppodd:konst@" + app
    rc, out, err = usdt(pp, ["add", spec])
    assert rc == 0 and out == spec + "\n" and err == SKIP_KONST
    line = [l for l in uprobe_lines(uprobes) if l.startswith("p:ppodd/konst ")]
    assert len(line) == 1 and re.search(r":0x[0-9a-f]{16} arg2=%\w+:s64$", line[0]), line
    rc, out, err = pp.run(["trace", "-e", "ppodd:konst", "--", app, "42"])
    assert rc == 0 and err == ""
    evs = parse(out)
    assert len(evs) == 1 and evs[0].info.endswith(" arg2=42"), out
    rc, out, err = usdt(pp, ["del", spec])
    assert rc == 0 and err == SKIP_KONST
    assert not [l for l in uprobe_lines(uprobes) if l.startswith("p:ppodd/")]


# --------------------------------------------------------------------------- usage errors

@pytest.mark.parametrize("args,first", [
    ([], " One of {add|del|list} needs to be specified."),
    (["-v"], " One of {add|del|list} needs to be specified."),
    (["add"], " 'binpath' needs to be specified."),
    (["list"], " 'binpath' needs to be specified."),
    (["add", "ppapp:tick@"], " binpath is empty."),
    (["add", "APP", "ppapp:"], " binpath is empty."),
    (["frob", "APP"], " Unknown sub-command 'frob': one of {add|del|list} needs to be specified."),
])
def test_usage_errors(pp, uprobes, app, args, first):
    args = [app if a == "APP" else a for a in args]
    rc, out, err = usdt(pp, args)
    assert rc == 129
    assert out == ""
    lines = err.splitlines()
    # The message, then the usdt help (SPEC §1.8.2).
    assert lines[:3] == [first] + [
        "", " Usage: perf-prof usdt {list|add|del} '[[PROVIDER:]NAME@]BINPATH[@ADDR][ ARGFMT...]' ..."]
    assert any(l.strip() == "EXAMPLES" for l in lines)
    # Nothing was added, not even for the good SPEC before a bad one (checked by the fixture).
    assert not [l for l in uprobe_lines(uprobes) if l.startswith("p:ppapp/")]
