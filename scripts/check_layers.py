#!/usr/bin/env python3
"""The layer rule of perf-prof's product code (docs/ARCHITECTURE.md, "Layers").

Reads every `#include` of include/ lib/ profilers/ filter/ flamegraph/ main.cpp, resolves
it as the compiler does (the including file's folder for "...", then -Iinclude -Ilib -I.;
a header found nowhere there is a system or generated one), maps both files to their
component (their folder: lib/perf, filter, ...) and checks the edge against LAYERS below.
Also checks:
  - the heap agent (lib/heap/agent/, loaded into the profiled process) is a world of its own:
    its quoted includes stay inside it, its <...> includes are C headers of libc and the
    kernel's uapi, nothing else;
  - only lib/heap and lib/serve include the agent's headers (its wire format);
  - the profiler registry (all_profilers(), find_profiler()) is called from profilers/ and
    main.cpp only: an include rule cannot see a call through a header of include/;
  - no product source file passes MAX_LINES lines.
Each violation prints as `FILE:LINE: X may not include Y (layer rule)` (or the rule it
breaks); the exit status is 1 when there is any, 0 otherwise. Python 3 standard library only.

Usage: scripts/check_layers.py [--root DIR] [--max-lines N] [--quiet]
"""

import argparse
import os
import re
import sys

# Where the product code lives, and the -I folders in the compiler's order (the Makefile's
# CPPFLAGS: -Iinclude -Ilib -I.).
ROOTS = ("include", "lib", "profilers", "filter", "flamegraph", "main.cpp")
INCLUDE_DIRS = ("include", "lib", ".")
SOURCE_EXTS = (".cpp", ".h", ".c", ".def", ".inc")
MAX_LINES = 700

AGENT = "lib/heap/agent"

# Which components each component may include (besides itself). Read bottom-up: each row
# names only rows above it, so the table is a DAG (checked at start-up). A new folder gets a
# row here in the change that creates it.
_BASE = {"include/perf-prof"}  # include/perf-prof: Error, Sample, Options, Profiler, Context
_CORE = _BASE | {"lib/core"}
LAYERS = {
    "include/perf-prof": set(),  # the bottom: headers shared by every top-level folder
    AGENT: set(),  # plain C inside the profiled process: itself and libc only
    "lib/perf_shim": set(),  # C against libperf's internals
    "lib/core": _BASE,
    "lib/tep": _CORE,
    "lib/unwind": _CORE,  # CFI and the unwinder: asks an interface for code, never lib/sym
    "lib/http": _CORE,
    "filter": _CORE,
    "flamegraph": _CORE,  # the SVG renderers: no perf, no symbols
    "lib/sym": _CORE | {"lib/unwind"},  # objects own their CFI tables
    "lib/output": _CORE | {"lib/tep", "flamegraph"},
    "lib/stack": _CORE | {"lib/unwind", "lib/sym", "lib/output", "flamegraph"},
    "lib/event": _CORE | {"filter", "lib/tep", "lib/unwind", "lib/sym"},
    "lib/cli": _CORE | {"filter", "lib/tep", "lib/unwind", "lib/event"},
    # The session: never lib/cli nor profilers/ (nested profilers come resolved).
    "lib/perf": _CORE | {"lib/perf_shim", "filter", "lib/tep", "lib/unwind", "lib/sym", "lib/stack", "lib/event",
                         "lib/output"},
}
# The profiler cores: algorithms fed samples, unit-tested without a kernel.
_CORES = LAYERS["lib/perf"] | {"lib/perf", "flamegraph"}
LAYERS["lib/sched"] = _CORES
LAYERS["lib/pairing"] = _CORES
LAYERS["lib/aggregate"] = _CORES
LAYERS["lib/block"] = _CORES
LAYERS["lib/counters"] = _CORES
LAYERS["lib/hw"] = _CORES  # page-faults, breakpoint, event-care, watchdog
LAYERS["lib/sql"] = _CORES
LAYERS["lib/lock"] = _CORES  # lock: futex wait pairing, its report
LAYERS["lib/heap"] = _CORES | {AGENT}
LAYERS["lib/serve"] = _CORES | {"lib/heap", AGENT, "lib/http", "lib/sched", "lib/lock"}
# Profilers use any component; nothing includes them (they are reached through profilers.def).
LAYERS["profilers"] = set(LAYERS) - {AGENT, "lib/perf_shim"}
# main.cpp: parse, resolve, run; the registry through include/perf-prof/profiler.h.
LAYERS["main"] = set(LAYERS) - {AGENT, "lib/perf_shim", "profilers"}

# Calls that go up to profilers/registry.cpp, declared in include/perf-prof/profiler.h.
REGISTRY_CALL = re.compile(r"\b(all_profilers|find_profiler)\s*\(")
REGISTRY_CALLERS = {"profilers", "main", "include/perf-prof"}

