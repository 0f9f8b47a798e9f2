#include "lock/lock_report.h"

#include <algorithm>
#include <cstdio>

namespace perfprof::lock {

LockReport::Row& LockReport::row(Index& index, std::vector<Row>& rows, uint32_t pid, uint64_t key) {
    auto [it, fresh] = index.try_emplace({pid, key}, uint32_t(rows.size()));
    if (fresh) {
        rows.emplace_back();
        rows.back().pid = pid;
    }
    return rows[it->second];
}

void LockReport::add(const Wait& w, uint64_t len) {
    Row& l = row(lock_index_, locks_, w.pid, w.uaddr);
    l.uaddr = w.uaddr;
    l.dist.add(len, 0);
    l.timedout += w.how == End::TimedOut;
    l.interrupted += w.how == End::Interrupted;
    if (!stacks_) return;
    Row& s = row(stack_index_, stack_rows_, w.pid, w.stack);
    s.stack = w.stack;
    s.uaddr = w.uaddr;  // the last lock it waited on
    s.dist.add(len, 0);
    s.timedout += w.how == End::TimedOut;
    s.interrupted += w.how == End::Interrupted;
    const uint32_t hstack = w.waker_known ? w.waker_stack : 0, htid = w.waker_known ? w.waker_tid : 0;
    for (Holder& h : s.holders)
        if (h.stack == hstack && (hstack || h.tid == htid)) {
            h.waits++;
            h.total += len;
            return;
        }
    Holder& h = s.holders.size() < kHoldersKept ? s.holders.emplace_back() : s.others;
    if (&h != &s.others) {
        h.stack = hstack;
        h.tid = htid;
    }
    h.waits++;
    h.total += len;
}

void LockReport::retry(uint32_t pid, uint64_t uaddr, uint32_t stack) {
    Row& l = row(lock_index_, locks_, pid, uaddr);
    l.uaddr = uaddr;
    l.retries++;
    (void)stack;
}

const LockReport::Row* LockReport::lock_row(uint32_t pid, uint64_t uaddr) const {
    auto it = lock_index_.find({pid, uaddr});
    return it == lock_index_.end() ? nullptr : &locks_[it->second];
}

const LockReport::Row* LockReport::stack_row(uint32_t pid, uint32_t stack) const {
    auto it = stack_index_.find({pid, stack});
    return it == stack_index_.end() ? nullptr : &stack_rows_[it->second];
}

namespace {

// Rows by total wait, then retries, then (pid, address) for a stable order.
std::vector<const LockReport::Row*> by_total(const std::vector<LockReport::Row>& rows) {
    std::vector<const LockReport::Row*> v;
    v.reserve(rows.size());
    for (const auto& r : rows) v.push_back(&r);
    std::sort(v.begin(), v.end(), [](const LockReport::Row* a, const LockReport::Row* b) {
        if (a->dist.total != b->dist.total) return a->dist.total > b->dist.total;
        if (a->retries != b->retries) return a->retries > b->retries;
        if (a->pid != b->pid) return a->pid < b->pid;
        if (a->uaddr != b->uaddr) return a->uaddr < b->uaddr;
        return a->stack < b->stack;
    });
    return v;
}

double mean(const output::LatencyDist& d) {
    return d.calls ? double(d.total) / double(d.calls) : 0.0;
}

void indent_lines(const std::string& text, std::string_view indent, std::string& out) {
    size_t at = 0;
    while (at < text.size()) {
        size_t nl = text.find('\n', at);
        if (nl == std::string::npos) nl = text.size() - 1;
        out += indent;
        out.append(text, at, nl - at + 1);
        at = nl + 1;
    }
    if (!text.empty() && text.back() != '\n') out += '\n';
}

}  // namespace

void LockReport::render(std::string_view wall, const char* unit, const Names& names, std::string& out) {
    if (locks_.empty()) return;
    out += wall;
    out += " \n";
    render_locks(unit, names, out);
    if (stacks_ && !stack_rows_.empty()) render_stacks(unit, names, out);
    locks_.clear();
    lock_index_.clear();
    stack_rows_.clear();
    stack_index_.clear();
}

void LockReport::render_locks(const char* unit, const Names& names, std::string& out) {
    char buf[320];
    const std::string u(unit);
    std::snprintf(buf, sizeof buf, "%-18s %-7s %-16s %8s %8s %8s %8s %16s %12s %12s %12s %12s\n", "LOCK",
                  "PID", "COMM", "WAITS", "TIMEOUT", "INTR", "RETRY", ("total(" + u + ")").c_str(),
                  ("mean(" + u + ")").c_str(), ("p50(" + u + ")").c_str(), ("p99(" + u + ")").c_str(),
                  ("max(" + u + ")").c_str());
    out += buf;
    out +=
        "------------------ ------- ---------------- -------- -------- -------- -------- ---------------- "
        "------------ ------------ ------------ ------------\n";
    const auto rows = by_total(locks_);
    uint64_t rest_n = 0, rest_total = 0;
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = *rows[i];
        if (i >= kMaxLocks) {
            rest_n += r.dist.calls;
            rest_total += r.dist.total;
            continue;
        }
        const std::string comm(names.comm(r.pid).substr(0, 16));
        const output::LatencyDist& d = r.dist;
        std::snprintf(buf, sizeof buf,
                      "0x%016llx %-7u %-16s %8llu %8llu %8llu %8llu %16.3f %12.3f %12.3f %12.3f %12.3f\n",
                      (unsigned long long)r.uaddr, r.pid, comm.c_str(), (unsigned long long)d.calls,
                      (unsigned long long)r.timedout, (unsigned long long)r.interrupted,
                      (unsigned long long)r.retries, double(d.total) / 1000.0, mean(d) / 1000.0,
                      d.sketch.quantile(0.50) / 1000.0, d.sketch.quantile(0.99) / 1000.0,
                      double(d.calls ? d.max : 0) / 1000.0);
        out += buf;
    }
    if (rows.size() > kMaxLocks) {
        std::snprintf(buf, sizeof buf, "... %zu more locks: %llu waits, total %.3f %s\n",
                      rows.size() - kMaxLocks, (unsigned long long)rest_n, double(rest_total) / 1000.0, unit);
        out += buf;
    }
}

