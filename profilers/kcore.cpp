// kcore: a hex dump or a string of kernel virtual memory read through /proc/kcore (SPEC-PROFILERS
// §P17). A command: no events, no session; the reader is lib/sym/kcore.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/help.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "sym/kcore.h"

namespace perfprof {

extern const ProfilerInfo kcore_info;

namespace {

struct KcoreOptions final : ProfilerOptions {
    bool string = false;
    unsigned size = 0;  // the largest of -1/-2/-4/-8 given; 0 = default 8
};

using Own = OwnOptions<KcoreOptions>;
template <unsigned N>
void set_size(KcoreOptions& o, OptionValue) {
    if (N > o.size) o.size = N;
}
const OptionRow kOwnOptions[] = {
    Own::row(0, "string", "", ArgKind::Flag, false, Group::Profiler, "read a NUL-terminated string",
             [](KcoreOptions& o, OptionValue v) { o.string = flag_value(v); }),
    Own::row('1', "", "", ArgKind::Flag, false, Group::Profiler, "dump 1-byte elements",
             [](KcoreOptions& o, OptionValue v) { set_size<1>(o, v); }),
    Own::row('2', "", "", ArgKind::Flag, false, Group::Profiler, "dump 2-byte elements",
             [](KcoreOptions& o, OptionValue v) { set_size<2>(o, v); }),
    Own::row('4', "", "", ArgKind::Flag, false, Group::Profiler, "dump 4-byte elements",
             [](KcoreOptions& o, OptionValue v) { set_size<4>(o, v); }),
    Own::row('8', "", "", ArgKind::Flag, false, Group::Profiler,
             "dump 8-byte elements (the default; the largest size given wins)",
             [](KcoreOptions& o, OptionValue v) { set_size<8>(o, v); }),
};

// strtoull/strtoul with base auto: the whole word must be a number.
bool number(const std::string& w, uint64_t& v) {
    if (w.empty()) return false;
    char* end = nullptr;
    errno = 0;
    v = std::strtoull(w.c_str(), &end, 0);
    return errno == 0 && end && *end == '\0' && w[0] != '-';
}

int run(const Options& opt) {
    const KcoreOptions& own = opt.own_as<KcoreOptions>();
    const std::vector<std::string>& words = opt.workload;
    if (words.empty()) {
        std::fprintf(stderr, " <kaddr> needs to be specified.\n");
        cli::print_profiler_help(stderr, kcore_info);
        return 129;
    }
    if (words.size() > 2)
        throw Error::usage("kcore takes ADDR|SYMBOL [COUNT], got " + std::to_string(words.size()) +
                           " words (see 'perf-prof kcore -h')");
    uint64_t addr = 0;
    // Not a number: a kallsyms symbol (absent: address 0, which no segment maps).
    if (!number(words[0], addr)) addr = sym::kallsyms_address(words[0]);
    uint64_t count = 1;
    if (words.size() == 2 && (!number(words[1], count) || count == 0))
        throw Error::usage("kcore: COUNT '" + words[1] + "' is not a positive number (see 'perf-prof kcore -h')");
    sym::Kcore k;
    std::string out = own.string ? sym::kcore_string(k, addr) : sym::kcore_dump(k, addr, count, own.size ? own.size : 8);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace

const ProfilerInfo kcore_info = {
    .name = "kcore",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "Dump kernel memory, or a string in it, through /proc/kcore.",
    .usage = "[-1|-2|-4|-8] [--string] ADDR|SYMBOL [COUNT]",
    .body =
        {
            "SYNOPSIS",
            "    ADDR is a number (0x.. hexadecimal, 0.. octal), or a /proc/kallsyms symbol;",
            "    COUNT elements (default 1) of the size given (default 8 bytes) are printed,",
            "    16 bytes a line with their ASCII. An address no /proc/kcore segment maps (or no",
            "    /proc/kcore at all) prints '{addr}: not a kernel virtual address'.",
            "",
            "EXAMPLES",
            "    perf-prof kcore --string linux_banner",
            "    perf-prof kcore -4 0xffffffff82a000c0 8",
        },
    .run_words = run,
    .global_options = false,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
