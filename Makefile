# perf-prof — the only entry point. `make` builds ./perf-prof; `make test` installs, builds, tests.
.DEFAULT_GOAL := all
.PHONY: all deps test unit e2e demo sanitize format lint lint-files clean

BUILD    ?= build
SAN      ?=
CXX      := g++
CC       := gcc
LIBPERF  := build/libperf
OPT      ?= -O2
PYTEST   := /usr/bin/python3 -m pytest

CPPFLAGS := -Iinclude -Ilib -I. -I$(LIBPERF)/include -I/usr/include/traceevent -MMD -MP
# -Wformat=2: a printf-family format that is not a literal is flagged (user text must never be
# one: the expression language's printf() formats go through filter/printf_format).
CXXFLAGS := -std=c++20 $(OPT) -g -Wall -Wextra -Wformat=2 -Werror=undef $(SAN)
CFLAGS   := -std=gnu11 $(OPT) -g -Wall -Wextra $(SAN)
LDFLAGS  := $(SAN)
SHARED_LDLIBS := $(LIBPERF)/libperf.a $(LIBPERF)/libapi.a -ltraceevent -lbpf -ldw -lelf -llzma -lz -lsqlite3 -lpthread
LDLIBS   := $(SHARED_LDLIBS)
# The release binary links the C++ runtime and elfutils statically: ~2 ms less start-up
# (relocations, page faults) per run, which `--symbols` pays on every pprof query.
# libtraceevent stays shared: its plugins are shared objects that link against it.
# libmicrohttpd (`serve`), whose static build would drag GnuTLS in, is not linked: serve loads
# it (lib/http/mhd_lib.cpp), so no other run pays for loading it and its eleven libraries.
ifeq ($(SAN),)
LDFLAGS  += -static-libstdc++ -static-libgcc
LDLIBS   := $(LIBPERF)/libperf.a $(LIBPERF)/libapi.a -ltraceevent \
            -Wl,-Bstatic -lbpf -ldw -lelf -llzma -lz -lbz2 -Wl,-Bdynamic -lsqlite3 -lpthread
endif
# The shim reaches libperf internals, which only compile as C with the kernel's tools headers.
SHIM_CPPFLAGS := -I$(LIBPERF)/src/tools/lib/perf/include -I$(LIBPERF)/src/tools/include \
                 -I$(LIBPERF)/src/tools/arch/x86/include -I$(LIBPERF)/src/tools/arch/x86/include/uapi \
                 -I$(LIBPERF)/src/tools/include/uapi -Ilib

