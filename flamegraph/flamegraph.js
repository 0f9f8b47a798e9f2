// perf-prof flame graph: hover details, click to zoom, reset, regex search with the matched
// share, flame/icicle flip. Layout numbers come from the #fg group's data attributes; every
// frame is a <g data-s=START data-n=COUNT> with a <title>, a <rect> and maybe a <text>.
"use strict";
(function () {
    var NS = "http://www.w3.org/2000/svg";
    var fg = document.getElementById("fg");
    var total = +fg.getAttribute("data-total");
    var width = +fg.getAttribute("data-width");
    var pad = +fg.getAttribute("data-pad");
    var top = +fg.getAttribute("data-top");
    var fh = +fg.getAttribute("data-fh");
    var maxDepth = +fg.getAttribute("data-depth");
    var inverted = fg.getAttribute("data-inverted") === "1";
    var unit = fg.getAttribute("data-unit");
    var diff = fg.getAttribute("data-diff") === "1"; // titles carry before/after and the change
    var inner = width - 2 * pad;
    var charWidth = 0.59 * 12;
    var details = document.getElementById("details");
    var matchedText = document.getElementById("matched");
    var resetButton = document.getElementById("reset");
    var flipButton = document.getElementById("flip");

    // One record per frame: its group, geometry in counts, depth, name.
    var frames = [];
    var groups = document.getElementById("frames").children;
    for (var i = 0; i < groups.length; i++) {
        var g = groups[i];
        var title = g.firstElementChild.textContent;
        var rect = g.querySelector("rect");
        var y = +rect.getAttribute("y");
        var level = Math.round((y - top) / fh);
        frames.push({
            g: g,
            rect: rect,
            text: g.querySelector("text"),
            s: +g.getAttribute("data-s"),
            n: +g.getAttribute("data-n"),
            depth: inverted ? level : maxDepth - level,
            name: title.substring(0, title.lastIndexOf(" (")),
            title: title,
            x: rect.getAttribute("x"),
            w: rect.getAttribute("width"),
        });
        g.frame = frames.length - 1;
    }
    var zoomed = null; // the frame zoomed into, or null
    var search = null; // the active RegExp, or null
    var ignoreCase = false;

    function frameOf(target) {
        while (target && target.frame === undefined) target = target.parentNode;
        return target ? frames[target.frame] : null;
    }

    function percent(n) {
        return ((100 * n) / (total || 1)).toFixed(2) + "%";
    }

    function label(f, w) {
        var chars = (w - 6) / charWidth;
        if (chars < 3) return "";
        if (f.name.length <= chars) return f.name;
        return f.name.substring(0, Math.floor(chars) - 2) + "..";
    }

    // Puts f at x with width w (pixels); without them, where the file drew it.
    function place(f, x, w) {
        var home = x === undefined;
        if (home) {
            x = +f.x;
            w = +f.w;
        }
        f.rect.setAttribute("x", home ? f.x : x.toFixed(2));
        f.rect.setAttribute("width", home ? f.w : w.toFixed(w < 1 ? 4 : 2));
        var text = label(f, w);
        if (!f.text && text) {
            f.text = document.createElementNS(NS, "text");
            f.g.appendChild(f.text);
        }
        if (f.text) {
            f.text.textContent = text;
            f.text.setAttribute("x", (x + 3).toFixed(2));
        }
    }

    function rowY(depth) {
        return inverted ? top + depth * fh : top + (maxDepth - depth) * fh;
    }

    // Zoom into f (null: the whole graph): f spans the full width, its ancestors are drawn full
    // width and dimmed, frames beside it are hidden.
    function zoom(f) {
        zoomed = f && f.depth > 0 ? f : null;
        var zs = zoomed ? zoomed.s : 0, zn = zoomed ? zoomed.n : total, zd = zoomed ? zoomed.depth : 0;
        for (var i = 0; i < frames.length; i++) {
            var c = frames[i];
            var inside = c.s >= zs && c.s + c.n <= zs + zn;
            var ancestor = c.depth < zd && c.s <= zs && c.s + c.n >= zs + zn;
            c.g.classList.toggle("h", !(inside && c.depth >= zd) && !ancestor);
            c.g.classList.toggle("p", ancestor);
            if (!zoomed) place(c);
            else if (ancestor) place(c, pad, inner);
            else if (inside) place(c, pad + ((c.s - zs) / zn) * inner, (c.n / zn) * inner);
        }
        resetButton.style.display = zoomed ? "" : "none";
        remember();
    }

    // Highlights the frames whose name matches; the matched share counts nested matches once.
    function find(pattern) {
        search = null;
        if (pattern) {
            try {
                search = new RegExp(pattern, ignoreCase ? "i" : "");
            } catch (e) {
                matchedText.textContent = "Bad regular expression: " + pattern;
                return;
            }
        }
        var hits = [];
        for (var i = 0; i < frames.length; i++) {
            var f = frames[i];
            var hit = search !== null && f.depth > 0 && !f.g.hasAttribute("data-m") && search.test(f.name);
            f.rect.classList.toggle("m", hit);
            if (hit) hits.push(f);
        }
        hits.sort(function (a, b) {
            return a.s - b.s || b.n - a.n;
        });
        var sum = 0, end = -1;
        for (var k = 0; k < hits.length; k++) {
            if (hits[k].s >= end) {
                sum += hits[k].n;
                end = hits[k].s + hits[k].n;
            }
        }
        matchedText.textContent = search ? "Matched: " + percent(sum) : " ";
        matchedText.setAttribute("data-matched", search ? String(sum) : "");
        document.getElementById("search").textContent = search ? "Reset Search" : "Search";
        remember();
    }

    function flip() {
        inverted = !inverted;
        for (var i = 0; i < frames.length; i++) {
            var f = frames[i];
            var y = rowY(f.depth);
            f.rect.setAttribute("y", y.toFixed(2));
            if (f.text) f.text.setAttribute("y", (y + fh - 4.5).toFixed(2));
        }
        flipButton.textContent = inverted ? "Flame" : "Icicle";
        remember();
    }

    // Zoom, search and orientation live in the URL, so a link shows the same view.
    function remember() {
        if (!window.history || !history.replaceState) return;
        var params = new URLSearchParams();
        if (zoomed) params.set("z", zoomed.s + "," + zoomed.depth);
        if (search) params.set("s", search.source);
        if (ignoreCase) params.set("i", "1");
        if (inverted !== (fg.getAttribute("data-inverted") === "1")) params.set("o", inverted ? "icicle" : "flame");
        var q = params.toString();
        try {
            history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
        } catch (e) {}
    }

    function restore() {
        var params = new URLSearchParams(location.search);
        if (params.get("i") === "1") ignoreCase = true;
        var o = params.get("o");
        if ((o === "icicle" && !inverted) || (o === "flame" && inverted)) flip();
        var z = params.get("z");
        if (z) {
            var parts = z.split(",");
            for (var i = 0; i < frames.length; i++)
                if (frames[i].s === +parts[0] && frames[i].depth === +parts[1]) zoom(frames[i]);
        }
        if (params.get("s")) find(params.get("s"));
    }

    function ask() {
        if (search) {
            find(null);
            return;
        }
        var term = prompt("Search frames by regular expression" + (ignoreCase ? " (ignoring case)" : ""), "");
        if (term) find(term);
    }

    var area = document.getElementById("frames");
    area.addEventListener("click", function (e) {
        var f = frameOf(e.target);
        if (f) zoom(f);
    });
    area.addEventListener("mouseover", function (e) {
        var f = frameOf(e.target);
        if (!f) return;
        var share = zoomed ? ", " + ((100 * f.n) / zoomed.n).toFixed(2) + "% of the zoomed frame" : "";
        if (diff) details.textContent = f.title;
        else details.textContent = f.name + " (" + f.n.toLocaleString("en-US") + " " + unit + ", " + percent(f.n) + share + ")";
    });
    area.addEventListener("mouseout", function () {
        details.textContent = " ";
    });
    resetButton.addEventListener("click", function () {
        zoom(null);
    });
    document.getElementById("search").addEventListener("click", ask);
    flipButton.addEventListener("click", flip);
    window.addEventListener("keydown", function (e) {
        if (e.key === "F3" || ((e.ctrlKey || e.metaKey) && e.key === "f")) {
            e.preventDefault();
            ask();
        } else if ((e.ctrlKey || e.metaKey) && e.key === "i") {
            e.preventDefault();
            ignoreCase = !ignoreCase;
            if (search) find(search.source);
        } else if (e.key === "Escape") {
            zoom(null);
        }
    });

    // A graph taller than the window opens on its widest tower, not on the empty tops of the
    // picture: from the root, the widest child at each level up to the last; the window is
    // scrolled so that this tower's top is near its top (or to the bottom, root in view, when
    // the whole tower fits). The icicle view opens at the top, where its root is.
    function towerTop() {
        var best = [], parentAt = [], root = null;
        for (var i = 0; i < frames.length; i++) {
            var f = frames[i];
            parentAt[f.depth] = i;
            if (f.depth === 0) {
                root = i;
                continue;
            }
            if (f.g.hasAttribute("data-m")) continue;
            var p = parentAt[f.depth - 1];
            if (best[p] === undefined || frames[best[p]].n < f.n) best[p] = i;
        }
        var top = root;
        while (top !== null && best[top] !== undefined) top = best[top];
        return top === null ? null : frames[top];
    }

    function openOnTower() {
        var doc = document.documentElement;
        var tall = doc.scrollHeight || +doc.getAttribute("height");
        if (inverted || tall <= window.innerHeight) return;
        var f = towerTop();
        if (!f) return;
        var y = Math.min(tall - window.innerHeight, Math.max(0, rowY(f.depth) - 2 * fh));
        window.scrollTo(0, y);
    }

    // For scripts driving the picture (and tests): the same actions as the controls.
    window.flamegraph = { zoom: function (i) { zoom(frames[i]); }, reset: function () { zoom(null); }, search: find, flip: flip, frames: frames, towerTop: towerTop };
    restore();
    openOnTower();
})();
