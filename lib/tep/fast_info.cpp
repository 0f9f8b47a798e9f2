#include "tep/fast_info.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <string_view>

#include "core/format.h"

namespace perfprof::tep {

namespace {

// The plugin prints a comm with "%.*s": up to its first NUL.
void append_comm(std::string& out, const uint8_t* p, FastInfo::Field f) {
    const char* c = reinterpret_cast<const char*>(p + f.offset);
    out.append(c, strnlen(c, f.size));
}

// "comm:pid", the plugin's name of a task.
void append_task(std::string& out, const uint8_t* p, FastInfo::Field comm, FastInfo::Field pid) {
    append_comm(out, p, comm);
    out += ':';
    core::append_uint(out, read_field(p, pid));
}

// The plugin's state letters: one per bit of the low 8 bits, '|'-separated, else R (which it
// also prints for the kernel's preempted mark, TASK_REPORT_MAX).
void append_state(std::string& out, uint64_t v) {
    static constexpr char kStates[] = "SDTtZXxW";
    const auto bits = unsigned(v) & 0xffu;
    if (!bits) {
        out += 'R';
        return;
    }
    bool first = true;
    for (int i = 0; i < 8; i++) {
        if (!(bits & (1u << i))) continue;
        if (!first) out += '|';
        first = false;
        out += kStates[i];
    }
}

bool is_number(const tep_format_field* f) {
    return f && !(f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC)) &&
           (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
}

bool is_comm(const tep_format_field* f) {
    return f && (f->flags & TEP_FIELD_IS_ARRAY) && !(f->flags & TEP_FIELD_IS_DYNAMIC) && f->size > 0 &&
           f->size <= 64;
}

// Fills fi.f[i] from the fields named; false when a required one is missing or of another shape.
// Fields from optional_from on may be missing; comm_mask has a bit for each comm (char array).
bool take(tep_event& ev, FastInfo& fi, std::initializer_list<const char*> names, unsigned comm_mask,
          size_t optional_from) {
    size_t i = 0;
    for (const char* name : names) {
        tep_format_field* f = tep_find_field(&ev, name);
        const bool comm = comm_mask & (1u << i);
        if (!f) {
            if (i < optional_from) return false;
            fi.f[i++] = {};
            continue;
        }
        if (comm ? !is_comm(f) : !is_number(f)) return false;
        if (f->offset < 0 || f->offset + f->size > 0xffff) return false;
        fi.f[i] = {uint16_t(f->offset), uint16_t(f->size)};
        fi.min_size = std::max(fi.min_size, uint32_t(f->offset + f->size));
        ++i;
    }
    return true;
}

void put(std::vector<uint8_t>& r, FastInfo::Field f, uint64_t v) {
    if (!f.size) return;
    std::memcpy(r.data() + f.offset, &v, f.size);  // little-endian: the low bytes
}

void put_comm(std::vector<uint8_t>& r, FastInfo::Field f, std::string_view s) {
    std::memset(r.data() + f.offset, 0, f.size);
    std::memcpy(r.data() + f.offset, s.data(), std::min<size_t>(s.size(), f.size));
}

}  // namespace

FastInfo plan_fast_info(tep_event& ev) {
    FastInfo fi;
    if (!ev.system || !ev.name || std::string_view(ev.system) != "sched") return compile_print_fmt(ev);
    const std::string_view name = ev.name;
    if (name == "sched_switch") {
        if (take(ev, fi,
                 {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"},
                 0b10001, 7))
            fi.kind = FastInfo::Kind::SchedSwitch;
    } else if (name == "sched_wakeup") {
        if (take(ev, fi, {"comm", "pid", "prio", "success", "target_cpu"}, 0b1, 3))
            fi.kind = FastInfo::Kind::SchedWakeup;
    }
    if (fi.kind == FastInfo::Kind::None) return compile_print_fmt(ev);
    return fi;
}

bool render_fast_info(const FastInfo& fi, const void* raw, uint32_t size, std::string& out) {
    if (!raw || size < fi.min_size) return false;
    const auto* p = static_cast<const uint8_t*>(raw);
    const FastInfo::Field* f = fi.f;
    switch (fi.kind) {
        case FastInfo::Kind::SchedSwitch:
            // "%s:%lld [%d] STATE ==> %s:%lld [%d]"
            append_task(out, p, f[0], f[1]);
            out += " [";
            core::append_int(out, int32_t(uint32_t(read_field(p, f[2]))));
            out += "] ";
            append_state(out, read_field(p, f[3]));
            out += " ==> ";
            append_task(out, p, f[4], f[5]);
            out += " [";
            core::append_int(out, int32_t(uint32_t(read_field(p, f[6]))));
            out += ']';
            return true;
        case FastInfo::Kind::SchedWakeup:
            // "%s:%lld [%lld]", then " success=%lld" and " CPU:%03llu" where the fields exist.
            append_task(out, p, f[0], f[1]);
            out += " [";
            core::append_uint(out, read_field(p, f[2]));
            out += ']';
            if (f[3].size) {
                out += " success=";
                core::append_uint(out, read_field(p, f[3]));
            }
            if (f[4].size) {
                out += " CPU:";
                core::append_uint(out, read_field(p, f[4]), 3, '0');
            }
            return true;
        case FastInfo::Kind::Format:
            return render_format(fi, p, size, out);
        case FastInfo::Kind::None:
            break;
    }
    return false;
}

std::vector<std::vector<uint8_t>> fast_info_probes(const FastInfo& fi, uint16_t type) {
    std::vector<std::vector<uint8_t>> out;
    if (fi.kind == FastInfo::Kind::None) return out;
    const char* comms[] = {"", "a", "perf-prof", "0123456789abcdef", "with space\tand|"};
    const uint64_t numbers[] = {0, 1, 7, 120, 139, 99999, 0x7fffffff, 0x80000000, 0xffffffff, ~uint64_t(0)};
    const size_t n = std::size(numbers);
    // Every state bit alone (and a few past the plugin's eight), then some combinations.
    std::vector<uint64_t> states = {0, 0x3, 0x81, 0x102, 0x1ff, 0xffffffff00000000ull, ~uint64_t(0)};
    for (int b = 0; b < 12; b++) states.push_back(uint64_t(1) << b);
    const size_t rows = std::max(states.size(), n);
    for (size_t i = 0; i < rows; i++) {
        std::vector<uint8_t> r(std::max<size_t>(fi.min_size, 8), 0);
        std::memcpy(r.data(), &type, 2);
        const FastInfo::Field* f = fi.f;
        const uint64_t a = numbers[i % n], b = numbers[(i * 3 + 1) % n], c = numbers[(i * 7 + 2) % n];
        if (fi.kind == FastInfo::Kind::SchedSwitch) {
            put_comm(r, f[0], comms[i % std::size(comms)]);
            put(r, f[1], a);
            put(r, f[2], b);
            put(r, f[3], states[i % states.size()]);
            put_comm(r, f[4], comms[(i + 2) % std::size(comms)]);
            put(r, f[5], c);
            put(r, f[6], a ^ b);
        } else if (fi.kind == FastInfo::Kind::SchedWakeup) {
            put_comm(r, f[0], comms[i % std::size(comms)]);
            put(r, f[1], a);
            put(r, f[2], b);
            put(r, f[3], i & 1);
            put(r, f[4], c);
        } else {
            // Format: each conversion its own value; dynamic strings after the fields.
            for (size_t j = 0; j < fi.ops.size(); j++) {
                const FastInfo::Op& op = fi.ops[j];
                const char* text = comms[(i + j) % std::size(comms)];
                if (op.conv == FastInfo::Op::Conv::Str) {
                    put_comm(r, op.field, text);
                } else if (op.conv == FastInfo::Op::Conv::DynStr) {
                    const size_t at = r.size(), len = std::strlen(text) + 1;
                    r.resize(at + len);
                    std::memcpy(r.data() + at, text, len);
                    const size_t base = op.relative ? op.field.offset + op.field.size : 0;
                    put(r, op.field, uint64_t(len) << 16 | (at - base));
                } else if (op.conv != FastInfo::Op::Conv::None) {
                    put(r, op.field, numbers[(i + 3 * j) % n]);
                }
            }
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace perfprof::tep
