// --impl delay (SPEC §4.6.5, §4.6.6): the latency of every pair, as a statistics table per
// (key with --perins, pair) with the quantiles task-state uses; pairs beyond --than or below
// --lower printed with their events; every latency into the pair's heat map (§8.1) and, with
// --hist, a log2 histogram (§8.2).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "output/heatmap_file.h"
#include "output/histogram.h"
#include "output/latency.h"
#include "pairing/model.h"
#include "pairing/timeline.h"

namespace perfprof::pairing {

namespace {

class Delay final : public Impl {
public:
    explicit Delay(Env& env) : env_(env), rows_(env.pairs.size()), hists_(env.pairs.size()) {
        for (const Pair& p : env_.pairs) {
            l1_ = std::max(l1_, p.ev1->display().size());
            l2_ = std::max(l2_, p.ev2->display().size());
        }
        if (!env_.heatmap.empty())
            for (const Pair& p : env_.pairs)
                heatmaps_.push_back(std::make_unique<output::HeatmapFile>(
                    env_.heatmap + "-" + p.ev1->display() + "-" + p.ev2->display(),
                    "multi-trace: " + p.ev1->full() + " => " + p.ev2->full()));
    }

    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) override {
        const uint64_t lat = ev2.time - ev1.time;
        output::LatencyDist& row = env_.perins ? keyed_row(key, p.id) : rows_[size_t(p.id)];
        row.add(lat, env_.than);
        if (!heatmaps_.empty()) heatmaps_[size_t(p.id)]->write(ev2.time, lat);
        if (env_.hist) hists_[size_t(p.id)].add(lat / 1000);
        if ((env_.than && lat > env_.than) || (env_.lower && lat < env_.lower))
            env_.print_pair(p, ev1, ev2, key);
    }

    void remaining(const Sample& ev1, uint64_t key, Remain why, uint64_t last) override {
        // SPEC §4.6.6: an event1 whose event2 may have been lost, already late enough to print.
        if (why == Remain::Lost && env_.timeline && env_.than && last > ev1.time &&
            last - ev1.time > env_.than)
            env_.timeline->print_lost(ev1, key, last);
    }

    void report() override {
        std::vector<Line> lines;
        bool over = false;
        auto collect = [&](uint64_t key, size_t pair, const output::LatencyDist& d) {
            if (!d.calls) return;
            lines.push_back({key, pair, &d});
            if (env_.than && d.max > env_.than) over = true;
        };
        if (env_.perins) {
            for (const auto& [key, row] : keyed_)
                for (size_t i = 0; i < env_.pairs.size(); i++) collect(key, i, row[i]);
        } else {
            for (size_t i = 0; i < rows_.size(); i++) collect(0, i, rows_[i]);
        }
        if (lines.empty()) return;
        // --only-than: the rows keep accumulating until one of them passes the threshold.
        if (env_.only_than && !over) return;
        std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
            if (a.key != b.key) return a.key < b.key;
            if (a.dist->total != b.dist->total) return a.dist->total > b.dist->total;
            return a.pair < b.pair;
        });
        print_table(lines);
        if (env_.hist) print_hists();
        keyed_.clear();
        for (output::LatencyDist& d : rows_) d.clear();
    }

    void finish() override {
        for (auto& h : heatmaps_) h->close();
    }

private:
    struct Line {
        uint64_t key;
        size_t pair;
        const output::LatencyDist* dist;
    };

    output::LatencyDist& keyed_row(uint64_t key, int pair) {
        auto it = keyed_.find(key);
        if (it == keyed_.end())
            it = keyed_.emplace(key, std::vector<output::LatencyDist>(env_.pairs.size())).first;
        return it->second[size_t(pair)];
    }

    void print_table(const std::vector<Line>& lines) {
        const std::string unit = env_.unit();
        std::string out;
        core::append_wall(core::realtime_now_ns(), out);
        out += " \n";
        out += env_.key_header();
        core::append_right(out, "start", l1_);
        out += " => ";
        core::append_left(out, "end", l2_);
        core::append_right(out, "calls", 9);
        for (const char* col : {"total", "min", "p50", "p95", "p99", "max"})
            core::append_right(out, std::string(col) + "(" + unit + ")", col[0] == 't' ? 17 : 13);
        if (env_.than) out += "    than(reqs)";
        out += '\n';
        out += env_.key_dashes();
        out.append(l1_, '-');
        out += "    ";
        out.append(l2_, '-');
        out += " -------- ---------------- ------------ ------------ ------------ ------------ ------------";
        if (env_.than) out += " --------------";
        out += '\n';
        for (const Line& l : lines) {
            const Pair& p = env_.pairs[l.pair];
            const output::LatencyDist& d = *l.dist;
            if (env_.perins) {
                env_.append_key(l.key, out);
                out += ' ';
                if (env_.comm_column) {
                    core::append_left(out, env_.ctx.comm(uint32_t(l.key)).substr(0, 16), 16);
                    out += ' ';
                }
            }
            core::append_right(out, p.ev1->display(), l1_);
            out += " => ";
            core::append_left(out, p.ev2->display(), l2_);
            out += ' ';
            core::append_uint(out, d.calls, 8);
            out += ' ';
            core::append_fixed3(out, env_.in_units(d.total), 16);
            for (double v : {double(d.min), d.sketch.quantile(0.5), d.sketch.quantile(0.95),
                             d.sketch.quantile(0.99), double(d.max)}) {
                out += ' ';
                core::append_fixed3(out, v / 1000.0, 12);
            }
            if (env_.than) env_.append_than(d.over, d.calls, out);
            out += '\n';
        }
        std::fwrite(out.data(), 1, out.size(), env_.ctx.out());
    }

    void print_hists() {
        std::string out;
        for (size_t i = 0; i < hists_.size(); i++) {
            std::string h = output::format_log2(hists_[i].buckets(), env_.tsc ? "kcycles" : "usecs");
            hists_[i].clear();
            if (h.empty()) continue;
            const Pair& p = env_.pairs[i];
            out += p.ev1->full() + " => " + p.ev2->full() + "\n" + h;
        }
        std::fwrite(out.data(), 1, out.size(), env_.ctx.out());
    }

    Env& env_;
    size_t l1_ = 5, l2_ = 3;                 // widths of the start and end columns
    std::vector<output::LatencyDist> rows_;  // per pair, without --perins
    std::unordered_map<uint64_t, std::vector<output::LatencyDist>> keyed_;  // with --perins
    std::vector<std::unique_ptr<output::HeatmapFile>> heatmaps_;            // per pair
    std::vector<output::Log2Histogram> hists_;                              // per pair, --hist
};

}  // namespace

std::unique_ptr<Impl> make_delay(Env& env) {
    return std::make_unique<Delay>(env);
}

}  // namespace perfprof::pairing
