"""End-to-end tests of our SVG flame graphs (flamegraph/): the picture `--flame-graph NAME`
writes beside NAME.folded and `perf-prof flamegraph FILE.folded` draws from any folded file.

The picture is opened in a real browser (Debian's chromium, headless, driven through
chromium-driver by tests/e2e/browser.py): it renders the expected frames, a click zooms, reset
restores, a search highlights exactly the frames of a workload function and reports the share
the folded counts give. The SVG is checked to be well-formed XML that references nothing
outside itself, and the counts per stack read back from it equal the folded file's.

Workload: `hotab MS` burns MS ms of CPU split 3:1 between hot_a() and hot_b()."""

import os
import random
import re
import signal
import time
import xml.etree.ElementTree as ET

import pytest

import browser
from conftest import REPO, assert_not_crashed, require_root, skip_or_fail

SVG = "{http://www.w3.org/2000/svg}"
ARTIFACTS = os.path.join(REPO, "build", "test-artifacts")


def ok(pp, args, timeout=60, input=None):
    rc, out, err = pp.run(args, timeout=timeout, input=input)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", "rc=%d\n%s\n%s" % (rc, out[-2000:], err)
    return out


def read_folded(path):
    """Stack -> count, the frames' kind annotations (_[k], _[l], ...) taken off as the picture
    takes them off its names."""
    counts = {}
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            stack = ";".join(re.sub(r"_\[[kjil]\]$", "", f) for f in stack.split(";"))
            counts[stack] = counts.get(stack, 0) + int(n)
    return counts


class Frame:
    def __init__(self, g, top, fh, max_depth, inverted):
        self.s = int(g.get("data-s"))
        self.n = int(g.get("data-n"))
        self.merged = g.get("data-m") is not None
        title = g.find(SVG + "title").text
        self.name = title[:title.rindex(" (")]
        rect = g.find(SVG + "rect")
        self.fill = rect.get("fill")
        level = round((float(rect.get("y")) - top) / fh)
        self.depth = level if inverted else max_depth - level


def svg_frames(text):
    """The frames of a flame-graph SVG, and the layout group's attributes."""
    root = ET.fromstring(text)
    fg = root.find(".//%sg[@id='fg']" % SVG)
    top, fh, depth = int(fg.get("data-top")), int(fg.get("data-fh")), int(fg.get("data-depth"))
    inverted = fg.get("data-inverted") == "1"
    frames = [Frame(g, top, fh, depth, inverted) for g in root.find(".//%sg[@id='frames']" % SVG)]
    return frames, fg.attrib


def stacks_from_svg(frames):
    """Counts per stack read back from the frames: each frame's parent is the frame one level
    closer to the root whose count range holds it; a frame's own count is what its children
    do not cover."""
    by_depth = {}
    for f in frames:
        by_depth.setdefault(f.depth, []).append(f)
    path = {}
    child_sum = {}
    for d in sorted(by_depth):
        for f in by_depth[d]:
            if d == 0:
                path[id(f)] = ()
                continue
            parents = [p for p in by_depth[d - 1] if p.s <= f.s < p.s + p.n]
            assert len(parents) == 1, (f.name, f.s, d)
            p = parents[0]
            path[id(f)] = path[id(p)] + (f.name,)
            child_sum[id(p)] = child_sum.get(id(p), 0) + f.n
    counts = {}
    for f in frames:
        own = f.n - child_sum.get(id(f), 0)
        assert own >= 0, f.name
        if own and f.depth > 0:
            key = ";".join(path[id(f)])
            counts[key] = counts.get(key, 0) + own
    return counts


def assert_self_contained(text):
    """Well-formed XML that loads nothing from outside the file."""
    root = ET.fromstring(text)
    for el in root.iter():
        tag = el.tag.split("}")[-1]
        assert tag not in ("image", "use", "foreignObject", "iframe", "link"), tag
        for k, v in el.attrib.items():
            assert "href" not in k, (tag, k, v)
            assert "url(" not in v, (tag, k, v)
    without_ns = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    without_ns = without_ns.replace('"http://www.w3.org/2000/svg"', "")  # createElementNS in the script
    assert "http:" not in without_ns and "https:" not in without_ns and "@import" not in without_ns
    assert "<script" in text and "src=" not in text.split("<script", 1)[1].split(">", 1)[0]


