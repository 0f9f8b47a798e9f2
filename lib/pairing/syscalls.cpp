// --impl syscalls (SPEC §4.6.10): raw_syscalls:sys_enter → raw_syscalls:sys_exit latency per
// syscall id (and per thread with --perins), with the count of calls that returned an error.
// The record fields are located once from the tracepoint formats.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "filter/record_field.h"
#include "filter/syscall_names.h"
#include "pairing/model.h"

namespace perfprof::pairing {
namespace {

filter::RecordField field(const TraceEvent& e, const char* name) {
    const filter::RecordField f = filter::RecordField::integer(e.spec->fields, name);
    if (!f.ok) throw Error(e.full() + ": the record has no field '" + name + "'");
    return f;
}

int64_t load(const Sample& s, const filter::RecordField& f) {
    return f.read_or(s.raw, s.raw_size, 0);
}

void pad_right(std::string& out, size_t from, size_t width) {
    const size_t len = out.size() - from;
    if (len < width) out.append(width - len, ' ');
}

class Syscalls final : public Impl {
public:
    explicit Syscalls(Env& env)
        : env_(env),
          enter_pid_(field(*env.events[0], "common_pid")),
          enter_id_(field(*env.events[0], "id")),
          exit_pid_(field(*env.events[1], "common_pid")),
          exit_id_(field(*env.events[1], "id")),
          exit_ret_(field(*env.events[1], "ret")) {}

    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) override {
        int64_t pid = 0, id = 0;
        if (!one_call(ev1, ev2, pid, id)) return;
        const uint64_t delta = ev2.time - ev1.time;
        Row& r = rows_[row_key(env_.perins ? pid : 0, id)];
        r.calls++;
        r.total += delta;
        r.min = std::min(r.min, delta);
        r.max = std::max(r.max, delta);
        const int64_t ret = load(ev2, exit_ret_);
        if (ret >= -4095 && ret <= -1) r.err++;
        if (env_.than && delta > env_.than) {
            r.than++;
            env_.print_pair(p, ev1, ev2, key);
        }
    }

    // --timeline: a slice per call, named by the syscall ("read", or "syscall 1234").
    bool slice_name(const Pair& p, const Sample& ev1, const Sample& ev2, std::string& name) const override {
        (void)p;
        int64_t pid = 0, id = 0;
        if (!one_call(ev1, ev2, pid, id)) return false;
        const char* known = filter::syscall_name(id);
        name = known ? known : "syscall ";
        if (!known) name += std::to_string(id);
        return true;
    }

    // A task freed inside a syscall (SPEC §4.6.10): the call ends at the free time.
    void remaining(const Sample& ev1, uint64_t key, Remain why, uint64_t last) override {
        (void)key;
        if (why != Remain::Freed || last < ev1.time) return;
        const int64_t pid = load(ev1, enter_pid_), id = load(ev1, enter_id_);
        const uint64_t delta = last - ev1.time;
        Row& r = rows_[row_key(env_.perins ? pid : 0, id)];
        r.calls++;
        r.total += delta;
        r.min = std::min(r.min, delta);
        r.max = std::max(r.max, delta);
        if (env_.than && delta > env_.than) {
            r.than++;
            env_.print_event(ev1);
        }
    }

    void report() override {
        if (rows_.empty()) return;
        if (env_.only_than && env_.than) {
            // Rows keep accumulating until one of them has a call beyond the threshold.
            bool over = false;
            for (const auto& [k, r] : rows_) over |= r.max > env_.than;
            if (!over) return;
        }
        std::vector<std::pair<uint64_t, const Row*>> order;
        order.reserve(rows_.size());
        for (const auto& [k, r] : rows_) order.emplace_back(k, &r);
        std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
            const uint32_t ta = uint32_t(a.first >> 32), tb = uint32_t(b.first >> 32);
            if (ta != tb) return ta < tb;
            if (a.second->calls != b.second->calls) return a.second->calls > b.second->calls;
            return int32_t(uint32_t(a.first)) < int32_t(uint32_t(b.first));
        });

