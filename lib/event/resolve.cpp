#include "event/resolve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/fd.h"
#include "core/parse.h"
#include "core/text.h"
#include "event/merged_events.h"
#include "perf-prof/error.h"
#include "sym/object.h"
#include "tep/tep.h"
#include "tep/tracefs.h"

namespace perfprof::event {

namespace {

// One field of the fixed k/uprobe record layout; the C type is for the synthetic format text.
struct ProbeField {
    const char* type;
    const char* name;
    uint32_t offset, size;
    bool is_signed;
};

// The kernel's struct trace_entry, shared by every tracepoint and probe record.
constexpr ProbeField kCommon[] = {
    {"unsigned short", "common_type", 0, 2, false},
    {"unsigned char", "common_flags", 2, 1, false},
    {"unsigned char", "common_preempt_count", 3, 1, false},
    {"int", "common_pid", 4, 4, true},
};
constexpr ProbeField kEntry[] = {{"unsigned long", "__probe_ip", 8, 8, false}};
constexpr ProbeField kReturn[] = {
    {"unsigned long", "__probe_func", 8, 8, false},
    {"unsigned long", "__probe_ret_ip", 16, 8, false},
};

bool is_retprobe(Kind k) {
    return k == Kind::Kretprobe || k == Kind::Uretprobe;
}

std::string trim(std::string s) {
    auto space = [](unsigned char c) { return std::isspace(c); };
    s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
    s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
    return s;
}

bool exists(const std::string& path, bool dir) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

// §2.3 step 1 (same test as `perf-prof list`: a directory with an `id` file), in the Tep's
// events directory: tracefs's, or recorded formats under test.
bool tracepoint_exists(tep::Tep& tep, const std::string& sys, const std::string& name) {
    return tep.has_event(sys, name);
}

// Step 1 for k/uprobe words: a tracepoint group named "kprobe" would win, but a kernel without
// tracefs can still open perf probes, so tracefs problems do not stop them.
bool probe_is_tracepoint(tep::Tep& tep, const std::string& sys, const std::string& name) {
    try {
        return tracepoint_exists(tep, sys, name);
    } catch (const Error&) {
        return false;
    }
}

void resolve_tracepoint(Resolved& r, tep::Tep& tep) {
    const EventItem& it = r.item;
    r.item.kind = Kind::Tracepoint;
    r.tp = tep.event(it.sys, it.name);
    r.attr.type = PERF_TYPE_TRACEPOINT;
    r.attr.size = sizeof(perf_event_attr);
    r.attr.config = static_cast<uint64_t>(r.tp->id);
    r.fields = tracepoint_fields(*r.tp);
    r.format = tep.format_text(it.sys, it.name);
}

// The probe word as the user wrote it, for messages.
std::string probe_text(const EventItem& it) {
    std::string s = it.sys + ":" + it.name;
    if (!it.path.empty()) s += "@" + it.path;
    return s;
}

ProbePmu need_pmu(const EventItem& it, const char* pmu, const char* config) {
    std::optional<ProbePmu> p = probe_pmu(pmu);
    if (!p)
        throw Error(probe_text(it) + ": this kernel has no " + pmu + " PMU (" + kPmuDevices + "/" + pmu + ")",
                    std::string("perf ") + pmu + " events need Linux 4.17+ built with " + config);
    if (is_retprobe(it.kind) && p->retprobe_bit < 0)
        throw Error(probe_text(it) + ": the " + pmu + " PMU of this kernel has no return probes");
    return *p;
}

void set_probe_common(Resolved& r, const ProbePmu& pmu) {
    r.attr.type = pmu.type;
    r.attr.size = sizeof(perf_event_attr);
    if (is_retprobe(r.item.kind)) r.attr.config |= uint64_t(1) << pmu.retprobe_bit;
    r.fields = probe_fields(is_retprobe(r.item.kind));
    r.format = probe_format(r.item.kind, r.item.name);
}

void resolve_kprobe(Resolved& r) {
    ProbePmu pmu = need_pmu(r.item, "kprobe", "CONFIG_KPROBE_EVENTS");
    set_probe_common(r, pmu);
    r.probe = r.item.name;
    r.attr.config2 = 0;  // probe_offset: the function's entry
}

void resolve_uprobe(Resolved& r) {
    const EventItem& it = r.item;
    ProbePmu pmu = need_pmu(it, "uprobe", "CONFIG_UPROBE_EVENTS");
    std::string what = probe_text(it);
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(it.path.c_str(), nullptr), &std::free);
    // A container's file through /proc/PID/root: realpath() reads that link's text ("/") and
    // looks the rest up in our mount namespace, while open() (and the kernel's uprobe) follow it.
    const int err = errno;
    if (!real && err == ENOENT && it.path.starts_with("/proc/") && exists(it.path, false))
        real.reset(::strdup(it.path.c_str()));
    if (!real) throw Error::sys(err, what + ": cannot resolve " + it.path);
    // Not the execute bit: shared libraries are often mode 0644, and the kernel does not care.
    if (!exists(real.get(), false)) throw Error(what + ": " + real.get() + " is not a regular file");
    std::shared_ptr<sym::Object> obj = sym::get_object(real.get());
    if (obj->type() == sym::ObjectType::Unknown) {
        // Say why: unreadable, not ELF at all, or an ELF of another kind (relocatable, core).
        core::Fd fd(::open(real.get(), O_RDONLY | O_CLOEXEC));
        if (!fd) throw Error::sys(errno, what + ": cannot open " + real.get());
        char magic[4] = {};
        bool elf = ::read(fd.get(), magic, 4) == 4 && std::memcmp(magic,
                                                                  "\x7f"
                                                                  "ELF",
                                                                  4) == 0;
        throw Error(what + ": " + real.get() +
                    (elf ? ": not an ELF executable or shared object" : ": not an ELF file"));
    }
    uint64_t offset = obj->file_offset(it.name);
    if (offset == 0)
        throw Error(what + ": symbol " + it.name + " not found in " + it.path,
                    "FUNC must be the raw (mangled) name of a function in .symtab or .dynsym; `nm " +
                        it.path + "` and `nm -D " + it.path + "` list them");
    set_probe_common(r, pmu);
    r.probe = it.path;  // as written: the kernel resolves it itself when the event is opened
    r.attr.config2 = offset;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// §2.3 step 4: a SYS:NAME that is no tracepoint but names a registered profiler, either as a
// whole ("bpf:kvm-exit") or by its SYS ("signal:…", marked by the parser). Its FILTER part is
// the PROFILER-OPTIONS (§2.8).
void make_nested(Resolved& r, std::string profiler) {
    EventItem& it = r.item;
    it.kind = Kind::Profiler;
    it.sys = std::move(profiler);
    it.name.clear();
    it.profiler_options = it.filter;
    it.filter.clear();
    it.has_filter = false;
    it.profiler_candidate = false;
    check_nested_attrs(it);
}

[[noreturn]] void not_found(const EventItem& it, tep::Tep& tep) {
    const std::string guess = core::nearest(it.sys + ":" + it.name, tep.event_names());
    throw Error(
        it.sys + ":" + it.name + " not found" + (guess.empty() ? "" : " (did you mean " + guess + "?)"),
        "see 'perf-prof list' for the tracepoints of this kernel");
}

// Whether the SYS:NAME head of any EVENT of `list` is a glob (§2.4); nested profiler words never are.
bool has_glob(std::string_view list) {
    for (const std::string& ev : split_protected(list, ',')) {
        std::string head = split_protected(ev, '/').front();
        if (head.find(':') != std::string::npos && is_glob(head)) return true;
    }
    return false;
}

}  // namespace

std::optional<ProbePmu> probe_pmu(const std::string& pmu, const std::string& devices) {
    std::string dir = devices + "/" + pmu;
    if (!exists(dir + "/type", false)) return std::nullopt;
    ProbePmu p;
    std::string type = trim(tep::read_file(dir + "/type"));
    uint64_t t = 0;
    if (!core::parse_dec(type, t) || t > UINT32_MAX) throw Error(dir + "/type: bad PMU type '" + type + "'");
    p.type = static_cast<uint32_t>(t);
    std::string ret_path = dir + "/format/retprobe";
    if (exists(ret_path, false)) {
        // "config:N" (a one-bit field; a range "config:N-M" would start at N).
        std::string text = trim(tep::read_file(ret_path));
        std::string_view v = text;
        if (!v.starts_with("config:")) throw Error(ret_path + ": unexpected format '" + text + "'");
        v.remove_prefix(7);
        v = v.substr(0, v.find('-'));
        uint64_t bit = 0;
        if (!core::parse_dec(v, bit) || bit > 63)
            throw Error(ret_path + ": unexpected format '" + text + "'");
        p.retprobe_bit = static_cast<int>(bit);
    }
    return p;
}

std::vector<filter::Field> tracepoint_fields(const tep_event& tp) {
    std::vector<filter::Field> out;
    out.reserve(static_cast<size_t>(std::max(0, tp.format.nr_common + tp.format.nr_fields)));
    for (const tep_format_field* list : {tp.format.common_fields, tp.format.fields}) {
        for (const tep_format_field* f = list; f; f = f->next) {
            filter::Field x;
            x.name = f->name ? f->name : "";
            x.offset = static_cast<uint32_t>(f->offset);
            x.size = static_cast<uint32_t>(f->size);
            x.is_signed = f->flags & TEP_FIELD_IS_SIGNED;
            std::string_view type = f->type ? f->type : "";
            bool array = f->flags & TEP_FIELD_IS_ARRAY;
            // __rel_loc (offset relative to the field's end) is not a __data_loc the expression
            // language can follow: it stays a plain u32 rather than a wrong address.
            bool relative = f->flags & TEP_FIELD_IS_RELATIVE;
            bool dynamic = (f->flags & TEP_FIELD_IS_DYNAMIC) && !relative;
            if (relative) {
                x.is_signed = false;
                out.push_back(std::move(x));
                continue;
            }
            // As the kernel's filter (filter_assign_type): any char array or __data_loc char[]
            // is a string, so the user-space fallback compares exactly what the kernel would.
            bool chars = type.find("char") != std::string_view::npos;
            x.is_dynamic = dynamic;
            x.is_array = array || dynamic;
            x.is_string = (array || dynamic) && chars;
            if (array || dynamic) x.elem_size = f->elementsize;
            out.push_back(std::move(x));
        }
    }
    return out;
}

std::vector<filter::Field> probe_fields(bool retprobe) {
    std::vector<filter::Field> out;
    auto add = [&](const ProbeField& p) {
        filter::Field f;
        f.name = p.name;
        f.offset = p.offset;
        f.size = p.size;
        f.is_signed = p.is_signed;
        out.push_back(std::move(f));
    };
    for (const ProbeField& p : kCommon) add(p);
    if (retprobe)
        for (const ProbeField& p : kReturn) add(p);
    else
        for (const ProbeField& p : kEntry) add(p);
    return out;
}

std::string probe_format(Kind kind, std::string_view func) {
    const char* id = kind == Kind::Kprobe      ? "kprobe"
                     : kind == Kind::Kretprobe ? "kretprobe"
                     : kind == Kind::Uprobe    ? "uprobe"
                                               : "uretprobe";
    std::string out = "name: " + std::string(func) + "\nID: perf " + id + "\nformat:\n";
    auto line = [&](const ProbeField& p) {
        out += "\tfield:" + std::string(p.type) + " " + p.name + ";\toffset:" + std::to_string(p.offset) +
               ";\tsize:" + std::to_string(p.size) + ";\tsigned:" + (p.is_signed ? "1" : "0") + ";\n";
    };
    for (const ProbeField& p : kCommon) line(p);
    out += "\n";
    if (is_retprobe(kind)) {
        for (const ProbeField& p : kReturn) line(p);
        out += "\nprint fmt: \"(%lx <- %lx)\", REC->__probe_func, REC->__probe_ret_ip\n";
    } else {
        for (const ProbeField& p : kEntry) line(p);
        out += "\nprint fmt: \"(%lx)\", REC->__probe_ip\n";
    }
    return out;
}

Resolved resolve_event(const EventItem& item, tep::Tep& tep, const std::vector<std::string>& profilers) {
    Resolved r;
    r.item = item;
    switch (item.kind) {
        case Kind::Profiler:
            return r;  // parse_event_list checked the name and the attributes
        case Kind::Tracepoint: {
            if (tracepoint_exists(tep, item.sys, item.name)) {
                resolve_tracepoint(r, tep);
                return r;
            }
            if (const MergedEvent* m = merged_event(item.sys, item.name);
                m && tracepoint_exists(tep, item.sys, std::string(m->name))) {
                r.item = as_merged(item, *m);
                resolve_tracepoint(r, tep);
                const std::vector<filter::Field>& f = r.fields;
                if (std::none_of(f.begin(), f.end(),
                                 [&](const filter::Field& x) { return x.name == m->field; }))
                    not_found(item, tep);
                r.merged_from = item.sys + ":" + item.name;
                return r;
            }
            std::string whole = item.sys + ":" + item.name;
            // §2.3 step 4 is for profilers whose name is the whole "A:B" (upstream's
            // bpf:kvm-exit). "signal:typo" is a typo, not the signal profiler: not found.
            if (contains(profilers, whole))
                make_nested(r, whole);
            else
                not_found(item, tep);
            return r;
        }
        case Kind::Kprobe:
        case Kind::Kretprobe:
            if (probe_is_tracepoint(tep, item.sys, item.name))
                resolve_tracepoint(r, tep);
            else
                resolve_kprobe(r);
            return r;
        case Kind::Uprobe:
        case Kind::Uretprobe:
            // Step 1 cannot apply: FUNC@PATH is never the name of a tracefs directory.
            resolve_uprobe(r);
            return r;
    }
    not_found(item, tep);
}

namespace {

// SPEC §2.5 ignores a cpus= that names no CPU of the device: the event then opens on every CPU,
// the opposite of what was asked. A list without an online CPU is a mistake, said here.
void check_cpus_attr(const EventItem& item) {
    if (item.attrs.cpus.empty()) return;
    const std::string text = core::online_cpus_text();
    if (text.empty()) return;
    const std::vector<int> online = core::parse_cpu_list(text);
    for (int c : item.attrs.cpus)
        if (std::find(online.begin(), online.end(), c) != online.end()) return;
    const std::string what = item.name.empty() ? item.sys : item.sys + ":" + item.name;
    throw Error::usage(what + ": cpus=: none of these CPUs is online (online: " + text + ")");
}

}  // namespace

std::string joined_lists(const Options& opt) {
    std::string list;
    for (const std::string& e : opt.events) {
        if (e.empty()) continue;
        if (!list.empty()) list += ',';
        list += e;
    }
    return list;
}

std::vector<Resolved> resolve_event_list(std::string_view list, tep::Tep& tep, int verbose,
                                         const std::vector<std::string>& profilers) {
    std::string text(list);
    if (has_glob(text)) {
        std::string expanded = expand_wildcards(text, tep.event_names());
        if (verbose > 0) std::printf("Wildcard expansion: '%s' -> '%s'\n", text.c_str(), expanded.c_str());
        text = std::move(expanded);
    }
    std::vector<Resolved> out;
    for (const EventItem& item : parse_event_list(text, profilers)) {
        check_cpus_attr(item);
        out.push_back(resolve_event(item, tep, profilers));
        const Resolved& r = out.back();
        // A note, not a warning: the old name works; stderr stays for real problems.
        if (verbose > 0 && !r.merged_from.empty())
            std::printf("%s is %s:%s/%s/ on this kernel\n", r.merged_from.c_str(), r.item.sys.c_str(),
                        r.item.name.c_str(), r.item.filter.c_str());
    }
    return out;
}

}  // namespace perfprof::event
