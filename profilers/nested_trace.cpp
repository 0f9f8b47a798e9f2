// nested-trace: events that nest like function calls (SPEC-PROFILERS §P7). lib/pairing/nested
// keeps a stack of open entries per key and builds the call tree; impl delay hands each
// entry → return pair to multi-trace's delay implementation (lib/pairing/delay), call and
// call-delay print the tree (with latency columns).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "pairing/driver.h"
#include "pairing/model.h"
#include "pairing/nested.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "stack/stack_printer.h"

namespace perfprof {

namespace {

const OptionRow kOwnOptions[] = {pairing::rows::key, pairing::rows::impl, pairing::rows::than,
                                 pairing::rows::detail, pairing::rows::heatmap};

class NestedTraceProfiler final : public Profiler, private pairing::NestedStacks::Sink {
public:
    explicit NestedTraceProfiler(Context& ctx) : ctx_(ctx), env_(ctx), stacks_(*this) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const pairing::Settings& own = opt.own_as<pairing::Settings>();
        impl_ = own.impl_given ? own.impl : "call-delay";
        if (impl_ == "pair" || impl_ == "kmemprof" || impl_ == "syscalls")
            throw Error::usage("--impl " + impl_ + " not supported by nested-trace");
        if (impl_ != "delay" && impl_ != "call" && impl_ != "call-delay")
            throw Error::usage("--impl " + impl_ + " not implemented");
        EventPlan p;
        bool stacks = false;
        for (const std::string& list : opt.events) plan_list(opt, own, list, p, stacks);
        if (lists_ == 0) throw Error::usage("nested-trace needs at least one -e ENTRY,RETURN");
        by_thread_ = !ctx_.threads().empty();
        const size_t rings = by_thread_ ? ctx_.threads().size() : size_t(ctx_.cpu_count());
        if (keyed_ && rings > 1 && !opt.order)
            throw Error::usage("Enable --key or pull= attr, also need to enable --order.");
        env_.tsc = ctx_.tsc_time();
        env_.than = own.than_ns;
        env_.perins = opt.perins && impl_ == "delay";
        env_.heatmap = own.heatmap;
        env_.verbose = opt.verbose;
        env_.key_name = keyed_ ? (own.key.empty() ? "key" : own.key) : by_thread_ ? "THREAD" : "CPU";
        env_.key_width = keyed_ ? 6 : int(env_.key_name.size());
        env_.comm_column = by_thread_ && !keyed_;
        if (stacks) {
            printer_ = std::make_unique<stack::Printer>(ctx_.symbolizer(), opt.kernel_callchain.value_or(true),
                                                        opt.user_callchain.value_or(false));
            env_.printer = printer_.get();
        }
        for (size_t i = 0; i < index_.size(); i++)
            if (index_[i].te) index_[i].te->spec = &p.events[i];
        std::vector<std::string> names;
        for (size_t k = 0; k < lists_; k++) names.push_back(env_.pairs[k].ev1->display());
        if (impl_ == "delay")
            delay_ = pairing::make_delay(env_);
        else
            tree_ = std::make_unique<pairing::CallTree>(std::move(names));
        p.pages = stacks ? 128 : 64;
        p.order = opt.order;
        p.user_filter = true;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (s.from || s.event_index < 0 || size_t(s.event_index) >= index_.size()) return;
        const Slot& at = index_[size_t(s.event_index)];
        if (at.list < 0) return;  // untraced
        if (ctx_.options().verbose > 1) env_.print_event(s);
        const uint64_t key = key_of(*at.te, s);
        if (at.entry)
            stacks_.entry(at.list, s, key);
        else
            stacks_.exit(at.list, s, key);
    }

    void lost(const LostRange& l) noexcept override {
        (void)l;
        stacks_.clear();
    }
    void interval() override { report(); }
    void finish() override {
        report();
        if (delay_) delay_->finish();
    }

private:
    struct Slot {
        int list = -1;  // -1: untraced
        bool entry = false;
        pairing::TraceEvent* te = nullptr;
    };

