// Kernel symbols from /proc/kallsyms (SPEC §5.2), loaded once and shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace perfprof::sym {

class Kallsyms {
public:
    // The shared table, loaded on the first call (modules included). Never throws: an
    // unreadable kallsyms gives an empty table.
    static std::shared_ptr<Kallsyms> get();
    // Parses kallsyms text (for tests).
    explicit Kallsyms(const std::string& text);

    // §5.2: the entry with the greatest address <= addr; nullptr below the first symbol.
    // `offset` receives addr - entry address.
    const char* find(uint64_t addr, uint64_t* offset = nullptr) const;
    size_t size() const { return addrs_.size(); }

private:
    std::vector<uint64_t> addrs_;
    std::vector<uint32_t> name_off_;
    std::string names_;
};

}  // namespace perfprof::sym
