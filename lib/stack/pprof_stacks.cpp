#include "stack/pprof_stacks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/time.h"
#include "flamegraph/svg.h"
#include "perf-prof/error.h"
#include "sym/dwarf_names.h"

namespace perfprof::stack {

namespace {

// The upper half of the 64-bit address space: every 64-bit Linux kernel's addresses (4- and
// 5-level page tables alike). Informational: pprof does not symbolize "[kernel.kallsyms]".
constexpr uint64_t kKernelStart = uint64_t(1) << 63;

void put(std::string& key, const void* p, size_t n) {
    key.append(static_cast<const char*>(p), n);
}

}  // namespace

std::unique_ptr<PprofStacks> PprofStacks::from_options(const Options& opt, const char* profiler,
                                                       Printer* printer, const Kind& kind) {
    if (!opt.pprof_given) return nullptr;
    if (!opt.call_graph) throw Error::usage(std::string(profiler) + ": --pprof needs -g (stacks)");
    // trace with nested profilers only: none of its own events records a stack.
    if (!printer) throw Error::usage(std::string(profiler) + ": --pprof: none of its events records stacks");
    return std::make_unique<PprofStacks>(opt.pprof, *printer, kind);
}

namespace {

output::PprofBuilder builder_for(const PprofStacks::Kind& kind) {
    using VT = output::PprofBuilder::ValueType;
    if (!kind.values.empty()) return output::PprofBuilder(kind.values, kind.period_type, kind.period);
    if (kind.cpu_period_ns > 0)
        return output::PprofBuilder({{kind.type, kind.unit}, {kind.period_name, "nanoseconds"}},
                                    VT{kind.period_name, "nanoseconds"}, kind.cpu_period_ns);
    return output::PprofBuilder({{kind.type, kind.unit}}, VT{kind.type, kind.unit}, 1);
}

}  // namespace

PprofStacks::PprofStacks(std::string path, Printer& printer, Kind kind)
    : PprofStacks(printer, std::move(kind)) {
    path_ = std::move(path);
    if (path_.empty()) throw Error::usage("--pprof needs a file name");
    // A name the writer would take for stdout is a file here too.
    if (path_ == "-") path_ = "./-";
    // Found now rather than after the run: a folder in the way, or a place we cannot write.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw Error("cannot create the pprof file '" + path_ + "': it is a directory");
    const std::string tmp = path_ + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error::sys(errno, "cannot create the pprof file '" + path_ + "'");
    ::close(fd);
    ::unlink(tmp.c_str());
}

PprofStacks::PprofStacks(Printer& printer, Kind kind)
    : printer_(printer),
      symbols_(printer.symbolizer()),
      kind_(std::move(kind)),
      profile_(builder_for(kind_)),
      labels_(2) {
    start_realtime_ = core::realtime_now_ns();
    start_monotonic_ = core::monotonic_now_ns();
    pid_key_ = profile_.string_id("pid");
    comm_key_ = profile_.string_id("comm");
    if (kind_.tag_key) tag_key_ = profile_.string_id(kind_.tag_key);
    symbols_.add_observer(this);
}

void PprofStacks::label(std::string_view key, std::string_view value) {
    output::PprofBuilder::Label l;
    l.key = profile_.string_id(key);
    l.str = profile_.string_id(value);
    labels_.insert(labels_.end() - 1, l);  // comm stays last
}

PprofStacks::~PprofStacks() {
    symbols_.remove_observer(this);
}

void PprofStacks::before_forget(uint32_t tgid) {
    if (pending_.holds(tgid)) symbolize_pending();
}

void PprofStacks::add_weighted(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm,
                               uint64_t count, uint64_t value) {
    if (comm == "<...>") comm = {};  // the session's "unknown"
    if (pending_.add(printer_, ips, nr, pid, comm, count, value)) symbolize_pending();
}

void PprofStacks::add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm,
                                uint64_t n, std::string_view tag) {
    std::string_view root = comm;
    if (!tag.empty() && tag_key_) {
        // Pending under "comm\0tag": a NUL is in no task name.
        root_.assign(comm);
        (root_ += '\0') += tag;
        root = root_;
    }
    if (pending_.add(printer_, ips, nr, pid, root, n)) symbolize_pending();
}

bool PprofStacks::locate(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm) {
    Printer::leaf_first(ips, nr, frames_);
    if (frames_.empty()) return false;  // context markers only: no folded stack either
    location_ids_.clear();
    for (size_t i = 0; i < frames_.size(); ++i) {
        // The first frame of each part is where the CPU was; the others are return
        // addresses, whose call instruction is the byte before.
        const bool ret = i > 0 && (frames_[i].ctx == Printer::Context::Kernel) ==
                                      (frames_[i - 1].ctx == Printer::Context::Kernel);
        location_ids_.push_back(location_of(frames_[i], pid, ret));
    }
    labels_.front().key = pid_key_;
    labels_.front().num = int64_t(pid);
    labels_.back().key = comm_key_;
    labels_.back().str = comm.empty() ? 0 : profile_.string_id(comm);
    return true;
}

