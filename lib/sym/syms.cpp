// Process symbols (SPEC §5.4.1, §5.4.2) and the per-tgid cache.
#include "sym/syms.h"

#include "core/text.h"
#include "sym/object_cache.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

namespace perfprof::sym {

namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

constexpr std::string_view kDeleted = " (deleted)";

// §5.4.1: the names that are not backed by a file we could read symbols from.
bool file_backed(std::string_view path) {
    if (path.empty()) return false;
    if (path == "[vdso]") return true;
    if (path[0] == '[') return false;  // [heap], [stack...], [vsyscall], [vvar], [uprobes]...
    static constexpr std::string_view kAnon[] = {"//anon",  "/dev/zero", "/anon_hugepage",
                                                 "socket:", "/SYSV",     "anon_inode:"};
    for (std::string_view p : kAnon)
        if (starts_with(path, p)) return false;
    return true;
}

// perf-prof's own vDSO image: the same kernel maps the same image into every process.
std::string own_vdso() {
    uint64_t base = getauxval(AT_SYSINFO_EHDR);
    if (!base) return {};
    std::string maps = core::read_file_or_empty("/proc/self/maps");
    std::string_view all(maps);
    size_t p = 0;
    while (p < all.size()) {
        MapsLine m;
        if (parse_maps_line(core::next_line(all, p), m) && m.start == base && m.end > m.start)
            return std::string(reinterpret_cast<const char*>(base), m.end - m.start);
    }
    return {};
}

}  // namespace

const char* reason_text(UnknownReason r) {
    // In the enum's order.
    static constexpr const char* kText[] = {"", "no mapping", "no symbol", "stripped", "unreadable file"};
    const auto i = static_cast<size_t>(r);
    return i < std::size(kText) ? kText[i] : "";
}

bool parse_maps_line(std::string_view line, MapsLine& out) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    size_t pos = 0;
    std::string_view range = core::next_field(line, pos), perms = core::next_field(line, pos),
                     off = core::next_field(line, pos), dev = core::next_field(line, pos),
                     inode = core::next_field(line, pos);
    size_t dash = range.find('-');
    if (dash == std::string_view::npos) return false;
    MapsLine m;
    if (!core::parse_hex(range.substr(0, dash), m.start) || !core::parse_hex(range.substr(dash + 1), m.end))
        return false;
    if (perms.size() != 4) return false;
    for (char c : perms)
        if (std::string_view("rwxsp-").find(c) == std::string_view::npos) return false;
    if (!core::parse_hex(off, m.offset)) return false;
    size_t colon = dev.find(':');
    uint64_t maj, min;
    if (colon == std::string_view::npos || !core::parse_hex(dev.substr(0, colon), maj) ||
        !core::parse_hex(dev.substr(colon + 1), min) || maj > UINT32_MAX || min > UINT32_MAX)
        return false;
    if (!core::parse_dec(inode, m.inode)) return false;
    m.dev_major = static_cast<uint32_t>(maj);
    m.dev_minor = static_cast<uint32_t>(min);
    m.perms = perms;
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    m.path = line.substr(pos);
    out = std::move(m);
    return true;
}

Syms::Syms(std::string_view maps_text, int pid, ObjectCache& objects) : pid_(pid), objects_(objects) {
    size_t p = 0;
    while (p < maps_text.size()) {
        MapsLine m;
        if (parse_maps_line(core::next_line(maps_text, p), m)) add_line(m);
    }
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& a, const Range& b) { return a.start < b.start; });
    std::sort(all_maps_.begin(), all_maps_.end());
}

