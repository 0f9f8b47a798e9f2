// stack::stack_outputs: the printer, flame graph and pprof output a profiler's options ask for.
#include <gtest/gtest.h>

#include <linux/perf_event.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "perf-prof/error.h"
#include "stack/stack_outputs.h"

namespace perfprof::stack {
namespace {

TEST(StackOutputs, PrinterOnlyWithStacks) {
    sym::Symbolizer symbols;
    Options opt;
    StackOutputs none = stack_outputs(opt, symbols, {.profiler = "test"});
    EXPECT_FALSE(none.printer || none.flame || none.pprof);
    opt.call_graph = true;
    StackOutputs some = stack_outputs(opt, symbols, {.profiler = "test", .stacks = true, .max_stack = 5});
    ASSERT_TRUE(some.printer);
    EXPECT_EQ(some.printer->max_stack(), 5);
    EXPECT_EQ(&some.printer->symbolizer(), &symbols);
    EXPECT_FALSE(some.flame || some.pprof);
}

TEST(StackOutputs, FlameGraphWhenAskedAndAllowed) {
    char dir[] = "/tmp/stack_outputs_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    sym::Symbolizer symbols;
    Options opt;
    opt.call_graph = true;
    opt.flame_graph_given = true;
    opt.flame_graph = std::string(dir) + "/g";
    StackOutputs refused = stack_outputs(opt, symbols, {.profiler = "test", .stacks = true, .flame = false});
    EXPECT_FALSE(refused.flame);
    {
        StackOutputs out = stack_outputs(opt, symbols, {.profiler = "test", .stacks = true});
        ASSERT_TRUE(out.flame);
        std::unique_ptr<Printer> p;
        std::unique_ptr<FlameGraph> f;
        std::unique_ptr<PprofStacks> pp;
        out.move_to(p, f, pp);
        EXPECT_TRUE(p && f && !pp);
    }
    std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(StackOutputs, PprofNeedsStacks) {
    sym::Symbolizer symbols;
    Options opt;
    opt.pprof_given = true;
    opt.pprof = "/tmp/never-written.pb.gz";
    EXPECT_THROW(stack_outputs(opt, symbols, {.profiler = "test"}), Error);
}

TEST(StackOutputs, MaxStackOfAnEvent) {
    perf_event_attr a{};
    EXPECT_EQ(max_stack_of(a), kMaxStack);
    a.sample_max_stack = 16;
    EXPECT_EQ(max_stack_of(a), 16);
}

}  // namespace
}  // namespace perfprof::stack
