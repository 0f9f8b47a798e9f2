// pprof output: the protobuf wire writer, the profile.proto builder (decoded back by a small
// decoder of this test and checked against the rules pprof's reader enforces), gzip, and
// --pprof's chain counting on this test process's own code.
#include "output/pprof.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "output/proto_writer.h"
#include "perf-prof/error.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

extern "C" __attribute__((noinline, used)) int pprof_test_leaf(int x) {
    asm volatile("" ::: "memory");
    return x * 5 + 2;
}

namespace perfprof::output {
namespace {

std::string hex(const std::string& s) {
    static const char d[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        if (!out.empty()) out += ' ';
        out += d[c >> 4];
        out += d[c & 15];
    }
    return out;
}

// ---- a small protobuf decoder: a message as its fields, in order ----

struct Field {
    uint32_t number = 0, wire = 0;
    uint64_t value = 0;  // varint and fixed fields
    std::string bytes;   // length-delimited fields
};

bool read_varint(const std::string& s, size_t& p, uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 70 && p < s.size(); shift += 7) {
        const auto b = static_cast<unsigned char>(s[p++]);
        v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

std::vector<Field> decode(const std::string& s) {
    std::vector<Field> out;
    size_t p = 0;
    while (p < s.size()) {
        uint64_t key = 0;
        EXPECT_TRUE(read_varint(s, p, key));
        Field f;
        f.number = uint32_t(key >> 3);
        f.wire = uint32_t(key & 7);
        EXPECT_NE(f.number, 0u);
        if (f.wire == 0) {
            EXPECT_TRUE(read_varint(s, p, f.value));
        } else if (f.wire == 2) {
            uint64_t n = 0;
            EXPECT_TRUE(read_varint(s, p, n));
            EXPECT_LE(p + n, s.size());
            f.bytes = s.substr(p, n);
            p += n;
        } else {
            ADD_FAILURE() << "unexpected wire type " << f.wire;
            break;
        }
        out.push_back(std::move(f));
    }
    return out;
}

// A repeated scalar field, packed or not.
std::vector<uint64_t> repeated(const std::vector<Field>& msg, uint32_t number) {
    std::vector<uint64_t> v;
    for (const Field& f : msg) {
        if (f.number != number) continue;
        if (f.wire == 0) {
            v.push_back(f.value);
            continue;
        }
        size_t p = 0;
        uint64_t x;
        while (p < f.bytes.size() && read_varint(f.bytes, p, x)) v.push_back(x);
    }
    return v;
}

uint64_t scalar(const std::vector<Field>& msg, uint32_t number) {
    for (const Field& f : msg)
        if (f.number == number && f.wire == 0) return f.value;
    return 0;
}

std::vector<std::vector<Field>> messages(const std::vector<Field>& msg, uint32_t number) {
    std::vector<std::vector<Field>> v;
    for (const Field& f : msg)
        if (f.number == number) v.push_back(decode(f.bytes));
    return v;
}

// The profile as pprof's reader sees it, with its validity rules checked.
struct Decoded {
    std::vector<std::string> strings;
    std::vector<std::pair<std::string, std::string>> sample_types;
    struct Sample {
        std::vector<uint64_t> locations;
        std::vector<int64_t> values;
        std::map<std::string, std::string> str_labels;
        std::map<std::string, int64_t> num_labels;
    };
    std::vector<Sample> samples;
    std::map<uint64_t, std::vector<Field>> mappings, locations, functions;
    std::vector<uint64_t> mapping_order;
    int64_t time = 0, duration = 0, period = 0;
    std::pair<std::string, std::string> period_type;
    std::vector<std::string> comments;
    std::string default_sample_type;

    const std::string& str(uint64_t i) const {
        static const std::string bad = "<bad string index>";
        return i < strings.size() ? strings[i] : bad;
    }
    // The function name of a location's (only) line, and the line.
    std::string function_of(uint64_t loc, int64_t* line = nullptr) const {
        auto lines = messages(locations.at(loc), 4);
        if (lines.size() != 1) return "<" + std::to_string(lines.size()) + " lines>";
        if (line) *line = int64_t(scalar(lines[0], 2));
        return str(scalar(functions.at(scalar(lines[0], 1)), 2));
    }
};

Decoded decode_profile(const std::string& data) {
    Decoded d;
    const std::vector<Field> top = decode(data);
    for (const Field& f : top)
        if (f.number == 6) d.strings.push_back(f.bytes);
    EXPECT_FALSE(d.strings.empty());
    EXPECT_EQ(d.strings.at(0), "");
    for (const auto& t : messages(top, 1))
        d.sample_types.emplace_back(d.str(scalar(t, 1)), d.str(scalar(t, 2)));
    EXPECT_FALSE(d.sample_types.empty());
    auto ids = [&](uint32_t number, std::map<uint64_t, std::vector<Field>>& into) {
        for (auto& m : messages(top, number)) {
            const uint64_t id = scalar(m, 1);
            EXPECT_NE(id, 0u) << "message " << number;
            EXPECT_TRUE(into.emplace(id, m).second) << "duplicate id " << id << " in message " << number;
            if (number == 3) d.mapping_order.push_back(id);
        }
    };
    ids(3, d.mappings);
    ids(4, d.locations);
    ids(5, d.functions);
    for (const auto& [id, l] : d.locations) {
        const uint64_t m = scalar(l, 2);
        EXPECT_TRUE(m == 0 || d.mappings.count(m)) << "location " << id << " has mapping " << m;
        for (const auto& line : messages(l, 4))
            EXPECT_TRUE(d.functions.count(scalar(line, 1))) << "location " << id;
    }
    for (const auto& [id, f] : d.functions)
        for (uint32_t n : {2, 3, 4}) EXPECT_LT(scalar(f, n), d.strings.size());
    for (const auto& [id, m] : d.mappings)
        for (uint32_t n : {5, 6}) EXPECT_LT(scalar(m, n), d.strings.size());
    for (const auto& s : messages(top, 2)) {
        Decoded::Sample out;
        out.locations = repeated(s, 1);
        for (uint64_t v : repeated(s, 2)) out.values.push_back(int64_t(v));
        EXPECT_EQ(out.values.size(), d.sample_types.size());
        for (uint64_t l : out.locations) EXPECT_TRUE(d.locations.count(l)) << "sample location " << l;
        for (const auto& l : messages(s, 3)) {
            if (scalar(l, 2))
                out.str_labels[d.str(scalar(l, 1))] = d.str(scalar(l, 2));
            else
                out.num_labels[d.str(scalar(l, 1))] = int64_t(scalar(l, 3));
        }
        d.samples.push_back(std::move(out));
    }
    d.time = int64_t(scalar(top, 9));
    d.duration = int64_t(scalar(top, 10));
    d.period = int64_t(scalar(top, 12));
    for (const auto& t : messages(top, 11)) d.period_type = {d.str(scalar(t, 1)), d.str(scalar(t, 2))};
    for (uint64_t c : repeated(top, 13)) d.comments.push_back(d.str(c));
    if (const uint64_t t = scalar(top, 14)) d.default_sample_type = d.str(t);
    return d;
}

std::string gunzip(const std::string& in) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
    std::string out;
    char buf[4096];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    int rc;
    do {
        z.next_out = reinterpret_cast<Bytef*>(buf);
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(buf, sizeof buf - z.avail_out);
    } while (rc == Z_OK);
    inflateEnd(&z);
    EXPECT_EQ(rc, Z_STREAM_END);
    return out;
}

// ---- the wire writer ----

TEST(ProtoWriter, Varints) {
    const std::pair<uint64_t, const char*> cases[] = {
        {0, "00"},
        {1, "01"},
        {127, "7f"},
        {128, "80 01"},
        {300, "ac 02"},
        {16383, "ff 7f"},
        {16384, "80 80 01"},
        {uint64_t(1) << 32, "80 80 80 80 10"},
        {UINT64_MAX, "ff ff ff ff ff ff ff ff ff 01"},
    };
    for (const auto& [v, want] : cases) {
        ProtoWriter w;
        w.varint(v);
        EXPECT_EQ(hex(w.data()), want) << v;
        EXPECT_EQ(ProtoWriter::varint_size(v), w.size()) << v;
        size_t p = 0;
        uint64_t back = 0;
        EXPECT_TRUE(read_varint(w.data(), p, back));
        EXPECT_EQ(back, v);
    }
}

TEST(ProtoWriter, Fields) {
    ProtoWriter w;
    w.uint64(1, 150);  // the protobuf documentation's example: 08 96 01
    w.int64(2, -1);    // two's complement: ten bytes
    w.uint64_nz(3, 0);
    w.int64_nz(4, 0);
    w.boolean(5, true);
    w.bytes(6, "");
    w.bytes(7, "hi");
    w.uint64(16, 1);  // a two-byte tag
    EXPECT_EQ(hex(w.data()), "08 96 01 10 ff ff ff ff ff ff ff ff ff 01 28 01 32 00 3a 02 68 69 80 01 01");
}

TEST(ProtoWriter, PackedAndNested) {
    ProtoWriter w;
    const uint64_t u[] = {1, 300, 0};
    w.packed_uint64(1, u);
    const int64_t s[] = {-1, 2};
    w.packed_int64(2, s);
    w.packed_uint64(3, {});  // empty: no field at all
    ProtoWriter inner;
    inner.uint64(1, 5);
    w.message(4, inner);
    w.message(5, ProtoWriter{});
    EXPECT_EQ(hex(w.data()), "0a 04 01 ac 02 00 12 0b ff ff ff ff ff ff ff ff ff 01 02 22 02 08 05 2a 00");
    const auto fields = decode(w.data());
    EXPECT_EQ(repeated(fields, 1), (std::vector<uint64_t>{1, 300, 0}));
    EXPECT_EQ(repeated(fields, 2), (std::vector<uint64_t>{UINT64_MAX, 2}));
}

// ---- the profile builder ----

TEST(PprofBuilder, SyntheticProfileDecodes) {
    PprofBuilder b({{"samples", "count"}, {"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1000);
    const uint64_t kmap = b.mapping(uint64_t(1) << 63, UINT64_MAX, 0, "[kernel.kallsyms]", "", false);
    const uint64_t libc = b.mapping(0x7f0000001000, 0x7f0000100000, 0x1000, "/lib/libc.so.6", "abcd", true);
    const uint64_t exe = b.mapping(0x555500001000, 0x555500002000, 0x1000, "/bin/app", "1234", false);
    EXPECT_EQ(b.mapping(0x555500001000, 0x555500002000, 0x1000, "/bin/app", "1234", true), exe);
    const uint64_t f_main = b.function("main", "main", "app.c", 10);
    const uint64_t f_hot = b.function("ns::hot()", "_ZN2ns3hotEv", "app.cc", 20);
    const uint64_t f_k = b.function("do_syscall_64", "do_syscall_64", "", 0);
    EXPECT_EQ(b.function("main", "main", "app.c", 10), f_main);
    const uint64_t l_main = b.location(exe, 0x555500001100, f_main, 12);
    const uint64_t l_hot = b.location(libc, 0x7f0000001200, f_hot, 22);
    const uint64_t l_k = b.location(kmap, 0xffffffff81000000, f_k, 0);
    const uint64_t l_unknown = b.location(0, 0x1234, b.function("[unknown]", "[unknown]", "", 0), 0);
    EXPECT_EQ(b.location(exe, 0x555500001100, f_main, 12), l_main);
    std::set<uint64_t> ids{l_main, l_hot, l_k, l_unknown};
    EXPECT_EQ(ids.size(), 4u);
    EXPECT_EQ(ids.count(0), 0u);

    const uint64_t pid = b.string_id("pid"), comm = b.string_id("comm"), app = b.string_id("app");
    const PprofBuilder::Label labels[] = {{pid, 0, 42}, {comm, app, 0}};
    const uint64_t chain1[] = {l_k, l_hot, l_main};
    const uint64_t chain2[] = {l_unknown, l_main};
    const int64_t v1[] = {3, 3000}, v2[] = {1, 1000};
    b.sample(chain1, v1, labels);
    b.sample(chain1, v2, labels);  // the same stack and labels: summed
    b.sample(chain2, v2, std::span(labels, 1));
    EXPECT_EQ(b.samples(), 2u);
    b.set_time(1'700'000'000'000'000'000, 2'500'000'000);

    const Decoded d = decode_profile(b.encode());
    EXPECT_EQ(d.sample_types, (std::vector<std::pair<std::string, std::string>>{{"samples", "count"},
                                                                                {"cpu", "nanoseconds"}}));
    EXPECT_EQ(d.period_type, (std::pair<std::string, std::string>{"cpu", "nanoseconds"}));
    EXPECT_EQ(d.period, 1000);
    EXPECT_EQ(d.time, 1'700'000'000'000'000'000);
    EXPECT_EQ(d.duration, 2'500'000'000);
    ASSERT_EQ(d.samples.size(), 2u);
    EXPECT_EQ(d.samples[0].values, (std::vector<int64_t>{4, 4000}));
    EXPECT_EQ(d.samples[0].num_labels.at("pid"), 42);
    EXPECT_EQ(d.samples[0].str_labels.at("comm"), "app");
    EXPECT_EQ(d.samples[1].str_labels.count("comm"), 0u);
    ASSERT_EQ(d.samples[0].locations.size(), 3u);
    int64_t line = 0;
    EXPECT_EQ(d.function_of(d.samples[0].locations[0]), "do_syscall_64");
    EXPECT_EQ(d.function_of(d.samples[0].locations[1], &line), "ns::hot()");
    EXPECT_EQ(line, 22);
    EXPECT_EQ(d.function_of(d.samples[0].locations[2]), "main");
    EXPECT_EQ(d.function_of(d.samples[1].locations[0]), "[unknown]");
    EXPECT_EQ(scalar(d.locations.at(d.samples[1].locations[0]), 2), 0u);  // no mapping

    // The main binary is written first (pprof's "File:"), ids renumbered consistently.
    ASSERT_EQ(d.mapping_order.size(), 3u);
    const auto& first = d.mappings.at(d.mapping_order[0]);
    EXPECT_EQ(d.mapping_order[0], 1u);
    EXPECT_EQ(d.str(scalar(first, 5)), "/bin/app");
    EXPECT_EQ(d.str(scalar(first, 6)), "1234");
    EXPECT_EQ(scalar(first, 2), 0x555500001000u);
    EXPECT_EQ(scalar(first, 3), 0x555500002000u);
    EXPECT_EQ(scalar(first, 4), 0x1000u);
    EXPECT_EQ(scalar(first, 7), 1u);  // has_functions
    EXPECT_EQ(scalar(first, 9), 1u);  // has_line_numbers: set by the second mapping() call
    const auto& loc_main = d.locations.at(d.samples[0].locations[2]);
    EXPECT_EQ(scalar(loc_main, 2), d.mapping_order[0]);
    EXPECT_EQ(scalar(loc_main, 3), 0x555500001100u);
    const auto& loc_k = d.locations.at(d.samples[0].locations[0]);
    EXPECT_EQ(d.str(scalar(d.mappings.at(scalar(loc_k, 2)), 5)), "[kernel.kallsyms]");
    EXPECT_EQ(scalar(d.mappings.at(scalar(loc_k, 2)), 9), 0u);
    const auto& fn_hot = d.functions.at(f_hot);
    EXPECT_EQ(d.str(scalar(fn_hot, 3)), "_ZN2ns3hotEv");
    EXPECT_EQ(d.str(scalar(fn_hot, 4)), "app.cc");
    EXPECT_EQ(scalar(fn_hot, 5), 20u);
}

// The main binary (written first: pprof's "File:") is the program file in most samples of the
// profiled processes, else of all; shared libraries and pseudo-files never are.
TEST(PprofBuilder, MainMappingIsTheProfiledProgram) {
    auto main_file = [](PprofBuilder& b) {
        const Decoded d = decode_profile(b.encode());
        return d.str(scalar(d.mappings.at(d.mapping_order.at(0)), 5));
    };
    PprofBuilder b({{"samples", "count"}}, {"samples", "count"}, 1);
    const uint64_t sh = b.mapping(0x1000, 0x2000, 0, "/usr/bin/dash", "", false);
    const uint64_t libc = b.mapping(0x7f0000001000, 0x7f0000100000, 0, "/lib/libc.so.6", "", false);
    const uint64_t child = b.mapping(0x3000, 0x4000, 0, "/bin/child", "", false);
    const uint64_t fn = b.function("f", "f", "", 0);
    const uint64_t l_sh = b.location(sh, 0x1100, fn, 0), l_sh2 = b.location(sh, 0x1200, fn, 0);
    const uint64_t l_libc = b.location(libc, 0x7f0000001100, fn, 0);
    const uint64_t l_child = b.location(child, 0x3100, fn, 0);
    const uint64_t pid = b.string_id("pid");
    const PprofBuilder::Label of_sh[] = {{pid, 0, 10}}, of_child[] = {{pid, 0, 11}};
    // The shell: 2 samples, its file twice in one of them (recursion counts once).
    const uint64_t c1[] = {l_sh, l_sh2}, c2[] = {l_libc, l_sh}, c3[] = {l_libc, l_child};
    const int64_t one[] = {1}, many[] = {50};
    b.sample(c1, one, of_sh);
    b.sample(c2, one, of_sh);
    b.sample(c3, many, of_child);
    EXPECT_EQ(main_file(b), "/bin/child");  // no profiled process named: the most sampled
    b.main_processes(pid, {10});
    EXPECT_EQ(main_file(b), "/usr/bin/dash");
    b.main_processes(pid, {99});  // none of its samples: the most sampled of all
    EXPECT_EQ(main_file(b), "/bin/child");

    PprofBuilder libs({{"samples", "count"}}, {"samples", "count"}, 1);
    const uint64_t k = libs.mapping(uint64_t(1) << 63, UINT64_MAX, 0, "[kernel.kallsyms]", "", false);
    const uint64_t so = libs.mapping(0x7f0000001000, 0x7f0000100000, 0, "/lib/libc.so.6", "", false);
    const uint64_t g = libs.function("g", "g", "", 0);
    const uint64_t ck[] = {libs.location(k, 0xffffffff81000000, g, 0),
                           libs.location(so, 0x7f0000001000, g, 0)};
    libs.sample(ck, many, {});
    EXPECT_EQ(main_file(libs), "[kernel.kallsyms]");  // no program file: the first mapping
}

TEST(PprofBuilder, EmptyProfileIsValid) {
    PprofBuilder b({{"samples", "count"}}, {"samples", "count"}, 1);
    const Decoded d = decode_profile(b.encode());
    EXPECT_EQ(d.sample_types.size(), 1u);
    EXPECT_TRUE(d.samples.empty());
    EXPECT_EQ(d.period, 1);
}

TEST(Gzip, MagicAndRoundTrip) {
    std::string data;
    for (int i = 0; i < 100000; ++i) data += char(i * 7 % 251);
    for (const std::string& in : {std::string(), std::string("x"), data}) {
        const std::string z = gzip(in);
        ASSERT_GE(z.size(), 18u);
        EXPECT_EQ(uint8_t(z[0]), 0x1f);
        EXPECT_EQ(uint8_t(z[1]), 0x8b);
        EXPECT_EQ(uint8_t(z[2]), 8);  // deflate
        EXPECT_EQ(gunzip(z), in);
    }
}

}  // namespace
}  // namespace perfprof::output

namespace perfprof::stack {
namespace {

using output::Decoded;

TEST(Printer, AChainWithoutFramesPrintsThatItHasNone) {
    sym::Symbolizer symbols;
    Printer p(symbols, true, true);
    const uint64_t markers[] = {PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
    std::string out;
    p.print(markers, 2, uint32_t(getpid()), 0, out);
    EXPECT_EQ(out, "    [no frame]\n");
    out.clear();
    p.print(markers, 0, uint32_t(getpid()), 0, out);
    EXPECT_EQ(out, "    [no frame]\n");
    const uint64_t one[] = {PERF_CONTEXT_USER, 0x1000};
    out.clear();
    p.print(one, 2, uint32_t(getpid()), 0, out);
    EXPECT_EQ(out.find("[no frame]"), std::string::npos) << out;
}

TEST(Printer, LeafFirstIsFoldReversed) {
    const uint64_t chain[] = {
        PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020, PERF_CONTEXT_USER, 0x1000, 0x2000};
    std::vector<Printer::ChainFrame> f;
    Printer::leaf_first(chain, 6, f);
    ASSERT_EQ(f.size(), 4u);
    EXPECT_EQ(f[0].ip, 0xffffffff81000010u);
    EXPECT_EQ(f[1].ip, 0xffffffff81000020u);
    EXPECT_EQ(f[2].ip, 0x1000u);
    EXPECT_EQ(f[3].ip, 0x2000u);
    EXPECT_EQ(f[0].ctx, Printer::Context::Kernel);
    EXPECT_EQ(f[2].ctx, Printer::Context::User);
    // Kernel frames after user ones still come first; frames before any marker are Other.
    const uint64_t odd[] = {0x10, PERF_CONTEXT_USER, 0x1000, PERF_CONTEXT_KERNEL, 0xffffffff81000010};
    Printer::leaf_first(odd, 5, f);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].ctx, Printer::Context::Kernel);
    EXPECT_EQ(f[1].ctx, Printer::Context::Other);
    EXPECT_EQ(f[2].ctx, Printer::Context::User);
    const uint64_t markers[] = {PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
    Printer::leaf_first(markers, 2, f);
    EXPECT_TRUE(f.empty());

    // fold() names the same frames root first.
    sym::Symbolizer symbols;
    Printer p(symbols, false, true);
    std::string folded, names;
    ASSERT_TRUE(p.fold(chain, 6, uint32_t(getpid()), folded));
    Printer::leaf_first(chain, 6, f);
    for (auto it = f.rbegin(); it != f.rend(); ++it) {
        p.folded_name(*it, uint32_t(getpid()), names);
        names += ';';
    }
    EXPECT_EQ(folded, names);
}

std::string read_link(const char* path) {
    char buf[4096];
    const ssize_t n = ::readlink(path, buf, sizeof buf);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// This process's own code: names and lines from its symbols and DWARF (the tests are built with -g).
TEST(PprofStacks, ChainsOfThisProcess) {
    char dir[] = "/tmp/pprof_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/out.pb.gz";
    sym::Symbolizer symbols;
    Printer printer(symbols, true, true);
    const uint32_t pid = uint32_t(getpid());
    const uint64_t leaf = reinterpret_cast<uint64_t>(&pprof_test_leaf);
    {
        PprofStacks out(path, printer, {"samples", "count", 1'000'000});
        const uint64_t chain[] = {PERF_CONTEXT_USER, leaf + 1, 0x10};  // 0x10: mapped nowhere
        for (int i = 0; i < 3; ++i) out.add_callchain(chain, 3, pid, "me");
        const uint64_t other[] = {PERF_CONTEXT_USER, leaf + 1};
        out.add_callchain(other, 2, pid, "");
        const uint64_t markers[] = {PERF_CONTEXT_USER};
        out.add_callchain(markers, 1, pid, "me");  // no frame: counted nowhere, as in fold()
        out.finish();
    }
    const std::string gz = read_all(path);
    ASSERT_GE(gz.size(), 2u);
    EXPECT_EQ(uint8_t(gz[0]), 0x1f);
    EXPECT_EQ(uint8_t(gz[1]), 0x8b);
    const Decoded d = output::decode_profile(output::gunzip(gz));
    ASSERT_EQ(d.samples.size(), 2u);
    EXPECT_EQ(d.period, 1'000'000);
    EXPECT_GT(d.time, 0);
    EXPECT_GE(d.duration, 0);
    uint64_t total = 0;
    for (const auto& s : d.samples) {
        total += uint64_t(s.values.at(0));
        EXPECT_EQ(s.values.at(1), s.values.at(0) * 1'000'000);
        EXPECT_EQ(s.num_labels.at("pid"), int64_t(pid));
        int64_t line = 0;
        EXPECT_EQ(d.function_of(s.locations.at(0), &line), "pprof_test_leaf");
        EXPECT_GT(line, 0);
        const auto& loc = d.locations.at(s.locations[0]);
        EXPECT_EQ(output::scalar(loc, 3), leaf + 1);
        const auto& m = d.mappings.at(output::scalar(loc, 2));
        EXPECT_LE(output::scalar(m, 2), leaf);
        EXPECT_GT(output::scalar(m, 3), leaf);
        EXPECT_EQ(output::scalar(m, 9), 1u);  // has_line_numbers
        EXPECT_EQ(d.str(output::scalar(m, 5)), read_link("/proc/self/exe"));
        EXPECT_EQ(d.mapping_order.at(0), output::scalar(loc, 2));  // the main binary first
        if (s.values[0] == 3) {
            EXPECT_EQ(s.str_labels.at("comm"), "me");
            ASSERT_EQ(s.locations.size(), 2u);
            EXPECT_EQ(d.function_of(s.locations[1]), "[unknown]");
        } else {
            EXPECT_EQ(s.str_labels.count("comm"), 0u);
        }
    }
    EXPECT_EQ(total, 4u);
    std::remove(path.c_str());
    ::rmdir(dir);
}

TEST(PprofStacks, UnwritablePathFailsAtStart) {
    sym::Symbolizer symbols;
    Printer printer(symbols, false, true);
    EXPECT_THROW(PprofStacks("/nonexistent/dir/x.pb.gz", printer, {}), Error);
}

// serve's profiles: kept in memory, with labels on every sample, a comment and a default type.
TEST(PprofStacks, InMemoryWithLabels) {
    sym::Symbolizer symbols;
    Printer printer(symbols, false, true);
    PprofStacks out(printer, {"samples", "count", 1000});
    out.label("executable", "/bin/x");
    out.label("build_id", "abcd");
    out.builder().comment("a note");
    out.builder().default_sample_type("samples");
    const uint64_t chain[] = {PERF_CONTEXT_USER, 0x10};
    out.add_callchain(chain, 2, 77, "me");
    out.add_callchain(chain, 2, 78, "");
    const Decoded d = output::decode_profile(output::gunzip(out.gzipped()));
    ASSERT_EQ(d.samples.size(), 2u);
    for (const auto& s : d.samples) {
        EXPECT_EQ(s.str_labels.at("executable"), "/bin/x");
        EXPECT_EQ(s.str_labels.at("build_id"), "abcd");
        EXPECT_EQ(s.str_labels.count("comm"), s.num_labels.at("pid") == 77 ? 1u : 0u);
    }
    EXPECT_EQ(d.comments, std::vector<std::string>{"a note"});
    EXPECT_EQ(d.default_sample_type, "samples");
}

}  // namespace
}  // namespace perfprof::stack