bool Syms::add_line(const MapsLine& m) {
    if (m.end <= m.start) return false;
    all_maps_.emplace_back(m.start, m.end);
    if (m.perms.size() < 3 || m.perms[2] != 'x' || !file_backed(m.path)) return false;
    std::string path = m.path, open_path;
    if (path.size() > kDeleted.size() &&
        std::string_view(path).substr(path.size() - kDeleted.size()) == kDeleted) {
        if (pid_ <= 0) return false;
        if (!exe_read_) {
            char buf[4096];
            std::string link = "/proc/" + std::to_string(pid_) + "/exe";
            ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
            if (n > 0) exe_target_.assign(buf, static_cast<size_t>(n));
            exe_read_ = true;
        }
        if (path != exe_target_) return false;
        path = "/proc/" + std::to_string(pid_) + "/exe";
        open_path = path;
    } else if (pid_ > 0 && path != "[vdso]") {
        open_path = "/proc/" + std::to_string(pid_) + "/root" + path;
    }
    auto [it, fresh] = by_path_.emplace(path, static_cast<uint32_t>(dsos_.size()));
    if (fresh) {
        Dso d;
        d.path = path;
        d.open_path = std::move(open_path);
        d.vdso = path == "[vdso]";
        d.vdso_start = m.start;
        d.vdso_len = m.end - m.start;
        dsos_.push_back(std::move(d));
    }
    ranges_.push_back({m.start, m.end, m.offset, it->second});
    return true;
}

void Syms::add(const MapsLine& m) {
    if (m.end <= m.start) return;
    // A new mapping replaces whatever it overlaps (munmap is not reported).
    std::erase_if(ranges_, [&](const Range& r) { return r.start < m.end && m.start < r.end; });
    std::erase_if(all_maps_, [&](const auto& r) { return r.first < m.end && m.start < r.second; });
    add_line(m);
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& a, const Range& b) { return a.start < b.start; });
    std::sort(all_maps_.begin(), all_maps_.end());
}

size_t Syms::dso_count() const {
    return dsos_.size();
}

bool Syms::mapped(uint64_t addr) const {
    auto it = std::upper_bound(all_maps_.begin(), all_maps_.end(), std::make_pair(addr, UINT64_MAX));
    return it != all_maps_.begin() && addr < std::prev(it)->second;
}

Object* Syms::load(Dso& d) {
    if (d.loaded) return d.obj.get();
    d.loaded = true;
    if (d.vdso) {
        std::string image;
        if (pid_ > 0 && d.vdso_len > 0 && d.vdso_len <= (64u << 20)) {
            std::string mem = "/proc/" + std::to_string(pid_) + "/mem";
            int fd = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                image.resize(d.vdso_len);
                ssize_t n = ::pread(fd, image.data(), image.size(), static_cast<off_t>(d.vdso_start));
                if (n != static_cast<ssize_t>(image.size())) image.clear();
                ::close(fd);
            }
        }
        if (image.empty()) image = own_vdso();
        if (!image.empty()) d.obj = object_from_image("[vdso]", std::move(image));
    } else {
        // Paths come from maps text, which --symbols reads from its caller: never open a FIFO
        // or a device (open() would block, read() might never end).
        struct stat st;
        const std::string& p = d.open_path.empty() ? d.path : d.open_path;
        if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) d.obj = objects_.get(d.path, d.open_path);
        // The process has exited (its mappings came from side-band records), or did so between
        // the stat and the open: same mount namespace assumed, the path as it is.
        if ((!d.obj || d.obj->type() == ObjectType::Unknown) && p != d.path &&
            ::stat(d.path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            d.obj = objects_.get(d.path);
    }
    return d.obj.get();
}

bool Syms::resolve(uint64_t addr, Frame& out) {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const Range& r) { return a < r.start; });
    if (it == ranges_.begin()) return false;
    const Range& r = *std::prev(it);
    if (addr >= r.end) return false;
    Dso& d = dsos_[r.dso];
    out = Frame{};
    out.dso = &d.path;
    out.dso_offset = addr - r.start + r.file_offset;
    out.map_start = r.start;
    out.map_end = r.end;
    out.map_offset = r.file_offset;
    Object* obj = load(d);
    out.reason = UnknownReason::Unreadable;
    if (!obj) return true;
    uint64_t off;
    switch (obj->type()) {
        case ObjectType::Exec:
            off = addr;
            break;
        case ObjectType::Dyn:
            off = out.dso_offset + (obj->text_addr() - obj->text_offset());
            break;
        default:
            return true;
    }
    out.obj = obj;
    out.obj_addr = off;
    if (const Symbol* s = obj->find(off)) {
        out.sym = &obj->name(*s);
        out.offset = off - s->start;
        out.symbol = s;
        out.reason = UnknownReason::None;
    } else {
        out.reason = obj->stripped() ? UnknownReason::Stripped : UnknownReason::NoSymbol;
    }
    return true;
}