    void plan_list(const Options& opt, const pairing::Settings& own, const std::string& text, EventPlan& p,
                   bool& stacks) {
        std::vector<event::Resolved> resolved =
            event::resolve_event_list(text, ctx_.tep(), opt.verbose, profiler_names());
        std::vector<pairing::TraceEvent*> traced;
        std::string items;
        for (event::Resolved& r : resolved) {
            if (r.item.kind == event::Kind::Profiler) {  // context only (untraced)
                p.nested.push_back({r.item.sys, r.item.profiler_options, r.item.attrs.cpus});
                continue;
            }
            auto te = std::make_unique<pairing::TraceEvent>();
            te->sys = r.item.sys;
            te->name = r.item.name;
            te->alias = r.item.attrs.alias;
            te->untraced = r.item.attrs.untraced;
            te->stack = r.item.attrs.stack;
            te->index = int(p.events.size());
            te->key = event::compile_attr(r, "key", r.item.attrs.key);
            if (!te->key) te->key = event::compile_attr(r, "key", own.key);
            keyed_ |= te->key != nullptr;
            items += (items.empty() ? "" : ",") + te->full() + (te->untraced ? "//untraced/" : "");
            p.events.push_back(event::planned_event(r, te->stack, opt.user_callchain.value_or(false),
                                                    opt.kernel_callchain.value_or(true), opt.dwarf_stack));
            stacks |= te->stack;
            index_.push_back({-1, false, te.get()});
            if (!te->untraced) traced.push_back(te.get());
            env_.events.push_back(std::move(te));
        }
        if (traced.size() != 2) throw Error::usage("-e " + items + " are unpaired");
        const int list = int(lists_++);
        for (int i = 0; i < 2; i++) {
            traced[size_t(i)]->position = i;
            index_[size_t(traced[size_t(i)]->index)] = {list, i == 0, traced[size_t(i)]};
        }
        env_.pairs.push_back({list, traced[0], traced[1]});
    }

    uint64_t key_of(const pairing::TraceEvent& te, const Sample& s) const {
        if (te.key) return uint64_t(te.key->eval(filter::sample_context(s, ctx_.eval_hooks())));
        if (!by_thread_) return s.cpu;
        const std::vector<int>& t = ctx_.threads();
        return s.instance >= 0 && size_t(s.instance) < t.size() ? uint64_t(t[size_t(s.instance)]) : s.tid;
    }

    // NestedStacks::Sink
    void called(int caller, int list) override {
        if (!tree_) return;
        std::string out;
        tree_->called(caller, list, out);
        if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
    }
    void returned(int list, const Sample& entry, const Sample& ret, uint64_t key) override {
        const pairing::Pair& pair = env_.pairs[size_t(list)];
        if (delay_) return delay_->two(pair, entry, ret, key);
        const uint64_t t = ret.time - entry.time;
        tree_->latency(list, t, env_.than);
        if (env_.than && t > env_.than) env_.print_pair(pair, entry, ret, key);
    }

    void report() {
        if (delay_) return delay_->report();
        if (!tree_->dirty()) return;
        std::string out;
        if (impl_ == "call") {
            out = tree_->tree();
        } else {
            core::append_wall(core::realtime_now_ns(), out);
            out += " \n" + tree_->table(env_.unit());
        }
        std::fwrite(out.data(), 1, out.size(), stdout);
        std::fflush(stdout);
    }

    Context& ctx_;
    pairing::Env env_;
    pairing::NestedStacks stacks_;
    std::string impl_;
    size_t lists_ = 0;
    bool keyed_ = false, by_thread_ = false;
    std::vector<Slot> index_;  // per planned event
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<pairing::Impl> delay_;
    std::unique_ptr<pairing::CallTree> tree_;
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    return pairing::help_template(opt, events, "nested-trace", "delay");
}

}  // namespace

extern const ProfilerInfo nested_trace_info;
const ProfilerInfo nested_trace_info = {
    .name = "nested-trace",
    .summary = "Events that nest like function calls: latency of each entry/return pair and the call tree.",
    .usage = "-e ENTRY,RETURN [-e ENTRY,RETURN ...] [-k EXPR] [--impl call|call-delay|delay] [--than TIME] "
             "[--perins] [--heatmap NAME] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Each -e holds one entry event then its return event (untraced events and",
            "    profilers may be added). Per key (key=/-k, else the CPU or thread) the open",
            "    entries form a stack: an entry is called by the newest open one, a return",
            "    closes the newest open entry of its list.",
            "    --impl call-delay (default): the call tree with latency columns; call: the",
            "    tree only; delay: multi-trace's latency table per list.",
            "    Recommendation followed (SPEC §P7): --impl pair|kmemprof|syscalls are rejected.",
            "",
            "EXAMPLES",
            "    perf-prof nested-trace -e irq:softirq_entry/vec==1/,irq:softirq_exit/vec==1/ \\",
            "        -e timer:timer_expire_entry,timer:timer_expire_exit -i 1000 --than 50us",
        },
    .options =
        {
            {Opt::Event, "ENTRY,RETURN (and untraced events)"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
            {Opt::Perins, "impl delay: statistics per key"},
        },
    .create = create_profiler<NestedTraceProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = OwnOptions<pairing::Settings>::make,
};

}  // namespace perfprof
