#include "stack/top_table.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cinttypes>

namespace perfprof::stack {

void TopTable::add(std::span<const std::string_view> names, uint64_t n) {
    if (n == 0) return;
    total_ += n;
    ++adds_;
    for (size_t i = 0; i < names.size(); ++i) {
        key_.assign(names[i]);
        Counts& c = funcs_[key_];
        if (i == 0) c.flat += n;
        // Recursion repeats a name in one stack: its time is counted once in cum, or cum
        // could pass the total.
        if (c.stamp != adds_) {
            c.stamp = adds_;
            c.cum += n;
        }
    }
}

void TopTable::merge(const TopTable& other) {
    total_ += other.total_;
    for (const auto& [name, o] : other.funcs_) {
        Counts& c = funcs_[name];
        c.flat += o.flat;
        c.cum += o.cum;
    }
}

void TopTable::clear() {
    funcs_.clear();
    total_ = 0;
}

std::vector<TopTable::Row> TopTable::rows() const {
    std::vector<Row> rows;
    rows.reserve(funcs_.size());
    for (const auto& [name, c] : funcs_) rows.push_back({name, c.flat, c.cum});
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        if (a.flat != b.flat) return a.flat > b.flat;
        if (a.cum != b.cum) return a.cum > b.cum;
        return a.name < b.name;
    });
    return rows;
}

namespace {

void append_row(std::string& out, uint64_t flat, double flat_pct, double sum_pct, uint64_t cum,
                double cum_pct, std::string_view name) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%10" PRIu64 " %6.2f%% %6.2f%% %10" PRIu64 " %6.2f%%  ", flat, flat_pct,
                  sum_pct, cum, cum_pct);
    out += buf;
    out += name;  // a name is data, never a format
    out += '\n';
}

}  // namespace

void TopTable::format(std::string& out, std::string_view title, std::string_view unit,
                      size_t max_rows) const {
    const std::vector<Row> all = rows();
    const size_t shown = std::min(max_rows, all.size());
    out += title;
    out += ": ";
    out += std::to_string(total_);
    out += ' ';
    out += unit;
    out += ", top ";
    out += std::to_string(shown);
    out += " of ";
    out += std::to_string(all.size());
    out += all.size() == 1 ? " function\n" : " functions\n";
    if (shown == 0) return;
    out += "      flat   flat%    sum%        cum    cum%\n";
    const double pct = total_ ? 100.0 / double(total_) : 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < shown; ++i) {
        const Row& r = all[i];
        sum += r.flat;
        append_row(out, r.flat, double(r.flat) * pct, double(sum) * pct, r.cum, double(r.cum) * pct, r.name);
    }
}

TopStacks::TopStacks(Printer& printer) : printer_(printer), symbols_(printer.symbolizer()) {
    symbols_.add_observer(this);
}

TopStacks::~TopStacks() {
    symbols_.remove_observer(this);
}

void TopStacks::before_forget(uint32_t tgid) {
    if (pending_.holds(tgid)) symbolize_pending();
}

void TopStacks::add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root,
                              uint64_t n) {
    if (pending_.add(printer_, ips, nr, pid, root, n)) symbolize_pending();
}

void TopStacks::add_ip(uint64_t ip, uint32_t pid, uint64_t n) {
    // Kernel addresses are the upper half of the address space on every 64-bit Linux.
    const uint64_t chain[2] = {ip >> 63 ? uint64_t(PERF_CONTEXT_KERNEL) : uint64_t(PERF_CONTEXT_USER), ip};
    add_callchain(chain, 2, pid, {}, n);
}

void TopStacks::symbolize_pending() {
    pending_.drain(
        [&](uint32_t pid, std::string_view root, std::span<const uint64_t> ips, uint64_t n, uint64_t) {
            Printer::leaf_first(ips.data(), ips.size(), frames_);
            // Names first into one buffer, then views on it: the buffer may move while it grows.
            names_text_.clear();
            ends_.clear();
            for (const Printer::ChainFrame& f : frames_) {
                if (f.ctx == Printer::Context::Truncated) continue;  // not a function
                printer_.folded_name(f, pid, names_text_);
                ends_.push_back(names_text_.size());
            }
            if (!root.empty()) {
                names_text_ += root;
                ends_.push_back(names_text_.size());
            }
            names_.clear();
            size_t start = 0;
            for (size_t end : ends_) {
                names_.push_back(std::string_view(names_text_).substr(start, end - start));
                start = end;
            }
            interval_.add(names_, n);
        });
}

void TopStacks::print_interval(FILE* out, std::string_view title, std::string_view unit, size_t max_rows) {
    symbolize_pending();
    text_.clear();
    interval_.format(text_, title, unit, max_rows);
    std::fwrite(text_.data(), 1, text_.size(), out);
    std::fflush(out);
    total_.merge(interval_);
    interval_.clear();
}

void TopStacks::print_total(FILE* out, std::string_view title, std::string_view unit, size_t max_rows) {
    symbolize_pending();
    total_.merge(interval_);
    interval_.clear();
    text_.clear();
    total_.format(text_, title, unit, max_rows);
    std::fwrite(text_.data(), 1, text_.size(), out);
    std::fflush(out);
}

}  // namespace perfprof::stack
