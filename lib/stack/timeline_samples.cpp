#include "stack/timeline_samples.h"

namespace perfprof::stack {

std::unique_ptr<TimelineSamples> TimelineSamples::from_options(Context& ctx, Printer* printer) {
    const Options& opt = ctx.options();
    if (!opt.timeline_given) return nullptr;
    return std::make_unique<TimelineSamples>(ctx, opt.timeline, printer);
}

// The samples carry their process id (PERF_SAMPLE_TID): no lookup of it.
TimelineSamples::TimelineSamples(Context& ctx, const std::string& path, Printer* printer)
    : writer_(path), tracks_(writer_, ctx, nullptr), printer_(printer) {}

void TimelineSamples::instant(std::string_view name, const Sample& s, bool fields, uint64_t period) {
    writer_.instant(name, tracks_.pid(s.pid, s.tid), s.tid, s.time);
    if (s.cpu != UINT32_MAX) writer_.arg_u("cpu", s.cpu);
    if (period) writer_.arg_u("period", period);
    if (fields) output::append_field_args(writer_, s);
    if (printer_ && s.callchain) {
        Printer::leaf_first(s.callchain, s.callchain_nr, frames_);
        writer_.begin_array("stack");
        for (const Printer::ChainFrame& f : frames_) {
            name_.clear();
            printer_->folded_name(f, s.pid, name_);
            writer_.array_item(name_);
        }
        writer_.end_array();
    }
    writer_.end();
}

}  // namespace perfprof::stack