@pytest.fixture(scope="module")
def hotab_graph(pp, workload, tmp_path_factory):
    """One profile of hotab with a flame graph: (name, stdout)."""
    require_root()
    name = str(tmp_path_factory.mktemp("fg") / "cpu")
    out = ok(pp, ["profile", "-F", "997", "-g", "--flame-graph", name, "--", workload("hotab"), "1500"])
    return name, out


def test_profile_writes_svg_beside_folded(hotab_graph):
    name, out = hotab_graph
    assert "Flame graph: %s.svg (folded stacks: %s.folded)" % (name, name) in out
    text = open(name + ".svg").read()
    assert_self_contained(text)
    frames, attrs = svg_frames(text)
    folded = read_folded(name + ".folded")
    total = sum(folded.values())
    assert int(attrs["data-total"]) == total and frames[0].name == "all" and frames[0].n == total
    root = ET.fromstring(text)
    subtitle = root.find(".//%stext[@id='subtitle']" % SVG).text
    assert "perf-prof profile -F 997 -g --flame-graph" in subtitle and " s" in subtitle, subtitle
    # hot_a and hot_b, 3:1 of the samples, are drawn with the counts the folded file gives.
    for fn in ("hot_a", "hot_b"):
        want = sum(n for s, n in folded.items() if fn in s.split(";"))
        assert sum(f.n for f in frames if f.name == fn) == want > 0
    # Colours by kind, from what the symbolizer knew: the workload's code warm, libc gold,
    # the kernel blue.
    def rgb(f):
        return tuple(int(f.fill[i:i + 2], 16) for i in (1, 3, 5))
    kinds = {f.name: rgb(f) for f in frames}
    r, g, b = kinds["hot_a"]
    assert r >= 225 and b <= 70, kinds["hot_a"]
    libc = [rgb(f) for f in frames if f.name.startswith("__libc_start")]
    assert libc and all(r >= 220 and 175 <= g <= 220 and b <= 90 for r, g, b in libc), libc
    kernel = [rgb(f) for f in frames if f.name in ("asm_sysvec_apic_timer_interrupt", "entry_SYSCALL_64")]
    assert all(b >= 215 and r < 140 for r, g, b in kernel), kernel


def test_svg_round_trip_and_same_picture_from_the_folded_file(pp, hotab_graph, tmp_path):
    """With merging off, the counts per stack read back from the SVG equal the folded file's; the
    command draws the folded file into the same frames as the run's own picture."""
    name, _ = hotab_graph
    folded = read_folded(name + ".folded")
    text = ok(pp, ["flamegraph", "--minwidth", "0", name + ".folded"])
    frames, _ = svg_frames(text)
    assert stacks_from_svg(frames) == folded
    # Every distinct prefix is one frame (plus the root).
    prefixes = {tuple(s.split(";")[:i]) for s in folded for i in range(1, len(s.split(";")) + 1)}
    assert len(frames) == len(prefixes) + 1
    # The run's picture (default minimum width) has the frames the command draws with it.
    own, _ = svg_frames(open(name + ".svg").read())
    drawn, _ = svg_frames(ok(pp, ["flamegraph", name + ".folded"]))
    key = lambda fs: sorted((f.s, f.n, f.depth, f.name) for f in fs)
    assert key(own) == key(drawn)
    # The same name keeps its colour in every picture.
    assert {f.fill for f in own if f.name == "hot_a"} == {f.fill for f in drawn if f.name == "hot_a"}


def test_round_trip_of_awkward_names(pp, tmp_path):
    lines = [
        "a;b 5",
        "a;b;c 3",
        "a;std::vector<int>::push_back(int&&) 7",
        "a;\"quoted\" & 'apos' 2",
        "a;caf\u00e9;\u6f22\u5b57 4",
        "a;b;c 1",
        "x 9",
        "a;operator() (lambda) 1",
    ]
    path = tmp_path / "awkward.folded"
    path.write_text("\n".join(lines) + "\n")
    text = ok(pp, ["flamegraph", "--minwidth", "0", "--title", "<T&>", str(path)])
    assert_self_contained(text)
    frames, _ = svg_frames(text)
    want = {}
    for l in lines:
        s, n = l.rsplit(" ", 1)
        want[s] = want.get(s, 0) + int(n)
    assert stacks_from_svg(frames) == want


