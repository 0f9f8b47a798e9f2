#include "pairing/timeline.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "filter/record_field.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf/sample_copy.h"

namespace perfprof::pairing {

struct Timeline::Node {
    perf::SampleCopy copy;
    uint64_t key = 0;
    bool keyed = false;
    bool handed = false;  // given to the profiler by next_ready()
    uint32_t pins = 0;
};

namespace {

using Node = Timeline::Node;
constexpr size_t npos = size_t(-1);
constexpr uint64_t kNever = UINT64_MAX;

// Nodes in time order: a ring of pointers that grows by doubling, so that a steady stream
// (push at the back, release at the front) never allocates.
class NodeRing {
public:
    size_t size() const { return size_; }
    Node* operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    Node* front() const { return (*this)[0]; }
    void push_back(Node* n) {
        if (size_ == buf_.size()) grow();
        buf_[(head_ + size_) & (buf_.size() - 1)] = n;
        ++size_;
    }
    Node* pop_front() {
        Node* n = front();
        head_ = (head_ + 1) & (buf_.size() - 1);
        --size_;
        return n;
    }

private:
    void grow() {
        std::vector<Node*> b(std::max<size_t>(64, buf_.size() * 2));
        for (size_t i = 0; i < size_; ++i) b[i] = (*this)[i];
        buf_.swap(b);
        head_ = 0;
    }
    std::vector<Node*> buf_;
    size_t head_ = 0, size_ = 0;
};

using Loc = filter::RecordField;

enum class Kind : uint8_t { Other, Wakeup, Switch, Migrate };

// What the related tests and the CPU tracking read of one event, resolved once per EventSpec.
struct EventFields {
    Kind kind = Kind::Other;
    Loc cpu[2];  // cpu-like: target_cpu; dest_cpu, orig_cpu; else `cpu`
    Loc pid[2];  // pid-like: pid; prev_pid, next_pid; parent_pid, child_pid
    Loc prev_state;
    Loc prev_comm;  // char[], read as a string
};

Loc find_loc(const EventSpec& ev, std::string_view name, bool string = false) {
    return string ? Loc::string(ev.fields, name) : Loc::integer(ev.fields, name);
}

Loc first_loc(const EventSpec& ev, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (Loc l = find_loc(ev, n); l.ok) return l;
    return {};
}

void resolve(const EventSpec& ev, EventFields& f) {
    const bool sched = ev.sys == "sched";
    if (sched && ev.name.starts_with("sched_wakeup")) {
        f.kind = Kind::Wakeup;
        f.cpu[0] = find_loc(ev, "target_cpu");
        f.pid[0] = find_loc(ev, "pid");
    } else if (sched && ev.name == "sched_switch") {
        f.kind = Kind::Switch;
        f.pid[0] = find_loc(ev, "prev_pid");
        f.pid[1] = find_loc(ev, "next_pid");
        f.prev_state = find_loc(ev, "prev_state");
        f.prev_comm = find_loc(ev, "prev_comm", true);
    } else if (sched && ev.name == "sched_migrate_task") {
        f.kind = Kind::Migrate;
        f.pid[0] = find_loc(ev, "pid");
        f.cpu[0] = find_loc(ev, "dest_cpu");
        f.cpu[1] = find_loc(ev, "orig_cpu");
    } else {
        f.cpu[0] = find_loc(ev, "cpu");
        f.pid[0] = first_loc(ev, {"pid", "parent_pid"});
        f.pid[1] = find_loc(ev, "child_pid");
    }
}

bool read_int(const perf::SampleCopy& c, const Loc& l, int64_t& v) {
    return l.read(c.raw.data(), c.raw.size(), v);
}

// One window walk: the pair's events and the task whose CPU is tracked.
struct Walk {
    uint64_t t1 = 0, key = 0;
    bool keyed = false, has2 = false;
    int64_t cpu1 = -1, cpu2 = -1, pid1 = 0, pid2 = 0, tid1 = 0, tid2 = 0;
    int64_t task = 0;  // the tracked thread
    int64_t cpu = -1;  // its CPU, -1 unknown
    int64_t was = -1;  // its CPU before the event at hand, which may be the one it leaves
};

int64_t cpu_of(const perf::SampleCopy& c) {
    return c.cpu == UINT32_MAX ? -1 : int64_t(c.cpu);
}

}  // namespace

struct Timeline::State {
    State(Env& e, const DetailSpec& s) : env(e), spec(s) {}
    ~State() {
        while (live.size()) delete live.pop_front();
    }

