"""Differential flame graphs (`perf-prof flamegraph --diff BEFORE AFTER`), the folded files'
frame kinds surviving a redraw, the sample count in the subtitle, tall graphs opening on their
widest tower, and `go tool pprof -diff_base` over two `profile --pprof` outputs.

The diff SVG draws AFTER; each frame's title is "NAME (AFTER UNIT, SHARE%; before B: CHANGE)"
with CHANGE "+100.0%", "-50.0%", "0.0%" or "new"; with --normalize "before B normalized from
RAW", B = RAW * AFTER total / BEFORE total. Fills go from light grey (#e8e8e8, unchanged) to
red (grew) or blue (shrank) by (after - before) / max(after, before). Frames only BEFORE had
are listed under the picture (<g id="gone">), widest first.

Workloads: `hotab MS` (3:1 between hot_a and hot_b), `spin MS` (main only), `syscalls pipes N`
(kernel, libc and the program's own frames)."""

import re
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_not_crashed, require_root, run
from test_flamegraph import SVG, chrome, ok, svg_frames  # noqa: F401 (chrome: a fixture)

ANNOTATION = re.compile(r"_\[[kjil]\]$")


def titles(text):
    """name -> title text of the frames (names unique in these tests), in document order."""
    out = {}
    for g in ET.fromstring(text).find(".//%sg[@id='frames']" % SVG):
        t = g.find(SVG + "title").text
        out.setdefault(t[:t.rindex(" (")], []).append((t, g.find(SVG + "rect").get("fill")))
    return out


def rgb(fill):
    return tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))


def red(fill):
    r, g, b = rgb(fill)
    return r > g + 20 and g == b


def blue(fill):
    r, g, b = rgb(fill)
    return b > r + 20 and b > g


BEFORE = "p;main;a 100\np;main;b 100\np;main;c;d 50\np;main;gone1 30\np;gone2;x 10\n"
AFTER = "p;main;a 300\np;main;b 50\np;main;c;d 50\np;main;newf 40\n"


@pytest.fixture
def pair(tmp_path):
    b, a = tmp_path / "before.folded", tmp_path / "after.folded"
    b.write_text(BEFORE)
    a.write_text(AFTER)
    return str(b), str(a)


def test_diff_titles_colours_and_gone_frames(pp, pair):
    text = ok(pp, ["flamegraph", "--diff", "--minwidth", "0", *pair])
    t = titles(text)
    assert t["all"] == [("all (440 samples, 100%; before 290: +51.7%)", t["all"][0][1])]
    assert t["a"][0][0] == "a (300 samples, 68.18%; before 100: +200.0%)"
    assert t["b"][0][0] == "b (50 samples, 11.36%; before 100: -50.0%)"
    assert t["c"][0][0] == "c (50 samples, 11.36%; before 50: 0.0%)"
    assert t["newf"][0][0] == "newf (40 samples, 9.09%; before 0: new)"
    assert t["main"][0][0] == "main (440 samples, 100%; before 280: +57.1%)"
    # Colours: a grew (2/3 of the way to red), newf full red, b halved (half way to blue), c grey.
    assert red(t["a"][0][1]) and red(t["newf"][0][1]) and blue(t["b"][0][1])
    assert t["newf"][0][1] == "#d71e1e" and t["c"][0][1] == t["d"][0][1] == "#e8e8e8"
    assert rgb(t["a"][0][1])[1] < rgb(t["main"][0][1])[1], "a grew more than main: a deeper red"
    # Frames only BEFORE had: not drawn, listed under the picture, widest first.
    assert "gone1" not in t and "gone2" not in t
    root = ET.fromstring(text)
    gone = [(e.text, e.get("data-was")) for e in root.findall(".//%sg[@id='gone']/%stext[@class='gone']" % (SVG, SVG))]
    assert gone == [("gone1: 30 samples before, under main", "30"), ("gone2: 10 samples before, under p", "10")]
    assert root.find(".//%stext[@id='subtitle']" % SVG).text == "440 samples after, 290 before"
    assert root.find(".//%stext[@id='title']" % SVG).text == "Differential Flame Graph"
    fg = root.find(".//%sg[@id='fg']" % SVG)
    assert fg.get("data-diff") == "1" and fg.get("data-total") == "440"
    # The frames and their widths are AFTER's own picture's.
    plain, _ = svg_frames(ok(pp, ["flamegraph", "--minwidth", "0", pair[1]]))
    diffed, _ = svg_frames(text)
    assert [(f.s, f.n, f.depth, f.name) for f in plain] == [(f.s, f.n, f.depth, f.name) for f in diffed]


