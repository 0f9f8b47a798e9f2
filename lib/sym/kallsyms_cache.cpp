#include "sym/kallsyms_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/fd.h"
#include "core/text.h"

namespace perfprof::sym {

namespace {

// The file: a header, the entries sorted by address then name, then their names, each
// NUL-terminated. Native byte order: the cache never leaves the machine that wrote it.
constexpr char kMagic[8] = {'p', 'p', 'k', 's', 'y', 'm', 's', '1'};
constexpr size_t kMaxRanges = 4;
constexpr const char* kFile = "kallsyms";

struct Header {
    char magic[8];
    uint32_t count;   // entries
    uint32_t ranges;  // text ranges used
    uint64_t names_size;
    uint64_t text;
    uint64_t range[kMaxRanges][2];  // [lo, hi)
    char boot_id[48];
    char release[208];
};
static_assert(sizeof(Header) == 8 + 4 + 4 + 8 + 8 + 64 + 48 + 208);

struct FileEntry {
    uint64_t addr;
    uint32_t name;  // offset into the names
    uint32_t unused;
};

// `s` in a fixed field: cut, NUL-padded, and always ending in NUL.
template <size_t N>
void put(char (&field)[N], const std::string& s) {
    std::memset(field, 0, N);
    std::memcpy(field, s.data(), std::min(s.size(), N - 1));
}

template <size_t N>
bool same(const char (&field)[N], const std::string& s) {
    char want[N];
    put(want, s);
    return std::memcmp(field, want, N) == 0;
}

const Header& header(const core::Mmap& m) {
    return *static_cast<const Header*>(m.get());
}

const FileEntry* entries(const core::Mmap& m) {
    return reinterpret_cast<const FileEntry*>(static_cast<const char*>(m.get()) + sizeof(Header));
}

const char* names(const core::Mmap& m) {
    return reinterpret_cast<const char*>(entries(m) + header(m).count);
}

bool in_ranges(const Header& h, uint64_t addr) {
    for (uint32_t r = 0; r < h.ranges; r++)
        if (addr >= h.range[r][0] && addr < h.range[r][1]) return true;
    return false;
}

// The cache directory, opened without following a symlink and used only when the current user
// owns it and no one else may write it; with `create`, made (0700) first where missing.
core::Fd open_dir(const std::string& dir, bool create) {
    if (dir.empty()) return {};
    if (create) {
        const size_t slash = dir.rfind('/');
        if (slash != std::string::npos && slash > 0 && geteuid() != 0)
            ::mkdir(dir.substr(0, slash).c_str(), 0700);  // ~/.cache, where the user has none yet
        ::mkdir(dir.c_str(), 0700);
    }
    core::Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 022) != 0)
        return {};
    return fd;
}

}  // namespace

uint64_t text_address(std::string_view head) {
    uint64_t text = 0, stext = 0;
    size_t pos = 0;
    while (pos < head.size()) {
        const size_t nl = head.find('\n', pos);
        if (nl == std::string_view::npos) break;  // a line cut by the end of the head
        const std::string_view line = head.substr(pos, nl - pos);
        pos = nl + 1;
        size_t f = 0;
        const std::string_view a = core::next_field(line, f), type = core::next_field(line, f);
        const std::string_view name = core::next_field(line, f);
        uint64_t addr = 0;
        if (type.empty() || !core::parse_hex(a, addr)) continue;
        if (name == "_text") text = addr;
        if (name == "_stext") stext = addr;
        if (text) break;
    }
    return text ? text : stext;
}

KernelIdentity running_kernel(const char* kallsyms) {
    KernelIdentity id;
    id.boot_id = core::read_file_or_empty("/proc/sys/kernel/random/boot_id");
    while (!id.boot_id.empty() && id.boot_id.back() == '\n') id.boot_id.pop_back();
    struct utsname u;
    if (::uname(&u) == 0) id.release = std::string(u.release) + " " + u.version;
    // _text is among the first lines (after the per-CPU symbols on some kernels): the kernel
    // formats only the lines that are read.
    core::Fd fd(::open(kallsyms, O_RDONLY | O_CLOEXEC));
    if (!fd) return id;
    std::string head;
    char buf[4096];
    while (head.size() < (size_t(64) << 10)) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        head.append(buf, size_t(n));
        if ((id.text = text_address(head)) != 0) break;
    }
    return id;
}

std::string kallsyms_cache_dir() {
    if (geteuid() == 0) return "/var/cache/perf-prof";
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/perf-prof";
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return std::string(home) + "/.cache/perf-prof";
    return "";
}

