// Kernel symbols (SPEC §5.2): every `ADDR TYPE NAME [MODULE]` line, sorted by address then
// name, names packed into one buffer.
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
#include <numeric>

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

// §5.2: before 5.5 JIT-ed BPF programs only appear in kallsyms with bpf_jit_kallsyms on; turn it
// on for the read when the JIT is enabled, and put the old value back.
std::string read_kallsyms() {
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
    std::string text = core::read_file_or_empty("/proc/kallsyms");
    if (toggled) write_sysctl(kKallsyms, old);
    return text;
}

}  // namespace

Kallsyms::Kallsyms(const std::string& text) {
    std::vector<uint64_t> addrs;
    std::vector<uint32_t> offs;
    std::string names;
    std::string_view all(text);
    size_t p = 0;
    while (p < all.size()) {
        std::string_view line = core::next_line(all, p);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        size_t pos = 0;
        std::string_view a = core::next_field(line, pos), type = core::next_field(line, pos),
                         name = core::next_field(line, pos);
        uint64_t addr;
        if (type.empty() || name.empty() || !core::parse_hex(a, addr)) continue;
        if (names.size() + name.size() + 1 > UINT32_MAX) break;
        addrs.push_back(addr);
        offs.push_back(static_cast<uint32_t>(names.size()));
        names.append(name);
        names.push_back('\0');
    }
    std::vector<uint32_t> idx(addrs.size());
    std::iota(idx.begin(), idx.end(), 0u);
    std::sort(idx.begin(), idx.end(), [&](uint32_t x, uint32_t y) {
        if (addrs[x] != addrs[y]) return addrs[x] < addrs[y];
        return std::strcmp(names.data() + offs[x], names.data() + offs[y]) < 0;
    });
    addrs_.reserve(idx.size());
    name_off_.reserve(idx.size());
    names_.reserve(names.size());
    for (uint32_t i : idx) {
        addrs_.push_back(addrs[i]);
        name_off_.push_back(static_cast<uint32_t>(names_.size()));
        names_.append(names.data() + offs[i]);
        names_.push_back('\0');
    }
}

const char* Kallsyms::find(uint64_t addr, uint64_t* offset) const {
    auto it = std::upper_bound(addrs_.begin(), addrs_.end(), addr);
    if (it == addrs_.begin()) return nullptr;
    size_t i = static_cast<size_t>(it - addrs_.begin()) - 1;
    // Of several names at one address, the first in name order (sorted by address, then name).
    while (i > 0 && addrs_[i - 1] == addrs_[i]) --i;
    if (offset) *offset = addr - addrs_[i];
    return names_.data() + name_off_[i];
}

std::shared_ptr<Kallsyms> Kallsyms::get() {
    static std::mutex mu;
    static std::weak_ptr<Kallsyms> shared;
    std::lock_guard<std::mutex> lock(mu);
    if (auto sp = shared.lock()) return sp;
    std::shared_ptr<Kallsyms> sp;
    try {
        sp = std::make_shared<Kallsyms>(read_kallsyms());
    } catch (...) {
        sp = std::make_shared<Kallsyms>(std::string());
    }
    shared = sp;
    return sp;
}

}  // namespace perfprof::sym