@pytest.fixture(scope="module")
def chrome():
    reason = browser.missing()
    if reason:
        skip_or_fail(reason)
    with browser.Browser() as b:
        yield b


def test_svg_in_a_real_browser(pp, hotab_graph, chrome):
    name, _ = hotab_graph
    folded = read_folded(name + ".folded")
    total = sum(folded.values())
    svg = name + ".svg"
    frames, attrs = svg_frames(open(svg).read())
    full = int(attrs["data-width"]) - 2 * int(attrs["data-pad"])
    b = chrome
    # The window as large as the picture: the screenshot shows all of it and nothing else.
    b.resize(int(attrs["data-width"]), int(ET.parse(svg).getroot().get("height")))
    b.open("file://" + svg)
    assert b.run("return typeof window.flamegraph") == "object", b.logs()
    # It renders: every frame of the file is an element with a visible box (the narrowest
    # ones are under a pixel wide but still laid out).
    start = b.flame_frames()
    assert len(start) == len(frames) and all(f["shown"] for f in start)
    assert sum(1 for f in start if f["width"] >= 1) >= 6
    os.makedirs(ARTIFACTS, exist_ok=True)
    b.screenshot(os.path.join(ARTIFACTS, "flamegraph.png"))

    # A click on hot_b zooms: it becomes the full width, its ancestors dimmed full width,
    # frames beside it hidden.
    elems = b.find_all("#frames > g")
    i = next(i for i, f in enumerate(start) if f["name"] == "hot_b")
    b.click(elems[i])
    zoomed = b.flame_frames()
    assert abs(zoomed[i]["width"] - full) < 0.01, zoomed[i]
    assert all(f["dim"] and abs(f["width"] - full) < 0.01 for f in zoomed if f["name"] in ("all", "main"))
    assert not any(f["shown"] for f in zoomed if f["name"] == "hot_a")
    assert b.run("return getComputedStyle(document.getElementById('reset')).display") != "none"
    assert "z=" in b.run("return location.search")
    b.screenshot(os.path.join(ARTIFACTS, "flamegraph-zoomed.png"))

    # Reset restores every frame where it was.
    b.click(b.find("#reset"))
    back = b.flame_frames()
    assert [(f["x"], f["width"], f["shown"], f["dim"]) for f in back] == \
        [(f["x"], f["width"], f["shown"], f["dim"]) for f in start]

    # Search through the control and its prompt: exactly the hot_a frames are highlighted,
    # and the matched share is the one the folded counts give.
    b.click(b.find("#search"))
    b.answer_prompt("^hot_a$")
    found = b.flame_frames()
    assert [f["name"] for f in found if f["hit"]] == [f["name"] for f in found if f["name"] == "hot_a"]
    assert any(f["hit"] for f in found)
    assert all(f["fill"] == "rgb(224, 64, 224)" for f in found if f["hit"])
    hot_a = sum(n for s, n in folded.items() if "hot_a" in s.split(";"))
    matched = b.run("return document.getElementById('matched').textContent")
    assert matched == "Matched: %.2f%%" % (100.0 * hot_a / total), (matched, hot_a, total)
    b.screenshot(os.path.join(ARTIFACTS, "flamegraph-search.png"))

    # The view is in the URL: a reload shows the same search.
    b.open("file://" + svg + "?s=%5Ehot_b%24")
    hot_b = sum(n for s, n in folded.items() if "hot_b" in s.split(";"))
    assert b.run("return document.getElementById('matched').textContent") == \
        "Matched: %.2f%%" % (100.0 * hot_b / total)
    # Hover shows the details line.
    elems = b.find_all("#frames > g")
    b.hover(elems[i])
    details = b.run("return document.getElementById('details').textContent")
    assert details.startswith("hot_b (") and "samples" in details, details
    # Icicle: the root moves to the top.
    b.click(b.find("#flip"))
    ys = b.run("return Array.from(document.querySelectorAll('#frames > g > rect')).map(r => +r.getAttribute('y'))")
    assert ys[0] == min(ys)
    assert not [m for m in b.logs() if m.get("level") == "SEVERE"], b.logs()


