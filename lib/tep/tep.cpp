#include "tep/tep.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "perf-prof/error.h"
#include "tep/tracefs.h"

namespace perfprof::tep {

namespace {

// A name that can only mean one directory entry (never "." or "..", never a path).
bool plain_name(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

}  // namespace

bool read_common(const void* raw, uint32_t size, CommonFields& out) {
    if (!raw || size < sizeof(CommonFields)) return false;
    std::memcpy(&out, raw, sizeof(out));
    return true;
}

Tep::Tep() {
    init();
}

Tep::Tep(std::string events_dir) : events_dir_(std::move(events_dir)) {
    if (events_dir_.empty()) throw Error("no events directory given for the tracepoint formats");
    init();
}

void Tep::init() {
    tep_.reset(tep_alloc());
    if (!tep_) throw Error("out of memory allocating the trace-event parser");
    // libtraceevent reports parse problems and plugin loading on stderr by default; a normal
    // run of ours must keep stderr silent (SPEC §0.3).
    tep_set_loglevel(TEP_LOG_NONE);
    plugins_ = tep_load_plugins(tep_.get());
    // Plugins (sched_switch, sched_wakeup) register the comm of every event they print. Until
    // the first lookup libtraceevent appends each registration to a list without looking for
    // duplicates, which grew by ~125 bytes per printed event; one lookup turns it into a table
    // with one entry per pid.
    tep_is_pid_registered(tep_.get(), 1);
    trace_seq_init(&seq_);
}

Tep::~Tep() {
    trace_seq_destroy(&seq_);
    if (plugins_) tep_unload_plugins(plugins_, tep_.get());
}

const std::string& Tep::events_dir() {
    if (events_dir_.empty()) events_dir_ = tracefs_dir() + "/events";
    return events_dir_;
}

bool Tep::has_event(const std::string& sys, const std::string& name) {
    if (!plain_name(sys) || !plain_name(name)) return false;
    const std::string dir = events_dir() + "/" + sys + "/" + name;
    struct stat st;
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::stat((dir + "/id").c_str(), &st) == 0 &&
           S_ISREG(st.st_mode) && ::access((dir + "/format").c_str(), R_OK) == 0;
}

std::string Tep::format_text(const std::string& sys, const std::string& name) {
    return read_file(events_dir() + "/" + sys + "/" + name + "/format");
}

std::vector<std::string> Tep::event_names() {
    return tracepoints_in(events_dir());
}

tep_event* Tep::event(std::string_view sys, std::string_view name) {
    std::string s(sys), n(name);
    if (tep_event* ev = tep_find_event_by_name(tep_.get(), s.c_str(), n.c_str())) return ev;
    std::string path = events_dir() + "/" + s + "/" + n + "/format";
    if (!plain_name(s) || !plain_name(n) || ::access(path.c_str(), R_OK) != 0)
        throw Error(s + ":" + n + " not found", "see 'perf-prof list' for the tracepoints of this kernel");
    std::string fmt = read_file(path);
    if (tep_parse_event(tep_.get(), fmt.data(), fmt.size(), s.c_str()) != TEP_ERRNO__SUCCESS)
        throw Error("cannot parse the format of " + s + ":" + n);
    tep_event* ev = tep_find_event_by_name(tep_.get(), s.c_str(), n.c_str());
    if (!ev) throw Error(s + ":" + n + " not found");
    return ev;
}

const FastInfo& Tep::fast_info(uint16_t type) {
    if (type >= fast_.size()) fast_.resize(size_t(type) + 1);
    FastSlot& slot = fast_[type];
    if (slot.known) return slot.fi;
    slot.known = true;
    tep_event* ev = tep_find_event(tep_.get(), type);
    if (!ev) return slot.fi;
    FastInfo fi = plan_fast_info(*ev);
    // Trusted only where it prints every probe as this libtraceevent and its plugins do.
    std::string want, got;
    for (const std::vector<uint8_t>& r : fast_info_probes(fi, type)) {
        want.clear();
        got.clear();
        render_info_generic(r.data(), uint32_t(r.size()), 0, 0, want);
        if (!render_fast_info(fi, r.data(), uint32_t(r.size()), got) || got != want) return slot.fi;
    }
    slot.fi = fi;
    return slot.fi;
}

void Tep::render_info(const void* raw, uint32_t size, int cpu, uint64_t ts, std::string& out) {
    CommonFields common;
    if (read_common(raw, size, common)) {
        const FastInfo& fi = fast_info(common.type);
        if (fi.kind != FastInfo::Kind::None && render_fast_info(fi, raw, size, out)) return;
    }
    render_info_generic(raw, size, cpu, ts, out);
}

void Tep::render_info_generic(const void* raw, uint32_t size, int cpu, uint64_t ts, std::string& out) {
    tep_record rec{};
    rec.ts = ts;
    rec.cpu = cpu;
    rec.size = static_cast<int>(size);
    rec.data = const_cast<void*>(raw);
    trace_seq_reset(&seq_);
    tep_print_event(tep_.get(), &seq_, &rec, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&seq_);
    out.append(seq_.buffer, seq_.len);
}

}  // namespace perfprof::tep
