// Kernel symbols (SPEC §5.2): every `ADDR TYPE NAME [MODULE]` line, sorted by address then
// name. /proc/kallsyms is ~5 MB of text: it is read into one pre-faulted buffer, and the names
// stay where they are, NUL-terminated in place; the table points into it.
#include "sym/kallsyms.h"

#include "core/text.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

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

constexpr size_t kChunk = size_t(1) << 20;  // read size

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

Kallsyms::Kallsyms(const std::string& text) {
    std::call_once(full_once_, [&] {
        text_ = Block(text.size() + 1);
        text_len_ = text.size();
        std::memcpy(text_.data(), text.data(), text.size());
        text_.data()[text.size()] = '\0';
        index();
        full_read_ = true;
    });
}

Kallsyms::Kallsyms(std::string path, std::string cache_dir, Identity identity)
    : path_(std::move(path)), cache_dir_(std::move(cache_dir)), identity_(identity) {}

void Kallsyms::open_cache() const {
    std::call_once(cache_once_, [&] {
        if (cache_dir_.empty() || !identity_) return;
        kernel_ = identity_(path_.c_str());
        cache_ = KallsymsCache::open(cache_dir_, kernel_);
    });
}

// Filled once, under full_once_, in an object that is never itself const.
void Kallsyms::load_full() const {
    open_cache();
    std::call_once(full_once_, [&] {
        auto& self = const_cast<Kallsyms&>(*this);
        try {
            self.load_file(path_.c_str());
        } catch (...) {
            self.entries_.clear();
        }
        full_read_ = true;
        if (!cache_) write_cache();
    });
}

// The table as the cache takes it. A name was cut in place at its first blank: a module column
// ("\t[ext4]") follows that byte.
void Kallsyms::write_cache() const {
    if (cache_dir_.empty() || kernel_.text == 0 || entries_.empty()) return;
    const char* const end = text_.data() + text_len_;
    std::vector<KernelSymbol> table;
    table.reserve(entries_.size());
    for (const Entry& e : entries_) {
        const char* q = e.name + std::strlen(e.name);
        if (q < end) ++q;
        while (q < end && (*q == ' ' || *q == '\t')) ++q;
        table.push_back({e.addr, e.name, q < end && *q == '['});
    }
    KallsymsCache::write(cache_dir_, kernel_, table);
}

size_t Kallsyms::size() const {
    load_full();
    return entries_.size();
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
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        size_t len = 0;
        Block buf(8 * kChunk);
        for (;;) {
            if (buf.size() - len < kChunk + 1) {
                Block bigger(buf.size() * 2);
                std::memcpy(bigger.data(), buf.data(), len);
                buf = std::move(bigger);
            }
            const ssize_t n = ::read(fd, buf.data() + len, kChunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            len += static_cast<size_t>(n);
        }
        ::close(fd);
        buf.data()[len] = '\0';
        text_ = std::move(buf);
        text_len_ = len;
    }
    if (toggled) write_sysctl(kKallsyms, old);
    index();
}

void Kallsyms::index() {
    if (text_.empty()) return;
    char* p = text_.data();
    char* const end = p + text_len_;
    // ~44 bytes a line in practice; the vector grows past that if it must.
    entries_.reserve(text_len_ / 32 + 1);
    while (p < end) {
        uint64_t addr;
        char *name, *name_end, *next;
        bool ok;
        if (end - p > 19 && p[16] == ' ' && p[18] == ' ' && static_cast<unsigned char>(p[19]) > ' ' &&
            core::parse_hex(std::string_view(p, 16), addr)) {
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
            char* nl = name_end < end
                           ? static_cast<char*>(std::memchr(name_end, '\n', size_t(end - name_end)))
                           : nullptr;
            next = nl ? nl + 1 : end;
        }
        if (ok) {
            *name_end = '\0';  // over a blank or the newline; text_ has a byte past the text
            entries_.push_back({addr, name});
        }
        p = next;
    }
    // Core kernel symbols come sorted; modules, BPF and trampolines follow in their own order.
    auto less = [](const Entry& x, const Entry& y) {
        if (x.addr != y.addr) return x.addr < y.addr;
        return std::strcmp(x.name, y.name) < 0;
    };
    auto sorted_end = std::is_sorted_until(entries_.begin(), entries_.end(), less);
    std::sort(sorted_end, entries_.end(), less);
    std::inplace_merge(entries_.begin(), sorted_end, entries_.end(), less);
}

const char* Kallsyms::find(uint64_t addr, uint64_t* offset) const {
    open_cache();
    if (cache_ && cache_->covers(addr)) return cache_->find(addr, offset);
    load_full();
    auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                               [](uint64_t a, const Entry& x) { return a < x.addr; });
    if (it == entries_.begin()) return nullptr;
    size_t i = static_cast<size_t>(it - entries_.begin()) - 1;
    // Of several names at one address, the first in name order (sorted by address, then name).
    while (i > 0 && entries_[i - 1].addr == entries_[i].addr) --i;
    if (offset) *offset = addr - entries_[i].addr;
    return entries_[i].name;
}

std::shared_ptr<Kallsyms> Kallsyms::running() {
    return std::make_shared<Kallsyms>("/proc/kallsyms", kallsyms_cache_dir(), running_kernel);
}

}  // namespace perfprof::sym