void LockReport::render_stacks(const char* unit, const Names& names, std::string& out) {
    char buf[320];
    std::string text;
    out += "waiting stacks, by total wait\n";
    const auto rows = by_total(stack_rows_);
    size_t shown = 0;
    for (const Row* rp : rows) {
        const Row& r = *rp;
        if (!r.dist.calls) continue;  // retries only
        if (shown++ == kMaxStacks) {
            std::snprintf(buf, sizeof buf, "... %zu more waiting stacks\n", rows.size() - kMaxStacks);
            out += buf;
            break;
        }
        const output::LatencyDist& d = r.dist;
        const std::string comm(names.comm(r.pid));
        std::snprintf(
            buf, sizeof buf,
            "[%zu] %llu waits  total %.3f  mean %.3f  p50 %.3f  p99 %.3f  max %.3f (%s)  lock 0x%llx  %u %s\n",
            shown, (unsigned long long)d.calls, double(d.total) / 1000.0, mean(d) / 1000.0,
            d.sketch.quantile(0.50) / 1000.0, d.sketch.quantile(0.99) / 1000.0, double(d.max) / 1000.0, unit,
            (unsigned long long)r.uaddr, r.pid, comm.c_str());
        out += buf;
        text.clear();
        names.stack(r.pid, r.stack, text);
        indent_lines(text, "", out);
        std::vector<const Holder*> hs;
        for (const Holder& h : r.holders) hs.push_back(&h);
        std::sort(hs.begin(), hs.end(), [](const Holder* a, const Holder* b) {
            return a->total != b->total ? a->total > b->total : a->stack < b->stack;
        });
        for (size_t i = 0; i < hs.size() && i < kMaxHolders; i++) {
            const Holder& h = *hs[i];
            if (!h.tid && !h.stack) {
                std::snprintf(
                    buf, sizeof buf,
                    "  no futex release seen (timeouts, signals, thread exits): %llu waits  total %.3f %s\n",
                    (unsigned long long)h.waits, double(h.total) / 1000.0, unit);
                out += buf;
                continue;
            }
            const std::string hcomm(names.comm(h.tid));
            std::snprintf(buf, sizeof buf, "  released by %u %s: %llu waits  total %.3f %s\n", h.tid,
                          hcomm.c_str(), (unsigned long long)h.waits, double(h.total) / 1000.0, unit);
            out += buf;
            text.clear();
            names.stack(r.pid, h.stack, text);
            indent_lines(text, "  ", out);
        }
        uint64_t more_n = r.others.waits, more_total = r.others.total;
        for (size_t i = kMaxHolders; i < hs.size(); i++) more_n += hs[i]->waits, more_total += hs[i]->total;
        if (more_n) {
            std::snprintf(buf, sizeof buf, "  released by others: %llu waits  total %.3f %s\n",
                          (unsigned long long)more_n, double(more_total) / 1000.0, unit);
            out += buf;
        }
    }
}

}  // namespace perfprof::lock