# The heap agent's <...> headers: C headers (NAME.h) at the top or under these folders.
AGENT_SYSTEM_DIRS = {"sys", "linux", "asm", "asm-generic", "bits", "net", "netinet", "arpa"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def component(rel):
    """The component of a repository-relative path: lib/X, lib/heap/agent, include, main, or
    its top-level folder."""
    parts = rel.split("/")
    if parts[0] == "lib" and len(parts) > 2:
        if parts[1:3] == ["heap", "agent"] and len(parts) > 3:
            return AGENT
        return "lib/" + parts[1]
    if parts[0] == "include":
        return "include/perf-prof"
    if rel == "main.cpp":
        return "main"
    return parts[0]


def product_files(root):
    for top in ROOTS:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for d, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXTS):
                    yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def resolve(root, rel, target, quoted=True):
    """The repository-relative file `#include "target"` (or `<target>`) in `rel` reads, or
    None (a generated header, or a system one)."""
    for base in ([os.path.dirname(rel)] if quoted else []) + list(INCLUDE_DIRS):
        cand = os.path.normpath(os.path.join(base, target))
        if not cand.startswith("..") and os.path.isfile(os.path.join(root, cand)):
            return cand.replace(os.sep, "/")
    return None


def strip_comments(text):
    """The text with // and /* */ comments blanked (string literals are not parsed: a
    registry call spelled inside a string would be flagged, which no code does)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check_dag(layers):
    """The table's own cycles, as messages (empty when it is a DAG)."""
    state, errors = {}, []

    def visit(c, path):
        if state.get(c) == 1:
            errors.append("layer table: cycle " + " -> ".join(path + [c]))
            return
        if state.get(c) == 2:
            return
        state[c] = 1
        for d in sorted(layers.get(c, ())):
            visit(d, path + [c])
        state[c] = 2

    for c in sorted(layers):
        visit(c, [])
    return errors


def check_agent_system_include(target):
    if not target.endswith(".h"):
        return False
    return "/" not in target or target.split("/")[0] in AGENT_SYSTEM_DIRS


def check_file(root, rel, max_lines, out):
    comp = component(rel)
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.split("\n")
    n = len(lines) - (1 if text.endswith("\n") else 0)
    if rel.endswith((".cpp", ".h", ".c")) and n > max_lines:
        out.append("%s:%d: %d lines, more than %d (size rule)" % (rel, n, n, max_lines))
    if comp not in LAYERS:
        out.append("%s:1: %s is not in the layer table of scripts/check_layers.py (layer rule)" % (rel, comp))
        return
    for i, line in enumerate(lines, 1):
        m = INCLUDE_RE.match(line)
        if not m:
            continue
        kind, target = m.groups()
        if comp == AGENT and kind == "<":
            if not check_agent_system_include(target):
                out.append("%s:%d: %s may include only libc and kernel headers, not <%s> (layer rule)"
                           % (rel, i, AGENT, target))
            continue
        if comp == "lib/perf_shim" and kind == "<":
            continue  # its <perf/...> are libperf's, whose folders come first on its command line
        # <...> searches the -I folders too: one of ours spelled so is checked alike.
        hit = resolve(root, rel, target, kind == '"')
        if kind == "<" and hit is None:
            continue
        if hit is None:
            if comp == AGENT:
                out.append("%s:%d: %s may include only itself, not \"%s\" (layer rule)" % (rel, i, AGENT, target))
            continue
        dep = component(hit)
        if dep != comp and dep not in LAYERS.get(comp, ()):
            out.append("%s:%d: %s may not include %s (%s) (layer rule)" % (rel, i, comp, dep, hit))
    if comp not in REGISTRY_CALLERS:
        for i, line in enumerate(strip_comments(text).split("\n"), 1):
            m = REGISTRY_CALL.search(line)
            if m:
                out.append("%s:%d: %s may not call %s(), the registry of profilers/ (layer rule)"
                           % (rel, i, comp, m.group(1)))


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the repository (default: this script's)")
    ap.add_argument("--max-lines", type=int, default=MAX_LINES, help="most lines of one source file")
    ap.add_argument("--quiet", action="store_true", help="print violations only")
    args = ap.parse_args(argv)

    out = check_dag(LAYERS)
    files = list(product_files(args.root))
    for rel in files:
        check_file(args.root, rel, args.max_lines, out)
    for line in out:
        print(line)
    if out:
        print("check_layers: %d violation%s in %d files" % (len(out), "" if len(out) == 1 else "s", len(files)),
              file=sys.stderr)
        return 1
    if not args.quiet:
        print("check_layers: %d files: the layer rule holds" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
