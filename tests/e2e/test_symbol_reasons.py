"""End-to-end tests of why a frame is unknown (`-v`): the symbolizer says once per object and
reason, on stdout with the other -v notes, why its frames print as [FILE+offset] or [unknown];
without -v it says nothing. stderr stays empty either way.

Workload: a copy of `hotab MS` (CPU split between hot_a() and hot_b(), static functions)
stripped of its .symtab, so that its frames have no name: the reason is "stripped"."""

import os
import shutil
import subprocess

from conftest import assert_not_crashed


def stripped_hotab(workload, tmp_path):
    path = str(tmp_path / "hotab")
    shutil.copy(workload("hotab"), path)
    subprocess.check_call(["strip", "--strip-all", path])
    return path


def test_stripped_object_is_named_with_v(pp, needs_root, workload, tmp_path):
    exe = stripped_hotab(workload, tmp_path)
    rc, out, err = pp.run(["profile", "-F", "999", "-g", "-v", "--", exe, "300"], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    # The frames themselves print as before: the file and the offset.
    assert "[%s+0x" % exe in out, out[-2000:]
    line = "symbols: %s: stripped, frames shown as [%s+offset]" % (exe, exe)
    assert out.count(line + "\n") == 1, out[-2000:]


def test_no_reason_lines_without_v(pp, needs_root, workload, tmp_path):
    exe = stripped_hotab(workload, tmp_path)
    rc, out, err = pp.run(["profile", "-F", "999", "-g", "--", exe, "300"], timeout=60)
    assert_not_crashed(rc)
    assert rc == 0 and err == "", err
    assert "[%s+0x" % exe in out, out[-2000:]
    assert "symbols: " not in out, out[-2000:]
