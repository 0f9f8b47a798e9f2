// A cache of the core kernel's symbols, so that a short run does not pay for reading all of
// /proc/kallsyms (the kernel formats each of its ~120k lines on every read: tens of ms of
// system time). Only the symbols of the kernel image's text ranges are kept ([_stext, _etext)
// and [_sinittext, _einittext)): they do not change while the kernel runs, unlike the module,
// BPF and trampoline symbols, which come and go and are always read from /proc/kallsyms.
//
// Keyed by the boot (boot_id: KASLR moves the kernel at every boot), the kernel's release and
// version, and the address of _text read from the head of /proc/kallsyms (a few lines, cheap).
// Kept where only its owner can read or write it (kernel addresses defeat KASLR): root's in
// /var/cache/perf-prof, other users' in $XDG_CACHE_HOME/perf-prof or ~/.cache/perf-prof; a
// directory or file that is not ours alone, a symlink, or a file of the wrong shape is not used,
// and a cache that cannot be written is silently not written.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/fd.h"

namespace perfprof::sym {

struct KernelSymbol {
    uint64_t addr;
    const char* name;
    bool module;  // listed with a [module] column: modules, BPF, ftrace and kprobe trampolines
};

// What a cache must have been written for.
struct KernelIdentity {
    std::string boot_id;  // /proc/sys/kernel/random/boot_id
    std::string release;  // uname -r, a space, uname -v
    uint64_t text = 0;    // _text (or _stext); 0 = addresses hidden or unknown: no cache
};

// The running kernel's, from the first lines of `kallsyms` (normally /proc/kallsyms).
KernelIdentity running_kernel(const char* kallsyms);
// The address of _text (else _stext) among the complete lines of the head of a kallsyms text;
// 0 when neither is there.
uint64_t text_address(std::string_view head);
// Where the current user's cache lives ("" = nowhere).
std::string kallsyms_cache_dir();

class KallsymsCache {
public:
    // The cache in `dir` written for `id`, or null (none, stale, not ours alone, malformed).
    static std::unique_ptr<KallsymsCache> open(const std::string& dir, const KernelIdentity& id);
    // Writes the text-range symbols of a whole table (sorted by address, then name) as the cache
    // for `id`, creating `dir` (mode 0700) if needed. False when it could not, or when the table
    // does not match `id` or has no text ranges; nothing is thrown.
    static bool write(const std::string& dir, const KernelIdentity& id, std::span<const KernelSymbol> table);

    // Whether the cache answers for `addr` as the whole table would.
    bool covers(uint64_t addr) const;
    // As Kallsyms::find, for a covered address.
    const char* find(uint64_t addr, uint64_t* offset) const;
    size_t size() const;

private:
    KallsymsCache() = default;
    core::Mmap file_;
};

}  // namespace perfprof::sym
