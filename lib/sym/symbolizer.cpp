#include "sym/symbolizer.h"

#include <algorithm>

#include "sym/debuginfod.h"

namespace perfprof::sym {

Symbolizer::Symbolizer(Settings settings)
    : settings_(std::move(settings)), objects_(settings_.debug_root), processes_(objects_) {
    // Also the first use of the run's debuginfod state, on the thread that makes the session.
    Debuginfod::process().set_verbose(settings_.verbose, settings_.log);
}

Symbolizer::~Symbolizer() = default;

void Symbolizer::symbolize(uint32_t pid, std::span<const uint64_t> ips, std::span<Frame> out) {
    const size_t n = std::min(ips.size(), out.size());
    for (size_t i = 0; i < n; i++) resolve(pid, ips[i], out[i]);
}

bool Symbolizer::resolve(uint32_t pid, uint64_t ip, Frame& out) {
    out = Frame{};
    const bool mapped = processes_.resolve(int(pid), ip, out) || resolve_jit(pid, ip, out);
    if (out.reason != UnknownReason::None && settings_.verbose > 0) note_unknown(pid, out);
    return mapped;
}

std::shared_ptr<Kallsyms> Symbolizer::kernel() {
    if (!kernel_) kernel_ = Kallsyms::running();
    return kernel_;
}

bool Symbolizer::locate_object(int tgid, uint64_t pc, Object** obj, uint64_t* obj_addr) {
    return processes_.locate(tgid, pc, obj, obj_addr);
}

bool Symbolizer::locate(int tgid, uint64_t pc, unwind::CfiTable** table, uint64_t* obj_pc) {
    Object* obj = nullptr;
    if (!processes_.locate(tgid, pc, &obj, obj_pc)) return false;
    *table = &obj->cfi();
    return true;
}

void Symbolizer::prepare(uint32_t pid) {
    processes_.touch(int(pid));
    // Whose map to trust and, in a container, where it lies: known only while the process lives.
    if (pid > 0) jit_map(pid);
}

JitMap& Symbolizer::jit_map(uint32_t pid) {
    auto& m = jit_[pid];
    if (!m) m = std::make_unique<JitMap>(int(pid));
    return *m;
}

bool Symbolizer::resolve_jit(uint32_t pid, uint64_t ip, Frame& out) {
    if (pid == 0) return false;
    JitMap& m = jit_map(pid);
    uint64_t start = 0, size = 0;
    const std::string* name = m.find(ip, &start, &size);
    if (!name) return false;
    out = Frame{};
    out.sym = name;
    out.offset = ip - start;
    out.dso = &m.path();
    out.dso_offset = ip - start;
    // The function as its own mapping: pprof's mappings need a range, and the JIT's region
    // is not known from the map.
    out.map_start = start;
    out.map_end = start + size;
    out.jit = true;
    return true;
}

void Symbolizer::mmap(uint32_t pid, const MapsLine& m) {
    processes_.add_mapping(int(pid), m);
    // Anonymous code (the kernel reports it as "//anon", also on an mprotect to executable):
    // JIT code whose names may be asked for after the process is gone.
    if (pid > 0 && (m.path.empty() || m.path.starts_with("//anon") || m.path.starts_with("[anon")))
        jit_map(pid);
}

void Symbolizer::exec(uint32_t pid) {
    forget(pid);
    processes_.exec_image(int(pid));
}

void Symbolizer::exit(uint32_t pid) {
    forget(pid);
}

void Symbolizer::forget(uint32_t pid) {
    // The maps no longer describe what is pending: no re-read on a miss while outputs fold.
    processes_.freeze(int(pid));
    for (ProcessObserver* o : observers_) o->before_forget(pid);
    processes_.drop(int(pid));
    jit_.erase(pid);
}

void Symbolizer::add_observer(ProcessObserver* o) {
    observers_.push_back(o);
}

void Symbolizer::remove_observer(ProcessObserver* o) {
    std::erase(observers_, o);
}

void Symbolizer::dump(FILE* out) const {
    objects_.print_stats(out);
    processes_.dump(out);
    std::fprintf(out, "  JIT maps: %zu\n", jit_.size());
    for (const auto& [pid, m] : jit_) {
        const JitSymbols& s = m->symbols();
        std::fprintf(out, "    pid %u: %s, %zu functions in %zu ranges, %zu bytes of names%s\n", pid,
                     m->path().c_str(), s.functions(), s.pieces(), s.name_bytes(), s.full() ? " (full)" : "");
    }
}

void Symbolizer::note_unknown(uint32_t pid, const Frame& f) {
    const bool mapped = f.dso != nullptr;
    std::string who = mapped ? *f.dso : "pid " + std::to_string(pid);
    if (!told_.emplace(who, f.reason).second) return;
    if (mapped)
        std::fprintf(settings_.log, "symbols: %s: %s, frames shown as [%s+offset]\n", who.c_str(),
                     reason_text(f.reason), f.dso->c_str());
    else
        std::fprintf(settings_.log, "symbols: %s: %s, frames shown as [unknown]\n", who.c_str(),
                     reason_text(f.reason));
}

}  // namespace perfprof::sym
