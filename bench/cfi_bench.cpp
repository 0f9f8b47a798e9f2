// The cost of lib/unwind's CFI table on real objects (bench/unwind_bench.py runs it): opening the
// object and indexing its FDEs (what the first sample in it pays), lookups at random pcs while the
// FDEs they land in are compiled on demand and once they are, compiling every FDE, and the
// table's memory at each step; beside it libdw's dwarf_cfi_addrframe() at the same pcs, which
// interprets the FDE's program on every lookup.
//
//   cfi_bench [OBJECT...]   (default: libLLVM-14.so.1 where installed, and libc.so.6)
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sym/object.h"
#include "unwind/cfi_table.h"

using namespace perfprof;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ns per call of `fn` over `pcs`; the sum of what it returns is kept from the optimizer.
template <class Fn>
double per_lookup_ns(const std::vector<uint64_t>& pcs, Fn&& fn, uint64_t* hits) {
    const double t0 = now();
    uint64_t h = 0;
    for (uint64_t pc : pcs) h += fn(pc);
    *hits = h;
    return 1e9 * (now() - t0) / double(pcs.size());
}

int bench(const std::string& path) {
    const double t0 = now();
    std::shared_ptr<sym::Object> obj = sym::get_object(path);
    unwind::CfiTable& t = obj->cfi();
    const double index_ms = 1e3 * (now() - t0);
    if (t.empty()) {
        std::printf("%s: no call-frame information\n", path.c_str());
        return 1;
    }
    const size_t index_kb = t.memory_bytes() / 1024;
    const std::vector<unwind::CfiTable::Range> fdes = t.ranges();

    // Random pcs: an FDE uniformly, then a byte of it uniformly (a profile's pcs are neither,
    // but the cost of a lookup hardly depends on where it lands).
    std::mt19937_64 rng(7);
    std::vector<uint64_t> pcs(200000);
    for (uint64_t& pc : pcs) {
        const auto& f = fdes[rng() % fdes.size()];
        pc = f.begin + rng() % (f.end - f.begin);
    }
    auto ours = [&](uint64_t pc) -> uint64_t { return t.find(pc) != nullptr; };
    uint64_t hits_cold = 0, hits_warm = 0;
    const double cold_ns = per_lookup_ns(pcs, ours, &hits_cold);
    const size_t cold_fdes = t.compiled_fdes(), cold_kb = t.memory_bytes() / 1024;
    const double warm_ns = per_lookup_ns(pcs, ours, &hits_warm);

    const double t1 = now();
    for (const auto& f : fdes) (void)t.find(f.begin);
    const double all_ms = 1e3 * (now() - t1);

    // libdw on the same file, the first 20000 pcs.
    double libdw_ns = 0;
    uint64_t libdw_hits = 0;
    elf_version(EV_CURRENT);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, nullptr) : nullptr;
    Dwarf_CFI* cfi = elf ? dwarf_getcfi_elf(elf) : nullptr;
    if (cfi) {
        const std::vector<uint64_t> some(pcs.begin(), pcs.begin() + 20000);
        libdw_ns = per_lookup_ns(
            some,
            [&](uint64_t pc) -> uint64_t {
                Dwarf_Frame* f = nullptr;
                if (dwarf_cfi_addrframe(cfi, pc, &f) != 0) return 0;
                std::free(f);
                return 1;
            },
            &libdw_hits);
        dwarf_cfi_end(cfi);
    }
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);

    std::printf("%s: %zu FDEs\n", path.c_str(), t.fde_count());
    std::printf("  open + index          %8.1f ms   %8zu KB\n", index_ms, index_kb);
    std::printf(
        "  200k random lookups   %8.0f ns each while compiling (%zu FDEs compiled, %zu KB), "
        "%.0f ns each after\n",
        cold_ns, cold_fdes, cold_kb, warm_ns);
    std::printf("  compile the rest      %8.1f ms   %8zu KB in all, %zu rows\n", all_ms,
                t.memory_bytes() / 1024, t.row_count());
    if (cfi)
        std::printf("  libdw addrframe       %8.0f ns each (%llu of 20k found; ours %llu of 200k)\n",
                    libdw_ns, (unsigned long long)libdw_hits, (unsigned long long)hits_warm);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> paths(argv + 1, argv + argc);
    if (paths.empty()) {
        for (const char* p : {"/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/lib/x86_64-linux-gnu/libc.so.6"})
            if (::access(p, R_OK) == 0) paths.push_back(p);
    }
    int rc = 0;
    for (const std::string& p : paths) rc |= bench(p);
    return rc;
}
