#!/usr/bin/env bash
# Builds libperf and libapi from Debian's linux-source-6.1 into $1 (once; make deps).
# Debian packages no libperf, so we take tools/lib/perf from the kernel source package.
set -euo pipefail
out=$(realpath -m "$1")
tarball=$(ls /usr/src/linux-source-6.1*.tar.xz 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "perf-prof: /usr/src/linux-source-6.1.tar.xz not found (apt-get install linux-source-6.1)" >&2; exit 1; }
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
top=$(basename "$tarball" .tar.xz)
# Only the subset libperf's build reads: a few MiB instead of the whole kernel.
tar -xJf "$tarball" -C "$out.tmp" --wildcards \
    "$top/tools/lib/*" "$top/tools/include/*" "$top/tools/arch/x86/*" "$top/tools/build/*" \
    "$top/tools/scripts/*" "$top/scripts/*" "$top/Makefile"
mv "$out.tmp/$top" "$out.tmp/src"
make -s -C "$out.tmp/src/tools/lib/perf" O="$out.tmp" prefix="$out.tmp" \
    install_lib install_headers >/dev/null
rm -rf "$out" && mv "$out.tmp" "$out"
# libperf.a calls fdarray__* from libapi.a, which stays in the O= directory.
test -f "$out/libperf.a" && test -f "$out/libapi.a" && test -f "$out/include/perf/evlist.h"
