// Kernel symbols (SPEC §5.2): every `ADDR TYPE NAME [MODULE]` line, sorted by address then
// name. /proc/kallsyms is ~5 MB of text: it is read into one mapping made resident a chunk at a
// time (a page fault costs ~10 us in some VMs, one madvise per megabyte much less), and the
// names stay where they are, NUL-terminated in place; the table points into it.
#include "sym/kallsyms.h"

#include "core/text.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

namespace perfprof::sym {

namespace {

// One small sysctl file: its first line, or empty.
std::string read_sysctl(const char* path) {
    std::string s = core::read_file_or_empty(path);
    size_t nl = s.find('\n');
    if (nl != std::string::npos) s.resize(nl);
    return s;
}

void write_sysctl(const char* path, const std::string& v) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = ::write(fd, v.data(), v.size());
    (void)n;
    ::close(fd);
}

bool kernel_older_than_5_5() {
    struct utsname u;
    if (::uname(&u) != 0) return false;
    int major = 0, minor = 0;
    if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
    return major < 5 || (major == 5 && minor < 5);
}

// An anonymous mapping of `len` bytes (address space only: pages come on use or populate()).
char* map_anon(size_t len) {
    void* p =
        ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// Makes [p, p+len) resident in one call; the pages fault in one by one where this fails.
void populate(char* p, size_t len) {
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t b = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + len + page - 1) & ~(page - 1);
    ::madvise(reinterpret_cast<void*>(b), e - b, MADV_POPULATE_WRITE);  // EINVAL before 5.14
#else
    (void)p;
    (void)len;
#endif
}

constexpr size_t kTextMax = size_t(1) << 30;  // address space reserved for the file
constexpr size_t kChunk = size_t(1) << 20;

bool blank(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

// The next blank-separated field of [p, end), advancing p past it.
std::string_view field(char*& p, char* end) {
    while (p < end && blank(*p)) ++p;
    char* b = p;
    while (p < end && !blank(*p)) ++p;
    return std::string_view(b, static_cast<size_t>(p - b));
}

// Sixteen hex digits (a 64-bit kernel's addresses are printed so).
bool hex16(const char* p, uint64_t& v) {
    v = 0;
    for (int i = 0; i < 16; ++i) {
        const unsigned c = static_cast<unsigned char>(p[i]);
        unsigned d;
        if (c - '0' < 10)
            d = c - '0';
        else if ((c | 0x20) - 'a' < 6)
            d = (c | 0x20) - 'a' + 10;
        else
            return false;
        v = v << 4 | d;
    }
    return true;
}

// `ADDR TYPE NAME [MODULE]`: the address, and where the name starts and ends.
bool parse_line(char* line, char* end, uint64_t& addr, char*& name, char*& name_end) {
    char* p = line;
    const std::string_view a = field(p, end), type = field(p, end);
    const std::string_view n = field(p, end);
    if (type.empty() || n.empty() || !core::parse_hex(a, addr)) return false;
    name = const_cast<char*>(n.data());
    name_end = name + n.size();
    return true;
}

}  // namespace

Kallsyms::~Kallsyms() {
    if (text_.p) ::munmap(text_.p, text_.len);
    if (table_.p) ::munmap(table_.p, table_.len);
}

Kallsyms::Kallsyms(const std::string& text) {
    text_.len = text.size() + 1;
    text_.p = map_anon(text_.len);
    if (!text_.p) throw std::bad_alloc();
    std::memcpy(text_.p, text.data(), text.size());
    text_len_ = text.size();
    index();
}

// §5.2: before 5.5 JIT-ed BPF programs only appear in kallsyms with bpf_jit_kallsyms on; turn it
// on for the read when the JIT is enabled, and put the old value back.
void Kallsyms::load_file(const char* path) {
    static const char kEnable[] = "/proc/sys/net/core/bpf_jit_enable";
    static const char kKallsyms[] = "/proc/sys/net/core/bpf_jit_kallsyms";
    bool toggled = false;
    std::string old;
    if (kernel_older_than_5_5()) {
        std::string en = read_sysctl(kEnable);
        old = read_sysctl(kKallsyms);
        if (!en.empty() && en != "0" && old == "0") {
            write_sysctl(kKallsyms, "1");
            toggled = true;
        }
    }
    text_.len = kTextMax;
    text_.p = map_anon(text_.len);
    const int fd = text_.p ? ::open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        size_t populated = 0;
        while (text_len_ + 1 < text_.len) {
            if (text_len_ + kChunk > populated && populated < text_.len) {
                const size_t n = std::min(kChunk, text_.len - populated);
                populate(text_.p + populated, n);
                populated += n;
            }
            const size_t want = std::min(kChunk, text_.len - 1 - text_len_);
            const ssize_t n = ::read(fd, text_.p + text_len_, want);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            text_len_ += static_cast<size_t>(n);
        }
        ::close(fd);
    }
    if (toggled) write_sysctl(kKallsyms, old);
    index();
}

