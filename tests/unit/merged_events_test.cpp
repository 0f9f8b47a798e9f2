#include "event/merged_events.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "event/resolve.h"
#include "perf-prof/error.h"
#include "tep/tep.h"
#include "tep/tracefs.h"

namespace perfprof::event {
namespace {

EventItem parsed(const std::string& text) {
    std::vector<EventItem> v = parse_event_list(text, {});
    EXPECT_EQ(v.size(), 1u);
    return v.at(0);
}

TEST(MergedEvents, Table) {
    const MergedEvent* m = merged_event("kmem", "kmalloc_node");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->name, "kmalloc");
    EXPECT_EQ(m->filter, "node != -1");
    m = merged_event("kmem", "kmem_cache_alloc_node");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->name, "kmem_cache_alloc");
    EXPECT_EQ(m->field, "node");
    // Only those: the merged events themselves, other systems and near names are not renamed.
    EXPECT_EQ(merged_event("kmem", "kmalloc"), nullptr);
    EXPECT_EQ(merged_event("kmem", "kfree"), nullptr);
    EXPECT_EQ(merged_event("sched", "kmalloc_node"), nullptr);
    EXPECT_EQ(merged_event("kmem", "kmalloc_node2"), nullptr);
}

TEST(MergedEvents, FilterCombinesWithTheUsers) {
    const MergedEvent& m = *merged_event("kmem", "kmalloc_node");
    EventItem e = as_merged(parsed("kmem:kmalloc_node"), m);
    EXPECT_EQ(e.sys, "kmem");
    EXPECT_EQ(e.name, "kmalloc");
    EXPECT_EQ(e.filter, "node != -1");
    EXPECT_TRUE(e.has_filter);
    // The user's filter is parenthesised: its || cannot escape the node condition.
    e = as_merged(parsed("kmem:kmalloc_node/bytes_alloc>64 || node==0/stack/key=ptr/"), m);
    EXPECT_EQ(e.filter, "node != -1 && ( bytes_alloc>64 || node==0 )");
    EXPECT_TRUE(e.attrs.stack);
    EXPECT_EQ(e.attrs.key, "ptr");
    EXPECT_EQ(e.text, "kmem:kmalloc_node/bytes_alloc>64 || node==0/stack/key=ptr/");
    // An empty filter part is no filter.
    EXPECT_EQ(as_merged(parsed("kmem:kmalloc_node//stack/"), m).filter, "node != -1");
}

// Against the running kernel's tracefs (skipped without one).
class MergedOnThisKernel : public testing::Test {
protected:
    void SetUp() override {
        try {
            tep::tracefs_dir();
        } catch (const Error& e) {
            GTEST_SKIP() << "no tracefs: " << e.what();
        }
    }
    // Resolved::tp points into the Tep, so the tests share one that outlives every result.
    static tep::Tep& tep() {
        static tep::Tep t;
        return t;
    }
};

// Where the kernel lacks the old event, the old name resolves to the merged one; where it has
// it (before Linux 6.1), the old event itself.
TEST_F(MergedOnThisKernel, Resolved) {
    for (const char* old : {"kmalloc_node", "kmem_cache_alloc_node"}) {
        std::vector<Resolved> v =
            resolve_event_list(std::string("kmem:") + old + "/bytes_alloc>8/", tep(), 0, {});
        ASSERT_EQ(v.size(), 1u);
        const Resolved& r = v[0];
        ASSERT_NE(r.tp, nullptr);
        if (r.merged_from.empty()) {
            EXPECT_EQ(r.item.name, old);
            EXPECT_EQ(r.item.filter, "bytes_alloc>8");
            continue;
        }
        EXPECT_EQ(r.merged_from, std::string("kmem:") + old);
        EXPECT_EQ(r.item.name, merged_event("kmem", old)->name);
        EXPECT_EQ(std::string(r.tp->name), r.item.name);
        EXPECT_EQ(r.item.filter, "node != -1 && ( bytes_alloc>8 )");
    }
}

TEST_F(MergedOnThisKernel, VerboseNote) {
    testing::internal::CaptureStdout();
    std::vector<Resolved> v = resolve_event_list("kmem:kmalloc_node", tep(), 1, {});
    std::string out = testing::internal::GetCapturedStdout();
    ASSERT_EQ(v.size(), 1u);
    if (v[0].merged_from.empty()) GTEST_SKIP() << "this kernel has kmem:kmalloc_node";
    EXPECT_EQ(out, "kmem:kmalloc_node is kmem:kmalloc/node != -1/ on this kernel\n");
    testing::internal::CaptureStdout();
    resolve_event_list("kmem:kmalloc_node", tep(), 0, {});
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
}

}  // namespace
}  // namespace perfprof::event
