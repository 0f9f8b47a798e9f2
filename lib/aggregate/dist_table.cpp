#include "aggregate/dist_table.h"

#include <algorithm>

namespace perfprof::aggregate {

DistTable::DistTable(std::vector<std::string> event_names, PerInstance per)
    : names_(std::move(event_names)), per_(per), width_(5) {
    for (const std::string& n : names_) width_ = std::max(width_, int(n.size()));
}

size_t DistTable::slot(int instance) {
    const size_t i = per_ == PerInstance::No || instance < 0 ? 0 : size_t(instance);
    if (i >= instances_.size()) {
        instances_.resize(i + 1);
        nodes_.resize(instances_.size() * names_.size());
    }
    return i;
}

void DistTable::add(int instance, uint32_t label, int event, uint64_t v, uint64_t than) {
    if (event < 0 || size_t(event) >= names_.size()) return;
    const size_t i = slot(instance);
    Instance& in = instances_[i];
    if (in.index < 0) {
        in.index = int(i);
        in.label = label;
    }
    nodes_[i * names_.size() + size_t(event)].add(v, than);
    any_ = true;
}

const output::LatencyDist* DistTable::node(int instance, int event) const {
    const size_t i = per_ == PerInstance::No || instance < 0 ? 0 : size_t(instance);
    if (i >= instances_.size() || event < 0 || size_t(event) >= names_.size()) return nullptr;
    const output::LatencyDist& d = nodes_[i * names_.size() + size_t(event)];
    return d.calls ? &d : nullptr;
}

void DistTable::print(FILE* out, std::string_view wall) {
    if (!any_) return;
    any_ = false;
    std::string t(wall);
    t += " \n";
    const char* head = per_ == PerInstance::Cpu ? "[CPU] " : per_ == PerInstance::Thread ? "[THREAD] " : "";
    const char* dash = per_ == PerInstance::Cpu ? "----- " : per_ == PerInstance::Thread ? "-------- " : "";
    char buf[256];
    t += head;
    t += "event";
    t.append(size_t(width_) - 5, ' ');
    std::snprintf(buf, sizeof buf, " %8s %16s %12s %12s %12s %12s\n", "calls", "total", "min", "avg", "p99",
                  "max");
    t += buf;
    t += dash;
    t.append(size_t(width_), '-');
    t += " -------- ---------------- ------------ ------------ ------------ ------------\n";
    for (size_t i = 0; i < instances_.size(); i++) {
        if (instances_[i].index < 0) continue;
        for (size_t e = 0; e < names_.size(); e++) {
            output::LatencyDist& d = nodes_[i * names_.size() + e];
            if (!d.calls) continue;
            if (per_ == PerInstance::Cpu) {
                std::snprintf(buf, sizeof buf, "[%03u] ", instances_[i].label);
                t += buf;
            } else if (per_ == PerInstance::Thread) {
                std::snprintf(buf, sizeof buf, "%-8u ", instances_[i].label);
                t += buf;
            }
            const double p99 = d.sketch.quantile(0.99);
            t.append(size_t(width_) - names_[e].size(), ' ');
            t += names_[e];
            std::snprintf(buf, sizeof buf, " %8llu %16llu %12llu %12llu %12llu %12llu\n",
                          (unsigned long long)d.calls, (unsigned long long)d.total, (unsigned long long)d.min,
                          (unsigned long long)(d.total / d.calls), (unsigned long long)(p99 > 0 ? p99 : 0),
                          (unsigned long long)d.max);
            t += buf;
            d.clear();
        }
        instances_[i] = Instance{};
    }
    std::fwrite(t.data(), 1, t.size(), out);
}

}  // namespace perfprof::aggregate
