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
    // Where its separate debug files are looked for (§5.4.3 step 1 and .gnu_debuglink).
    const std::string& debug_root() const { return debug_root_; }

    // The symbol containing `addr` in the object's own address space (§5.4.2 step 3:
    // greatest start <= addr, and addr < start + size, or addr == start for size 0).
    // Loads the symbol table on first use. nullptr when none.
    virtual const Symbol* find(uint64_t addr) = 0;
    // Display name of a symbol of this object: demangled (§5.4.5), computed once.
    virtual const std::string& name(const Symbol& s) = 0;
    // §5.4.4: file offset of the first symbol whose raw name is `raw`; 0 if none.
    virtual uint64_t file_offset(std::string_view raw) = 0;
    virtual size_t symbol_count() = 0;  // loads the table
    // No full symbol table (.symtab, in the file, its MiniDebugInfo or a debug file): only the
    // dynamic one or none. Loads the table.
    virtual bool stripped() = 0;
    // What makes two objects the same one (build-id, else file identity, else path); empty
    // for an object that must not be shared (unreadable).
    virtual std::string share_key() const = 0;
    virtual size_t memory_bytes() const = 0;
    virtual bool loaded() const = 0;  // the symbol table has been read
    // The object's call-frame information (lib/unwind), compiled on first use from its
    // .eh_frame and .debug_frame and those of its separate debug file (the one the symbols
    // come from); empty when it has none. Shared like the symbols.
    virtual unwind::CfiTable& cfi() = 0;

protected:
    std::string path_, build_id_, debug_root_;
    ObjectType type_ = ObjectType::Unknown;
    uint64_t text_addr_ = 0, text_offset_ = 0;
};

// Where separate debug files are looked for unless a Symbolizer is told otherwise.
inline constexpr const char* kDefaultDebugRoot = "/usr/lib/debug";

// The object for `path` (as shown in maps), read through `open_path` (e.g.
// "/proc/PID/root/PATH"; empty = path), its debug files looked for under `debug_root`. A fresh
// object, shared with no one: ObjectCache shares them. Never throws: a missing, non-ELF or
// corrupt file gives an Object of type Unknown whose lookups fail.
std::shared_ptr<Object> get_object(const std::string& path, const std::string& open_path = {},
                                   const std::string& debug_root = kDefaultDebugRoot);

// An object from an in-memory ELF image (the vDSO copied out of a process).
std::shared_ptr<Object> object_from_image(const std::string& name, std::string image);

// NT_GNU_BUILD_ID of an ELF, lowercase hex, from its SHT_NOTE sections (or, without sections,
// its PT_NOTE segments); empty if none.
std::string read_build_id(Elf* elf);

// §5.4.5: C++ (Itanium), Java signatures, Rust legacy post-processing; else `raw` unchanged.
std::string demangle(std::string_view raw);
// The same for a NUL-terminated name (a string table's), without copying it first.
std::string demangle(const char* raw);

}  // namespace perfprof::sym