        std::string out;
        core::append_wall(core::realtime_now_ns(), out);
        out += " \n";
        header(out);
        for (const auto& [k, r] : order) row(uint32_t(k >> 32), int32_t(uint32_t(k)), *r, out);
        std::fwrite(out.data(), 1, out.size(), env_.ctx.out());
        rows_.clear();
    }

private:
    // Whether sys_enter ev1 and sys_exit ev2 are one call (the same task, the same syscall):
    // the pairs two() counts and --timeline draws. Its task and syscall into pid and id.
    bool one_call(const Sample& ev1, const Sample& ev2, int64_t& pid, int64_t& id) const {
        pid = load(ev1, enter_pid_);
        id = load(ev1, enter_id_);
        return load(ev2, exit_pid_) == pid && load(ev2, exit_id_) == id;
    }

    struct Row {
        uint64_t calls = 0, total = 0, min = UINT64_MAX, max = 0, err = 0, than = 0;
    };
    static uint64_t row_key(int64_t tid, int64_t id) { return uint64_t(uint32_t(tid)) << 32 | uint32_t(id); }

    void header(std::string& out) const {
        const std::string u = env_.unit();
        if (env_.perins) out += "thread comm             ";
        out += "syscalls            ";
        core::append_right(out, "calls", 9);
        core::append_right(out, "total(" + u + ")", 17);
        core::append_right(out, "min(" + u + ")", 13);
        core::append_right(out, "avg(" + u + ")", 13);
        core::append_right(out, "max(" + u + ")", 13);
        core::append_right(out, "err", 7);
        if (env_.than) out += "   than(reqs)";
        out += '\n';
        if (env_.perins) out += "------ ---------------- ";
        out += "-------------------- -------- ---------------- ------------ ------------ ------------ ------";
        if (env_.than) out += " --------------";
        out += '\n';
    }

    void row(uint32_t tid, int32_t id, const Row& r, std::string& out) {
        if (env_.perins) {
            size_t at = out.size();
            core::append_uint(out, tid);
            pad_right(out, at, 6);
            out += ' ';
            at = out.size();
            out += env_.ctx.comm(tid);
            pad_right(out, at, 16);
            out += ' ';
        }
        const size_t at = out.size();
        const char* name = filter::syscall_name(id);
        if (name) {
            out += name;
            out += '(';
        }
        if (id < 0) out += '-';
        core::append_uint(out, id < 0 ? uint64_t(-int64_t(id)) : uint64_t(id));
        if (name) out += ')';
        pad_right(out, at, 20);
        out += ' ';
        core::append_uint(out, r.calls, 8);
        out += ' ';
        core::append_fixed3(out, env_.in_units(r.total), 16);
        out += ' ';
        core::append_fixed3(out, env_.in_units(r.min), 12);
        out += ' ';
        core::append_fixed3(out, env_.in_units(r.total) / double(r.calls), 12);
        out += ' ';
        core::append_fixed3(out, env_.in_units(r.max), 12);
        out += ' ';
        core::append_uint(out, r.err, 6);
        if (env_.than) env_.append_than(r.than, r.calls, out);
        out += '\n';
    }

    Env& env_;
    const filter::RecordField enter_pid_, enter_id_, exit_pid_, exit_id_, exit_ret_;  // located once
    std::unordered_map<uint64_t, Row> rows_;  // (tid or 0, id) → statistics
};

bool is(const TraceEvent& e, const char* name, int position) {
    return e.spec && !e.untraced && e.position == position && e.sys == "raw_syscalls" && e.name == name;
}

}  // namespace

std::unique_ptr<Impl> make_syscalls(Env& env) {
    if (env.events.size() != 2 || !is(*env.events[0], "sys_enter", 0) || !is(*env.events[1], "sys_exit", 1))
        throw Error::usage("Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit");
    return std::make_unique<Syscalls>(env);
}

}  // namespace perfprof::pairing
