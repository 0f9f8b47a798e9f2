// USDT notes and their uprobe definitions (SPEC §7.1-§7.3).
//
// A note's descriptor holds three addresses of the link-time layout (probe PC, the address of
// _.stapsdt.base, the semaphore) in the file's byte order and class, then three NUL-terminated
// strings. Prelink or a strip that moved sections shifts .stapsdt.base, so the probe's file
// offset is taken relative to that section, not from the PC alone.
#include "sym/sdt_notes.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/fd.h"

namespace perfprof::sym {

namespace {

using ElfPtr = core::CPtr<Elf, elf_end>;

constexpr uint32_t kStapsdtNoteType = 3;

std::vector<std::string> split_spaces(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ') ++i;
        size_t j = s.find(' ', i);
        if (j == std::string_view::npos) j = s.size();
        if (j > i) out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// The items of an argument string: split on spaces, except inside brackets (arm64's
// "8@[sp, 16]" is one item).
std::vector<std::string> split_args(std::string_view s) {
    std::vector<std::string> out;
    std::string cur;
    int depth = 0;
    for (char c : s) {
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (c == ' ' && depth == 0) {
            if (!cur.empty()) out.push_back(std::move(cur));
            cur.clear();
            continue;
        }
        cur += c;
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

// An address of `n` bytes in the file's byte order.
uint64_t read_addr(const unsigned char* p, size_t n, bool big_endian) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | p[big_endian ? i : n - 1 - i];
    return v;
}

struct SectionInfo {
    bool found = false;
    uint64_t addr = 0, offset = 0;
};

struct Layout {
    SectionInfo base, probes;
    Elf_Scn* notes = nullptr;
    bool have_exec = false;
    uint64_t first_exec = 0;  // address of the first executable section
};

Layout scan_sections(Elf* elf) {
    Layout l;
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return l;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if ((sh.sh_flags & SHF_EXECINSTR) && !l.have_exec) {
            l.have_exec = true;
            l.first_exec = sh.sh_addr;
        }
        const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
        if (!n) continue;
        if (std::strcmp(n, ".stapsdt.base") == 0)
            l.base = {true, sh.sh_addr, sh.sh_offset};
        else if (std::strcmp(n, ".probes") == 0)
            l.probes = {true, sh.sh_addr, sh.sh_offset};
        else if (std::strcmp(n, ".note.stapsdt") == 0 && sh.sh_type == SHT_NOTE)
            l.notes = scn;
    }
    return l;
}

// Three NUL-terminated strings from `p`, within `end`.
bool take_string(const char*& p, const char* end, std::string& out) {
    const void* nul = std::memchr(p, '\0', static_cast<size_t>(end - p));
    if (!nul) return false;
    out.assign(p, static_cast<const char*>(nul));
    p = static_cast<const char*>(nul) + 1;
    return true;
}

void decode_note(const unsigned char* desc, size_t size, bool is64, bool big_endian, const Layout& l,
                 const std::string& path, SdtNotes& out) {
    const size_t w = is64 ? 8 : 4;
    if (size < 3 * w) return;
    SdtProbe p;
    p.pc = read_addr(desc, w, big_endian);
    p.base = read_addr(desc + w, w, big_endian);
    p.semaphore = read_addr(desc + 2 * w, w, big_endian);
    const char* s = reinterpret_cast<const char*>(desc + 3 * w);
    const char* end = reinterpret_cast<const char*>(desc + size);
    if (!take_string(s, end, p.provider) || !take_string(s, end, p.name)) return;
    if (!take_string(s, end, p.args)) p.args.assign(s, end);  // tolerate a missing final NUL
    if (l.have_exec && p.pc < l.first_exec) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "0x%" PRIx64, p.pc);
        out.warnings.push_back("WARNING: invalid address " + std::string(buf) + " for probe (" + p.provider +
                               "," + p.name + ") in binary " + path);
        return;
    }
    p.offset = p.pc;
    if (l.base.found) p.offset = p.pc - p.base + l.base.offset;
    if (p.semaphore && l.probes.found) p.sem_offset = p.semaphore - l.probes.addr + l.probes.offset;
    out.probes.push_back(std::move(p));
}

// The uprobe name of an x86 register: the 64-bit name without its "r" prefix for the eight
// legacy ones (any width), the bare rN for r8-r15 (any width suffix); others unchanged.
std::string x86_register(std::string_view r) {
    static constexpr struct {
        const char* to;
        const char* from[5];
    } kLegacy[] = {
        {"ax", {"rax", "eax", "ax", "al", "ah"}}, {"bx", {"rbx", "ebx", "bx", "bl", "bh"}},
        {"cx", {"rcx", "ecx", "cx", "cl", "ch"}}, {"dx", {"rdx", "edx", "dx", "dl", "dh"}},
        {"si", {"rsi", "esi", "si", "sil", ""}},  {"di", {"rdi", "edi", "di", "dil", ""}},
        {"bp", {"rbp", "ebp", "bp", "bpl", ""}},  {"sp", {"rsp", "esp", "sp", "spl", ""}},
    };
    for (const auto& l : kLegacy)
        for (const char* f : l.from)
            if (*f && r == f) return l.to;
    // r8..r15 with an optional b/w/d width suffix.
    if (r.size() >= 2 && r[0] == 'r' && r[1] >= '0' && r[1] <= '9') {
        std::string_view num = r.substr(1);
        if (!num.empty() && (num.back() == 'b' || num.back() == 'w' || num.back() == 'd'))
            num.remove_suffix(1);
        int n = std::atoi(std::string(num).c_str());
        if (n >= 8 && n <= 15 && num.find_first_not_of("0123456789") == std::string_view::npos)
            return "r" + std::string(num);
    }
    return std::string(r);
}

bool all_digits(std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// [+|-][NUM][(]%REG[)]
std::optional<std::string> x86_operand(std::string_view op) {
    if (op.empty() || op[0] == '$' || op.find(',') != std::string_view::npos) return std::nullopt;
    char sign = 0;
    if (op[0] == '+' || op[0] == '-') {
        sign = op[0];
        op.remove_prefix(1);
    }
    size_t pct = op.find('%');
    if (pct == std::string_view::npos) return std::nullopt;
    std::string_view num = op.substr(0, pct);
    bool memory = !num.empty() && num.back() == '(';
    if (memory) num.remove_suffix(1);
    if (!num.empty() && !all_digits(num)) return std::nullopt;  // sym(%rip) and other symbols
    std::string_view reg = op.substr(pct + 1);
    if (memory) {
        if (reg.empty() || reg.back() != ')') return std::nullopt;
        reg.remove_suffix(1);
    } else if (!num.empty() || sign) {
        return std::nullopt;  // "8%rax" is no operand
    }
    if (reg.empty() || reg.find_first_of("()%") != std::string_view::npos || reg == "rip" || reg == "eip")
        return std::nullopt;
    std::string r = "%" + x86_register(reg);
    if (!memory) return r;
    return std::string(1, sign ? sign : '+') + (num.empty() ? "0" : std::string(num)) + "(" + r + ")";
}

// xNN / wNN → %xNN; [sp] → +0(%sp); [sp, NUM] → +NUM(%sp).
std::optional<std::string> arm64_operand(std::string_view op) {
    if (op.size() >= 2 && (op[0] == 'x' || op[0] == 'w') && all_digits(op.substr(1)) && op.size() <= 3) {
        int n = std::atoi(std::string(op.substr(1)).c_str());
        if (n <= 31) return "%x" + std::to_string(n);
        return std::nullopt;
    }
    if (op == "[sp]") return std::string("+0(%sp)");
    if (op.starts_with("[sp,") && op.ends_with("]")) {
        std::string_view num = op.substr(4, op.size() - 5);
        while (!num.empty() && num.front() == ' ') num.remove_prefix(1);
        if (!num.empty() && num.front() == '#') num.remove_prefix(1);
        if (all_digits(num)) return "+" + std::string(num) + "(%sp)";
    }
    return std::nullopt;
}

std::string hex(uint64_t v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*" PRIx64, digits, v);
    return buf;
}

}  // namespace

SdtSpec parse_sdt_spec(std::string_view word) {
    SdtSpec s;
    std::string_view rest = word;
    if (size_t c = rest.find(':'); c != std::string_view::npos) {
        s.provider = rest.substr(0, c);
        rest.remove_prefix(c + 1);
    }
    if (size_t a = rest.find('@'); a != std::string_view::npos) {
        s.name = rest.substr(0, a);
        rest.remove_prefix(a + 1);
    }
    std::string_view bin = rest, addr;
    bool has_addr = false;
    if (size_t a = bin.find('@'); a != std::string_view::npos) {
        addr = bin.substr(a + 1);
        bin = bin.substr(0, a);
        has_addr = true;
    }
    // ARGFMT follows the first space of the last part (ADDR if present, else BINPATH).
    std::string_view& last = has_addr ? addr : bin;
    if (size_t sp = last.find(' '); sp != std::string_view::npos) {
        s.has_argfmt = true;
        s.argfmt = split_spaces(last.substr(sp + 1));
        last = last.substr(0, sp);
    }
    s.binpath = bin;
    if (has_addr) s.addr = static_cast<uint64_t>(std::strtoll(std::string(addr).c_str(), nullptr, 0));
    return s;
}

namespace {

// The notes of an opened ELF; `path` names the file in warnings.
std::optional<SdtNotes> notes_of(Elf* elf, const std::string& path) {
    if (!elf || elf_kind(elf) != ELF_K_ELF) return std::nullopt;
    const char* ident = elf_getident(elf, nullptr);
    if (!ident) return std::nullopt;
    SdtNotes out;
    out.is64 = ident[EI_CLASS] == ELFCLASS64;
    const bool big_endian = ident[EI_DATA] == ELFDATA2MSB;
    Layout l = scan_sections(elf);
    if (!l.notes) return out;
    Elf_Data* data = elf_getdata(l.notes, nullptr);
    if (!data || !data->d_buf) return out;
    const auto* bytes = static_cast<const unsigned char*>(data->d_buf);
    GElf_Nhdr nh;
    size_t name_off = 0, desc_off = 0;
    for (size_t off = 0, next; (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0; off = next) {
        if (nh.n_type != kStapsdtNoteType || nh.n_namesz != sizeof("stapsdt") ||
            std::memcmp(bytes + name_off, "stapsdt", sizeof("stapsdt")) != 0)
            continue;
        decode_note(bytes + desc_off, nh.n_descsz, out.is64, big_endian, l, path, out);
    }
    return out;
}

}  // namespace

std::optional<SdtNotes> read_sdt_notes(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return std::nullopt;
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    return notes_of(elf.get(), path);
}

std::optional<SdtNotes> sdt_notes_from_image(std::string image, const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return std::nullopt;
    ElfPtr elf(elf_memory(image.data(), image.size()));
    return notes_of(elf.get(), path);
}

bool sdt_matches(const SdtSpec& spec, const SdtProbe& p) {
    return (spec.provider.empty() || spec.provider == p.provider) &&
           (spec.name.empty() || spec.name == p.name) && (spec.addr == 0 || spec.addr == p.pc);
}

std::optional<std::string> sdt_operand(std::string_view op, SdtArch arch) {
    return arch == SdtArch::Arm64 ? arm64_operand(op) : x86_operand(op);
}

std::optional<std::string> sdt_type_suffix(long size) {
    if (size > 8 || size < -8) return std::nullopt;
    switch (size) {
        case 1:
            return ":u8";
        case 2:
            return ":u16";
        case 4:
            return ":u32";
        case 8:
            return ":u64";
        case -1:
            return ":s8";
        case -2:
            return ":s16";
        case -4:
            return ":s32";
        case -8:
            return ":s64";
        default:
            return "";
    }
}

SdtArgs sdt_uprobe_args(std::string_view args, const std::vector<std::string>* argfmt, SdtArch arch) {
    SdtArgs out;
    std::vector<std::string> items = split_args(args);
    if (argfmt && items.size() > argfmt->size()) items.resize(argfmt->size());
    for (size_t i = 0; i < items.size(); ++i) {
        std::string_view item = items[i];
        long size = 0;
        // "N@OP": N is a signed decimal size; an operand never contains '@' otherwise.
        if (size_t at = item.find('@'); at != std::string_view::npos) {
            std::string n(item.substr(0, at));
            char* end = nullptr;
            size = std::strtol(n.c_str(), &end, 10);
            if (end && *end == '\0')
                item.remove_prefix(at + 1);
            else
                size = 0;
        }
        std::optional<std::string> suffix = sdt_type_suffix(size);
        if (!suffix) {
            out.bad_type = true;
            return out;
        }
        std::optional<std::string> op = sdt_operand(item, arch);
        if (!op) {
            out.skipped.emplace_back(item);
            continue;
        }
        if (argfmt && (*argfmt)[i].find("%s") != std::string::npos) {
            std::string f = (*argfmt)[i];
            f.replace(f.find("%s"), 2, *op);
            out.text += " " + f;
        } else {
            out.text += " arg" + std::to_string(i + 1) + "=" + *op + *suffix;
        }
    }
    return out;
}

std::string sdt_uprobe_head(char kind, const SdtProbe& p, const std::string& binpath) {
    std::string s = std::string(1, kind) + ":" + p.provider + "/" + p.name + " " + binpath + ":0x" +
                    hex(p.offset, kSdtHexDigits);
    if (p.sem_offset) s += "(0x" + hex(p.sem_offset, 0) + ")";
    return s;
}

}  // namespace perfprof::sym
