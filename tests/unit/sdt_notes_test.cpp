// sym/sdt_notes (SPEC §7.1-§7.3): SPEC words, operand translation, type suffixes, argument
// lists with and without ARGFMT, definitions, and the notes of real ELF files: the usdt_app
// workload (checked against `readelf -n`) and small programs compiled here with hand-made notes.
#include "sym/sdt_notes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "shell.h"

namespace fs = std::filesystem;
using namespace perfprof::sym;

namespace {

// ---- SPEC words (§7.1) ----

TEST(SdtSpec, BinpathOnly) {
    SdtSpec s = parse_sdt_spec("/usr/bin/app");
    EXPECT_EQ(s.provider, "");
    EXPECT_EQ(s.name, "");
    EXPECT_EQ(s.binpath, "/usr/bin/app");
    EXPECT_EQ(s.addr, 0u);
    EXPECT_FALSE(s.has_argfmt);
}

TEST(SdtSpec, ProviderNameBinpath) {
    SdtSpec s = parse_sdt_spec("ppapp:tick@/bin/app");
    EXPECT_EQ(s.provider, "ppapp");
    EXPECT_EQ(s.name, "tick");
    EXPECT_EQ(s.binpath, "/bin/app");
}

TEST(SdtSpec, NameWithoutProvider) {
    SdtSpec s = parse_sdt_spec("tick@/bin/app");
    EXPECT_EQ(s.provider, "");
    EXPECT_EQ(s.name, "tick");
    EXPECT_EQ(s.binpath, "/bin/app");
}

TEST(SdtSpec, AddrIsStrtollBase0) {
    SdtSpec s = parse_sdt_spec("p:n@/bin/app@0x1139");
    EXPECT_EQ(s.binpath, "/bin/app");
    EXPECT_EQ(s.addr, 0x1139u);
    EXPECT_EQ(parse_sdt_spec("p:n@/bin/app@4409").addr, 4409u);
    EXPECT_EQ(parse_sdt_spec("p:n@/bin/app@010").addr, 8u);
}

TEST(SdtSpec, ArgfmtAfterBinpath) {
    SdtSpec s = parse_sdt_spec("p:n@/bin/app i=%s  ptr=%s:x64");
    EXPECT_EQ(s.binpath, "/bin/app");
    EXPECT_TRUE(s.has_argfmt);
    EXPECT_EQ(s.argfmt, (std::vector<std::string>{"i=%s", "ptr=%s:x64"}));
}

TEST(SdtSpec, ArgfmtAfterAddr) {
    SdtSpec s = parse_sdt_spec("p:n@/bin/app@0x10 x=%s");
    EXPECT_EQ(s.binpath, "/bin/app");
    EXPECT_EQ(s.addr, 0x10u);
    EXPECT_EQ(s.argfmt, (std::vector<std::string>{"x=%s"}));
}

TEST(SdtSpec, EmptyBinpath) {
    EXPECT_EQ(parse_sdt_spec("ppapp:tick@").binpath, "");
    EXPECT_EQ(parse_sdt_spec("ppapp:").binpath, "");
    EXPECT_EQ(parse_sdt_spec("").binpath, "");
}

TEST(SdtSpec, Filters) {
    SdtProbe p;
    p.provider = "ppapp";
    p.name = "tick";
    p.pc = 0x1139;
    EXPECT_TRUE(sdt_matches(parse_sdt_spec("/b"), p));
    EXPECT_TRUE(sdt_matches(parse_sdt_spec("ppapp:tick@/b"), p));
    EXPECT_TRUE(sdt_matches(parse_sdt_spec("tick@/b"), p));
    EXPECT_TRUE(sdt_matches(parse_sdt_spec("ppapp:tick@/b@0x1139"), p));
    EXPECT_FALSE(sdt_matches(parse_sdt_spec("ppapp:tick@/b@0x1138"), p));
    EXPECT_FALSE(sdt_matches(parse_sdt_spec("other:tick@/b"), p));
    EXPECT_FALSE(sdt_matches(parse_sdt_spec("ppapp:tock@/b"), p));
}

// ---- operands (§7.3) ----

struct OperandCase {
    const char* in;
    const char* out;  // nullptr: unsupported
};

template <size_t N>
void check_operands(const OperandCase (&cases)[N], SdtArch arch) {
    for (const OperandCase& c : cases) {
        std::optional<std::string> got = sdt_operand(c.in, arch);
        if (c.out)
            EXPECT_EQ(got.value_or("<unsupported>"), c.out) << c.in;
        else
            EXPECT_FALSE(got) << c.in << " -> " << *got;
    }
}

TEST(SdtOperand, X86Table) {
    const OperandCase cases[] = {
        {"24(%rdi)", "+24(%di)"},
        {"(%rdi)", "+0(%di)"},
        {"-80(%rbx)", "-80(%bx)"},
        {"+8(%rsp)", "+8(%sp)"},
        {"-4(%rbp)", "-4(%bp)"},
        {"%rdi", "%di"},
        {"%edi", "%di"},
        {"%dil", "%di"},
        {"%sil", "%si"},
        {"%eax", "%ax"},
        {"%al", "%ax"},
        {"%ah", "%ax"},
        {"%cx", "%cx"},
        {"%edx", "%dx"},
        {"%spl", "%sp"},
        {"%bpl", "%bp"},
        {"%r8", "%r8"},
        {"%r8d", "%r8"},
        {"%r9w", "%r9"},
        {"%r10b", "%r10"},
        {"%r15d", "%r15"},
        {"16(%r12)", "+16(%r12)"},
        {"(%r13d)", "+0(%r13)"},
        {"%xmm0", "%xmm0"},  // others unchanged
        {"$5", nullptr},
        {"$-1", nullptr},
        {"sym(%rip)", nullptr},
        {"8(%rip)", nullptr},
        {"(%rax,%rbx,8)", nullptr},
        {"8(%rax,%rbx)", nullptr},
        {"sym", nullptr},
        {"", nullptr},
        {"8%rax", nullptr},
        {"24(%rdi", nullptr},
    };
    check_operands(cases, SdtArch::X86_64);
}

TEST(SdtOperand, Arm64Table) {
    const OperandCase cases[] = {
        {"x0", "%x0"},    {"w1", "%x1"},         {"x29", "%x29"},
        {"w31", "%x31"},  {"[sp]", "+0(%sp)"},   {"[sp, 16]", "+16(%sp)"},
        {"x32", nullptr}, {"[x19, 8]", nullptr}, {"#5", nullptr},
        {"sp", nullptr},
    };
    check_operands(cases, SdtArch::Arm64);
}

TEST(SdtType, Suffixes) {
    EXPECT_EQ(sdt_type_suffix(1).value(), ":u8");
    EXPECT_EQ(sdt_type_suffix(2).value(), ":u16");
    EXPECT_EQ(sdt_type_suffix(4).value(), ":u32");
    EXPECT_EQ(sdt_type_suffix(8).value(), ":u64");
    EXPECT_EQ(sdt_type_suffix(-1).value(), ":s8");
    EXPECT_EQ(sdt_type_suffix(-2).value(), ":s16");
    EXPECT_EQ(sdt_type_suffix(-4).value(), ":s32");
    EXPECT_EQ(sdt_type_suffix(-8).value(), ":s64");
    EXPECT_EQ(sdt_type_suffix(0).value(), "");
    EXPECT_EQ(sdt_type_suffix(3).value(), "");
    EXPECT_EQ(sdt_type_suffix(-5).value(), "");
    EXPECT_FALSE(sdt_type_suffix(9));
    EXPECT_FALSE(sdt_type_suffix(-16));
}

// ---- argument lists ----

TEST(SdtArgs, Plain) {
    SdtArgs a = sdt_uprobe_args("-4@%edi -1@%sil 2@%dx -4@-4(%rbp) 8@24(%rdi)", nullptr, SdtArch::X86_64);
    EXPECT_EQ(a.text, " arg1=%di:s32 arg2=%si:s8 arg3=%dx:u16 arg4=-4(%bp):s32 arg5=+24(%di):u64");
    EXPECT_TRUE(a.skipped.empty());
    EXPECT_FALSE(a.bad_type);
}

TEST(SdtArgs, NoSizeNoSuffix) {
    EXPECT_EQ(sdt_uprobe_args("%rdi (%rsi)", nullptr, SdtArch::X86_64).text, " arg1=%di arg2=+0(%si)");
    EXPECT_EQ(sdt_uprobe_args("", nullptr, SdtArch::X86_64).text, "");
}

TEST(SdtArgs, UnsupportedSkippedKeepsPositions) {
    SdtArgs a = sdt_uprobe_args("8@%rdi 4@$5 8@sym(%rip) 8@(%rax,%rbx,8) -8@%rsi", nullptr, SdtArch::X86_64);
    EXPECT_EQ(a.text, " arg1=%di:u64 arg5=%si:s64");
    EXPECT_EQ(a.skipped, (std::vector<std::string>{"$5", "sym(%rip)", "(%rax,%rbx,8)"}));
}

TEST(SdtArgs, SizeBeyondEightIsAnError) {
    EXPECT_TRUE(sdt_uprobe_args("8@%rdi 16@%xmm0", nullptr, SdtArch::X86_64).bad_type);
    EXPECT_TRUE(sdt_uprobe_args("-9@%rdi", nullptr, SdtArch::X86_64).bad_type);
}

TEST(SdtArgs, Argfmt) {
    std::vector<std::string> fmt{"i=%s", "ptr=%s:x64"};
    EXPECT_EQ(sdt_uprobe_args("-8@%rdi 8@%rsi 4@%edx", &fmt, SdtArch::X86_64).text, " i=%di ptr=%si:x64");
    // An item without %s keeps the default form; only as many arguments as items.
    std::vector<std::string> two{"-", "p=%s"};
    EXPECT_EQ(sdt_uprobe_args("-8@%rdi 8@(%rsi) 4@%edx", &two, SdtArch::X86_64).text,
              " arg1=%di:s64 p=+0(%si)");
    std::vector<std::string> none;
    EXPECT_EQ(sdt_uprobe_args("-8@%rdi", &none, SdtArch::X86_64).text, "");
}

TEST(SdtArgs, Arm64) {
    EXPECT_EQ(sdt_uprobe_args("-4@w0 8@x1 8@[sp, 16] 4@[x19, 8]", nullptr, SdtArch::Arm64).text,
              " arg1=%x0:s32 arg2=%x1:u64 arg3=+16(%sp):u64");
}

TEST(SdtDefinition, Head) {
    SdtProbe p;
    p.provider = "ppapp";
    p.name = "tick";
    p.offset = 0x1139;
    EXPECT_EQ(sdt_uprobe_head('p', p, "/bin/app"), "p:ppapp/tick /bin/app:0x0000000000001139");
    EXPECT_EQ(sdt_uprobe_head('-', p, "/bin/app"), "-:ppapp/tick /bin/app:0x0000000000001139");
    p.sem_offset = 0x3018;
    EXPECT_EQ(sdt_uprobe_head('p', p, "a"), "p:ppapp/tick a:0x0000000000001139(0x3018)");
}

// ---- notes of real files ----

using perfprof::test::self_exe;

// The usdt_app workload beside this test binary (build/unit_tests → build/workloads/).
std::string workload_path() {
    return (fs::path(self_exe()).parent_path() / "workloads/usdt_app").string();
}

using perfprof::test::run;

TEST(SdtNotes, WorkloadMatchesReadelf) {
    const std::string wl = workload_path();
    ASSERT_TRUE(fs::exists(wl)) << wl << " missing: `make` builds it";
    std::optional<SdtNotes> notes = read_sdt_notes(wl);
    ASSERT_TRUE(notes);
    EXPECT_TRUE(notes->is64);
    EXPECT_TRUE(notes->warnings.empty());
    // Our decoding printed as readelf prints it.
    std::string ours;
    char buf[256];
    for (const SdtProbe& p : notes->probes) {
        std::snprintf(buf, sizeof buf, "Location: 0x%016llx, Base: 0x%016llx, Semaphore: 0x%016llx",
                      (unsigned long long)p.pc, (unsigned long long)p.base, (unsigned long long)p.semaphore);
        ours +=
            "Provider: " + p.provider + "\nName: " + p.name + "\n" + buf + "\nArguments: " + p.args + "\n";
    }
    std::string theirs =
        run("readelf -n '" + wl +
            "' | sed -n 's/^ *\\(Provider\\|Name\\|Location\\|Arguments\\):/\\1:/p' | sed 's/ *$//'");
    ASSERT_FALSE(theirs.empty()) << "readelf (binutils) is needed";
    std::string ours_trimmed;
    for (size_t i = 0; i < ours.size(); ++i)
        if (!(ours[i] == ' ' && (i + 1 == ours.size() || ours[i + 1] == '\n'))) ours_trimmed += ours[i];
    EXPECT_EQ(ours_trimmed, theirs);

    ASSERT_EQ(notes->probes.size(), 6u);
    EXPECT_EQ(notes->probes.back().provider, "ppodd");
    int with_sem = 0;
    for (const SdtProbe& p : notes->probes) {
        // A non-PIE or PIE executable alike: .stapsdt.base keeps its address as its offset
        // plus the load bias of its segment, so the probe lies in the file's text.
        EXPECT_GT(p.offset, 0u);
        EXPECT_LT(p.offset, fs::file_size(wl));
        if (p.semaphore) {
            ++with_sem;
            EXPECT_EQ(p.name, "sem");
            EXPECT_GT(p.sem_offset, 0u);
        } else {
            EXPECT_EQ(p.sem_offset, 0u);
        }
        if (p.name == "start") {
            EXPECT_EQ(p.args, "");
        }
    }
    EXPECT_EQ(with_sem, 1);
}

TEST(SdtNotes, SemaphoreOffsetMatchesSectionHeaders) {
    const std::string wl = workload_path();
    ASSERT_TRUE(fs::exists(wl));
    std::optional<SdtNotes> notes = read_sdt_notes(wl);
    ASSERT_TRUE(notes);
    // ".probes" address and offset from readelf -S, as "ADDR OFF" in hex.
    std::string line =
        run("readelf -SW '" + wl +
            "' | sed -n 's/.*\\] \\.probes *PROGBITS *\\([0-9a-f]*\\) \\([0-9a-f]*\\).*/\\1 \\2/p'");
    unsigned long long addr = 0, off = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%llx %llx", &addr, &off), 2) << line;
    for (const SdtProbe& p : notes->probes)
        if (p.semaphore) {
            EXPECT_EQ(p.sem_offset, p.semaphore - addr + off);
        }
}

TEST(SdtNotes, MissingFileOrNoElf) {
    EXPECT_FALSE(read_sdt_notes("/nonexistent/usdt"));
    char tmpl[] = "/tmp/sdt_notes_test_XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "not an elf\n", 11), 11);
    ::close(fd);
    EXPECT_FALSE(read_sdt_notes(tmpl));
    ::unlink(tmpl);
}

// A program with hand-made notes: one probe below the first executable section (an invalid
// address: warned about and dropped), and one without .stapsdt.base (offset = pc).
TEST(SdtNotes, InvalidAddressWarning) {
    if (run("command -v cc").empty()) GTEST_FAIL() << "cc is needed";
    fs::path dir = fs::temp_directory_path() / ("sdt_notes_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "t.c") << R"(
int main(void) { return 0; }
__asm__(".pushsection .note.stapsdt,\"\",\"note\"\n"
        ".balign 4\n"
        ".4byte 8, 2f-1f, 3\n"
        ".asciz \"stapsdt\"\n"
        ".balign 4\n"
        "1: .8byte 0x10, 0, 0\n"
        ".asciz \"bad\"\n.asciz \"low\"\n.asciz \"\"\n"
        "2: .balign 4\n"
        ".4byte 8, 5f-4f, 3\n"
        ".asciz \"stapsdt\"\n"
        ".balign 4\n"
        "4: .8byte main, 0, 0\n"
        ".asciz \"good\"\n.asciz \"main\"\n.asciz \"8@%rdi\"\n"
        "5: .balign 4\n"
        ".popsection\n");
)";
    std::string exe = (dir / "t").string();
    std::string log = run("cc -O0 -o '" + exe + "' '" + (dir / "t.c").string() + "' 2>&1");
    ASSERT_TRUE(fs::exists(exe)) << log;
    std::optional<SdtNotes> notes = read_sdt_notes(exe);
    fs::remove_all(dir);
    ASSERT_TRUE(notes);
    ASSERT_EQ(notes->warnings.size(), 1u);
    EXPECT_EQ(notes->warnings[0], "WARNING: invalid address 0x10 for probe (bad,low) in binary " + exe);
    ASSERT_EQ(notes->probes.size(), 1u);
    EXPECT_EQ(notes->probes[0].provider, "good");
    EXPECT_EQ(notes->probes[0].args, "8@%rdi");
    EXPECT_EQ(notes->probes[0].offset, notes->probes[0].pc);  // no .stapsdt.base
}

}  // namespace
