"""scripts/check_layers.py (the layer rule of docs/ARCHITECTURE.md) on small made-up trees:
a clean one passes, each kind of violation is named with its file and line and fails."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "..", "scripts", "check_layers.py"))

CLEAN = {
    "include/perf-prof/profiler.h": '#pragma once\n#include "perf-prof/error.h"\n',
    "include/perf-prof/error.h": "#pragma once\n",
    "lib/core/text.cpp": '#include "core/text.h"\n#include "perf-prof/error.h"\n',
    "lib/core/text.h": "#pragma once\n#include <string>\n",
    "lib/cli/parser.h": '#pragma once\n#include "core/text.h"\n',
    "lib/stack/printer.h": '#pragma once\n#include <vector>\n',
    "lib/perf/session.cpp": '#include "perf/session.h"\n#include "core/text.h"\n',
    "lib/perf/session.h": "#pragma once\n",
    "lib/heap/agent/agent.c": '#include "agent.h"\n#include <sys/mman.h>\n#include <stdint.h>\n',
    "lib/heap/agent/agent.h": "#pragma once\n",
    "lib/heap/channel.cpp": '#include "heap/agent/agent.h"\n',
    "profilers/registry.cpp": "void f() { all_profilers(); }\n",
    "main.cpp": '#include "cli/parser.h"\n#include "perf/session.h"\nint main() { find_profiler("x"); }\n',
}


def make_tree(root, extra):
    for rel, text in {**CLEAN, **extra}.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def check(tmp_path, extra=None):
    make_tree(str(tmp_path), extra or {})
    p = subprocess.run([sys.executable, SCRIPT, "--root", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout


def test_clean_tree_passes(tmp_path):
    rc, out = check(tmp_path)
    assert rc == 0, out
    assert "the layer rule holds" in out


@pytest.mark.parametrize("rel, text, expected", [
    ("lib/perf/open.cpp", '#include "perf/session.h"\n#include "cli/parser.h"\n',
     "lib/perf/open.cpp:2: lib/perf may not include lib/cli (lib/cli/parser.h) (layer rule)"),
    ("include/perf-prof/sample.h", '#pragma once\n#include "core/text.h"\n',
     "include/perf-prof/sample.h:2: include/perf-prof may not include lib/core (lib/core/text.h) (layer rule)"),
    ("lib/core/up.cpp", '#include "../perf/session.h"\n',
     "lib/core/up.cpp:1: lib/core may not include lib/perf (lib/perf/session.h) (layer rule)"),
    ("lib/unwind/frames.cpp", '#include <vector>\n#include <stack/printer.h>\n',
     "lib/unwind/frames.cpp:2: lib/unwind may not include lib/stack (lib/stack/printer.h) (layer rule)"),
    ("lib/heap/agent/bad.c", '#include <stdio.h>\n#include <elfutils/libdw.h>\n',
     "lib/heap/agent/bad.c:2: lib/heap/agent may include only libc and kernel headers, not <elfutils/libdw.h>"),
    ("lib/heap/agent/up.c", '#include "core/text.h"\n',
     "lib/heap/agent/up.c:1: lib/heap/agent may not include lib/core (lib/core/text.h) (layer rule)"),
    ("lib/core/names.cpp", "// all_profilers() in a comment is fine\nint n = all_profilers().size();\n",
     "lib/core/names.cpp:2: lib/core may not call all_profilers(), the registry of profilers/ (layer rule)"),
    ("lib/newpart/x.cpp", "int x;\n",
     "lib/newpart/x.cpp:1: lib/newpart is not in the layer table"),
    ("lib/core/big.cpp", "int x;\n" * 701, "lib/core/big.cpp:701: 701 lines, more than 700 (size rule)"),
])
def test_violation_fails(tmp_path, rel, text, expected):
    rc, out = check(tmp_path, {rel: text})
    assert rc == 1
    assert expected in out, out
    assert len(out.splitlines()) == 1, out


def test_script_runs_on_this_tree():
    """On the repository itself it runs and prints either success or violations only."""
    p = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    for line in p.stdout.splitlines():
        assert "(layer rule)" in line or "(size rule)" in line or "the layer rule holds" in line, line