std::unique_ptr<KallsymsCache> KallsymsCache::open(const std::string& dir, const KernelIdentity& id) {
    if (id.text == 0 || id.boot_id.empty()) return nullptr;
    const core::Fd d = open_dir(dir, false);
    if (!d) return nullptr;
    const core::Fd fd(::openat(d.get(), kFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0 || uint64_t(st.st_size) < sizeof(Header) || st.st_size > (off_t(256) << 20))
        return nullptr;
    // Mapped, not read: a run looks up a few hundred addresses, which touch a few pages of the
    // table's 5 MB. The file is replaced by rename, never rewritten in place, so a mapping of
    // it stays whole.
    void* m = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (m == MAP_FAILED) return nullptr;
    std::unique_ptr<KallsymsCache> c(new KallsymsCache());
    c->file_ = core::Mmap(m, size_t(st.st_size));
    const Header& h = header(c->file_);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.text != id.text ||
        !same(h.boot_id, id.boot_id) || !same(h.release, id.release) || h.count == 0 || h.ranges == 0 ||
        h.ranges > kMaxRanges || h.names_size == 0 ||
        uint64_t(st.st_size) != sizeof(Header) + uint64_t(h.count) * sizeof(FileEntry) + h.names_size)
        return nullptr;
    for (uint32_t r = 0; r < h.ranges; r++)
        if (h.range[r][0] >= h.range[r][1]) return nullptr;
    // Entries are checked as they are used (a name inside the names), not all here: that would
    // read the whole table. The names end in NUL, so every one of them does.
    if (names(c->file_)[h.names_size - 1] != '\0') return nullptr;
    return c;
}

bool KallsymsCache::covers(uint64_t addr) const {
    return in_ranges(header(file_), addr);
}

const char* KallsymsCache::find(uint64_t addr, uint64_t* offset) const {
    const FileEntry *b = entries(file_), *end = b + header(file_).count;
    const FileEntry* it =
        std::upper_bound(b, end, addr, [](uint64_t a, const FileEntry& x) { return a < x.addr; });
    if (it == b) return nullptr;
    --it;
    // Of several names at one address, the first in name order (they are stored in that order).
    while (it > b && (it - 1)->addr == it->addr) --it;
    if (it->name >= header(file_).names_size) return nullptr;  // a corrupt file
    if (offset) *offset = addr - it->addr;
    return names(file_) + it->name;
}

size_t KallsymsCache::size() const {
    return header(file_).count;
}

bool KallsymsCache::write(const std::string& dir, const KernelIdentity& id,
                          std::span<const KernelSymbol> table) {
    if (id.text == 0 || id.boot_id.empty()) return false;
    // The addresses of the kernel image's markers, in one pass.
    static const char* const kMarks[] = {"_text", "_stext", "_etext", "_sinittext", "_einittext"};
    uint64_t mark[std::size(kMarks)] = {};
    for (const KernelSymbol& s : table)
        if (!s.module && s.name[0] == '_')
            for (size_t m = 0; m < std::size(kMarks); m++)
                if (!mark[m] && std::strcmp(s.name, kMarks[m]) == 0) mark[m] = s.addr;
    const uint64_t text = mark[0] ? mark[0] : mark[1];
    if (text != id.text) return false;  // not the kernel the identity was read from
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.text = id.text;
    put(h.boot_id, id.boot_id);
    put(h.release, id.release);
    for (const auto& [lo, hi] : {std::pair{mark[1], mark[2]}, std::pair{mark[3], mark[4]}}) {
        if (lo && hi > lo) {
            h.range[h.ranges][0] = lo;
            h.range[h.ranges][1] = hi;
            h.ranges++;
        }
    }
    if (h.ranges == 0) return false;
    std::vector<FileEntry> out;
    std::string blob;
    for (const KernelSymbol& s : table) {
        if (!in_ranges(h, s.addr)) continue;
        // A module's symbol inside the kernel image: not a layout this cache knows to be stable.
        if (s.module) return false;
        out.push_back({s.addr, uint32_t(blob.size()), 0});
        blob.append(s.name);
        blob += '\0';
        if (blob.size() > UINT32_MAX) return false;
    }
    if (out.empty()) return false;
    h.count = uint32_t(out.size());
    h.names_size = blob.size();

    const core::Fd d = open_dir(dir, true);
    if (!d) return false;
    const std::string tmp = std::string(kFile) + "." + std::to_string(::getpid()) + ".tmp";
    core::Fd fd(::openat(d.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd && errno == EEXIST && ::unlinkat(d.get(), tmp.c_str(), 0) == 0)  // left by a crashed run
        fd.reset(::openat(d.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return false;
    const bool ok =
        core::write_all(fd.get(), std::string_view(reinterpret_cast<const char*>(&h), sizeof h)) &&
        core::write_all(fd.get(), std::string_view(reinterpret_cast<const char*>(out.data()),
                                                   out.size() * sizeof(FileEntry))) &&
        core::write_all(fd.get(), blob) && ::close(fd.release()) == 0 &&
        ::renameat(d.get(), tmp.c_str(), d.get(), kFile) == 0;
    if (!ok) ::unlinkat(d.get(), tmp.c_str(), 0);
    return ok;
}

}  // namespace perfprof::sym
