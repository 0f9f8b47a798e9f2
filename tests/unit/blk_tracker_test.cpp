// blktrace's request tracker (block/blk_tracker): stages by sector overlap, the labels of
// SPEC §P21, the statistics per stage and the table.
#include <gtest/gtest.h>

#include <string>

#include "block/blk_tracker.h"

namespace perfprof::block {
namespace {

constexpr uint64_t us = 1000;

TEST(BlkTracker, FollowsARequestThroughItsStages) {
    Tracker t;
    EXPECT_EQ(t.on_event(Getrq, 7, 100, 8, 10 * us, 0).label, nullptr);
    auto r = t.on_event(Insert, 7, 100, 8, 15 * us, 0);
    EXPECT_TRUE(r.tracked);
    EXPECT_EQ(r.label, nullptr);
    EXPECT_EQ(r.delta, 5 * us);
    EXPECT_EQ(t.on_event(Issue, 7, 104, 1, 20 * us, 0).label, nullptr);  // overlap is enough
    EXPECT_EQ(t.on_event(Complete, 7, 100, 8, 120 * us, 0).delta, 100 * us);
    EXPECT_EQ(t.tracked(), 0u);
    EXPECT_EQ(t.stats(Insert).n, 1u);
    EXPECT_EQ(t.stats(Complete).sum, 100 * us);
}

TEST(BlkTracker, Labels) {
    Tracker t;
    t.on_event(Getrq, 7, 0, 8, 1 * us, 0);
    EXPECT_STREQ(t.on_event(Issue, 7, 0, 8, 2 * us, 0).label, "BYPASS_INSERT");
    EXPECT_STREQ(t.on_event(Getrq, 7, 0, 8, 3 * us, 0).label, "EXIST");
    EXPECT_STREQ(t.on_event(Complete, 7, 0, 8, 4 * us, 0).label, "LOST");
    EXPECT_EQ(t.on_event(Complete, 7, 0, 8, 5 * us, 0).tracked, false);  // untracked complete: ignored
    EXPECT_EQ(t.tracked(), 0u);
    t.on_event(Insert, 8, 0, 8, 1 * us, 0);  // another device, same sectors
    EXPECT_FALSE(t.on_event(Issue, 7, 0, 8, 2 * us, 0).tracked);
    auto r = t.on_event(Issue, 8, 0, 8, 30 * us, 10 * us);
    EXPECT_STREQ(r.label, "GREATER_THAN");
    EXPECT_TRUE(r.print);
    EXPECT_EQ(t.stats(Issue).above, 1u);
    EXPECT_EQ(t.on_event(Getrq, 7, ~uint64_t(0), 0, 1, 0).tracked, false);  // flush
}

TEST(BlkTracker, TableAndReset) {
    Tracker t;
    t.on_event(Insert, 1, 0, 8, 0, 0);
    t.on_event(Issue, 1, 0, 8, 1500, 1000);
    t.on_event(Insert, 1, 64, 8, 0, 0);
    t.on_event(Issue, 1, 64, 8, 500, 1000);
    const std::string s = t.table("us", true, false);
    EXPECT_EQ(s,
              "            start => end                   reqs        total(us)      min(us)      avg(us)    "
              "  max(us)    than(reqs)\n"
              "-----------------    ----------------- -------- ---------------- ------------ ------------ "
              "------------  -------------\n"
              "      block_getrq => block_rq_insert          0            0.000        0.000        0.000    "
              "    0.000      0 (  0%)\n"
              "  block_rq_insert => block_rq_issue           2            2.000        0.500        1.000    "
              "    1.500      1 ( 50%)\n"
              "   block_rq_issue => block_rq_complete        0            0.000        0.000        0.000    "
              "    0.000      0 (  0%)\n");
    EXPECT_EQ(t.stats(Issue).n, 0u);
    EXPECT_EQ(t.table("kcyc", false, false).find("than"), std::string::npos);
}

}  // namespace
}  // namespace perfprof::block

// blktrace's device from a fake sysfs tree: a disk, and a partition whose disk is the
// directory above it (its minor is no arithmetic of the partition's).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "block/block_device.h"
#include "perf-prof/error.h"

namespace perfprof::block {
namespace {

TEST(BlkDevice, DiskAndPartitionFromSysfs) {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/blk_device_test.XXXXXX";
    const fs::path root = ::mkdtemp(tmpl);
    const fs::path disk = root / "devices/pci/nvme/nvme0n1", part = disk / "nvme0n1p2";
    fs::create_directories(part);
    fs::create_directories(root / "dev/block");
    std::ofstream(disk / "dev") << "259:0\n";
    std::ofstream(part / "dev") << "259:7\n";
    std::ofstream(part / "partition") << "2\n";
    std::ofstream(part / "start") << "4096\n";
    std::ofstream(part / "size") << "2048\n";
    fs::create_directory_symlink(disk, root / "dev/block/259:0");
    fs::create_directory_symlink(part, root / "dev/block/259:7");

    BlockDev d = resolve_block_device(259, 0, root.string());
    EXPECT_FALSE(d.partition);
    EXPECT_EQ(d.filter(), "dev==" + std::to_string((259u << 20) | 0));
    BlockDev p = resolve_block_device(259, 7, root.string());
    EXPECT_TRUE(p.partition);
    EXPECT_EQ(p.minor, 0u);  // the disk's, not 7 - 2
    EXPECT_EQ(p.filter(), "dev==" + std::to_string(259u << 20) + " && sector>=4096 && sector<6144");
    fs::remove(part / "size");
    EXPECT_THROW(resolve_block_device(259, 7, root.string()), Error);
    fs::remove_all(root);
}

}  // namespace
}  // namespace perfprof::block