def test_search_does_not_count_nested_matches_twice(pp, tmp_path, chrome):
    path = tmp_path / "nested.folded"
    path.write_text("m;f;g;f 6\nm;f 2\nm;h 2\n")
    svg = tmp_path / "nested.svg"
    svg.write_text(ok(pp, ["flamegraph", str(path)]))
    chrome.open("file://%s?s=%%5Ef%%24" % svg)
    assert chrome.run("return document.getElementById('matched').textContent") == "Matched: 80.00%"


def test_another_tools_folded_file(pp, tmp_path):
    """perf script | stackcollapse-perf.pl style: _[k] and _[j] annotations, [unknown] frames,
    addresses as names; the annotations pick the colours and are not shown."""
    path = tmp_path / "perf.folded"
    path.write_text("java;start_thread;Interpreter_[j];JIT::compiled_[j];write_[k];ksys_write_[k] 10\n"
                    "java;start_thread;[unknown];0x7f001234 3\n"
                    "swapper;secondary_startup_64_[k];do_idle_[k] 20\n")
    frames, _ = svg_frames(ok(pp, ["flamegraph", str(path)]))
    names = {f.name: f for f in frames}
    assert "write" in names and "write_[k]" not in names and "Interpreter" in names
    blue = lambda f: int(f.fill[5:7], 16) >= 215 and int(f.fill[1:3], 16) < 140
    green = lambda f: int(f.fill[3:5], 16) >= 185 and int(f.fill[1:3], 16) < 120
    assert blue(names["ksys_write"]) and blue(names["do_idle"]) and green(names["Interpreter"])


def test_knobs(pp, hotab_graph):
    name, _ = hotab_graph
    folded = name + ".folded"
    # Icicle: the root at the top.
    frames, attrs = svg_frames(ok(pp, ["flamegraph", "--inverted", folded]))
    assert attrs["data-inverted"] == "1" and frames[0].depth == 0
    # Reversed: stacks merged from their leaves, so the hot leaf "work" is a child of the root.
    frames, _ = svg_frames(ok(pp, ["flamegraph", "--reverse", "--minwidth", "0", folded]))
    assert "work" in {f.name for f in frames if f.depth == 1}
    text = ok(pp, ["flamegraph", "--title", "T", "--subtitle", "S", "--countname", "ms", "--width", "600",
                   "--colors", "mem", "--height", "20", folded])
    root = ET.fromstring(text)
    assert root.get("width") == "600"
    assert root.find(".//%stext[@id='title']" % SVG).text == "T"
    total = sum(read_folded(folded).values())
    assert root.find(".//%stext[@id='subtitle']" % SVG).text == "S  \u00b7  %s ms" % format(total, ",")
    frames, attrs = svg_frames(text)
    assert attrs["data-fh"] == "20" and "ms, " in ET.fromstring(text).find(".//%stitle" % SVG).text
    # The mem palette: greens for every frame but the root.
    assert all(int(f.fill[3:5], 16) >= 190 and int(f.fill[1:3], 16) == 0 for f in frames[1:]), frames[1].fill
    # The same input gives the same picture, byte for byte.
    assert ok(pp, ["flamegraph", folded]) == ok(pp, ["flamegraph", folded])


def test_many_stacks_stay_small(pp, tmp_path):
    """100,000 distinct stacks: narrow frames are merged, so the picture is bounded by its width
    and depth (at most width/minwidth frames a level), not by the number of stacks."""
    rnd = random.Random(7)
    funcs = ["fn_%d" % i for i in range(3000)]
    lines = set()
    while len(lines) < 100000:
        depth = rnd.randint(3, 24)
        lines.add(";".join(["app"] + [rnd.choice(funcs[:30 * (d + 1)]) for d in range(depth)]))
    path = tmp_path / "big.folded"
    path.write_text("".join("%s %d\n" % (s, rnd.randint(1, 50)) for s in sorted(lines)))
    text = ok(pp, ["flamegraph", str(path)])
    frames, attrs = svg_frames(text)
    levels = int(attrs["data-depth"]) + 1
    assert len(frames) <= levels * (1180 / 0.1)
    assert len(text) < 4 * 1024 * 1024, len(text)
    assert frames[0].n == sum(int(l.rsplit(" ", 1)[1]) for l in path.read_text().splitlines())
    # Merged frames say how many frames they hold; the whole graph still adds up.
    assert any(f.merged for f in frames)


