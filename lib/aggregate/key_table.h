// Key/value aggregation shared by the profilers that sum values per key and print a table every
// interval (SPEC-PROFILERS §P1 top, §P11 num-dist; the pieces below are written so that hrcount,
// stat and sql can use them too):
//
//   KeyTable     rows found by hash on a u64 key, or on a name (top --only-comm), each with one
//                u64 sum per value column and a name set once; the §P1 row order; clear() keeps
//                every allocation, so a table reused each interval allocates only for rows beyond
//                the most it ever held (and for a name longer than its row's earlier names).
//   print_top    the §P1 table: title, header, one line per row in that order.
//   DistTable    (dist_table.h) n / sum / min / max / p99 per (instance, event) node and the §P11
//                table, over output::LatencyDist (the quantile sketch task-state and multi-trace
//                use: no second estimator).
//
// What hrcount and stat (§P9, §P10: slots per period) can take from here: a KeyTable keyed by
// (instance << 32 | event index) whose 2H columns are the slots of a node: row() finds the node
// without allocating, add(row, pos % 2H, delta) counts into a slot, value()/set() read and zero
// a round's slots, rows_in_key_order() gives the nodes in instance-then-event order for their
// lines; their own line format (CW, "| total") stays in their file. sql's GROUP BY over one
// integer column is the same KeyTable with one column per SUM/COUNT.
//
// Not thread-safe; one table per profiler, fed from the session's thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::aggregate {

// One value column: its header (printed as given) and whether it orders the rows (top-by).
struct Column {
    std::string header;
    bool order_by = false;
    int width = 12;  // printed width: max(12, header length) unless the caller sets it
};

// The header width §P1 gives a column: max(minimum, header length).
int column_width(std::string_view header, int minimum = 12);

class KeyTable {
public:
    enum class Keyed { ByKey, ByName };

    explicit KeyTable(std::vector<Column> columns, Keyed keyed = Keyed::ByKey);

    // The row of `key` in a ByKey table: an existing one, or a new one with zero values and no
    // name. No allocation unless the table grows past its largest size so far.
    uint32_t row(uint64_t key);
    // The row of `name` in a ByName table; a new row copies the name.
    uint32_t row(std::string_view name);

    void add(uint32_t r, size_t column, uint64_t v) { values_[size_t(r) * ncols_ + column] += v; }
    void set(uint32_t r, size_t column, uint64_t v) { values_[size_t(r) * ncols_ + column] = v; }
    uint64_t value(uint32_t r, size_t column) const { return values_[size_t(r) * ncols_ + column]; }

    // A row's name is set by the first call and never changes afterwards (§P1).
    bool named(uint32_t r) const { return named_[r] != 0; }
    void set_name(uint32_t r, std::string_view name);
    std::string_view name(uint32_t r) const { return names_[r]; }
    uint64_t key(uint32_t r) const { return keys_[r]; }

    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    Keyed keyed() const { return keyed_; }
    const std::vector<Column>& columns() const { return columns_; }

    // §P1 order: each order_by column descending (in column order), then the other columns
    // descending (in column order), then the key ascending, then the name.
    std::vector<uint32_t> rows_in_order() const;
    // By key ascending, then name: nodes in the order their keys give (hrcount's instance/event).
    std::vector<uint32_t> rows_in_key_order() const;

    // Forgets every row; keeps the memory for the next interval.
    void clear();

private:
    uint32_t find_or_add(uint64_t hash, uint64_t key, std::string_view name);
    void grow();

    std::vector<Column> columns_;
    size_t ncols_;
    Keyed keyed_;
    size_t n_ = 0;                    // rows in use; the vectors below may hold more (reused)
    std::vector<uint64_t> keys_;      // per row: the key (ByKey), the name's hash (ByName)
    std::vector<uint64_t> values_;    // per row, ncols_ sums
    std::vector<std::string> names_;  // per row
    std::vector<uint8_t> named_;      // per row
    std::vector<uint32_t> slots_;     // open addressing: row + 1, 0 = empty; size a power of 2
};

// How print_top lays the table out (§P1 "Columns").
struct TopLayout {
    bool key_column = true;  // absent with --only-comm
    std::string key_header = "PID";
    int key_width = 8;
    bool name_column = true;
    std::string name_header = "COMM";
};

// printkey=: prints the key on `out` and returns the characters it printed.
using PrintKey = std::function<int(uint64_t key, FILE* out)>;

// "{WALL(now)} perf-prof - {HH:MM:SS}  sample {N} events" for a CLOCK_REALTIME time.
std::string top_title(int64_t realtime_ns, uint64_t samples);

// The §P1 table: `title`, the header line, one line per row in rows_in_order(). Every key and
// value cell is followed by one space; a printkey cell is padded to the key width, with at
// least one space after it even when it printed more (the Recommendation of §P1). Prints
// nothing for an empty table.
void print_top(FILE* out, std::string_view title, const TopLayout& layout, const KeyTable& table,
               const PrintKey* printkey = nullptr);

// Upper-cased ASCII text: the column headers of §P1.
std::string upper(std::string_view s);

}  // namespace perfprof::aggregate
