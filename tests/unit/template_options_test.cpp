// output::TemplateOptions: the given options in order, then the hints in order.
#include "output/template_options.h"

#include <gtest/gtest.h>

namespace perfprof::output {
namespace {

TEST(TemplateOptions, GivenFirstThenHintsEachInOrder) {
    Options opt;
    opt.pids = "42";
    opt.mmap_pages = 64;
    TemplateOptions o;
    o.flag(true, "-g");
    o.flag(false, "--perins");
    o.value(true, "--than", "10");
    o.value(false, "--heatmap", "");
    o.given("--pprof p.pb.gz");
    o.attach(opt);
    o.pages(opt);
    EXPECT_EQ(o.text(), "-g --than 10 --pprof p.pb.gz -p 42 -m 64 [--perins] [--heatmap .] [-C .] [-i .] ");
}

TEST(TemplateOptions, NothingGivenIsAllHints) {
    Options opt;
    TemplateOptions o;
    o.attach(opt);
    o.pages(opt);
    EXPECT_EQ(o.text(), "[-C .] [-p .] [-i .] [-m .] ");
    opt.cpus = "0-1";
    opt.interval_ms = 1000;
    TemplateOptions g;
    g.attach(opt);
    EXPECT_EQ(g.text(), "-C 0-1 -i 1000 [-p .] ");
}

}  // namespace
}  // namespace perfprof::output