def test_interval_mode_writes_one_svg_per_interval(pp, needs_root, workload, tmp_path):
    wl = workload("ufunc")
    name = str(tmp_path / "fg")
    out = ok(pp, ["trace", "-e", 'uprobe:pp_target@"%s"' % wl, "-g", "--flame-graph", name, "-i", "100", "--",
                  wl, "50"])
    svgs = sorted(p for p in os.listdir(tmp_path) if p.endswith(".svg"))
    assert svgs and all(re.fullmatch(r"fg-\d{8}-\d{6}(-\d+)?\.svg", p) for p in svgs), svgs
    assert "Flame graph" in out
    total = 0
    for p in svgs:
        frames, attrs = svg_frames((tmp_path / p).read_text())
        assert "events" in ET.fromstring((tmp_path / p).read_text()).find(".//%stitle" % SVG).text
        total += int(attrs["data-total"])
    assert total == 50


def test_bad_folded_input(pp, tmp_path):
    # Garbage lines are reported with the first one's number; the rest is drawn.
    path = tmp_path / "mixed.folded"
    path.write_text("a;b 3\nthis is not a stack\n\na;c 2\nx;y 1.5\n")
    rc, out, err = pp.run(["flamegraph", "--minwidth", "0", str(path)])
    assert rc == 0 and len(err.splitlines()) == 1, err
    assert "%s:2:" % path in err and "2 such lines" in err, err
    frames, _ = svg_frames(out)
    assert stacks_from_svg(frames) == {"a;b": 3, "a;c": 2}
    # Nothing to draw: one line, exit 1, nothing on stdout.
    for content, what in (("", "empty"), ("\n\n", "empty"), ("garbage\nmore garbage\n", ":1:")):
        path.write_text(content)
        rc, out, err = pp.run(["flamegraph", str(path)])
        assert_not_crashed(rc)
        assert rc == 1 and out == "" and len(err.splitlines()) == 1 and what in err, (content, err)
    rc, out, err = pp.run(["flamegraph", str(tmp_path / "missing.folded")])
    assert rc == 1 and out == "" and len(err.splitlines()) == 1 and "missing.folded" in err
    # A binary file: never a crash, never a broken SVG.
    path.write_bytes(bytes(range(256)) * 40 + b"\xff\xfe;\x00; 5\n")
    rc, out, err = pp.run(["flamegraph", str(path)])
    assert_not_crashed(rc)
    if rc == 0:
        ET.fromstring(out)
    # Usage errors: no file, two files, a bad option value.
    for args in ([], ["a", "b"], ["--colors", "nope", "f"], ["--minwidth", "x", "f"], ["--width", "0", "f"]):
        rc, out, err = pp.run(["flamegraph"] + args)
        assert rc == 129 and len(err.splitlines()) == 1, (args, err)
    # stdin
    rc, out, err = pp.run(["flamegraph", "-"], input="s;t 4\n")
    assert rc == 0 and err == "" and svg_frames(out)[0][0].n == 4


def test_sigint_leaves_a_complete_picture(pp, needs_root, workload, tmp_path):
    """Ctrl-C: the folded file and the picture are both complete, and agree."""
    name = str(tmp_path / "cpu")
    b = pp.start_ready(["profile", "-F", "499", "-g", "-v", "--flame-graph", name, "--", workload("hotab"), "60000"])
    time.sleep(0.5)
    b.send(signal.SIGINT)
    rc, out, err = b.finish()
    assert rc == 0 and err == "", err
    frames, attrs = svg_frames(open(name + ".svg").read())
    assert int(attrs["data-total"]) == sum(read_folded(name + ".folded").values()) > 0
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
