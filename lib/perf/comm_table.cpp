#include "perf/comm_table.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "perf-prof/error.h"
#include "perf/record.h"
#include "tep/tracefs.h"

namespace perfprof::perf {

namespace {
constexpr uint64_t kSideBandType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
constexpr int kSideBandPages = 16;

std::string trim_newline(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

bool read_proc_comm(uint32_t tid, std::string& out) {
    try {
        out = trim_newline(tep::read_file("/proc/" + std::to_string(tid) + "/comm"));
        return true;
    } catch (const Error&) {
        return false;
    }
}
}  // namespace

CommTable::CommTable(bool live) {
    if (live) {
        // A dummy software event carries only side-band records: comm (exec and rename),
        // fork and exit of every task, on every CPU.
        perf_event_attr a{};
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_DUMMY;
        a.sample_type = kSideBandType;
        a.sample_id_all = 1;
        a.comm = 1;
        a.comm_exec = 1;
        a.task = 1;
        // Executable mappings only (mmap_data stays 0): symbols of processes that exit
        // before their samples are printed still resolve.
        a.mmap = 1;
        a.mmap2 = 1;
        a.watermark = 1;
        a.wakeup_watermark = kSideBandPages * 4096 / 2;
        perf_evsel* ev = events_.add(a);
        CpuMap cpus = online_cpus();
        events_.open(ev, cpus, all_threads(), 0, "the task-name side-band event");
        for (int i = 0; i < perf_cpu_map__nr(cpus.get()); i++)
            rings_.emplace_back(EventList::fd(ev, i, 0), kSideBandPages);
        events_.enable();
    }
    set(0, "swapper");
    scan_proc();
}

void CommTable::scan_proc() {
    core::CPtr<DIR, closedir> proc(opendir("/proc"));
    if (!proc) return;
    while (dirent* p = readdir(proc.get())) {
        if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
        std::string task_dir = std::string("/proc/") + p->d_name + "/task";
        core::CPtr<DIR, closedir> tasks(opendir(task_dir.c_str()));
        if (!tasks) continue;
        while (dirent* t = readdir(tasks.get())) {
            if (t->d_name[0] < '1' || t->d_name[0] > '9') continue;
            uint32_t tid = static_cast<uint32_t>(std::strtoul(t->d_name, nullptr, 10));
            std::string name;
            if (read_proc_comm(tid, name)) set(tid, name);
        }
    }
}

void CommTable::set(uint32_t tid, std::string_view name, uint64_t time) {
    Entry& e = names_[tid];
    if (time && time < e.time) return;
    if (time && e.exit_time && time < e.exit_time) return;  // a record of a task that is gone
    e.time = time;
    size_t n = std::min(name.size(), sizeof(e.name) - 1);
    std::memcpy(e.name, name.data(), n);
    e.name[n] = '\0';
    e.exit_time = 0;
    e.parent = 0;
}

std::optional<std::string_view> CommTable::find(uint32_t tid) {
    auto it = names_.find(tid);
    if (it == names_.end()) {
        drain();
        it = names_.find(tid);
    }
    if (it == names_.end()) {
        std::string name;
        if (!read_proc_comm(tid, name)) return std::nullopt;
        set(tid, name);
        it = names_.find(tid);
    }
    return std::string_view(it->second.name);
}

void CommTable::drain() {
    // The rings are per CPU: an exec on one CPU and a fork of the new program's first thread
    // on another must be applied in time order, or the thread inherits the pre-exec name.
    pending_.clear();
    offsets_.clear();
    for (MappedRing& r : rings_)
        r.reader().drain([this](const perf_event_header& h) {
            SampleId id;
            const uint64_t t = decode_sample_id(h, kSideBandType, id) ? id.time : 0;
            const size_t off = pending_.size();
            pending_.resize(off + 1 + (h.size + 7) / 8);
            pending_[off] = t;
            std::memcpy(&pending_[off + 1], &h, h.size);
            offsets_.push_back(off);
        });
    std::stable_sort(offsets_.begin(), offsets_.end(),
                     [this](size_t a, size_t b) { return pending_[a] < pending_[b]; });
    for (size_t off : offsets_) record(*reinterpret_cast<const perf_event_header*>(&pending_[off + 1]));
}

void CommTable::record(const perf_event_header& h) {
    const uint8_t* body = reinterpret_cast<const uint8_t*>(&h) + sizeof(h);
    SampleId id;
    if (decode_sample_id(h, kSideBandType, id) && id.time > newest_) newest_ = id.time;
    switch (h.type) {
        case PERF_RECORD_COMM: {  // u32 pid, tid; char comm[]
            if (h.size < sizeof(h) + 9) return;
            uint32_t tid;
            std::memcpy(&tid, body + 4, 4);
            const char* name = reinterpret_cast<const char*>(body + 8);
            const std::string_view n(name, strnlen(name, h.size - sizeof(h) - 8));
            set(tid, n, id.time);
            uint32_t pid;
            std::memcpy(&pid, body, 4);
            if ((h.misc & PERF_RECORD_MISC_COMM_EXEC) && pid == tid && on_exec) on_exec(pid);
            // A fork read in an earlier drain than this (older) exec copied the old name. Only
            // the task's own children are looked at: a scan of every name at each exec made a
            // busy machine's side band quadratic.
            auto kids = children_.find(tid);
            if (kids == children_.end()) break;
            std::erase_if(kids->second, [&](uint32_t child) {
                auto c = names_.find(child);
                if (c == names_.end() || c->second.parent != tid) return true;  // gone, or renamed
                if (c->second.time > id.time) {
                    const size_t len = std::min(n.size(), sizeof(c->second.name) - 1);
                    std::memcpy(c->second.name, n.data(), len);
                    c->second.name[len] = '\0';
                }
                return false;
            });
            if (kids->second.empty()) children_.erase(kids);
            break;
        }
        case PERF_RECORD_FORK: {  // u32 pid, ppid, tid, ptid; u64 time
            if (h.size < sizeof(h) + 16) return;
            uint32_t f[4];
            std::memcpy(f, body, sizeof(f));
            // A new task starts with its parent's name; an exec renames it later.
            auto parent = names_.find(f[3]);
            if (parent != names_.end() && f[2] != f[3]) {
                const std::string name = parent->second.name;
                set(f[2], name, id.time);
                names_[f[2]].parent = f[3];
                children_[f[3]].push_back(f[2]);
            }
            break;
        }
        case PERF_RECORD_EXIT: {
            if (h.size < sizeof(h) + 16) return;
            uint32_t f[4];
            std::memcpy(f, body, sizeof(f));
            auto it = names_.find(f[2]);
            if (it != names_.end() && id.time >= it->second.time)
                it->second.exit_time = id.time ? id.time : 1;
            break;
        }
        case PERF_RECORD_MMAP2: {
            // u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino, ino_generation;
            // u32 prot, flags; char filename[]
            constexpr size_t kFixed = 8 + 24 + 24 + 8;
            if (h.size < sizeof(h) + kFixed + 1 || !on_mmap) return;
            Mapping m{};
            std::memcpy(&m.pid, body, 4);
            std::memcpy(&m.start, body + 8, 8);
            std::memcpy(&m.len, body + 16, 8);
            std::memcpy(&m.pgoff, body + 24, 8);
            if (!(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
                std::memcpy(&m.maj, body + 32, 4);
                std::memcpy(&m.min, body + 36, 4);
                std::memcpy(&m.ino, body + 40, 8);
            }
            std::memcpy(&m.prot, body + 56, 4);
            const char* name = reinterpret_cast<const char*>(body + kFixed);
            m.path = std::string_view(name, strnlen(name, h.size - sizeof(h) - kFixed));
            on_mmap(m);
            break;
        }
        default:
            break;
    }
}

void CommTable::gc(uint64_t keep_ns) {
    drain();
    if (newest_ < keep_ns) return;
    const uint64_t before = newest_ - keep_ns;
    std::erase_if(names_, [&](const auto& kv) {
        const bool gone = kv.second.exit_time != 0 && kv.second.exit_time < before;
        if (gone && forget) forget(kv.first);
        return gone;
    });
    for (auto& [parent, kids] : children_)
        std::erase_if(kids, [&](uint32_t child) { return !names_.count(child); });
    std::erase_if(children_, [&](const auto& kv) { return kv.second.empty() || !names_.count(kv.first); });
}

std::vector<int> CommTable::fds() const {
    std::vector<int> v;
    for (const MappedRing& r : rings_) v.push_back(r.fd());
    return v;
}

}  // namespace perfprof::perf