    Env& env;
    DetailSpec spec;
    NodeRing live;
    std::vector<std::unique_ptr<Node>> free;  // released nodes, their buffers kept
    size_t handed = 0;                        // live[0, handed) are handed out
    size_t scan = 0;                          // live[0, scan) are handed out and unpinned
    size_t peak = 0;
    uint64_t newest = 0;
    std::unordered_map<const EventSpec*, EventFields> fields;
    std::vector<uint64_t> switch_at;  // per CPU, during a walk: the last sched_switch seen

    const EventFields* fields_of(const perf::SampleCopy& c) {
        if (c.from || !c.event) return nullptr;  // a nested profiler's sample: no fields
        auto [it, fresh] = fields.try_emplace(c.event);
        if (fresh) resolve(*c.event, it->second);
        return &it->second;
    }

    // The first index in [lo, hi) whose time is at least t.
    size_t lower(uint64_t t, size_t lo, size_t hi) const {
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (live[mid]->copy.time < t)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo;
    }

    static bool same_content(const Node& n, const Sample& s) {
        const perf::SampleCopy& c = n.copy;
        return c.time == s.time && c.event_index == s.event_index && c.tid == s.tid && c.cpu == s.cpu &&
               c.from == s.from && c.raw.size() == s.raw_size &&
               (s.raw_size == 0 || std::memcmp(c.raw.data(), s.raw, s.raw_size) == 0);
    }

    // The node whose copy `s` was made from (its raw pointer), else one with the same content.
    size_t find(const Sample& s) const {
        const size_t lo = lower(s.time, 0, live.size());
        size_t i = lo;
        for (; i < live.size() && live[i]->copy.time == s.time; ++i)
            if (s.raw ? live[i]->copy.raw.data() == s.raw
                      : s.callchain && live[i]->copy.chain.data() == s.callchain)
                return i;
        for (size_t j = lo; j < i; ++j)
            if (same_content(*live[j], s)) return j;
        // Out-of-order deliveries break the time order the search relies on.
        for (size_t j = 0; j < live.size(); ++j)
            if (same_content(*live[j], s)) return j;
        return npos;
    }

    size_t index_of(const Node* n) const {
        for (size_t i = lower(n->copy.time, 0, live.size()); i < live.size(); ++i)
            if (live[i] == n) return i;
        for (size_t i = 0; i < live.size(); ++i)
            if (live[i] == n) return i;
        return npos;
    }

    // ---- window printing ----

    void say(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(env.ctx.out(), fmt, ap);
        va_end(ap);
    }

    void print_titled(const Node& n, const std::string& title) {
        Sample s = n.copy.sample();
        s.title = title;
        env.print_event(s);
    }

    Walk make_walk(const Node& n1, const Node* n2, uint64_t key) {
        Walk w;
        w.t1 = n1.copy.time;
        w.key = key;
        w.keyed = n1.keyed;
        w.cpu1 = w.cpu = cpu_of(n1.copy);
        w.pid1 = n1.copy.pid;
        w.tid1 = w.task = n1.copy.tid;
        if (n2) {
            w.has2 = true;
            w.cpu2 = cpu_of(n2->copy);
            w.pid2 = n2->copy.pid;
            w.tid2 = n2->copy.tid;
        }
        std::fill(switch_at.begin(), switch_at.end(), kNever);
        return w;
    }

    static bool cpu_match(const Node& e, const EventFields* f, int64_t cpu, bool by_field) {
        if (cpu < 0) return false;
        if (cpu_of(e.copy) == cpu) return true;
        if (!by_field || !f) return false;
        int64_t v;
        for (const Loc& l : f->cpu)
            if (read_int(e.copy, l, v) && v == cpu) return true;
        return false;
    }

    static bool id_match(const Node& e, const EventFields* f, int64_t own, int64_t id) {
        if (id <= 0) return false;
        if (own == id) return true;
        int64_t v;
        if (f)
            for (const Loc& l : f->pid)
                if (read_int(e.copy, l, v) && v == id) return true;
        return false;
    }

