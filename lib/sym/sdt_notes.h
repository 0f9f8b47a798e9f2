// USDT (SystemTap SDT) probes (SPEC §7): the SPEC words of `perf-prof usdt`, the notes of
// section .note.stapsdt, and the uprobe_events definition that places a uprobe on a probe.
// Pure apart from read_sdt_notes(), which reads one ELF file; nothing here writes to tracefs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::sym {

// One SPEC word, '[[PROVIDER:]NAME@]BINPATH[@ADDR][ ARGFMT...]' (§7.1). Empty strings and
// addr 0 select every probe.
struct SdtSpec {
    std::string provider, name, binpath;
    uint64_t addr = 0;
    bool has_argfmt = false;          // a space followed BINPATH (or ADDR)
    std::vector<std::string> argfmt;  // the per-argument formats, split on spaces
};
// §7.1 steps 1-5. An empty binpath is the caller's usage error.
SdtSpec parse_sdt_spec(std::string_view word);

// One note of type 3, owner "stapsdt" (§7.2).
struct SdtProbe {
    std::string provider, name, args;  // args: the raw argument string, "-4@%edi 8@-24(%rbp)"
    uint64_t pc = 0, base = 0, semaphore = 0;
    uint64_t offset = 0;      // file offset of the probe: pc - base + .stapsdt.base's offset
    uint64_t sem_offset = 0;  // file offset of the semaphore; 0 = none
};

struct SdtNotes {
    bool is64 = true;              // ELFCLASS64: 8-byte addresses in the notes
    std::vector<SdtProbe> probes;  // valid probes, in note order
    // "WARNING: invalid address 0x... for probe (provider,name) in binary PATH", one per probe
    // whose pc is below the first executable section; those probes are not in `probes`.
    std::vector<std::string> warnings;
};

// The probes of the ELF file `path`; nullopt when it cannot be opened or is no ELF. A file
// without .note.stapsdt has no probes.
std::optional<SdtNotes> read_sdt_notes(const std::string& path);
// The same from an ELF image in memory (`path` names it in warnings): for the fuzzer.
std::optional<SdtNotes> sdt_notes_from_image(std::string image, const std::string& path);

// Whether `p` is selected by the PROVIDER, NAME and ADDR of `spec` (§7.1 "Filters").
bool sdt_matches(const SdtSpec& spec, const SdtProbe& p);

enum class SdtArch { X86_64, Arm64 };
constexpr SdtArch kSdtHostArch =
#if defined(__aarch64__)
    SdtArch::Arm64;
#else
    SdtArch::X86_64;
#endif

// One operand in the uprobe fetch syntax (§7.3: "24(%rdi)" -> "+24(%di)", "%edi" -> "%di");
// nullopt for the unsupported forms (constants, symbol-relative, scaled/indexed).
std::optional<std::string> sdt_operand(std::string_view op, SdtArch arch = kSdtHostArch);

// The type suffix of a signed byte size: 4 -> ":u32", -2 -> ":s16", 0 or 3 -> "". nullopt when
// |size| > 8 (upstream's "Failed to get a valid sdt type").
std::optional<std::string> sdt_type_suffix(long size);

// The fetch arguments of a definition, each with its leading space.
struct SdtArgs {
    std::string text;
    std::vector<std::string> skipped;  // operands that have no uprobe form, as written
    bool bad_type = false;             // a size beyond 8 bytes: no definition can be made
};
// §7.3: the argument string split on spaces (not inside brackets), each "[N@]OP" → " arg{i}={op}{suffix}" (i
// the argument's position, from 1), or with ARGFMT (`argfmt` non-null) only its first argfmt->size()
// arguments, an item containing "%s" giving " " + the item with %s replaced by the operand.
SdtArgs sdt_uprobe_args(std::string_view args, const std::vector<std::string>* argfmt,
                        SdtArch arch = kSdtHostArch);

// The hex digits of addresses in definitions and `list -v`: those of this build's pointers
// (§7.3 "x16"), as the kernel prints and matches offsets whatever the binary's class.
constexpr int kSdtHexDigits = int(sizeof(void*) * 2);

// The head of a definition without its arguments, §7.3:
// "{p|-}:{provider}/{name} {binpath}:0x{offset:016x}[(0x{sem_offset:x})]".
std::string sdt_uprobe_head(char kind, const SdtProbe& p, const std::string& binpath);

}  // namespace perfprof::sym
