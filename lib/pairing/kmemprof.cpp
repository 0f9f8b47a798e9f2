// --impl kmemprof (SPEC §4.6.9): event1 allocates size= bytes, event2 frees them. Per pair the
// allocated and the freed bytes and objects are summed per call chain (allocating chain for
// event1, freeing chain for event2); allocations still pending at exit go to their event1's
// "not freed" bucket. Chains are interned by a hash of their addresses, so a sample costs a
// lookup and two additions; they are symbolized only when a report prints them.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "pairing/model.h"
#include "stack/stack_printer.h"

namespace perfprof::pairing {
namespace {

constexpr size_t kTop = 10;

// Bytes and objects per distinct call chain.
class StackTable {
public:
    struct Entry {
        uint64_t hash;
        uint32_t off, nr;  // the chain: ips_[off, off + nr)
        uint32_t pid;      // the first process seen with it (user frames resolve in it)
        int32_t next;      // the next entry with the same hash, -1 = none
        uint64_t bytes, objs;
    };

    // Returns true when the chain was not in the table yet.
    bool add(const uint64_t* ips, uint64_t nr, uint32_t pid, uint64_t bytes) {
        bytes_ += bytes;
        objs_++;
        const uint64_t h = hash(ips, nr);
        auto [it, fresh] = head_.try_emplace(h, int32_t(entries_.size()));
        if (!fresh) {
            for (int32_t i = it->second; i >= 0; i = entries_[size_t(i)].next) {
                Entry& e = entries_[size_t(i)];
                if (e.nr == nr &&
                    (nr == 0 || std::memcmp(ips_.data() + e.off, ips, nr * sizeof(uint64_t)) == 0)) {
                    e.bytes += bytes;
                    e.objs++;
                    return false;
                }
            }
        }
        Entry e{h, uint32_t(ips_.size()), uint32_t(nr), pid, fresh ? -1 : it->second, bytes, 1};
        if (!fresh) it->second = int32_t(entries_.size());
        ips_.insert(ips_.end(), ips, ips + nr);
        entries_.push_back(e);
        return true;
    }

    void clear() {
        head_.clear();
        entries_.clear();
        ips_.clear();
        bytes_ = objs_ = 0;
    }
    bool empty() const { return objs_ == 0; }
    uint64_t bytes() const { return bytes_; }
    uint64_t objs() const { return objs_; }
    size_t size() const { return entries_.size(); }
    const uint64_t* ips(const Entry& e) const { return ips_.data() + e.off; }

    // The entries with the most bytes (then the most objects, then the first seen), at most n.
    std::vector<const Entry*> top(size_t n) const {
        std::vector<const Entry*> v;
        v.reserve(entries_.size());
        for (const Entry& e : entries_) v.push_back(&e);
        n = std::min(n, v.size());
        std::partial_sort(v.begin(), v.begin() + ptrdiff_t(n), v.end(), [](const Entry* a, const Entry* b) {
            if (a->bytes != b->bytes) return a->bytes > b->bytes;
            if (a->objs != b->objs) return a->objs > b->objs;
            return a < b;
        });
        v.resize(n);
        return v;
    }

private:
    static uint64_t hash(const uint64_t* ips, uint64_t nr) {
        uint64_t h = 0x9e3779b97f4a7c15ULL ^ nr;
        for (uint64_t i = 0; i < nr; i++) {
            h ^= ips[i];
            h *= 0xff51afd7ed558ccdULL;
            h ^= h >> 32;
        }
        return h;
    }

    std::unordered_map<uint64_t, int32_t> head_;  // hash → newest entry with it
    std::vector<Entry> entries_;
    std::vector<uint64_t> ips_;
    uint64_t bytes_ = 0, objs_ = 0;
};

void append_pct(uint64_t part, uint64_t whole, std::string& out) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", whole ? double(part) * 100.0 / double(whole) : 0.0);
    out += buf;
}

class KmemProf final : public Impl {
public:
    explicit KmemProf(Env& env) : env_(env) {
        for (const Pair& p : env.pairs) {
            if (size_t(p.id) >= by_id_.size()) by_id_.resize(size_t(p.id) + 1, 0);
            by_id_[size_t(p.id)] = pairs_.size();
            pairs_.push_back(PairStats{&p, {}, {}, max_stack(*p.ev1), max_stack(*p.ev2)});
        }
        for (const auto& e : env.events) {
            bool first = false;
            for (const Pair& p : env.pairs) first |= p.ev1 == e.get();
            if (!first) continue;
            if (e->index >= 0) {
                if (size_t(e->index) >= slot_.size()) slot_.resize(size_t(e->index) + 1, -1);
                slot_[size_t(e->index)] = int(not_freed_.size());
            }
            not_freed_.push_back(NotFreed{e.get(), {}, max_stack(*e)});
        }
    }

    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t) override {
        PairStats& ps = pairs_[by_id_[size_t(p.id)]];
        const uint64_t bytes = size_of(*p.ev1, ev1);
        add(ps.alloc, ev1, bytes);
        add(ps.free, ev2, bytes);
    }