bool Syms::locate(uint64_t addr, Object** obj, uint64_t* obj_addr) {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const Range& r) { return a < r.start; });
    if (it == ranges_.begin()) return false;
    const Range& r = *std::prev(it);
    if (addr >= r.end) return false;
    Object* o = load(dsos_[r.dso]);
    if (!o) return false;
    uint64_t off = addr - r.start + r.file_offset;
    switch (o->type()) {
        case ObjectType::Exec:
            *obj_addr = addr;
            break;
        case ObjectType::Dyn:
            *obj_addr = off + (o->text_addr() - o->text_offset());
            break;
        default:
            return false;
    }
    *obj = o;
    return true;
}

SymsCache::Entry& SymsCache::entry(int tgid) {
    auto [it, fresh] = map_.try_emplace(tgid);
    Entry& e = it->second;
    if (fresh) {
        e.maps = core::read_file_or_empty("/proc/" + std::to_string(tgid) + "/maps");
        e.gens.push_back(std::make_unique<Syms>(e.maps, tgid, objects_));
    }
    return e;
}

void SymsCache::touch(int tgid) {
    entry(tgid);
}

void SymsCache::freeze(int tgid) {
    auto it = map_.find(tgid);
    if (it != map_.end()) it->second.frozen = true;
}

template <class Fn>
bool SymsCache::lookup(int tgid, uint64_t addr, Fn&& fn) {
    auto maps_path = [tgid] { return "/proc/" + std::to_string(tgid) + "/maps"; };
    Entry& e = entry(tgid);
    Syms& cur = *e.gens.back();
    if (fn(cur)) return true;
    // A miss in memory the maps did not know (dlopen after the first lookup): re-read once,
    // and remember pages that still miss so that, e.g., JIT code does not re-read each time.
    uint64_t page = addr >> 12;
    if (e.frozen || cur.mapped(addr) || e.misses.count(page)) return false;
    std::string maps = core::read_file_or_empty(maps_path());
    if (maps != e.maps && !maps.empty()) {
        e.maps = std::move(maps);
        e.gens.push_back(std::make_unique<Syms>(e.maps, tgid, objects_));
        if (fn(*e.gens.back())) return true;
    }
    if (e.misses.size() < 65536) e.misses.insert(page);
    return false;
}

bool SymsCache::resolve(int tgid, uint64_t addr, Frame& out) {
    if (lookup(tgid, addr, [&](Syms& s) { return s.resolve(addr, out); })) return true;
    out = Frame{};
    out.reason = UnknownReason::NoMapping;
    return false;
}

bool SymsCache::locate(int tgid, uint64_t addr, Object** obj, uint64_t* obj_addr) {
    return lookup(tgid, addr, [&](Syms& s) { return s.locate(addr, obj, obj_addr); });
}

void SymsCache::add_mapping(int tgid, const MapsLine& m) {
    // What the process has mapped so far (nothing if it is gone already), then the news.
    Entry& e = entry(tgid);
    e.gens.back()->add(m);
    e.misses.clear();
}

void SymsCache::exec_image(int tgid) {
    auto [it, fresh] = map_.try_emplace(tgid);
    if (fresh) it->second.gens.push_back(std::make_unique<Syms>(std::string(), tgid, objects_));
}

void Syms::dump(FILE* out) const {
    for (const Range& r : ranges_)
        std::fprintf(out, "      %016llx-%016llx %s\n", (unsigned long long)r.start,
                     (unsigned long long)r.end, dsos_[r.dso].path.c_str());
}

void SymsCache::dump(FILE* out) const {
    std::fprintf(out, "  symbol processes: %zu\n", map_.size());
    for (const auto& [tgid, e] : map_) {
        std::fprintf(out, "    pid %d: %zu dso(s)\n", tgid, e.gens.back()->dso_count());
        e.gens.back()->dump(out);
    }
}

void SymsCache::drop(int tgid) {
    map_.erase(tgid);
}

size_t SymsCache::size() const {
    return map_.size();
}

}  // namespace perfprof::sym
