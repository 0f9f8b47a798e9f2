#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/format.h"
#include "output/event_line.h"
#include "pairing/model.h"
#include "pairing/timeline.h"
#include "pairing/timeline_out.h"
#include "stack/stack_printer.h"

namespace perfprof::pairing {

void Env::print_event(const Sample& s) {
    if (timeline_out) timeline_out->printed(s);
    FILE* out = ctx.out();
    if (s.from) {
        // The nested profiler prints its own line; ours is only the head's marker column.
        std::fflush(out);
        s.from->print_event(s);
        return;
    }
    std::string line;
    output::format_event_line(ctx, s, line, ' ');
    if (s.callchain && printer) {
        printer->print(s.callchain, s.callchain_nr, s.pid, stack::max_stack_of(s.event->attr), line);
    }
    std::fwrite(line.data(), 1, line.size(), out);
}

void Env::print_pair(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) {
    if (timeline) {
        timeline->print_window(p, ev1, ev2, key);
        return;
    }
    print_event(ev1);
    print_event(ev2);
}

void Env::append_key(uint64_t key, std::string& line) {
    if (printkey) {
        // printkey= prints the key itself and returns how many characters it printed.
        FILE* out = ctx.out();
        std::fwrite(line.data(), 1, line.size(), out);
        line.clear();
        filter::EvalContext c;
        c.key = key;
        c.out = out;
        c.hooks = ctx.eval_hooks();
        const filter::Value n = printkey->eval(c);
        if (n >= 0 && n < key_width) line.append(size_t(key_width - n), ' ');
        return;
    }
    const size_t at = line.size();
    core::append_uint(line, key);
    const size_t len = line.size() - at;
    if (len < size_t(key_width)) line.append(size_t(key_width) - len, ' ');
}

std::string Env::key_header() const {
    if (!perins) return {};
    std::string h = key_name;
    if (h.size() < size_t(key_width)) h.append(size_t(key_width) - h.size(), ' ');
    h += ' ';
    if (comm_column) h += "comm             ";
    return h;
}

std::string Env::key_dashes() const {
    if (!perins) return {};
    std::string h(size_t(key_width), '-');
    h += ' ';
    if (comm_column) h += std::string(16, '-') + ' ';
    return h;
}

void Env::append_than(uint64_t n, uint64_t calls, std::string& line) const {
    static const bool tty = isatty(STDOUT_FILENO);
    line += ' ';
    if (tty && n) line += "\033[31;1m";
    core::append_uint(line, n, 6);
    line += " (";
    core::append_uint(line, calls ? n * 100 / calls : 0, 3);
    line += "%)";
    if (tty && n) line += "\033[0m";
}

}  // namespace perfprof::pairing