def test_diff_normalize(pp, pair):
    t = titles(ok(pp, ["flamegraph", "--diff", "--normalize", "--minwidth", "0", *pair]))
    # BEFORE scaled by 440/290: a 100 -> 151.7, so +97.7%; c 50 -> 75.9, -34.1%; the root unchanged.
    assert t["all"][0][0] == "all (440 samples, 100%; before 440 normalized from 290: 0.0%)"
    assert t["a"][0][0] == "a (300 samples, 68.18%; before 151.7 normalized from 100: +97.7%)"
    assert t["c"][0][0] == "c (50 samples, 11.36%; before 75.9 normalized from 50: -34.1%)"
    assert t["all"][0][1] == "#e8e8e8" and blue(t["c"][0][1]) and red(t["a"][0][1])


def test_diff_one_file_of_pairs_is_the_same_picture(pp, pair, tmp_path):
    """FlameGraph's difffolded.pl form, "stack before after" per line."""
    counts = {}
    for i, path in enumerate(pair):
        for line in open(path):
            s, n = line.split()
            counts.setdefault(s, [0, 0])[i] += int(n)
    pairs = tmp_path / "pairs.folded"
    pairs.write_text("".join("%s %d %d\n" % (s, b, a) for s, (b, a) in counts.items()))
    one = ok(pp, ["flamegraph", "--diff", "--minwidth", "0", str(pairs)])
    two = ok(pp, ["flamegraph", "--diff", "--minwidth", "0", *pair])
    assert titles(one) == titles(two)
    # Without --diff, the second count is drawn as before.
    frames, _ = svg_frames(ok(pp, ["flamegraph", str(pairs)]))
    assert frames[0].n == 440


def test_diff_bad_input(pp, pair, tmp_path):
    empty, junk, single = tmp_path / "empty.folded", tmp_path / "junk.folded", tmp_path / "single.folded"
    empty.write_text("")
    junk.write_text("this is not\na folded file\n")
    single.write_text("a;b 3\n")
    for args, what in (([pair[0], str(tmp_path / "missing.folded")], "missing.folded"),
                       ([str(empty), pair[1]], "BEFORE %s: no stacks" % empty),
                       ([pair[0], str(junk)], "AFTER %s:1:" % junk),
                       ([str(single)], "expected two counts")):
        rc, out, err = pp.run(["flamegraph", "--diff"] + args)
        assert_not_crashed(rc)
        assert rc == 1 and out == "" and len(err.splitlines()) == 1 and err.startswith("perf-prof: "), (args, err)
        assert what in err, (what, err)
    for args in (["--diff"], ["--diff", "a", "b", "c"], ["--normalize", pair[1]], ["--diff", "--colors", "hot", *pair],
                 ["--diff", "-", "-"]):
        rc, out, err = pp.run(["flamegraph"] + args)
        assert rc == 129 and out == "" and len(err.splitlines()) == 1, (args, err)


def strip_kinds(stack):
    return ";".join(ANNOTATION.sub("", f) for f in stack.split(";"))


def test_diff_of_two_profiles(pp, workload, tmp_path):
    """hotab 500 ms, then hotab 1500 ms: every title's counts are the folded files' sums for
    that frame, the change is computed from them, hot_a grew (red) and --normalize makes the
    3:1 split read as nearly unchanged."""
    require_root()
    counts = []
    for ms in (500, 1500):
        name = str(tmp_path / ("cpu%d" % ms))
        ok(pp, ["profile", "-F", "997", "-g", "--flame-graph", name, "--", workload("hotab"), str(ms)])
        folded = {}
        for line in open(name + ".folded"):
            s, n = line.rstrip("\n").rsplit(" ", 1)
            folded[strip_kinds(s)] = folded.get(strip_kinds(s), 0) + int(n)
        counts.append(folded)
    before, after = counts
    paths = [str(tmp_path / "cpu500.folded"), str(tmp_path / "cpu1500.folded")]
    text = ok(pp, ["flamegraph", "--diff", "--minwidth", "0", *paths])
    t = titles(text)

    def under(folded, prefix):
        return sum(n for s, n in folded.items() if s == prefix or s.startswith(prefix + ";"))

    hot_a = next(s for s in after if s.split(";")[-1] == "work" and "hot_a" in s.split(";"))
    path = hot_a.split(";")[:hot_a.split(";").index("hot_a") + 1]
    a, b = under(after, ";".join(path)), under(before, ";".join(path))
    assert b > 200 and a > 2 * b, (a, b)
    want = "hot_a (%s samples, " % format(a, ",")
    got = [x for x in t["hot_a"] if x[0].startswith(want)]
    assert got, (want, t["hot_a"])
    assert got[0][0].endswith("; before %s: +%.1f%%)" % (format(b, ","), 100.0 * (a - b) / b)), got
    assert red(got[0][1])
    # Normalized, hot_a keeps its share of the run within a few percent: a pale shade.
    tn = titles(ok(pp, ["flamegraph", "--diff", "--normalize", "--minwidth", "0", *paths]))
    m = re.search(r"normalized from [\d,]+: ([+-]?[\d.]+)%\)$", [x for x in tn["hot_a"] if x[0].startswith(want)][0][0])
    assert m and abs(float(m.group(1))) < 10, tn["hot_a"]


