// libFuzzer target for the USDT note decoder (lib/sym/sdt_notes.h): the notes of .note.stapsdt,
// then what `perf-prof usdt` makes of each probe (its argument string as uprobe fetch arguments,
// with and without ARGFMT, the definition's head) and of SPEC words.
//
// Input: 8 option bytes, then the rest. Option byte 0 picks what the rest is:
//   even   the content of .note.stapsdt in an ELF image this harness builds around it, of the class
//          (byte 1 bit 0: 32-bit) and byte order (bit 1: big-endian) the options pick, with .text,
//          .stapsdt.base and .probes at addresses from bytes 2-7, or without some of them (byte 1
//          bits 2-4): the decoder sees real notes without the fuzzer having to find an ELF layout
//   odd    a whole ELF image
// and the rest is also a SPEC word. Findings: a crash, a sanitizer report, a hang, an exception,
// or a probe or warning that is not one of the notes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sym/sdt_notes.h"

using namespace perfprof::sym;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "usdt_fuzz: broken: %s\n", what);
    std::abort();
}
#define check(c) ((c) ? void() : fail(#c))

// An ELF image written field by field in the class and byte order chosen.
class Writer {
public:
    Writer(bool is64, bool big) : is64_(is64), big_(big) {}
    void put(uint64_t v, size_t n) {
        for (size_t i = 0; i < n; ++i) out.push_back(char(v >> (8 * (big_ ? n - 1 - i : i))));
    }
    void word(uint64_t v) { put(v, is64_ ? 8 : 4); }  // an address or offset
    size_t word_size() const { return is64_ ? 8 : 4; }
    std::string out;

private:
    bool is64_, big_;
};

struct Section {
    uint32_t name, type;
    uint64_t flags, addr;
    std::string_view bytes;
    uint64_t align;
};

constexpr uint32_t kProgbits = 1, kStrtab = 3, kNote = 7;
constexpr uint64_t kAlloc = 2, kExec = 4;

std::string build_image(const uint8_t* o, std::string_view notes) {
    const bool is64 = !(o[1] & 1), big = o[1] & 2;
    Writer w(is64, big);
    // Names in .shstrtab: a name the decoder does not look for drops a section.
    static constexpr char kNameBytes[] = "\0.shstrtab\0.text\0.stapsdt.base\0.probes\0.note.stapsdt\0.x";
    const std::string_view kNames(kNameBytes, sizeof kNameBytes);  // its final NUL included
    const uint32_t shstrtab = 1, text = 11, base = 17, probes = 31, note = 39, other = 53;
    const uint64_t text_addr = uint64_t(o[2]) << 12 | uint64_t(o[3]) << 4;
    const Section secs[] = {
        {0, 0, 0, 0, {}, 0},
        {shstrtab, kStrtab, 0, 0, kNames, 1},
        {o[1] & 4 ? other : text, kProgbits, kAlloc | kExec, text_addr, "\xc3\x90\x90\x90", 16},
        {o[1] & 8 ? other : base, kProgbits, kAlloc, text_addr + (uint64_t(o[4]) << 4), "\x90", 1},
        {o[1] & 16 ? other : probes, kProgbits, kAlloc, uint64_t(o[5]) << 16 | uint64_t(o[6]) << 8 | o[7],
         std::string_view("\0\0", 2), 2},
        {note, kNote, 0, 0, notes, 4},
    };
    const size_t n = sizeof secs / sizeof secs[0];
    const size_t ehsize = is64 ? 64 : 52, shentsize = is64 ? 64 : 40;
    // Section contents after the header, each aligned to 8; the section headers after them.
    std::vector<uint64_t> offsets;
    uint64_t off = ehsize;
    for (const Section& s : secs) {
        off = (off + 7) & ~uint64_t(7);
        offsets.push_back(off);
        off += s.bytes.size();
    }
    const uint64_t shoff = (off + 7) & ~uint64_t(7);

    w.out.append("\x7f" "ELF", 4);
    w.put(is64 ? 2 : 1, 1);
    w.put(big ? 2 : 1, 1);
    w.put(1, 1);              // EI_VERSION
    w.out.append(9, '\0');    // OS ABI, padding
    w.put(3, 2);              // ET_DYN
    w.put(is64 ? 62 : 3, 2);  // x86-64, i386
    w.put(1, 4);
    w.word(text_addr);  // entry
    w.word(0);          // no program headers
    w.word(shoff);
    w.put(0, 4);
    w.put(ehsize, 2);
    w.put(0, 2);
    w.put(0, 2);
    w.put(shentsize, 2);
    w.put(n, 2);
    w.put(1, 2);  // .shstrtab
    for (size_t i = 0; i < n; ++i) {
        w.out.resize(offsets[i], '\0');
        w.out.append(secs[i].bytes);
    }
    w.out.resize(shoff, '\0');
    for (size_t i = 0; i < n; ++i) {
        const Section& s = secs[i];
        w.put(s.name, 4);
        w.put(s.type, 4);
        w.word(s.flags);
        w.word(s.addr);
        w.word(i ? offsets[i] : 0);
        w.word(s.bytes.size());
        w.put(0, 4);  // link
        w.put(0, 4);  // info
        w.word(s.align);
        w.word(0);  // entsize
    }
    return w.out;
}

// A note's header and name take at least 20 bytes; its descriptor at least three addresses.
size_t max_probes(std::string_view notes, size_t word) {
    return notes.size() / (20 + 3 * word);
}

void use_probes(const SdtNotes& notes, const SdtSpec& spec) {
    const std::vector<std::string> argfmt = {"%s", "x=%s", "", "%s%s"};
    for (const SdtProbe& p : notes.probes) {
        check(p.provider.find('\0') == std::string::npos && p.name.find('\0') == std::string::npos);
        const SdtArgs a = sdt_uprobe_args(p.args, nullptr);
        const SdtArgs f = sdt_uprobe_args(p.args, &argfmt);
        check(a.text.empty() || a.text.front() == ' ');
        check(f.text.empty() || f.text.front() == ' ');
        (void)sdt_uprobe_args(p.args, nullptr, SdtArch::Arm64);
        const std::string head = sdt_uprobe_head('p', p, "/bin/x");
        check(head.rfind("p:", 0) == 0);
        (void)sdt_matches(spec, p);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 8) return 0;
    const uint8_t* o = data;
    const std::string_view rest(reinterpret_cast<const char*>(data + 8), size - 8);

    const SdtSpec spec = parse_sdt_spec(rest);
    if (spec.has_argfmt) (void)sdt_uprobe_args(rest, &spec.argfmt);
    for (const std::string& op : spec.argfmt) {
        (void)sdt_operand(op);
        (void)sdt_operand(op, SdtArch::Arm64);
    }

    if (o[0] & 1) {
        if (auto notes = sdt_notes_from_image(std::string(rest), "/fuzz")) use_probes(*notes, spec);
        return 0;
    }
    const std::optional<SdtNotes> notes = sdt_notes_from_image(build_image(o, rest), "/fuzz");
    check(notes.has_value());
    check(notes->is64 == !(o[1] & 1));
    check(notes->probes.size() + notes->warnings.size() <= max_probes(rest, notes->is64 ? 8 : 4));
    use_probes(*notes, spec);
    return 0;
}
