#include "filter/syscall_names.h"

#include <array>
#include <cstddef>

namespace perfprof::filter {

namespace {

struct Entry {
    int64_t nr;
    const char* name;
};

// {nr, "name"} for every `#define __NR_name nr` of asm/unistd_64.h (Makefile: syscall_table.h).
constexpr Entry kEntries[] = {
#include "syscall_table.h"
};

constexpr int64_t max_nr() {
    int64_t m = -1;
    for (const Entry& e : kEntries) m = e.nr > m ? e.nr : m;
    return m;
}

// Numbers are dense (with a few holes), so a direct index built at compile time.
constexpr auto kByNr = [] {
    std::array<const char*, static_cast<size_t>(max_nr() + 1)> a{};
    for (const Entry& e : kEntries) a[static_cast<size_t>(e.nr)] = e.name;
    return a;
}();

}  // namespace

const char* syscall_name(int64_t id) {
    if (id < 0 || static_cast<uint64_t>(id) >= kByNr.size()) return nullptr;
    return kByNr[static_cast<size_t>(id)];
}

}  // namespace perfprof::filter
