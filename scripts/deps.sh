#!/usr/bin/env bash
# Installs the Debian packages perf-prof needs, skipping those present (make deps). Test-only
# peers: google-perftools (google-pprof), chromium + chromium-driver (our SVGs in a real browser),
# golang-go (`go tool pprof` reads our profile.proto files), systemtap-sdt-dev (USDT workloads),
# heaptrack and valgrind (heap peers in bench/), curl (google-pprof's fetcher of `serve`'s
# endpoints). libmicrohttpd-dev: the HTTP server of `serve`. libclang-rt-14-dev: clang's ASan,
# UBSan and libFuzzer runtimes (make test's sanitize-quick, make fuzz), only recommended by clang.
# clang-tidy: make lint. libdebuginfod-dev: its header (the library is dlopened, see
# lib/sym/debuginfod.h); debuginfod: the server of the debuginfod e2e tests. nodejs: a JIT that
# writes /tmp/perf-PID.map (node --perf-basic-prof), for the JIT-frame tests.
set -euo pipefail
pkgs=(g++ make pkg-config xz-utils libtraceevent-dev libelf-dev libdw-dev liblzma-dev zlib1g-dev
      libbz2-dev libcli11-dev libgtest-dev libtraceevent1-plugin python3-pytest linux-source-6.1 util-linux
      google-perftools libgoogle-perftools4 binutils libc6-dbg clang clang-tidy libclang-rt-14-dev bpftool libbpf-dev
      chromium chromium-driver golang-go systemtap-sdt-dev heaptrack valgrind libmicrohttpd-dev curl
      libsqlite3-dev sqlite3 libdebuginfod-dev debuginfod
      nodejs)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "perf-prof: missing packages: ${missing[*]} (run 'make deps' as root)" >&2
    exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists are stale: refresh them before installing.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
