// The cache of the kernel image's symbols (lib/sym/kallsyms_cache.h): keyed by the boot, the
// release and _text; used only when it is ours alone; text addresses only.
#include "sym/kallsyms_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "sym/kallsyms.h"

using namespace perfprof::sym;
namespace fs = std::filesystem;

namespace {

KernelIdentity g_id;  // what the test's "running kernel" is

KernelIdentity test_identity(const char*) {
    return g_id;
}

// A kallsyms text: the kernel image's markers and functions, then a module's and a BPF
// program's symbols; `tag` is part of every function's name, to tell two versions apart.
std::string kallsyms_text(const std::string& tag) {
    return "0000000000000000 A fixed_percpu_data\n"
           "ffffffff81000000 T _stext\n"
           "ffffffff81000000 T _text\n"
           "ffffffff81000100 T fn_a" +
           tag +
           "\n"
           "ffffffff81000200 T fn_b" +
           tag +
           "\n"
           "ffffffff81000200 t fn_alias" +
           tag +
           "\n"
           "ffffffff81001000 T _etext\n"
           "ffffffff82000000 D some_data" +
           tag +
           "\n"
           "ffffffff83000000 T _sinittext\n"
           "ffffffff83000040 t init_fn" +
           tag +
           "\n"
           "ffffffff83000100 T _einittext\n"
           "ffffffffc0001000 t mod_fn" +
           tag +
           "\t[mod]\n"
           "ffffffffc0002000 t bpf_prog_1_f" +
           tag + "\t[bpf]\n";
}

class KallsymsCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/kallsyms_cache_test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        dir_ = root_ + "/cache";
        file_ = root_ + "/kallsyms";
        g_id = {"boot-1", "6.1.0 #1 SMP", 0xffffffff81000000};
        put_kallsyms("1");
    }
    void TearDown() override { fs::remove_all(root_); }

    void put_kallsyms(const std::string& tag) { std::ofstream(file_) << kallsyms_text(tag); }
    std::string cache_file() const { return dir_ + "/kallsyms"; }
    Kallsyms table() const { return Kallsyms(file_, dir_, test_identity); }

    std::string root_, dir_, file_;
};

}  // namespace

TEST(KallsymsCacheText, TextAddressFromTheHead) {
    EXPECT_EQ(text_address("0000000000000000 A fixed_percpu_data\n"
                           "ffffffff81000000 T _stext\n"
                           "ffffffff81000010 T _text\n"),
              0xffffffff81000010u);
    EXPECT_EQ(text_address("ffffffff81000000 T _stext\nffffffff8100"), 0xffffffff81000000u);  // no _text
    EXPECT_EQ(text_address("ffffffff81000000 T _te"), 0u);                                    // cut line
    EXPECT_EQ(text_address("garbage\n"), 0u);
}

