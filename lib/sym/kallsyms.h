// Kernel symbols from /proc/kallsyms (SPEC §5.2), loaded once, when the first address needs a
// name, and shared. The kernel image's text comes from a cache of this boot's (kallsyms_cache.h)
// where there is one; other addresses (modules, BPF, trampolines), and every address when
// there is no cache, from all of /proc/kallsyms, which then also writes the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sym/file_block.h"
#include "sym/kallsyms_cache.h"

namespace perfprof::sym {

class Kallsyms {
public:
    // A table of the running kernel (modules included), read on the first find(); a
    // Symbolizer holds one for all its outputs. Never throws: an unreadable kallsyms gives an
    // empty table.
    static std::shared_ptr<Kallsyms> running();
    // Parses kallsyms text (for tests).
    explicit Kallsyms(const std::string& text);
    // The table of a kallsyms file (normally /proc/kallsyms), cached in `cache_dir` ("" = no
    // cache) for the kernel `identity` returns; both are asked on the first find().
    using Identity = KernelIdentity (*)(const char* kallsyms);
    Kallsyms(std::string path, std::string cache_dir, Identity identity);
    Kallsyms(const Kallsyms&) = delete;
    Kallsyms& operator=(const Kallsyms&) = delete;

    // §5.2: the entry with the greatest address <= addr; nullptr below the first symbol.
    // `offset` receives addr - entry address.
    const char* find(uint64_t addr, uint64_t* offset = nullptr) const;
    // The whole table's entries (reads it).
    size_t size() const;
    // Whether the cache answered every find() so far (for tests).
    bool from_cache_only() const { return !full_read_; }

private:
    struct Entry {
        uint64_t addr;
        const char* name;  // into text_
    };
    void open_cache() const;
    void load_full() const;
    void load_file(const char* path);
    void index();  // parses text_ in place into entries_, sorted
    void write_cache() const;

    const std::string path_, cache_dir_;
    const Identity identity_ = nullptr;
    mutable std::once_flag cache_once_, full_once_;
    mutable KernelIdentity kernel_;
    mutable std::unique_ptr<KallsymsCache> cache_;
    mutable bool full_read_ = false;

    // The file, names NUL-terminated in place, and one byte past it. Pre-faulted memory: the
    // ~5 MB would otherwise cost a page fault per 4 KiB (~10 us each in some VMs).
    Block text_;
    size_t text_len_ = 0;  // the file's bytes in text_
    std::vector<Entry, PopulatedAllocator<Entry>> entries_;
};

}  // namespace perfprof::sym