void PprofStacks::symbolize_pending() {
    pending_.drain(
        [&](uint32_t pid, std::string_view root, std::span<const uint64_t> ips, uint64_t n, uint64_t value) {
            const size_t nul = root.find('\0');
            const std::string_view comm = root.substr(0, nul);
            const std::string_view tag =
                nul == std::string_view::npos ? std::string_view() : root.substr(nul + 1);
            if (profile_.sample_types() > 2 || !locate(ips.data(), ips.size(), pid, comm)) return;
            // Two values: the count and its period's time, or (add_weighted) the count and the sum.
            const int64_t values[2] = {
                int64_t(n), kind_.values.empty() ? int64_t(n) * kind_.cpu_period_ns : int64_t(value)};
            profile_.sample(location_ids_, std::span(values, profile_.sample_types()),
                            tag.empty() ? sample_labels(comm) : tagged_labels(comm, tag));
        });
}

void PprofStacks::add_values(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view comm,
                             std::span<const int64_t> values) {
    if (values.size() != profile_.sample_types() || !locate(ips, nr, pid, comm)) return;
    profile_.sample(location_ids_, values, sample_labels(comm));
}

sym::DwarfNames* PprofStacks::dwarf_of(const sym::Object& obj) {
    const std::string& key = obj.build_id().empty() ? obj.path() : obj.build_id();
    auto [it, fresh] = dwarf_.try_emplace(key);
    if (fresh) it->second = sym::open_dwarf_of(obj);
    return it->second.get();
}

uint64_t PprofStacks::location_of(const Printer::ChainFrame& f, uint32_t pid, bool return_address) {
    name_.clear();
    sym::Frame r;
    printer_.folded_name(f, pid, name_, &r);
    uint64_t mapping = 0;
    if (f.ctx == Printer::Context::Kernel) {
        if (!kernel_mapping_)
            kernel_mapping_ = profile_.mapping(kKernelStart, UINT64_MAX, 0, "[kernel.kallsyms]", "", false);
        mapping = kernel_mapping_;
    } else if (f.ctx == Printer::Context::User && r.dso)
        mapping = profile_.mapping(r.map_start, r.map_end, r.map_offset, *r.dso,
                                   r.obj ? r.obj->build_id() : std::string(), false);
    // One location per (mapping, address, frame kind, role): the name depends on the first
    // three (mapping 0 stands for several unknowns), the line on the role.
    const uint8_t kind = uint8_t(uint8_t(f.ctx) << 1 | return_address);
    loc_key_.clear();
    put(loc_key_, &mapping, sizeof mapping);
    put(loc_key_, &f.ip, sizeof f.ip);
    put(loc_key_, &kind, sizeof kind);
    auto [it, fresh] = locations_.try_emplace(loc_key_, 0);
    if (!fresh) return it->second;

    // Lines from DWARF, for frames with a symbol: the function's first line and file, and the
    // line of the address (of the call, for a return address).
    int start_line = 0, line = 0;
    file_.clear();
    std::string_view system_name = name_;
    if (r.symbol) {
        system_name = r.symbol->name;
        if (sym::DwarfNames* dw = dwarf_of(*r.obj)) {
            if (!dw->source_line(r.symbol->start, &file_, &start_line)) file_.clear();
            uint64_t at = r.obj_addr;
            if (return_address && at > r.symbol->start) --at;
            if (!dw->source_line(at, nullptr, &line)) line = 0;
        }
    }
    if (line > 0) profile_.mapping(r.map_start, r.map_end, r.map_offset, *r.dso, r.obj->build_id(), true);
    const uint64_t fn = profile_.function(name_, system_name, file_, start_line);
    it->second = profile_.location(mapping, f.ip, fn, line);
    return it->second;
}

std::span<const output::PprofBuilder::Label> PprofStacks::sample_labels(std::string_view comm) const {
    return std::span(labels_.data(), labels_.size() - (comm.empty() ? 1 : 0));
}

std::span<const output::PprofBuilder::Label> PprofStacks::tagged_labels(std::string_view comm,
                                                                        std::string_view tag) {
    const auto base = sample_labels(comm);
    tagged_.assign(base.begin(), base.end());
    output::PprofBuilder::Label l;
    l.key = tag_key_;
    l.str = profile_.string_id(tag);
    tagged_.insert(comm.empty() ? tagged_.end() : tagged_.end() - 1, l);
    return tagged_;
}

std::string PprofStacks::gzipped() {
    symbolize_pending();
    profile_.set_time(start_realtime_, core::monotonic_now_ns() - start_monotonic_);
    return output::gzip(profile_.encode());
}

void PprofStacks::finish() {
    if (!path_.empty()) flamegraph::write_file(path_, gzipped());
}

}  // namespace perfprof::stack
