# perf-prof — the only entry point. `make` builds ./perf-prof; `make test` installs, builds, tests.
.DEFAULT_GOAL := all
.PHONY: all deps test unit e2e demo sanitize format clean

BUILD    ?= build
SAN      ?=
CXX      := g++
CC       := gcc
LIBPERF  := build/libperf
OPT      ?= -O2
PYTEST   := /usr/bin/python3 -m pytest

CPPFLAGS := -Iinclude -Ilib -I. -I$(LIBPERF)/include -I/usr/include/traceevent -MMD -MP
CXXFLAGS := -std=c++20 $(OPT) -g -Wall -Wextra -Werror=undef $(SAN)
CFLAGS   := -std=gnu11 $(OPT) -g -Wall -Wextra $(SAN)
LDFLAGS  := $(SAN)
LDLIBS   := $(LIBPERF)/libperf.a $(LIBPERF)/libapi.a -ltraceevent -ldw -lelf -llzma -lpthread
# The shim reaches libperf internals, which only compile as C with the kernel's tools headers.
SHIM_CPPFLAGS := -I$(LIBPERF)/src/tools/lib/perf/include -I$(LIBPERF)/src/tools/include \
                 -I$(LIBPERF)/src/tools/arch/x86/include -I$(LIBPERF)/src/tools/arch/x86/include/uapi \
                 -I$(LIBPERF)/src/tools/include/uapi -Ilib

LIB_SRCS  := $(shell find lib profilers filter -name '*.cpp' | sort)
SHIM_SRCS := $(wildcard lib/perf_shim/*.c)
LIB_OBJS  := $(LIB_SRCS:%.cpp=$(BUILD)/obj/%.o) $(SHIM_SRCS:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ  := $(BUILD)/obj/main.o
UNIT_SRCS := $(wildcard tests/unit/*_test.cpp)
UNIT_OBJS := $(UNIT_SRCS:%.cpp=$(BUILD)/obj/%.o)
WORKLOADS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(wildcard tests/workloads/*.c))
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

$(BUILD)/workloads/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	@echo "  WORKLOAD $@"
	@$(CC) -O1 -g -Wall -Wextra -fno-omit-frame-pointer -o $@ $< -lpthread

$(BUILD)/unit_tests: $(UNIT_OBJS) $(LIB_OBJS)
	@echo "  LINK     $@"
	@$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lgtest -lgtest_main

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests --gtest_brief=1

e2e: $(BIN) $(WORKLOADS)
	PERF_PROF=$(abspath $(BIN)) WORKLOADS=$(abspath $(BUILD)/workloads) $(PYTEST) -q -rs tests/e2e

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
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

format:
	clang-format -i $$(find include lib profilers filter tests main.cpp \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \))

clean:
	rm -rf $(BUILD)/obj $(BUILD)/san $(BUILD)/unit_tests $(BUILD)/workloads perf-prof

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