def test_redraw_keeps_frame_kinds(pp, workload, tmp_path):
    """profile -g writes NAME.folded and NAME.svg; `perf-prof flamegraph NAME.folded` colours
    every frame as the run's own picture did: kernel, library and user frames alike."""
    require_root()
    name = str(tmp_path / "pipes")
    ok(pp, ["profile", "-F", "997", "-g", "--flame-graph", name, "--", workload("syscalls"), "pipes", "300000"])
    text = open(name + ".folded").read()
    frames = {f for line in text.splitlines() for f in line.rsplit(" ", 1)[0].split(";")}
    assert any(f.endswith("_[k]") for f in frames) and any(f.endswith("_[l]") for f in frames), sorted(frames)[:40]
    assert "main" in frames
    own, _ = svg_frames(open(name + ".svg").read())
    redrawn, _ = svg_frames(ok(pp, ["flamegraph", name + ".folded"]))
    fills = lambda fs: {(f.name, f.depth, f.s): f.fill for f in fs}
    assert fills(own) == fills(redrawn)
    kernel = [f for f in redrawn if f.name in ("entry_SYSCALL_64", "do_syscall_64")]
    assert kernel and all(rgb(f.fill)[2] >= 215 and rgb(f.fill)[0] < 140 for f in kernel)


def test_subtitle_has_the_sample_count(pp, tmp_path):
    path = tmp_path / "s.folded"
    path.write_text("a;b 1234\na;c 1000\n")
    root = ET.fromstring(ok(pp, ["flamegraph", "--countname", "bytes", str(path)]))
    assert root.find(".//%stext[@id='subtitle']" % SVG).text == "2,234 bytes"
    root = ET.fromstring(ok(pp, ["flamegraph", "--subtitle", "S", str(path)]))
    assert root.find(".//%stext[@id='subtitle']" % SVG).text == "S  \u00b7  2,234 samples"


def test_diff_svg_in_a_real_browser(pp, pair, tmp_path, chrome):
    svg = tmp_path / "diff.svg"
    svg.write_text(ok(pp, ["flamegraph", "--diff", "--minwidth", "0", *pair]))
    b = chrome
    b.resize(1200, 400)
    b.open("file://%s" % svg)
    assert b.run("return typeof window.flamegraph") == "object", b.logs()
    start = b.flame_frames()
    assert [f["name"] for f in start] == ["all", "p", "main", "a", "b", "c", "d", "newf"]
    assert all(f["shown"] for f in start)
    assert start[3]["fill"] == "rgb(%d, %d, %d)" % rgb(titles(svg.read_text())["a"][0][1])
    # Hover: the details line is the title, both counts and the change.
    elems = b.find_all("#frames > g")
    b.hover(elems[3])
    assert b.run("return document.getElementById('details').textContent") == \
        "a (300 samples, 68.18%; before 100: +200.0%)"
    # Zoom into c: full width, a and b hidden, main dimmed; reset restores.
    b.click(elems[5])
    z = b.flame_frames()
    assert abs(z[5]["width"] - 1180) < 0.01 and not z[3]["shown"] and not z[4]["shown"] and z[2]["dim"]
    b.click(b.find("#reset"))
    assert [(f["x"], f["width"], f["shown"]) for f in b.flame_frames()] == \
        [(f["x"], f["width"], f["shown"]) for f in start]
    # Search: the match colour over the diff colours, the share of AFTER.
    b.open("file://%s?s=%%5E%%28a%%7Cnewf%%29%%24" % svg)
    found = b.flame_frames()
    assert [f["name"] for f in found if f["hit"]] == ["a", "newf"]
    assert b.run("return document.getElementById('matched').textContent") == "Matched: %.2f%%" % (100 * 340 / 440)
    assert not [m for m in b.logs() if m.get("level") == "SEVERE"], b.logs()