    void remaining(const Sample& ev1, uint64_t, Remain why, uint64_t) override {
        // A loss may have taken the free with it: only what is still allocated at exit counts.
        if (why != Remain::Exit) return;
        const int i = ev1.event_index;
        if (i < 0 || size_t(i) >= slot_.size() || slot_[size_t(i)] < 0) return;
        NotFreed& nf = not_freed_[size_t(slot_[size_t(i)])];
        add(nf.table, ev1, size_of(*nf.ev, ev1));
    }

    void report() override {
        std::string wall;
        core::append_wall(core::realtime_now_ns(), wall);
        wall += " \n";
        std::string out;
        FILE* f = env_.ctx.out();
        for (PairStats& ps : pairs_) {
            if (ps.alloc.empty()) continue;
            const TraceEvent& e1 = *ps.pair->ev1;
            const TraceEvent& e2 = *ps.pair->ev2;
            out += wall;
            out += e1.full();
            out += " => ";
            out += e2.full();
            out += '\n';
            section(e1, ps.max1, ps.alloc, "total alloc", "", "Allocate", "alloc", out);
            section(e2, ps.max2, ps.free, "total free", "", "Free", "free", out);
            out += '\n';
            std::fwrite(out.data(), 1, out.size(), f);
            out.clear();
            ps.alloc.clear();
            ps.free.clear();
        }
        for (NotFreed& nf : not_freed_) {
            if (nf.table.empty()) continue;
            out += wall;
            section(*nf.ev, nf.max, nf.table, "total alloc", " but not freed", "Allocate", "alloc", out);
            out += '\n';
            std::fwrite(out.data(), 1, out.size(), f);
            out.clear();
            nf.table.clear();
        }
    }

private:
    struct PairStats {
        const Pair* pair;
        StackTable alloc, free;
        int max1, max2;  // the events' sample_max_stack
    };
    struct NotFreed {
        const TraceEvent* ev;
        StackTable table;
        int max;
    };

    static int max_stack(const TraceEvent& e) {
        return e.spec ? stack::max_stack_of(e.spec->attr) : stack::kMaxStack;
    }

    uint64_t size_of(const TraceEvent& e, const Sample& s) const {
        if (!e.size) return 0;
        const filter::Value v = e.size->eval(filter::sample_context(s, env_.ctx.eval_hooks()));
        return v > 0 ? uint64_t(v) : 0;
    }

    void add(StackTable& t, const Sample& s, uint64_t bytes) {
        // A user chain is printed at report time, perhaps after its process is gone: its maps
        // are read while it lives, once per new chain.
        if (t.add(s.callchain, s.callchain ? s.callchain_nr : 0, s.pid, bytes) && s.callchain_nr &&
            env_.printer)
            env_.printer->prepare(s.pid);
    }

    // "{ev} {total} {B} bytes on {N} objects{tail}", then the top chains.
    void section(const TraceEvent& ev, int max, const StackTable& t, const char* total, const char* tail,
                 const char* verb, const char* noun, std::string& out) {
        out += ev.full();
        out += ' ';
        out += total;
        out += ' ';
        core::append_uint(out, t.bytes());
        out += " bytes on ";
        core::append_uint(out, t.objs());
        out += " objects";
        out += tail;
        out += '\n';
        for (const StackTable::Entry* e : t.top(kTop)) {
            out += verb;
            out += ' ';
            core::append_uint(out, e->bytes);
            out += " (";
            append_pct(e->bytes, t.bytes(), out);
            out += "%) bytes on ";
            core::append_uint(out, e->objs);
            out += " (";
            append_pct(e->objs, t.objs(), out);
            out += "%) objects:\n";
            if (e->nr && env_.printer) env_.printer->print(t.ips(*e), e->nr, e->pid, max, out);
        }
        if (t.size() > kTop) {
            out += "Skipping ";
            out += noun;
            out += " numbered ";
            core::append_uint(out, kTop + 1);
            out += "..";
            core::append_uint(out, t.size());
            out += '\n';
        }
    }

    Env& env_;
    std::vector<PairStats> pairs_;  // as env.pairs
    std::vector<size_t> by_id_;     // Pair::id → pairs_ index
    std::vector<NotFreed> not_freed_;
    std::vector<int> slot_;  // Sample::event_index → not_freed_ index, -1 = not an event1
};

}  // namespace

std::unique_ptr<Impl> make_kmemprof(Env& env) {
    std::vector<const TraceEvent*> warned;
    for (const Pair& p : env.pairs)
        if (!p.ev1->size) throw Error::usage(p.ev1->full() + "//size=?/ size attribute is not set");
    for (const Pair& p : env.pairs)
        for (const TraceEvent* e : {p.ev1, p.ev2}) {
            if (e->stack || std::find(warned.begin(), warned.end(), e) != warned.end()) continue;
            warned.push_back(e);
            std::fprintf(stderr,
                         "WARN: %s//stack/ stack attribute is not set: its bytes are not split by stack\n",
                         e->full().c_str());
        }
    return std::make_unique<KmemProf>(env);
}

}  // namespace perfprof::pairing
