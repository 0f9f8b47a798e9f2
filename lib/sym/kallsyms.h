// Kernel symbols from /proc/kallsyms (SPEC §5.2), loaded once and shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sym/file_block.h"

namespace perfprof::sym {

class Kallsyms {
public:
    // The shared table, loaded on the first call (modules included). Never throws: an
    // unreadable kallsyms gives an empty table.
    static std::shared_ptr<Kallsyms> get();
    // Parses kallsyms text (for tests).
    explicit Kallsyms(const std::string& text);
    Kallsyms(const Kallsyms&) = delete;
    Kallsyms& operator=(const Kallsyms&) = delete;

    // §5.2: the entry with the greatest address <= addr; nullptr below the first symbol.
    // `offset` receives addr - entry address.
    const char* find(uint64_t addr, uint64_t* offset = nullptr) const;
    size_t size() const { return entries_.size(); }

private:
    struct Entry {
        uint64_t addr;
        const char* name;  // into text_
    };
    Kallsyms() = default;
    void load_file(const char* path);
    void index();  // parses text_ in place into entries_, sorted

    // The file, names NUL-terminated in place, and one byte past it. Pre-faulted memory: the
    // ~5 MB would otherwise cost a page fault per 4 KiB (~10 us each in some VMs).
    Block text_;
    size_t text_len_ = 0;  // the file's bytes in text_
    std::vector<Entry, PopulatedAllocator<Entry>> entries_;
};

}  // namespace perfprof::sym
