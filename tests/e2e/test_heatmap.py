"""heatmap: SPEC §8.1 `{time} {latency}` files drawn as SVG heat maps. Synthetic files with
known cells: the SVG must be well-formed, draw exactly those cells with exactly those counts,
label its axes and legend with units and reach nothing outside itself. Bad input: one
`perf-prof: ` line on stderr, exit 1 and an empty stdout where nothing can be drawn."""

import os
import random
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, assert_not_crashed

NS = "{http://www.w3.org/2000/svg}"
MS = 1000 * 1000  # ns
BASE = 81105 * 1000 * MS  # an event-clock time, as multi-trace writes


def lat_file(tmp_path, lines, name="t.lat"):
    path = tmp_path / name
    path.write_text("".join("%d %d\n" % p for p in lines))
    return str(path)


def points_for(cells, step, row_height, origin=BASE):
    """Points that fall into the given {(column, row): count} cells: column c's times are
    origin + c·step + a few us, row r's latency is the middle of [r·h, (r+1)·h)."""
    pts = []
    for (c, r), n in cells.items():
        for k in range(n):
            pts.append((origin + c * step + k * 1000, r * row_height + row_height // 2))
    random.Random(7).shuffle(pts)  # times out of order: the file need not be sorted
    return pts


def draw(pp, args, input=None):
    rc, out, err = pp.run(["heatmap"] + args, timeout=60, input=input)
    assert_not_crashed(rc)
    assert rc == 0, err
    assert err == "", "a clean run prints nothing on stderr: %r" % err
    return out


def parse(svg):
    """(root, the cells group, {(column, row): count}) of a heat-map SVG; fails on a
    malformed document, a cell drawn twice, or a title that disagrees with data-n."""
    root = ET.fromstring(svg)
    assert root.tag == NS + "svg"
    group = root.find(".//%sg[@id='cells']" % NS)
    assert group is not None, "no cells group"
    cells = {}
    for rect in group.findall(NS + "rect"):
        key = (int(rect.get("data-t")), int(rect.get("data-l")))
        assert key not in cells, "cell %s drawn twice" % (key,)
        n = int(rect.get("data-n"))
        assert n > 0, "an empty cell is drawn"
        title = rect.find(NS + "title")
        assert title is not None and title.text.endswith(" count %d" % n), title
        cells[key] = n
    return root, group, cells


def texts(root):
    return [t.text or "" for t in root.iter(NS + "text")]


KNOWN = {(0, 0): 1, (0, 2): 5, (1, 1): 17, (2, 0): 100, (2, 2): 3}


def test_known_cells_linear(pp, tmp_path):
    path = lat_file(tmp_path, points_for(KNOWN, MS, MS))
    svg = draw(pp, ["--linear", "--step", "1ms", "--rows", "3", "--min", "0", "--max", "3ms", path])
    root, group, cells = parse(svg)
    assert cells == KNOWN
    assert group.get("data-edges") == "0 1000000 2000000 3000000"
    assert group.get("data-step") == str(MS) and group.get("data-columns") == "3"
    assert int(group.get("data-t0")) == BASE
    params = root.find(".//%stext[@id='params']" % NS).text
    assert params.startswith("126 points; columns: 3 of 1 ms")
    assert "rows: 3 linear from 0 ns to 3 ms (1 ms each)" in params
    assert "below" not in params and "above" not in params
    # The cell's hover text names its ranges with units.
    titles = {(int(r.get("data-t")), int(r.get("data-l"))): r.find(NS + "title").text
              for r in group.findall(NS + "rect")}
    assert titles[(1, 1)] == "time [1 ms, 2 ms) latency [1 ms, 2 ms) count 17"
    assert titles[(2, 2)] == "time [2 ms, 3 ms) latency [2 ms, 3 ms] count 3"


def test_known_cells_from_stdin_with_defaults(pp):
    # No options: round bounds from the data; every point is still in exactly one cell.
    pts = points_for(KNOWN, MS, MS)
    svg = draw(pp, ["-"], input="".join("%d %d\n" % p for p in pts))
    root, group, cells = parse(svg)
    assert sum(cells.values()) == len(pts)
    assert int(group.get("data-columns")) <= 200 and group.get("data-rows") == "50"
    assert "stdin" in texts(root)


def test_log_scale_and_clamping(pp, tmp_path):
    # Rows [1us, 10us) [10us, 100us) [100us, 1ms]; 0 and 700 ns below, 2 ms above.
    want = {(0, 0): 4, (0, 1): 9, (1, 2): 2, (1, 0): 6}
    pts = [(BASE, 5000)] * 2 + [(BASE + 10, 0), (BASE + 20, 700)]
    pts += [(BASE + 100, 50_000)] * 9
    pts += [(BASE + MS, 500_000), (BASE + MS + 5, 2 * MS)]
    pts += [(BASE + MS + 7, 1000)] * 6  # the bottom edge belongs to the bottom row
    path = lat_file(tmp_path, pts)
    svg = draw(pp, ["--step", "1ms", "--rows", "3", "--min", "1us", "--max", "1ms", path])  # log: the default
    root, group, cells = parse(svg)
    assert cells == want
    assert group.get("data-scale") == "log"
    assert group.get("data-edges") == "1000 10000 100000 1000000"
    params = root.find(".//%stext[@id='params']" % NS).text
    assert "rows: 3 log from 1 us to 1 ms" in params
    assert "2 below 1 us counted in the bottom row" in params
    assert "1 above 1 ms counted in the top row" in params
    assert "Latency (log scale)" in texts(root)


def test_legend_and_axes_have_units(pp, tmp_path):
    pts = [(BASE + i * 7 * MS, (i % 37) * 50_000) for i in range(500)]
    svg = draw(pp, [lat_file(tmp_path, pts)])
    root, group, cells = parse(svg)
    all_text = texts(root)
    unit = re.compile(r"^\d+(\.\d+)? (ns|us|ms|s)$")
    labels = [t for t in all_text if unit.match(t)]
    assert any(t.endswith(" ms") for t in labels), all_text  # latency axis, 0..1.8 ms
    assert any(t.endswith(" s") for t in labels), all_text  # time axis, 0..3.5 s
    assert "Time since the first point (s)" in all_text
    legend = root.find(".//%sg[@id='legend']" % NS)
    legend_text = [t.text for t in legend.iter(NS + "text")]
    assert any("points per cell" in t for t in legend_text)
    assert str(max(cells.values())) in legend_text
    assert root.find(".//%stext[@id='details']" % NS) is not None
    assert root.find(NS + "script") is not None


def test_no_external_references(pp, tmp_path):
    svg = draw(pp, ["--title", "<b x='1'>&", lat_file(tmp_path, points_for(KNOWN, MS, MS))])
    assert set(re.findall(r"https?://[^\s\"'<>]*", svg)) == {"http://www.w3.org/2000/svg"}
    root = ET.fromstring(svg)
    for el in root.iter():
        for name, value in el.attrib.items():
            assert "href" not in name, (el.tag, name, value)
        assert not (el.tag == NS + "script" and el.get("src")), "external script"
    assert "url(" not in svg and "@import" not in svg
    assert "<b x='1'>&" in texts(root)  # the title came through escaped


def test_unit_options(pp, tmp_path):
    # A file in us with a latency unit we cannot scale: labels show the name as given.
    pts = [(1000 + c * 100, 3 + r * 10) for c in range(4) for r in range(2)]
    svg = draw(pp, ["--linear", "--units-time", "us", "--units-latency", "pkts", "--step", "100", "--rows", "2",
                    "--min", "0", "--max", "20", lat_file(tmp_path, pts)])
    root, group, cells = parse(svg)
    assert cells == {(c, r): 1 for c in range(4) for r in range(2)}
    titles = [r.find(NS + "title").text for r in group.findall(NS + "rect")]
    assert "time [100 us, 200 us) latency [0 pkts, 10 pkts) count 1" in titles


def test_many_points_stay_a_small_picture(pp, tmp_path):
    rnd = random.Random(3)
    pts = [(BASE + i * 20_000, int(rnd.lognormvariate(10, 1.5))) for i in range(200_000)]
    for args in ([], ["--linear"]):
        svg = draw(pp, args + [lat_file(tmp_path, pts)])
        root, group, cells = parse(svg)
        assert sum(cells.values()) == len(pts)
        assert len(cells) <= 200 * 50
        assert len(svg) < 3_000_000


@pytest.mark.parametrize("text", [
    "1 5\n",  # one point
    "10 7\n20 7\n30 7\n",  # every latency equal
    "30 1\n20 2\n10 3\n",  # time going backwards
    "0 0\n18446744073709551615 18446744073709551615\n",  # the extremes of the format
    "5 0\n6 0\n",  # only zero latencies
], ids=["single", "equal", "backwards", "extremes", "zeros"])
@pytest.mark.parametrize("log", [False, True], ids=["linear", "log"])
def test_degenerate_files_draw(pp, tmp_path, text, log):
    path = tmp_path / "d.lat"
    path.write_text(text)
    svg = draw(pp, ([] if log else ["--linear"]) + [str(path)])
    root, group, cells = parse(svg)
    assert sum(cells.values()) == len(text.splitlines())


def one_error_line(err):
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perf-prof: "), err
    return lines[0]


@pytest.mark.parametrize("text,where", [
    ("", "t.lat: no '{time} {latency}' lines"),
    ("\n  \n", "t.lat: no '{time} {latency}' lines"),
    ("abc def\n", "t.lat:1: 'abc' is not an unsigned decimal integer"),
    ("\n1.5 2\n-3 4\n", "t.lat:2: '1.5' is not an unsigned decimal integer"),
    ("1 2 3\n", "t.lat:1: expected '{time} {latency}', found 3 fields"),
    ("1 99999999999999999999\n", "t.lat:1: '99999999999999999999' is too large"),
    ("\x00 \xff\n", "t.lat:1: '?' is not an unsigned decimal integer"),
], ids=["empty", "blank", "words", "fractions", "three", "huge", "binary"])
def test_nothing_to_draw(pp, tmp_path, text, where):
    path = tmp_path / "t.lat"
    path.write_bytes(text.encode("latin-1"))
    rc, out, err = pp.run(["heatmap", str(path)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 1 and out == ""
    line = one_error_line(err)
    assert line.startswith("perf-prof: " + str(tmp_path / where)), line
    assert "nothing to draw" in line


def test_bad_lines_are_skipped_and_reported_once(pp, tmp_path):
    path = tmp_path / "mixed.lat"
    path.write_text("%d 5\nnot a line\n%d 6\n%d -7\n%d 8" % (BASE, BASE + 1, BASE + 2, BASE + 3))
    rc, out, err = pp.run(["heatmap", "--rows", "1", "--step", "1s", str(path)], timeout=30)
    assert_not_crashed(rc)
    assert rc == 0
    line = one_error_line(err)
    assert line == ("perf-prof: %s:2: expected '{time} {latency}', found 3 fields (2 bad lines skipped)"
                    % path)
    root, group, cells = parse(out)
    assert cells == {(0, 0): 3}


def test_a_huge_line_without_newline(pp, tmp_path):
    path = tmp_path / "long.lat"
    with open(path, "w") as f:
        f.write("%d 100\n" % BASE)
        f.write("9" * (64 << 20))
    rc, out, err = pp.run(["heatmap", str(path)], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0
    assert one_error_line(err) == "perf-prof: %s:2: line longer than 128 characters (1 bad line skipped)" % path
    assert sum(parse(out)[2].values()) == 1


@pytest.mark.parametrize("args,code", [
    (["/nonexistent/x.lat"], 1),
    (["/"], 1),
    ([], 129),
    (["a.lat", "b.lat"], 129),
    (["--rows", "0", "x.lat"], 129),
    (["--rows", "501", "x.lat"], 129),
    (["--step", "1.5ms", "x.lat"], 129),
    (["--step", "0", "x.lat"], 129),
    (["--min", "2ms", "--max", "1ms", "FILE"], 129),
    (["--min", "0", "FILE"], 129),  # log scale (the default) from 0
    (["--step", "1", "FILE"], 129),  # 1 ns columns over seconds: too many
    (["--units-time", "cycles", "--step", "10ms", "FILE"], 129),
    (["--width", "abc", "x.lat"], 129),
    (["-C", "0", "x.lat"], 129),  # no session options
], ids=["missing", "directory", "no-file", "two-files", "rows-0", "rows-501", "fraction",
        "step-0", "min-above-max", "log-min-0", "too-many-columns", "unitless-step", "width-nan",
        "cpus"])
def test_bad_usage(pp, tmp_path, args, code):
    path = lat_file(tmp_path, points_for(KNOWN, 1000 * MS, MS))
    rc, out, err = pp.run(["heatmap"] + [path if a == "FILE" else a for a in args], timeout=30)
    assert_not_crashed(rc)
    assert rc == code and out == ""
    one_error_line(err)


def test_help(pp):
    rc, out, err = pp.run(["heatmap", "-h"], timeout=10)
    assert rc == 129 and out == ""
    assert " Usage: perf-prof heatmap" in err
    for opt in ("--step", "--rows", "--min", "--max", "--log", "--linear", "--title", "--units-time"):
        assert re.search(r"^\s+%s\b" % opt, err, re.M), opt
    assert "--cpus" not in err
    rc, out, err = pp.run(["-h"], timeout=10)
    assert re.search(r"^\s+heatmap\s+\S", err, re.M), "heatmap is not in the main help"


def test_hover_in_a_real_browser(pp, tmp_path):
    """In headless Chromium, pointing at a cell outlines it and shows its title (time range,
    latency range, count) in the details line; leaving it clears both."""
    import browser
    from conftest import skip_or_fail
    reason = browser.missing()
    if reason:
        skip_or_fail(reason)
    svg = tmp_path / "known.svg"
    svg.write_text(draw(pp, ["--linear", "--step", "1ms", "--rows", "3", "--min", "0", "--max", "3ms",
                             lat_file(tmp_path, points_for(KNOWN, MS, MS))]))
    with browser.Browser() as b:
        b.open("file://%s" % svg)
        idle = b.run("return document.getElementById('details').textContent")
        cells = b.find_all("#cells > rect")
        counts = b.run("return Array.from(document.querySelectorAll('#cells > rect')).map(r => +r.getAttribute('data-n'))")
        i = counts.index(17)
        b.hover(cells[i])
        assert b.run("return document.getElementById('details').textContent") == \
            "time [1 ms, 2 ms) latency [1 ms, 2 ms) count 17"
        assert b.run("return document.querySelectorAll('#cells > rect.hl').length") == 1
        b.hover(b.find("#details"))
        assert b.run("return document.getElementById('details').textContent") == idle
        os.makedirs(os.path.join(REPO, "build", "test-artifacts"), exist_ok=True)
        b.screenshot(os.path.join(REPO, "build", "test-artifacts", "heatmap.png"))
