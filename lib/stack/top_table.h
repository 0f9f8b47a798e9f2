// The ranked table of the hottest functions of a stack profile, in `go tool pprof -top`'s layout:
// flat (the function is the leaf), cum (it is anywhere in the stack, counted once per stack
// however often recursion repeats it), sorted by flat. Functions are the folded flame graph's
// frame names (Printer::folded_name), so the table, the .folded file and --pprof agree.
//
// TopTable is the arithmetic on names; TopStacks feeds it sampled call chains, counted by their
// raw addresses as they come (ChainCounts) and symbolized when a table is printed, or before
// their process's symbols are dropped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stack/chain_counts.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

class TopTable {
public:
    struct Row {
        std::string name;
        uint64_t flat = 0, cum = 0;
    };

    // Counts one stack `n` times; `names` innermost first (names[0] is the leaf). An empty
    // stack counts in the total only.
    void add(std::span<const std::string_view> names, uint64_t n);
    // Adds every count of `other`.
    void merge(const TopTable& other);
    void clear();
    uint64_t total() const { return total_; }
    size_t functions() const { return funcs_.size(); }
    // Every function, by flat, then cum, both descending, then name.
    std::vector<Row> rows() const;
    // "{title}: {total} {unit}, top {shown} of {functions} functions" then the column header
    // and at most `max_rows` rows.
    void format(std::string& out, std::string_view title, std::string_view unit, size_t max_rows) const;

private:
    struct Counts {
        uint64_t flat = 0, cum = 0;
        uint64_t stamp = 0;  // the add() that last counted it in cum
    };
    std::unordered_map<std::string, Counts> funcs_;
    uint64_t total_ = 0, adds_ = 0;
    std::string key_;
};

class TopStacks final : public sym::ProcessObserver {
public:
    // Symbolizes through `printer`, which must outlive it. Keeps a table of the interval and
    // one of the whole run.
    explicit TopStacks(Printer& printer);
    ~TopStacks();
    TopStacks(const TopStacks&) = delete;
    TopStacks& operator=(const TopStacks&) = delete;

    // Counts a sampled chain of process `pid` `n` times, with `root` ("" = none) as an extra
    // outermost frame (profile --off-cpu's "[off-cpu: S]"). Hot path: no symbol lookup.
    void add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root = {},
                       uint64_t n = 1);
    // A sample without a chain: its one address, in the kernel or in user space.
    void add_ip(uint64_t ip, uint32_t pid, uint64_t n = 1);

    // Writes the interval's table to `out` and starts a new interval.
    void print_interval(FILE* out, std::string_view title, std::string_view unit, size_t max_rows);
    // Writes the whole run's table.
    void print_total(FILE* out, std::string_view title, std::string_view unit, size_t max_rows);
    // Whether anything was counted since the last print_interval().
    bool interval_empty() { return pending_.empty() && interval_.total() == 0; }

    void before_forget(uint32_t tgid) override;

private:
    void symbolize_pending();

    Printer& printer_;
    sym::Symbolizer& symbols_;  // the printer's: outlives it, asked at destruction
    ChainCounts pending_;
    TopTable interval_, total_;
    std::vector<Printer::ChainFrame> frames_;
    std::string names_text_;
    std::vector<size_t> ends_;
    std::vector<std::string_view> names_;
    std::string text_;
};

}  // namespace perfprof::stack
