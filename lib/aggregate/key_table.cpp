#include "aggregate/key_table.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <ctime>
#include <numeric>

#include "core/time.h"

namespace perfprof::aggregate {

namespace {

// splitmix64's finaliser: keys are often small, dense integers (pids, CPUs, fds).
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

// FNV-1a, then mixed.
uint64_t hash_name(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return mix(h);
}

}  // namespace

int column_width(std::string_view header, int minimum) {
    return std::max(minimum, int(header.size()));
}

std::string upper(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = char(std::toupper(static_cast<unsigned char>(c)));
    return r;
}

KeyTable::KeyTable(std::vector<Column> columns, Keyed keyed)
    : columns_(std::move(columns)), ncols_(columns_.size()), keyed_(keyed), slots_(64, 0) {}

uint32_t KeyTable::row(uint64_t key) {
    return find_or_add(mix(key), key, {});
}

uint32_t KeyTable::row(std::string_view name) {
    return find_or_add(hash_name(name), 0, name);
}

uint32_t KeyTable::find_or_add(uint64_t hash, uint64_t key, std::string_view name) {
    const bool by_name = keyed_ == Keyed::ByName;
    const uint64_t want = by_name ? hash : key;
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    for (;; i = (i + 1) & mask) {
        const uint32_t s = slots_[i];
        if (!s) break;
        const uint32_t r = s - 1;
        if (keys_[r] == want && (!by_name || names_[r] == name)) return r;
    }
    // A new row: reuse the storage of a row cleared earlier, else grow.
    const uint32_t r = uint32_t(n_++);
    if (r == keys_.size()) {
        keys_.push_back(want);
        values_.resize(values_.size() + ncols_, 0);
        names_.emplace_back();
        named_.push_back(0);
    } else {
        keys_[r] = want;
        std::fill_n(values_.begin() + std::ptrdiff_t(size_t(r) * ncols_), ncols_, 0);
        names_[r].clear();
        named_[r] = 0;
    }
    if (by_name) {
        names_[r].assign(name);
        named_[r] = 1;
    }
    slots_[i] = r + 1;
    if (n_ * 2 > slots_.size()) grow();
    return r;
}

void KeyTable::grow() {
    std::vector<uint32_t> slots(slots_.size() * 2, 0);
    const size_t mask = slots.size() - 1;
    for (uint32_t r = 0; r < n_; r++) {
        const uint64_t h = keyed_ == Keyed::ByName ? hash_name(names_[r]) : mix(keys_[r]);
        size_t i = h & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = r + 1;
    }
    slots_.swap(slots);
}

void KeyTable::set_name(uint32_t r, std::string_view name) {
    if (named_[r]) return;
    names_[r].assign(name);
    named_[r] = 1;
}

std::vector<uint32_t> KeyTable::rows_in_order() const {
    std::vector<uint32_t> rows(n_);
    std::iota(rows.begin(), rows.end(), 0u);
    std::vector<size_t> order;  // columns in comparison order
    for (size_t c = 0; c < ncols_; c++)
        if (columns_[c].order_by) order.push_back(c);
    for (size_t c = 0; c < ncols_; c++)
        if (!columns_[c].order_by) order.push_back(c);
    const bool by_name = keyed_ == Keyed::ByName;
    std::sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
        for (size_t c : order) {
            const uint64_t va = value(a, c), vb = value(b, c);
            if (va != vb) return va > vb;
        }
        // A ByName table's "key" is the name's hash: order by the name itself.
        if (!by_name && keys_[a] != keys_[b]) return keys_[a] < keys_[b];
        return names_[a] < names_[b];
    });
    return rows;
}

std::vector<uint32_t> KeyTable::rows_in_key_order() const {
    std::vector<uint32_t> rows(n_);
    std::iota(rows.begin(), rows.end(), 0u);
    const bool by_name = keyed_ == Keyed::ByName;
    std::sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
        if (!by_name && keys_[a] != keys_[b]) return keys_[a] < keys_[b];
        return names_[a] < names_[b];
    });
    return rows;
}

void KeyTable::clear() {
    n_ = 0;
    std::fill(slots_.begin(), slots_.end(), 0);
}

std::string top_title(int64_t realtime_ns, uint64_t samples) {
    std::string t;
    core::append_wall(realtime_ns, t);
    const time_t secs = time_t(realtime_ns / 1000000000);
    struct tm tm {};
    localtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, " perf-prof - %02d:%02d:%02d  sample %llu events", tm.tm_hour, tm.tm_min,
                  tm.tm_sec, (unsigned long long)samples);
    t += buf;
    return t;
}

namespace {

void pad_left(std::string& line, std::string_view text, int width) {
    if (int(text.size()) < width) line.append(size_t(width) - text.size(), ' ');
    line += text;
}

}  // namespace

void print_top(FILE* out, std::string_view title, const TopLayout& layout, const KeyTable& table,
               const PrintKey* printkey) {
    if (table.empty()) return;
    std::string line(title);
    line += '\n';
    if (layout.key_column) {
        pad_left(line, layout.key_header, layout.key_width);
        line += ' ';
    }
    for (const Column& c : table.columns()) {
        pad_left(line, c.header, c.width);
        line += ' ';
    }
    if (layout.name_column) line += layout.name_header;
    line += '\n';
    char num[32];
    for (uint32_t r : table.rows_in_order()) {
        if (layout.key_column) {
            if (printkey && *printkey) {
                // The program prints on `out` itself: what is buffered here goes first.
                std::fwrite(line.data(), 1, line.size(), out);
                line.clear();
                const int n = (*printkey)(table.key(r), out);
                line.append(n >= 0 && n <= layout.key_width ? size_t(layout.key_width - n) + 1 : 1, ' ');
            } else {
                std::snprintf(num, sizeof num, "%llu", (unsigned long long)table.key(r));
                pad_left(line, num, layout.key_width);
                line += ' ';
            }
        }
        for (size_t c = 0; c < table.columns().size(); c++) {
            std::snprintf(num, sizeof num, "%llu", (unsigned long long)table.value(r, c));
            pad_left(line, num, table.columns()[c].width);
            line += ' ';
        }
        if (layout.name_column) line += table.name(r);
        line += '\n';
    }
    std::fwrite(line.data(), 1, line.size(), out);
}

}  // namespace perfprof::aggregate