TEST_F(KallsymsCacheTest, WrittenOnTheFirstReadThenUsedForTextAddresses) {
    {
        Kallsyms k = table();
        EXPECT_STREQ(k.find(0xffffffff81000104), "fn_a1");
        EXPECT_FALSE(k.from_cache_only());  // no cache yet: all of kallsyms
    }
    struct stat st;
    ASSERT_EQ(::stat(cache_file().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    put_kallsyms("2");  // what the file says now is only read where the cache has no answer
    Kallsyms k = table();
    uint64_t off = 0;
    EXPECT_STREQ(k.find(0xffffffff81000104, &off), "fn_a1");
    EXPECT_EQ(off, 4u);
    EXPECT_STREQ(k.find(0xffffffff81000200), "fn_alias1");  // two names: the first in name order
    EXPECT_STREQ(k.find(0xffffffff83000041), "init_fn1");
    EXPECT_TRUE(k.from_cache_only());
    EXPECT_STREQ(k.find(0xffffffffc0002008), "bpf_prog_1_f2");  // outside the image: kallsyms
    EXPECT_FALSE(k.from_cache_only());
    EXPECT_STREQ(k.find(0xffffffff82000008), "some_data2");  // data, not text: kallsyms
}

TEST_F(KallsymsCacheTest, AStaleKeyRereadsAndRewrites) {
    table().find(0xffffffff81000104);
    put_kallsyms("2");
    for (auto change : {+[] { g_id.boot_id = "boot-2"; }, +[] { g_id.release = "6.1.0 #2 SMP"; },
                        +[] { g_id.text += 0x200000; }}) {
        change();
        Kallsyms k = table();
        if (g_id.text != 0xffffffff81000000) {
            // Another _text than the file's: the table is read and no cache written for it.
            EXPECT_STREQ(k.find(0xffffffff81000104), "fn_a2");
            EXPECT_FALSE(k.from_cache_only());
            continue;
        }
        EXPECT_STREQ(k.find(0xffffffff81000104), "fn_a2");
        EXPECT_FALSE(k.from_cache_only());
        Kallsyms again = table();  // rewritten for the new key
        EXPECT_STREQ(again.find(0xffffffff81000104), "fn_a2");
        EXPECT_TRUE(again.from_cache_only());
    }
    EXPECT_EQ(KallsymsCache::open(dir_, g_id), nullptr);
}

TEST_F(KallsymsCacheTest, NotUsedUnlessOursAloneAndWellFormed) {
    table().find(0xffffffff81000104);
    ASSERT_NE(KallsymsCache::open(dir_, g_id), nullptr);
    const std::string good = root_ + "/good";
    fs::copy_file(cache_file(), good);

    ::chmod(cache_file().c_str(), 0644);  // others may read it
    EXPECT_EQ(KallsymsCache::open(dir_, g_id), nullptr);
    ::chmod(cache_file().c_str(), 0600);
    ::chmod(dir_.c_str(), 0777);  // others may replace it
    EXPECT_EQ(KallsymsCache::open(dir_, g_id), nullptr);
    ::chmod(dir_.c_str(), 0700);

    fs::remove(cache_file());
    fs::create_symlink(good, cache_file());  // a link, even to a good cache
    EXPECT_EQ(KallsymsCache::open(dir_, g_id), nullptr);
    fs::remove(cache_file());

    fs::copy_file(good, cache_file());
    ::chmod(cache_file().c_str(), 0600);
    ASSERT_NE(KallsymsCache::open(dir_, g_id), nullptr);
    for (auto size : {fs::file_size(good) - 1, uintmax_t(100), uintmax_t(0)}) {
        fs::resize_file(cache_file(), size);
        EXPECT_EQ(KallsymsCache::open(dir_, g_id), nullptr) << size;
        Kallsyms k = table();
        EXPECT_STREQ(k.find(0xffffffff81000104), "fn_a1");  // read again, and rewritten
        EXPECT_NE(KallsymsCache::open(dir_, g_id), nullptr);
    }
}

TEST_F(KallsymsCacheTest, NoCacheWhereItCannotBeWrittenOrAddressesAreHidden) {
    const std::string blocked = file_ + "/cache";  // under a regular file: cannot be made
    Kallsyms k(file_, blocked, test_identity);
    EXPECT_STREQ(k.find(0xffffffff81000104), "fn_a1");
    EXPECT_STREQ(k.find(0xffffffffc0001001), "mod_fn1");

    g_id.text = 0;  // kallsyms shows zeros to this user
    table().find(0xffffffff81000104);
    EXPECT_FALSE(fs::exists(cache_file()));
}

TEST_F(KallsymsCacheTest, AModuleSymbolInsideTheImageIsNoCache) {
    std::ofstream(file_, std::ios::app) << "ffffffff81000300 t odd\t[mod]\n";
    table().find(0xffffffff81000104);
    EXPECT_FALSE(fs::exists(cache_file()));
}

TEST(KallsymsCacheLive, AnswersAsTheWholeTable) {
    const KernelIdentity id = running_kernel("/proc/kallsyms");
    if (id.text == 0) GTEST_SKIP() << "kernel addresses hidden (not root)";
    std::ifstream f("/proc/kallsyms");
    std::stringstream ss;
    ss << f.rdbuf();
    const Kallsyms whole(ss.str());
    char tmpl[] = "/tmp/kallsyms_cache_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = std::string(tmpl) + "/cache";
    g_id = id;
    Kallsyms writer("/proc/kallsyms", dir, test_identity);
    writer.find(0);
    auto cache = KallsymsCache::open(dir, id);
    ASSERT_NE(cache, nullptr);
    EXPECT_GT(cache->size(), 1000u);
    std::mt19937_64 rng(7);
    size_t covered = 0;
    for (int i = 0; i < 200000 && covered < 20000; i++) {
        const uint64_t addr = id.text + rng() % (uint64_t(64) << 20);
        if (!cache->covers(addr)) continue;
        covered++;
        uint64_t o1 = 0, o2 = 0;
        const char* a = cache->find(addr, &o1);
        const char* b = whole.find(addr, &o2);
        ASSERT_TRUE(a && b) << std::hex << addr;
        EXPECT_STREQ(a, b) << std::hex << addr;
        EXPECT_EQ(o1, o2);
    }
    EXPECT_GT(covered, 1000u);
    fs::remove_all(tmpl);
}