LIB_SRCS  := $(shell find lib profilers filter flamegraph -name '*.cpp' | sort)
SHIM_SRCS := $(wildcard lib/perf_shim/*.c)
LIB_OBJS  := $(LIB_SRCS:%.cpp=$(BUILD)/obj/%.o) $(SHIM_SRCS:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ  := $(BUILD)/obj/main.o
UNIT_SRCS := $(wildcard tests/unit/*_test.cpp)
UNIT_OBJS := $(UNIT_SRCS:%.cpp=$(BUILD)/obj/%.o)
# tests/workloads/NAME.c is a program, libNAME.c a shared library beside the programs;
# NAME.cpp a C++ program.
WL_CXX    := $(patsubst tests/workloads/%.cpp,$(BUILD)/workloads/%,$(wildcard tests/workloads/*.cpp))
WL_LIBS   := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%.so,$(wildcard tests/workloads/lib*.c))
WORKLOADS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(filter-out tests/workloads/lib%.c,\
               $(wildcard tests/workloads/*.c))) $(WL_LIBS) $(WL_CXX)
BIN       := $(if $(SAN),$(BUILD)/perf-prof,perf-prof)

DEPS_STAMP := build/.deps-ok

all: $(BIN) $(WORKLOADS)

# Debian packages (apt-get, only when something is missing) and libperf built once, cached.
deps: $(DEPS_STAMP) $(LIBPERF)/libperf.a
$(DEPS_STAMP): scripts/deps.sh
	@mkdir -p build
	@scripts/deps.sh
	@touch $@
$(LIBPERF)/libperf.a: scripts/build-libperf.sh | $(DEPS_STAMP)
	@echo "  LIBPERF  $(LIBPERF) (from linux-source-6.1)"
	@scripts/build-libperf.sh $(LIBPERF)

$(BIN): $(MAIN_OBJ) $(LIB_OBJS)
	@echo "  LINK     $@"
	@$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: %.cpp | $(LIBPERF)/libperf.a
	@mkdir -p $(dir $@)
	@echo "  CXX      $<"
	@$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

$(BUILD)/obj/lib/perf_shim/%.o: lib/perf_shim/%.c | $(LIBPERF)/libperf.a
	@mkdir -p $(dir $@)
	@echo "  CC       $<"
	@$(CC) $(SHIM_CPPFLAGS) -MMD -MP $(CFLAGS) -c -o $@ $<

# syscall_name(): the {nr, "name"} table from the system's x86_64 syscall numbers. Shared by
# every $(BUILD) (it does not depend on flags); written via a temp file so a parallel or
# interrupted make never leaves half a header.
GEN       := build/gen
UNISTD_64 := $(firstword $(wildcard /usr/include/x86_64-linux-gnu/asm/unistd_64.h /usr/include/asm/unistd_64.h))
$(GEN)/syscall_table.h: $(UNISTD_64) Makefile
	@test -n "$(UNISTD_64)" || { echo "asm/unistd_64.h not found (install linux-libc-dev)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@echo "  GEN      $@"
	@awk '$$1 == "#define" && $$2 ~ /^__NR_/ && $$3 ~ /^[0-9]+$$/ \
	    { printf "{%s, \"%s\"},\n", $$3, substr($$2, 6) }' $< > $@.tmp
	@test -s $@.tmp || { echo "no __NR_ lines in $<" >&2; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@
$(BUILD)/obj/filter/syscall_names.o: $(GEN)/syscall_table.h
$(BUILD)/obj/filter/syscall_names.o: CPPFLAGS += -I$(GEN)

# eBPF filter programs (bpf/*.bpf.c): compiled for this kernel's BTF (CO-RE) into objects that
# bpftool turns into skeleton headers; generated, never committed, shared by every $(BUILD).
BTF      := /sys/kernel/btf/vmlinux
BPFTOOL  := $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
BPF_ARCH := $(subst x86_64,x86,$(subst aarch64,arm64,$(shell uname -m)))
$(GEN)/vmlinux.h: | $(DEPS_STAMP)
	@test -r $(BTF) || { echo "eBPF: $(BTF) is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@echo "  GEN      $@"
	@$(BPFTOOL) btf dump file $(BTF) format c > $@.tmp
	@mv $@.tmp $@
$(GEN)/%.bpf.o: bpf/%.bpf.c $(GEN)/vmlinux.h
	@echo "  BPF      $<"
	@clang -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(GEN) -c -o $@ $<
.PRECIOUS: $(GEN)/%.bpf.o
$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	@echo "  SKEL     $@"
	@$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp
	@mv $@.tmp $@
$(BUILD)/obj/filter/bpf_filter.o: $(GEN)/profile_filter.skel.h
$(BUILD)/obj/filter/bpf_filter.o: CPPFLAGS += -I$(GEN)
$(BUILD)/obj/lib/heap/heap_probes.o: $(GEN)/heap.skel.h
$(BUILD)/obj/lib/heap/heap_probes.o: CPPFLAGS += -I$(GEN)

# The pictures' scripts (flamegraph/*.js) are embedded in the binary: flamegraph/NAME.js becomes
# $(GEN)/NAME_js.h, one raw string literal `inline constexpr char k_NAME_js[]`.
FG_JS := $(patsubst flamegraph/%.js,$(GEN)/%_js.h,$(wildcard flamegraph/*.js))
$(GEN)/%_js.h: flamegraph/%.js
	@mkdir -p $(dir $@)
	@echo "  GEN      $@"
	@! grep -q ')JS"' $< || { echo "$<: contains the raw-string delimiter )JS\"" >&2; exit 1; }
	@{ printf '// Generated from %s by the Makefile: do not edit.\n#pragma once\n' '$<'; \
	   printf 'inline constexpr char k_%s_js[] = R"JS(' '$(subst -,_,$*)'; cat $<; printf ')JS";\n'; } > $@.tmp
	@mv $@.tmp $@
$(filter $(BUILD)/obj/flamegraph/%,$(LIB_OBJS)): $(FG_JS)
$(BUILD)/obj/flamegraph/%.o: CPPFLAGS += -I$(GEN)

# Workloads keep frame pointers, except NAME_nofp and the libraries: built as Debian builds its
# packages, they are what --call-graph dwarf is for. chain_nofp links libcfi_plt.so (found beside
# it through $$ORIGIN) and dlopens libcfi_plugin.so.
WL_CFLAGS := -O1 -g -fno-omit-frame-pointer
$(BUILD)/workloads/%_nofp $(WL_LIBS): WL_CFLAGS := -O2 -g -fomit-frame-pointer
$(BUILD)/workloads/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	@echo "  WORKLOAD $@"
	@$(CC) $(WL_CFLAGS) -Wall -Wextra -o $@ $< $(WL_LDLIBS) -lpthread
$(BUILD)/workloads/%: tests/workloads/%.cpp
	@mkdir -p $(dir $@)
	@echo "  WORKLOAD $@"
	@$(CXX) $(WL_CFLAGS) -std=c++20 -Wall -Wextra -o $@ $<
$(BUILD)/workloads/lib%.so: tests/workloads/lib%.c
	@mkdir -p $(dir $@)
	@echo "  WORKLOAD $@"
	@$(CC) $(WL_CFLAGS) -Wall -Wextra -fPIC -shared -o $@ $<
$(BUILD)/workloads/chain_nofp: $(BUILD)/workloads/libcfi_plt.so
$(BUILD)/workloads/chain_nofp: WL_LDLIBS := -L$(BUILD)/workloads -lcfi_plt -Wl,-rpath,'$$ORIGIN'
$(BUILD)/workloads/heap_inject: WL_LDLIBS := -no-pie -Wl,-rpath,'$$ORIGIN'
# Position-dependent, taking malloc's address: its PLT entry is malloc's canonical address.
# heap_inject_pie is the same program as a PIE.
$(BUILD)/workloads/heap_inject $(BUILD)/workloads/heap_nopie: WL_CFLAGS += -fno-pie
$(BUILD)/workloads/heap_nopie: WL_LDLIBS := -no-pie
$(BUILD)/workloads/heap_inject_pie: tests/workloads/heap_inject.c
	@mkdir -p $(dir $@)
	@echo "  WORKLOAD $@"
	@$(CC) $(WL_CFLAGS) -Wall -Wextra -o $@ $< -Wl,-rpath,'$$ORIGIN'
# No .eh_frame_hdr, frame pointers: the heap agent walker's fallback (heap_agent_unwind_test).
$(BUILD)/workloads/libcfi_fponly.so: WL_CFLAGS := -O2 -g -fno-omit-frame-pointer -Wl,--no-eh-frame-hdr
# The heap agent's refusals (agent_unusable_test): je_user calls libje_prefix.so's je_malloc, and
# leaks_static is leaks linked statically. leak_cxx calls libstdc++'s operator new.
$(BUILD)/workloads/je_user: $(BUILD)/workloads/libje_prefix.so
$(BUILD)/workloads/je_user: WL_LDLIBS := -L$(BUILD)/workloads -lje_prefix -Wl,-rpath,'$$ORIGIN'
$(BUILD)/workloads/leak_cxx: WL_LDLIBS := -lstdc++
WORKLOADS += $(BUILD)/workloads/leaks_static
all: $(BUILD)/workloads/leaks_static
$(BUILD)/workloads/leaks_static: tests/workloads/leaks.c
	@echo "  WORKLOAD $@"
	@$(CC) $(WL_CFLAGS) -Wall -Wextra -static -o $@ $<

# ---- the heap agent (lib/heap/agent/*.c): a shared object of its own beside perf-prof, loaded into
# the profiled process (LD_PRELOAD, or dlopen'd there by the injector), never linked into
# perf-prof. Plain C, no sanitizer even in a SAN build: it runs inside the profiled program, which
# has no sanitizer runtime. Its parts that need no process of their own (the walker) are compiled
# into the unit tests too, with the tests' flags.
AGENT_SRCS      := $(wildcard lib/heap/agent/*.c)
AGENT           := $(if $(SAN),$(BUILD)/perf-prof-heap.so,perf-prof-heap.so)
AGENT_CFLAGS    := -std=gnu11 -O2 -g -Wall -Wextra -fPIC -fno-omit-frame-pointer -fvisibility=hidden \
                   -ftls-model=initial-exec -fno-stack-protector -fasynchronous-unwind-tables -Ilib
AGENT_UNIT_SRCS := $(filter lib/heap/agent/unwind.c lib/heap/agent/unwind_cfi.c,$(AGENT_SRCS))
AGENT_UNIT_OBJS := $(AGENT_UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
all: $(AGENT)
$(AGENT): $(AGENT_SRCS) $(wildcard lib/heap/agent/*.h)
	@echo "  AGENT    $@"
	@$(CC) $(AGENT_CFLAGS) -shared -Wl,-z,defs -Wl,-z,nodelete -o $@ $(AGENT_SRCS)
$(BUILD)/obj/lib/heap/agent/%.o: lib/heap/agent/%.c
	@mkdir -p $(dir $@)
	@echo "  CC       $<"
	@$(CC) -Ilib -MMD -MP $(CFLAGS) -fno-omit-frame-pointer -c -o $@ $<

$(BUILD)/unit_tests: $(UNIT_OBJS) $(LIB_OBJS) $(AGENT_UNIT_OBJS)
	@echo "  LINK     $@"
	@$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lgtest -lgtest_main

# heap_agent_run_test runs workloads under the agent.
HEAP_AGENT_TEST_DEPS := $(AGENT) $(addprefix $(BUILD)/workloads/,leaks heap_fork heap_cxx heap_inject heap_inject_pie \
                          libheap_dl.so heap_threads heap_nopie heap_sampled)
$(BUILD)/unit_tests: | $(HEAP_AGENT_TEST_DEPS)

# sdt_notes_test reads the USDT notes of the usdt_app workload beside the test binary.
$(BUILD)/unit_tests: | $(BUILD)/workloads/usdt_app
# injector_test injects libinject_probe.so into inject_target (and tries sleeper, an executable).
# heap_agent_unwind_test dlopens libcfi_callback.so and libcfi_fponly.so beside it.
# agent_unusable_test runs leaks, leaks_static, own_malloc and je_user.
UNIT_WORKLOADS := $(addprefix $(BUILD)/workloads/,inject_target libinject_probe.so sleeper libcfi_callback.so \
                    libcfi_fponly.so leaks leaks_static own_malloc je_user)
$(BUILD)/unit_tests: | $(UNIT_WORKLOADS)

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests --gtest_brief=1

# ELF fixtures of tests/unit/object_test.cpp (gcc, binutils, xz), always under build/fixtures:
# the test finds them relative to the repository, whatever $(BUILD) is.
build/fixtures/.ok: $(wildcard tests/fixtures/*)
	@echo "  FIXTURES build/fixtures"
	@sh tests/fixtures/build.sh build/fixtures
unit: build/fixtures/.ok

e2e: $(BIN) $(WORKLOADS)
	PERF_PROF=$(abspath $(BIN)) WORKLOADS=$(abspath $(BUILD)/workloads) $(PYTEST) -q -rs tests/e2e

# The builds use every core (CI calls a plain `make test`). The unit tests run once, under
# ASan+UBSan (sanitize-quick; `make unit` runs the plain build's copy), in shards (two a core)
# beside the fuzz targets; the e2e tests, which measure the kernel, run one at a time.
JOBS ?= $(shell nproc)
test: deps
	@$(MAKE) --no-print-directory layers
	@$(MAKE) --no-print-directory -j$(JOBS) all $(FUZZ_UNIT) $(FUZZ_BINS) build/fixtures/.ok
	@$(MAKE) --no-print-directory -j$(JOBS) sanitize-quick
	@$(MAKE) --no-print-directory e2e

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer, in a separate build.
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=build/san OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" unit e2e

demo: deps
	@$(MAKE) --no-print-directory all
	@echo "== perf-prof signal: every signal generated on this machine for 3 seconds"
	@echo "   (a shell in the background starts short commands: each exit signals SIGCHLD)"
	@(sleep 0.5; for i in 1 2 3 4 5; do sleep 0.2; done) & \
	    timeout --preserve-status -s INT 3 ./perf-prof signal; rc=$$?; wait; [ $$rc -eq 0 ]
	@echo "== perf-prof profile: the whole machine sampled at 997 Hz with stacks for 3 seconds"
	@echo "   (Debian's dash and python3 run busy loops meanwhile; built without frame pointers,"
	@echo "   their callers come from unwinding each stack with its .eh_frame: --call-graph dwarf)"
	@echo "   -> build/demo.svg, build/demo.folded"
	@(timeout 3 sh -c 'while :; do :; done' &) ; \
	    (timeout 3 /usr/bin/python3 -c 'import itertools, json; any(json.dumps({"a": [i]}) is None for i in itertools.count())' &) ; \
	    timeout --preserve-status -s INT 3 ./perf-prof profile -F 997 --call-graph dwarf \
	    --flame-graph build/demo > /dev/null; rc=$$?; [ $$rc -eq 0 ]
	@echo "   $$(wc -l < build/demo.folded) distinct stacks; the most frequent of each loop:"
	@for c in sh python3; do grep "^$$c;" build/demo.folded | sort -t' ' -k2 -nr | head -2 | cut -c1-220; done
	@echo "== the flame graph (open it in a browser: hover, click to zoom, Ctrl-F to search):"
	@echo "   $(abspath build/demo.svg)"

# The layer rule (docs/ARCHITECTURE.md): which component may include which, the heap agent's
# own world, the registry called from profilers/ and main.cpp only, no source file over 700 lines.
.PHONY: layers
layers:
	@/usr/bin/python3 scripts/check_layers.py

format:
	clang-format -i $$(find include lib profilers filter flamegraph bpf tests main.cpp \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \))

# clang-tidy over the product's sources with the compiler's flags and the checks of .clang-tidy;
# any warning fails. One stamp per source beside its object, which it depends on: the object is
# rebuilt when the source or a header it includes changes, so only those files are checked again.
# Runs on every core (make lint JOBS=N to limit it).
LINT_SRCS  := main.cpp $(LIB_SRCS)
LINT_FLAGS := $(filter-out -MMD -MP,$(CPPFLAGS)) -I$(GEN) -std=c++20 -Wall -Wextra -Wformat=2 -Werror=undef
LINT_OKS   := $(LINT_SRCS:%.cpp=$(BUILD)/lint/%.ok)
lint: | $(DEPS_STAMP)
	@$(MAKE) --no-print-directory -j$(JOBS) lint-files
lint-files: $(LINT_OKS)
$(BUILD)/lint/%.ok: %.cpp $(BUILD)/obj/%.o .clang-tidy
	@mkdir -p $(dir $@)
	@echo "  TIDY     $<"
	@clang-tidy --quiet $< -- $(LINT_FLAGS) >$@.log 2>&1 || { cat $@.log; exit 1; }
	@touch $@

clean:
	rm -rf $(BUILD)/obj $(BUILD)/lint $(BUILD)/san $(BUILD)/fuzz $(BUILD)/unit_tests $(BUILD)/workloads perf-prof perf-prof-heap.so

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- fuzzing and the quick sanitizer run: libFuzzer targets of tests/fuzz/, one per parser ----
# Every source of lib/ profilers/ filter/ flamegraph/ is compiled once with clang under ASan+UBSan
# and coverage instrumentation into one archive; each tests/fuzz/NAME_fuzz.cpp links against it
# with the binary's libraries, so a target cannot miss a file. The same archive links the unit
# tests under the sanitizers (sanitize-quick): `make test` runs them and every fuzz target for
# FUZZ_RUNS inputs over its checked-in corpus. `make fuzz` runs each target FUZZ_SECONDS.
.PHONY: fuzz fuzz-build fuzz-smoke sanitize-quick bench
FUZZ          := build/fuzz
FUZZ_SECONDS  ?= 60
FUZZ_RUNS     ?= 3000
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS   := -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP
FUZZ_TARGETS  := $(patsubst tests/fuzz/%.cpp,%,$(wildcard tests/fuzz/*_fuzz.cpp))
FUZZ_BINS     := $(FUZZ_TARGETS:%=$(FUZZ)/%)
FUZZ_LIB      := $(FUZZ)/libperfprof.a
FUZZ_LIB_OBJS := $(LIB_SRCS:%.cpp=$(FUZZ)/obj/%.o) $(SHIM_SRCS:%.c=$(FUZZ)/obj/%.o)
FUZZ_UNIT     := $(FUZZ)/unit_tests
GEN_HDRS      := $(GEN)/syscall_table.h $(patsubst bpf/%.bpf.c,$(GEN)/%.skel.h,$(wildcard bpf/*.bpf.c)) $(FG_JS)

# The unit tests' own code at -O0, without coverage: it compiles in 2/5 of the time; GoogleTest
# and the common standard headers come from one precompiled header (same flags), about half of
# what is left.
UNIT_PCH := $(FUZZ)/obj/tests/unit/unit_pch.h.pch
$(UNIT_PCH): tests/unit/unit_pch.h
	@mkdir -p $(dir $@)
	@echo "  PCH      $<"
	@clang++ $(CPPFLAGS) -I$(GEN) -std=c++20 -O0 -g $(FUZZ_SAN) -MMD -MP -x c++-header -o $@ $<
$(FUZZ)/obj/tests/unit/%.o: FUZZ_CFLAGS := -O0 -g $(FUZZ_SAN) -MMD -MP -include-pch $(UNIT_PCH)
$(UNIT_SRCS:%.cpp=$(FUZZ)/obj/%.o): $(UNIT_PCH)
$(FUZZ)/obj/%.o: %.cpp | $(LIBPERF)/libperf.a $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CLANG    $<"
	@clang++ $(CPPFLAGS) -I$(GEN) -std=c++20 $(FUZZ_CFLAGS) -c -o $@ $<
$(FUZZ)/obj/lib/perf_shim/%.o: lib/perf_shim/%.c | $(LIBPERF)/libperf.a
	@mkdir -p $(dir $@)
	@echo "  CLANG    $<"
	@clang $(SHIM_CPPFLAGS) -std=gnu11 $(FUZZ_CFLAGS) -c -o $@ $<
$(FUZZ)/obj/lib/heap/agent/%.o: lib/heap/agent/%.c
	@mkdir -p $(dir $@)
	@echo "  CLANG    $<"
	@clang -Ilib -std=gnu11 $(FUZZ_CFLAGS) -c -o $@ $<
$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	@echo "  AR       $@"
	@rm -f $@ && ar rcs $@ $^
$(FUZZ)/%_fuzz: $(FUZZ)/obj/tests/fuzz/%_fuzz.o $(FUZZ_LIB)
	@echo "  FUZZ     $@"
	@clang++ $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(SHARED_LDLIBS)
.SECONDARY: $(FUZZ_TARGETS:%=$(FUZZ)/obj/tests/fuzz/%.o)
# The agent walker's parser is plain C outside the library.
$(FUZZ)/agent_cfi_fuzz: $(FUZZ)/obj/lib/heap/agent/unwind_cfi.o
fuzz-build: $(FUZZ_BINS)

# The unit tests find the usdt_app workload and the fixtures relative to their binary. They read
# their own symbols (no malloc of their own, as nm sees them): the sanitizers' runtime is the shared
# one, as gcc links it, not clang's default static copy.
ASAN_RT_DIR := $(dir $(shell clang -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null))
$(FUZZ_UNIT): | $(HEAP_AGENT_TEST_DEPS) $(UNIT_WORKLOADS)
$(FUZZ_UNIT): $(UNIT_SRCS:%.cpp=$(FUZZ)/obj/%.o) $(AGENT_UNIT_SRCS:%.c=$(FUZZ)/obj/%.o) $(FUZZ_LIB) | $(BUILD)/workloads/usdt_app
	@echo "  LINK     $@"
	@ln -sfn ../workloads $(FUZZ)/workloads
	@clang++ $(FUZZ_SAN) -shared-libasan -Wl,-rpath,$(ASAN_RT_DIR) -o $@ $(filter %.o,$^) $(FUZZ_LIB) \
	    $(SHARED_LDLIBS) -lgtest -lgtest_main

# $(call fuzz_run,OPTIONS,NEW-INPUTS-DIR,LOG): target $$t over its checked-in corpus and its
# dictionary; the checked-in seeds stay read-only, crashes and hangs go to $(FUZZ)/artifacts/.
fuzz_run = mkdir -p $(2) $(FUZZ)/artifacts; \
    dict=tests/fuzz/$${t%_fuzz}.dict; [ -f $$dict ] && dict=-dict=$$dict || dict=; \
    $(FUZZ)/$$t $(1) -rss_limit_mb=2048 -max_len=4096 $$dict -artifact_prefix=$(FUZZ)/artifacts/$$t- \
        $(2) tests/fuzz/corpus/$$t >$(3) 2>&1 \
    || { tail -40 $(3); echo "$@: $$t found a problem; reproducer in $(FUZZ)/artifacts/"; exit 1; }

# Replays the corpus and mutates it for FUZZ_RUNS inputs (seed fixed), new inputs to a scratch
# folder: a target that stops building or crashes fails `make test`. One rule a target, so
# `make -j` runs them side by side.
FUZZ_SMOKES := $(FUZZ_TARGETS:%=fuzz-smoke-%)
.PHONY: $(FUZZ_SMOKES)
$(FUZZ_SMOKES): fuzz-smoke-%: $(FUZZ)/%
	@t=$*; rm -rf $(FUZZ)/smoke/$$t; \
	    $(call fuzz_run,-runs=$(FUZZ_RUNS) -seed=1 -timeout=10,$(FUZZ)/smoke/$$t,$(FUZZ)/smoke/$$t.log)
fuzz-smoke: $(FUZZ_SMOKES)
	@echo "fuzz-smoke: $(words $(FUZZ_TARGETS)) targets, $(FUZZ_RUNS) runs each: no finding"

# The unit tests and the parsers' fuzz harnesses under ASan+UBSan, without the ~20-minute build
# of `make sanitize` (which also runs the e2e tests). The unit tests in UNIT_SHARDS shards (gtest
# sharding: each test in one shard), each its own process with its own log.
UNIT_SHARDS ?= $(shell echo $$((2 * $(JOBS))))
SAN_UNITS   := $(addprefix san-unit-,$(shell seq 0 $$(($(UNIT_SHARDS) - 1))))
.PHONY: $(SAN_UNITS)
$(SAN_UNITS): san-unit-%: $(FUZZ_UNIT) build/fixtures/.ok
	@GTEST_TOTAL_SHARDS=$(UNIT_SHARDS) GTEST_SHARD_INDEX=$* ASAN_OPTIONS=detect_leaks=1 \
	    $(FUZZ_UNIT) --gtest_brief=1 >$(FUZZ)/unit-$*.log 2>&1 || { cat $(FUZZ)/unit-$*.log; exit 1; }
	@tail -2 $(FUZZ)/unit-$*.log | sed 's/^/shard $*: /'
sanitize-quick: $(SAN_UNITS) fuzz-smoke

# FUZZ_SECONDS each, new inputs kept in $(FUZZ)/corpus/<target>.
fuzz: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	    echo "== fuzz $$t for $(FUZZ_SECONDS)s"; \
	    $(call fuzz_run,-max_total_time=$(FUZZ_SECONDS) -timeout=2 -print_final_stats=1,$(FUZZ)/corpus/$$t,$(FUZZ)/$$t.log); \
	    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' $(FUZZ)/$$t.log || true; \
	done

-include $(shell find $(FUZZ)/obj -name '*.d' 2>/dev/null)

# ---- benchmarks: trace vs perf record under a context-switch storm (bench/trace_bench.py), task-state
# vs perf sched record + latency + timehist -s under the same storm (bench/task_state_bench.py),
# task-state --timeline's RSS and file over 10 minutes of fork/sleep load (bench/timeline_bench.py),
# multi-trace's run-queue latency vs perf sched record + latency under the same storm
# (bench/multi_trace_bench.py), profile -F 1000 -g vs perf record + perf script under a CPU-bound load
# (bench/profile_bench.py), the start-up and exit cost of short runs (bench/startup_bench.py),
# profile --call-graph dwarf vs perf record --call-graph dwarf + perf script
# under a load without frame pointers, and the CFI table's costs on libLLVM (bench/unwind_bench.py,
# bench/cfi_bench.cpp), profile -g of a command's threads and children vs perf record -g
# (bench/inherit_bench.py), flame-graph rendering of 10k-300k stacks (bench/flamegraph_bench.py),
# --symbols, and heap profiling of a malloc-heavy process beside heaptrack, valgrind and the gperftools
# heap checker (bench/heap_bench.py, which builds bench/mallocbench.c itself), sampled heap profiles'
# cost on perl and their accuracy (bench/heap_sampled_bench.py), serve's /pprof/symbol
# vs google-pprof's symbolization of the same 1,000 addresses (bench/serve_bench.py) ----
bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench/pingpong $(BUILD)/bench/spin $(BUILD)/bench/nofp \
	    $(BUILD)/bench/cfi_bench $(BUILD)/bench/agent_unwind_bench
	/usr/bin/python3 bench/trace_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/task_state_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/timeline_bench.py --perf-prof ./perf-prof
	/usr/bin/python3 bench/multi_trace_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/top_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/profile_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/spin --repeat 3
	/usr/bin/python3 bench/off_cpu_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/lock_bench.py --perf-prof ./perf-prof --load $(BUILD)/workloads/lockhold
	/usr/bin/python3 bench/unwind_bench.py --perf-prof ./perf-prof --load $(BUILD)/bench/nofp
	/usr/bin/python3 bench/inherit_bench.py --perf-prof ./perf-prof --load $(BUILD)/workloads/family
	/usr/bin/python3 bench/flamegraph_bench.py --perf-prof ./perf-prof
	/usr/bin/python3 bench/startup_bench.py --perf-prof ./perf-prof
	@# --symbols vs google-pprof and addr2line; libLLVM-14.so (package llvm-14) is a bench-only dependency.
	@dpkg-query -W -f='$${Status}' llvm-14 2>/dev/null | grep -q 'install ok installed' || \
	    { echo "installing: llvm-14 (bench only)"; apt-get update -qq && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends llvm-14 >/dev/null; }
	/usr/bin/python3 bench/symbols_bench.py --perf-prof ./perf-prof
	/usr/bin/python3 bench/serve_bench.py --perf-prof ./perf-prof --target $(BUILD)/workloads/hotab
	/usr/bin/python3 bench/heap_bench.py --perf-prof ./perf-prof
	/usr/bin/python3 bench/heap_sampled_bench.py --perf-prof ./perf-prof
	$(BUILD)/bench/agent_unwind_bench

# Ten minutes of trace, profile -g, task-state, multi-trace and kmemleak at once under load: each
# one's RSS every 30 s, flat after the first minute (bench/soak.py; not part of bench).
.PHONY: soak
soak: deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench/pingpong
	/usr/bin/python3 bench/soak.py --perf-prof ./perf-prof --pingpong $(BUILD)/bench/pingpong \
	    --family $(BUILD)/workloads/family

$(BUILD)/bench/%: bench/%.c bench/load.h
	@mkdir -p $(dir $@)
	@echo "  BENCH    $@"
	@$(CC) -O2 -g -Wall -Wextra -fno-omit-frame-pointer -o $@ $< -lpthread

# The heap agent's walker beside _Unwind_Backtrace and backtrace(3): its sources compiled in (it
# empties the rule cache between walks), libcfi_callback.so dlopen'd from beside it.
$(BUILD)/bench/agent_unwind_bench: bench/agent_unwind_bench.c $(AGENT_UNIT_SRCS) $(wildcard lib/heap/agent/*.h) \
                                   | $(BUILD)/workloads/libcfi_callback.so
	@mkdir -p $(dir $@)
	@echo "  BENCH    $@"
	@$(CC) -O2 -g -Wall -Wextra -fno-omit-frame-pointer -Ilib -o $@ $< -lpthread

# The CFI table's costs on big objects, beside libdw's (bench/unwind_bench.py runs it).
$(BUILD)/bench/cfi_bench: bench/cfi_bench.cpp $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@echo "  BENCH    $@"
	@$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

# The load of bench/unwind_bench.py: without frame pointers, so that only its CFI unwinds it.
$(BUILD)/bench/nofp: bench/nofp.c bench/load.h
	@mkdir -p $(dir $@)
	@echo "  BENCH    $@"
	@$(CC) -O2 -g -Wall -Wextra -fomit-frame-pointer -o $@ $< -lpthread
