// One ELF object's symbols (SPEC §5.4.1 "object", §5.4.3 sources, §5.4.5 demangling), shared
// across processes. Layer 3 of syms_cache → syms → dso → object → sym.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

typedef struct Elf Elf;

namespace perfprof::unwind {
class CfiTable;
}

namespace perfprof::sym {

enum class ObjectType { Exec, Dyn, Unknown };

struct Symbol {
    uint64_t start = 0;
    uint64_t size = 0;
    const char* name = nullptr;  // raw (mangled) name, owned by the Object
};

class Object {
public:
    virtual ~Object() = default;

    const std::string& path() const { return path_; }
    ObjectType type() const { return type_; }
    uint64_t text_addr() const { return text_addr_; }
    uint64_t text_offset() const { return text_offset_; }
    const std::string& build_id() const { return build_id_; }  // lowercase hex, empty if none

    // The symbol containing `addr` in the object's own address space (§5.4.2 step 3:
    // greatest start <= addr, and addr < start + size, or addr == start for size 0).
    // Loads the symbol table on first use. nullptr when none.
    virtual const Symbol* find(uint64_t addr) = 0;
    // Display name of a symbol of this object: demangled (§5.4.5), computed once.
    virtual const std::string& name(const Symbol& s) = 0;
    // §5.4.4: file offset of the first symbol whose raw name is `raw`; 0 if none.
    virtual uint64_t file_offset(std::string_view raw) = 0;
    virtual size_t symbol_count() = 0;  // loads the table
    virtual size_t memory_bytes() const = 0;
    virtual bool loaded() const = 0;  // the symbol table has been read
    // The object's call-frame information (lib/unwind), compiled on first use from its
    // .eh_frame and .debug_frame and those of its separate debug file (the one the symbols
    // come from); empty when it has none. Shared like the symbols.
    virtual unwind::CfiTable& cfi() = 0;

protected:
    std::string path_, build_id_;
    ObjectType type_ = ObjectType::Unknown;
    uint64_t text_addr_ = 0, text_offset_ = 0;
};

// The shared object for `path` (as shown in maps), read through `open_path` (e.g.
// "/proc/PID/root/PATH"; empty = path). Objects are keyed by build-id, else by (dev, inode),
// else path, and live as long as someone holds them. Never throws: a missing, non-ELF or
// corrupt file gives an Object of type Unknown whose lookups fail.
std::shared_ptr<Object> get_object(const std::string& path, const std::string& open_path = {});

// SIGUSR2 statistics (SPEC §5.5): one line per live shared object — users, type, symbols
// (when loaded), memory, build-id prefix, path.
void print_object_stats(FILE* out);

// An object from an in-memory ELF image (the vDSO copied out of a process).
std::shared_ptr<Object> object_from_image(const std::string& name, std::string image);

// NT_GNU_BUILD_ID of an ELF, lowercase hex, from its SHT_NOTE sections (or, without sections,
// its PT_NOTE segments); empty if none.
std::string read_build_id(Elf* elf);

// Where separate debug files are looked for (§5.4.3 step 1 and .gnu_debuglink); tests point
// it at a private folder. Default "/usr/lib/debug".
void set_debug_root(std::string root);
std::string get_debug_root();

// §5.4.5: C++ (Itanium), Java signatures, Rust legacy post-processing; else `raw` unchanged.
std::string demangle(std::string_view raw);
// The same for a NUL-terminated name (a string table's), without copying it first.
std::string demangle(const char* raw);

}  // namespace perfprof::sym
