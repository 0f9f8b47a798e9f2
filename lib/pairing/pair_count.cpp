// --impl pair (SPEC §4.6.8): how many event1s found their event2, per pair, and how many never
// did, per event1; the unpaired ones are printed when they are given up.
#include <cstdio>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "pairing/model.h"

namespace perfprof::pairing {
namespace {

class PairCount final : public Impl {
public:
    explicit PairCount(Env& env) : env_(env) {
        for (const Pair& p : env.pairs)
            if (size_t(p.id) >= paired_.size()) paired_.resize(size_t(p.id) + 1, 0);
        // The event1s in list order, each with its pairs in creation order.
        for (const auto& e : env.events) {
            First f{e.get(), 0, {}};
            for (const Pair& p : env.pairs)
                if (p.ev1 == e.get()) f.pairs.push_back(&p);
            if (f.pairs.empty()) continue;
            if (e->index >= 0) {
                if (size_t(e->index) >= slot_.size()) slot_.resize(size_t(e->index) + 1, -1);
                slot_[size_t(e->index)] = int(firsts_.size());
            }
            firsts_.push_back(std::move(f));
        }
    }

    void two(const Pair& p, const Sample&, const Sample&, uint64_t) override {
        if (size_t(p.id) < paired_.size()) paired_[size_t(p.id)]++;
    }

    void remaining(const Sample& ev1, uint64_t, Remain, uint64_t) override {
        const int i = ev1.event_index;
        if (i >= 0 && size_t(i) < slot_.size() && slot_[size_t(i)] >= 0)
            firsts_[size_t(slot_[size_t(i)])].unpaired++;
        env_.print_event(ev1);
    }

    void report() override {
        std::string wall;
        core::append_wall(core::realtime_now_ns(), wall);
        wall += ' ';
        std::string out;
        for (First& f : firsts_) {
            out += wall;
            out += f.ev->full();
            out += " unpaired ";
            core::append_uint(out, f.unpaired);
            out += '\n';
            f.unpaired = 0;
            for (const Pair* p : f.pairs) {
                out += wall;
                out += p->ev1->full();
                out += ' ';
                out += p->ev2->full();
                out += " paired ";
                uint64_t& n = paired_[size_t(p->id)];
                core::append_uint(out, n);
                out += '\n';
                n = 0;
            }
        }
        std::fwrite(out.data(), 1, out.size(), env_.ctx.out());
    }

private:
    struct First {
        const TraceEvent* ev;
        uint64_t unpaired;
        std::vector<const Pair*> pairs;
    };
    Env& env_;
    std::vector<uint64_t> paired_;  // by Pair::id
    std::vector<First> firsts_;
    std::vector<int> slot_;  // Sample::event_index → firsts_ index, -1 = not an event1
};

}  // namespace

std::unique_ptr<Impl> make_pair(Env& env) {
    return std::make_unique<PairCount>(env);
}

}  // namespace perfprof::pairing