    // Which same* test `e` passes ("" without any), null when none does.
    const char* related(const Node& e, const Walk& w) {
        if (!spec.any_same()) return "";
        const EventFields* f = fields_of(e.copy);
        const bool s1 = spec.side1, s2 = spec.side2 && w.has2;
        if (spec.samecpu) {
            if (cpu_match(e, f, w.cpu, true) || (w.was != w.cpu && cpu_match(e, f, w.was, true)))
                return "cpu";
            if (s1 && cpu_match(e, f, w.cpu1, true)) return "cpu1";
            if (s2 && cpu_match(e, f, w.cpu2, w.cpu1 != w.cpu2)) return "cpu2";
        }
        if (spec.samepid) {
            if (s1 && id_match(e, f, e.copy.pid, w.pid1)) return "pid1";
            if (s2 && id_match(e, f, e.copy.pid, w.pid2)) return "pid2";
        }
        if (spec.sametid) {
            if (s1 && id_match(e, f, e.copy.tid, w.tid1)) return "tid1";
            if (s2 && id_match(e, f, e.copy.tid, w.tid2)) return "tid2";
        }
        if (spec.samekey && e.keyed == w.keyed && e.key == w.key) return "key";
        return nullptr;
    }

    // Where the tracked task goes as `e` reveals it: the reason, or null when `e` says nothing.
    const char* track(const Node& e, Walk& w) {
        if (w.task <= 0) return nullptr;  // the idle task runs everywhere
        const perf::SampleCopy& c = e.copy;
        int64_t v, cpu;
        if (const EventFields* f = fields_of(c)) {
            switch (f->kind) {
                case Kind::Wakeup:
                    if (read_int(c, f->pid[0], v) && v == w.task && read_int(c, f->cpu[0], cpu)) {
                        w.cpu = cpu;
                        return "[wakeup]";
                    }
                    break;
                case Kind::Switch:
                    if (read_int(c, f->pid[1], v) && v == w.task) {
                        w.cpu = cpu_of(c);
                        return "[running]";
                    }
                    if (read_int(c, f->pid[0], v) && v == w.task) {
                        int64_t state = 0;
                        read_int(c, f->prev_state, state);
                        // The state bits are below 0x100; above them only the preemption mark.
                        if ((state & 0xff) == 0) {
                            w.cpu = cpu_of(c);
                            return "[preempt]";
                        }
                        w.cpu = -1;
                        return (state & 0xff) == 1 ? "[sleeping]" : "[waiting]";
                    }
                    break;
                case Kind::Migrate:
                    if (read_int(c, f->pid[0], v) && v == w.task && read_int(c, f->cpu[0], cpu)) {
                        w.cpu = cpu;
                        return "[migrate]";
                    }
                    break;
                case Kind::Other:
                    break;
            }
        }
        if (int64_t(c.tid) == w.task && cpu_of(c) >= 0 && cpu_of(c) != w.cpu) {
            w.cpu = cpu_of(c);
            return "[running]";
        }
        return nullptr;
    }

    // A sched_switch on a tracked CPU ends the run of its prev task: its name and how long it
    // ran since the previous switch on that CPU in this window. Every switch is noted.
    bool ran(const Node& e, const Walk& w, std::string& note) {
        const EventFields* f = fields_of(e.copy);
        const int64_t cpu = cpu_of(e.copy);
        if (!f || f->kind != Kind::Switch || cpu < 0 || cpu >= 65536) return false;
        if (switch_at.size() <= size_t(cpu)) switch_at.resize(size_t(cpu) + 1, kNever);
        const uint64_t since = switch_at[size_t(cpu)];
        switch_at[size_t(cpu)] = e.copy.time;
        if (since == kNever || since > e.copy.time || (cpu != w.cpu && cpu != w.cpu1 && cpu != w.cpu2))
            return false;
        std::string comm;
        const Loc& l = f->prev_comm;
        if (l.ok && e.copy.raw.size() >= size_t(l.off) + l.size) {
            const char* p = reinterpret_cast<const char*>(e.copy.raw.data()) + l.off;
            comm.assign(p, strnlen(p, l.size));
        }
        if (comm.empty()) {
            int64_t pid = 0;
            read_int(e.copy, f->pid[0], pid);
            comm = env.ctx.comm(uint32_t(pid));
        }
        note_time(e.copy.time - since, comm.c_str(), note);
        return true;
    }

