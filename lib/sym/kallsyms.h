// Kernel symbols from /proc/kallsyms (SPEC §5.2), loaded once and shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace perfprof::sym {

class Kallsyms {
public:
    // The shared table, loaded on the first call (modules included). Never throws: an
    // unreadable kallsyms gives an empty table.
    static std::shared_ptr<Kallsyms> get();
    // Parses kallsyms text (for tests).
    explicit Kallsyms(const std::string& text);
    ~Kallsyms();
    Kallsyms(const Kallsyms&) = delete;
    Kallsyms& operator=(const Kallsyms&) = delete;

    // §5.2: the entry with the greatest address <= addr; nullptr below the first symbol.
    // `offset` receives addr - entry address.
    const char* find(uint64_t addr, uint64_t* offset = nullptr) const;
    size_t size() const { return n_; }

private:
    struct Entry {
        uint64_t addr;
        const char* name;  // into text_
    };
    struct Region {  // an anonymous mapping
        char* p = nullptr;
        size_t len = 0;
    };
    Kallsyms() = default;
    void load_file(const char* path);
    void index();  // parses text_ in place into entries_, sorted

    Region text_;  // the file, names NUL-terminated in place
    size_t text_len_ = 0;
    Region table_;  // Entry[n_]
    size_t n_ = 0;
};

}  // namespace perfprof::sym