def test_tall_graph_opens_on_its_widest_tower(pp, tmp_path, chrome):
    """A 120-deep tower holding 70% of the samples beside a deeper, narrower one: the page
    opens scrolled so that the wide tower's top frame is in the window (not the empty tops of
    the picture); the icicle view opens at the top."""
    path = tmp_path / "deep.folded"
    path.write_text(";".join(["main"] + ["w%d" % i for i in range(120)]) + " 700\n" +
                    ";".join(["main"] + ["n%d" % i for i in range(160)]) + " 100\nmain;flat 200\n")
    svg, icicle = tmp_path / "deep.svg", tmp_path / "icicle.svg"
    svg.write_text(ok(pp, ["flamegraph", str(path)]))
    icicle.write_text(ok(pp, ["flamegraph", "--inverted", str(path)]))
    b = chrome
    b.resize(1200, 800)
    b.open("file://%s" % svg)
    height = int(ET.parse(svg).getroot().get("height"))
    assert height > 2000
    where = b.run("""var r = Array.from(document.querySelectorAll('#frames > g'))
                       .filter(g => g.firstElementChild.textContent.startsWith('w119 ('))[0]
                       .querySelector('rect').getBoundingClientRect();
                   return [window.scrollY, r.top, r.bottom, window.innerHeight];""")
    scroll, top, bottom, inner = where
    assert scroll > 0 and 0 <= top and bottom <= inner, where
    assert b.run("return window.flamegraph.towerTop().name") == "w119"
    b.open("file://%s" % icicle)
    assert b.run("return window.scrollY") == 0


def signed_top(text):
    """`go tool pprof -top` rows, deltas signed: [(flat, cum, function)]."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s*(-?\d+)\s+-?[\d.]+%\s+-?[\d.]+%\s+(-?\d+)\s+-?[\d.]+%\s+(\S.*)$", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return rows


def test_pprof_diff_base_of_two_profiles(pp, workload, go_pprof, tmp_path):
    """`go tool pprof -diff_base BEFORE AFTER -top` on two `profile --pprof` outputs: spin's
    1 s (BEFORE) against hotab's 0.6 s (AFTER). hot_a, hot_b and work, only in AFTER, show
    AFTER's own counts as positive deltas; main, mostly spin's loop, a negative one: exactly
    the difference of the two profiles' own rows."""
    require_root()
    pbs = []
    for prog, ms in (("spin", "1000"), ("hotab", "600")):
        pb = str(tmp_path / (prog + ".pb.gz"))
        rc, out, err = run([pp.path, "profile", "-F", "997", "-g", "--pprof", pb, "--", workload(prog), ms],
                           timeout=60)
        assert_not_crashed(rc)
        assert rc == 0 and err == "", err
        pbs.append(pb)
    flags = ["-top", "-sample_index=0", "-nodefraction=0", "-nodecount=100000"]
    own = [signed_top(go_pprof(*flags, pb)) for pb in pbs]
    diff = signed_top(go_pprof(*flags, "-diff_base", pbs[0], pbs[1]))
    flat = lambda rows, fn: sum(r[0] for r in rows if r[2] == fn)
    cum = lambda rows, fn: sum(r[1] for r in rows if r[2] == fn)
    for fn in ("hot_a", "hot_b", "work"):
        assert cum(own[0], fn) == 0 and cum(own[1], fn) > 50, (fn, own)
        assert (flat(diff, fn), cum(diff, fn)) == (flat(own[1], fn), cum(own[1], fn)), (fn, diff)
    # spin loops for wall-clock time: on a loaded machine it gets fewer samples, never none.
    assert flat(own[0], "main") > 20 and flat(own[1], "main") < flat(own[0], "main") / 2, own
    assert flat(diff, "main") == flat(own[1], "main") - flat(own[0], "main") < 0, diff
    print("\npprof -diff_base: hot_a cum %+d, work flat %+d, main flat %+d" %
          (cum(diff, "hot_a"), flat(diff, "work"), flat(diff, "main")))