    // " {t:>12.3f} {what}", cut to fit the 26 columns of the title after its '|'.
    void note_time(uint64_t t, const char* what, std::string& note) const {
        char buf[64];
        const int n = std::snprintf(buf, sizeof(buf), " %12.3f %s", env.in_units(t), what);
        note.assign(buf, size_t(std::clamp(n, 0, 25)));
    }

    // The note of a context event: CPU tracking, else the run that ended, else with -v the test.
    // Every event of the walk goes through here, printed or not, so that the tracking sees it.
    const char* visit(const Node& e, Walk& w, bool tracking, std::string& note) {
        note.clear();
        w.was = w.cpu;
        const char* why = tracking ? track(e, w) : nullptr;
        const bool ended = ran(e, w, note);
        const char* tag = related(e, w);
        if (!tag) return nullptr;
        if (why) {
            note_time(e.copy.time >= w.t1 ? e.copy.time - w.t1 : 0, why, note);
        } else if (!ended && env.verbose && *tag) {
            note = ' ';
            note += tag;
        }
        return tag;
    }

    // The events after event1 up to index `end` (exclusive): hide<TIME runs, the every-50th
    // time title, and `first` as the title of the first thing printed.
    void between(size_t i1, size_t end, Walk& w, const std::string& first) {
        std::string note, run_note;
        const Node* run_last = nullptr;
        uint64_t run = 0, printed = 0, prev = w.t1;
        bool started = first.empty();
        auto emit = [&](const Node& e, const std::string& n) {
            ++printed;
            if (!started) {
                print_titled(e, first);
                started = true;
            } else if (printed % 50 == 0) {
                char buf[48];
                std::snprintf(buf, sizeof(buf), "|- %.3f us", env.in_units(e.copy.time - w.t1));
                print_titled(e, buf);
            } else {
                print_titled(e, "|" + n);
            }
        };
        auto end_run = [&] {
            if (run > 1) {
                if (!started) say("%s\n", first.c_str()), started = true;
                say("| %17llu hidden\n", (unsigned long long)(run - 1));
            }
            if (run) emit(*run_last, run_note);
            run = 0;
        };
        for (size_t i = i1 + 1; i < end; ++i) {
            const Node& e = *live[i];
            if (!visit(e, w, true, note)) continue;
            const bool close = spec.hide && e.copy.time < prev + spec.hide;
            prev = e.copy.time;
            if (close) {
                ++run;
                run_last = &e;
                run_note = note;
                continue;
            }
            end_run();
            emit(e, note);
        }
        end_run();
        if (!started) say("%s\n", first.c_str());
    }
};

Timeline::Timeline(Env& env, const DetailSpec& spec) : st_(std::make_unique<State>(env, spec)) {}

Timeline::~Timeline() = default;

Timeline::Node* Timeline::push(const Sample& s, uint64_t key, bool keyed) {
    State& st = *st_;
    std::unique_ptr<Node> n;
    if (!st.free.empty()) {
        n = std::move(st.free.back());
        st.free.pop_back();
    } else {
        n = std::make_unique<Node>();
    }
    n->copy.assign(s);
    n->key = key;
    n->keyed = keyed;
    n->handed = false;
    n->pins = 0;
    st.live.push_back(n.get());
    st.newest = std::max(st.newest, s.time);
    st.peak = std::max(st.peak, st.live.size());
    return n.release();
}

Timeline::Node* Timeline::next_ready(bool all) {
    State& st = *st_;
    if (st.handed == st.live.size()) return nullptr;
    Node* n = st.live[st.handed];
    if (!all && n->copy.time + st.spec.after > st.newest) return nullptr;
    n->handed = true;
    ++st.handed;
    return n;
}

Sample Timeline::sample(const Node* n) {
    return n->copy.sample();
}

uint64_t Timeline::key(const Node* n) {
    return n->key;
}

void Timeline::pin(Node* n) {
    State& st = *st_;
    // A node inside the unpinned prefix shortens it.
    if (n->pins++ == 0 && st.scan && n->copy.time <= st.live[st.scan - 1]->copy.time) {
        const size_t i = st.index_of(n);
        if (i < st.scan) st.scan = i;
    }
}

void Timeline::unpin(Node* n) {
    if (n->pins) --n->pins;
}

void Timeline::release() {
    State& st = *st_;
    while (st.scan < st.live.size() && st.live[st.scan]->handed && !st.live[st.scan]->pins) ++st.scan;
    // The first node still needed: the oldest pinned or not handed out; with none, the next
    // one pushed, which is no older than the newest.
    const uint64_t ref = st.scan < st.live.size() ? st.live[st.scan]->copy.time : st.newest;
    const uint64_t limit = ref > st.spec.before ? ref - st.spec.before : 0;
    while (st.scan && st.live.front()->copy.time < limit) {
        st.free.emplace_back(st.live.pop_front());
        --st.scan;
        --st.handed;
    }
    // As many free nodes as live ones and a few more: a steady stream never allocates, and
    // the buffers of a burst go back once it has been released.
    const size_t keep = std::max<size_t>(256, st.live.size());
    if (st.free.size() > keep) st.free.resize(keep);
}

void Timeline::print_window(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) {
    (void)p;
    State& st = *st_;
    Env& env = st.env;
    const size_t i1 = st.find(ev1), i2 = st.find(ev2);
    if (i1 == npos || i2 == npos || i1 >= i2) {
        // Not on the timeline (it cannot happen while the profiler pins event1): both events.
        env.print_event(ev1);
        env.print_event(ev2);
        return;
    }
    const Node& n1 = *st.live[i1];
    const Node& n2 = *st.live[i2];
    const uint64_t t1 = n1.copy.time, t2 = n2.copy.time;
    Walk w = st.make_walk(n1, &n2, key);
    std::string note;

    if (st.spec.before) {
        const size_t b = st.lower(t1 > st.spec.before ? t1 - st.spec.before : 0, 0, i1);
        bool any = false;
        for (size_t i = b; i < i1; ++i) {
            const Node& e = *st.live[i];
            if (!st.visit(e, w, false, note)) continue;
            if (!any) st.say("-Previous %.3f us\n", -env.in_units(t1 - st.live[b]->copy.time));
            any = true;
            st.print_titled(e, "|" + note);
        }
    }

    env.print_event(n1.copy.sample());
    st.visit(n1, w, true, note);
    char first[48];
    std::snprintf(first, sizeof(first), "|+ %.3f us", env.in_units(t2 - t1));
    st.between(i1, i2, w, first);
    env.print_event(n2.copy.sample());
    st.visit(n2, w, true, note);

    if (st.spec.after) {
        const uint64_t end = t2 + st.spec.after;
        size_t last = i2;
        bool any = false;
        for (size_t i = i2 + 1; i < st.live.size() && st.live[i]->copy.time < end; ++i) {
            const Node& e = *st.live[i];
            last = i;
            if (!st.visit(e, w, true, note)) continue;
            any = true;
            st.print_titled(e, "|" + note);
        }
        if (any) st.say("`After %.3f us\n", env.in_units(st.live[last]->copy.time - t2));
    }
}

void Timeline::print_lost(const Sample& ev1, uint64_t key, uint64_t last) {
    State& st = *st_;
    Env& env = st.env;
    const size_t i1 = st.find(ev1);
    env.print_event(ev1);
    if (i1 != npos) {
        const Node& n1 = *st.live[i1];
        Walk w = st.make_walk(n1, nullptr, key);
        std::string note;
        st.visit(n1, w, true, note);
        // The events up to `last`: the first index past it.
        size_t end = i1 + 1;
        while (end < st.live.size() && st.live[end]->copy.time <= last) ++end;
        st.between(i1, end, w, "");
    }
    st.say("| >= %12.3f us, event2 may be lost.\n", env.in_units(last > ev1.time ? last - ev1.time : 0));
}

size_t Timeline::nodes() const {
    return st_->live.size();
}

size_t Timeline::bytes() const {
    size_t b = 0;
    for (size_t i = 0; i < st_->live.size(); ++i)
        b += st_->live[i]->copy.bytes() + sizeof(Node) - sizeof(perf::SampleCopy);
    return b;
}

size_t Timeline::peak_nodes() const {
    return st_->peak;
}

}  // namespace perfprof::pairing
