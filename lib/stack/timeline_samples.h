// --timeline for profilers whose samples become instants (trace, profile): each sample an
// instant on its thread's track, with its CPU, its record's fields and its call chain (an
// array of symbolized frame names, leaf first, named as the flame graphs name them) as args.
// Symbolizing per sample happens only here, that is only when --timeline asks for it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "output/timeline.h"
#include "perf-prof/profiler.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

class TimelineSamples {
public:
    // Null when --timeline is not given; `printer` symbolizes the chains (null: no stacks).
    static std::unique_ptr<TimelineSamples> from_options(Context& ctx, Printer* printer);
    TimelineSamples(Context& ctx, const std::string& path, Printer* printer);

    // `s` as an instant named `name`; `fields`: its tracepoint fields as args. `period` > 0
    // is given as an arg too.
    void instant(std::string_view name, const Sample& s, bool fields, uint64_t period = 0);
    void close() { writer_.close(); }
    output::TimelineWriter& writer() { return writer_; }

private:
    output::TimelineWriter writer_;
    output::TimelineTracks tracks_;
    Printer* printer_;
    std::vector<Printer::ChainFrame> frames_;
    std::string name_;
};

}  // namespace perfprof::stack