void Kallsyms::index() {
    if (!text_.p) return;
    char* p = text_.p;
    char* const end = p + text_len_;
    // Address space for the shortest possible lines ("0 t x\n"), made resident as it fills.
    const size_t cap = text_len_ / 6 + 1;
    table_.len = cap * sizeof(Entry);
    table_.p = map_anon(table_.len);
    if (!table_.p) throw std::bad_alloc();
    auto* e = reinterpret_cast<Entry*>(table_.p);
    size_t populated = 0;
    while (p < end) {
        uint64_t addr;
        char *name, *name_end, *next;
        bool ok;
        if (end - p > 19 && p[16] == ' ' && p[18] == ' ' && static_cast<unsigned char>(p[19]) > ' ' &&
            hex16(p, addr)) {
            // The kernel's own "%016lx %c %s[\t[module]]\n": no search for the line's end first.
            name = p + 19;
            name_end = name;
            while (name_end<end&& static_cast<unsigned char>(*name_end)> ' ') ++name_end;
            ok = name_end > name;
            next = name_end < end && *name_end == '\n' ? name_end + 1 : nullptr;
        } else {
            char* nl = static_cast<char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
            ok = parse_line(p, nl ? nl : end, addr, name, name_end);
            next = nl ? nl + 1 : end;
        }
        if (!next) {
            char* nl = static_cast<char*>(std::memchr(name_end, '\n', static_cast<size_t>(end - name_end)));
            next = nl ? nl + 1 : end;
        }
        if (ok && n_ < cap) {
            *name_end = '\0';  // over a blank or the newline; the mapping has a byte past the text
            if ((n_ + 1) * sizeof(Entry) > populated) {
                const size_t n = std::min(kChunk, table_.len - populated);
                populate(table_.p + populated, n);
                populated += n;
            }
            e[n_++] = {addr, name};
        }
        p = next;
    }
    // Core kernel symbols come sorted; modules, BPF and trampolines follow in their own order.
    auto less = [](const Entry& x, const Entry& y) {
        if (x.addr != y.addr) return x.addr < y.addr;
        return std::strcmp(x.name, y.name) < 0;
    };
    Entry* sorted_end = std::is_sorted_until(e, e + n_, less);
    std::sort(sorted_end, e + n_, less);
    std::inplace_merge(e, sorted_end, e + n_, less);
}

const char* Kallsyms::find(uint64_t addr, uint64_t* offset) const {
    const auto* e = reinterpret_cast<const Entry*>(table_.p);
    if (!e) return nullptr;
    const Entry* it =
        std::upper_bound(e, e + n_, addr, [](uint64_t a, const Entry& x) { return a < x.addr; });
    if (it == e) return nullptr;
    size_t i = static_cast<size_t>(it - e) - 1;
    // Of several names at one address, the first in name order (sorted by address, then name).
    while (i > 0 && e[i - 1].addr == e[i].addr) --i;
    if (offset) *offset = addr - e[i].addr;
    return e[i].name;
}

std::shared_ptr<Kallsyms> Kallsyms::get() {
    static std::mutex mu;
    static std::weak_ptr<Kallsyms> shared;
    std::lock_guard<std::mutex> lock(mu);
    if (auto sp = shared.lock()) return sp;
    std::shared_ptr<Kallsyms> sp(new Kallsyms());
    try {
        sp->load_file("/proc/kallsyms");
    } catch (...) {
        sp.reset(new Kallsyms());
    }
    shared = sp;
    return sp;
}

}  // namespace perfprof::sym
