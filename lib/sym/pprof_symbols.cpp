// `perf-prof --symbols BINARY` (SPEC §6). Resolution goes through Syms (pid 0), the same
// maps/DSO/object layers the stack printers use.
#include "sym/pprof_symbols.h"

#include "core/text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sym/syms.h"

namespace perfprof::sym {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}


std::string_view next_line(std::string_view in, size_t& pos) {
    size_t e = in.find('\n', pos);
    if (e == std::string_view::npos) e = in.size();
    std::string_view line = in.substr(pos, e - pos);
    pos = e + 1;
    return line;
}

bool perl_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool perl_word(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Removes every innermost `open ... close` group (no `open`/`close` inside), repeatedly; with
// `with_const`, a following `\s*const` goes too. Returns whether anything was removed.
bool strip_groups(std::string& s, char open, char close, bool with_const) {
    bool any = false;
    for (;;) {
        std::string out;
        bool changed = false;
        size_t i = 0;
        while (i < s.size()) {
            if (s[i] == open) {
                size_t j = i + 1;
                while (j < s.size() && s[j] != open && s[j] != close) ++j;
                if (j < s.size() && s[j] == close) {
                    size_t k = j + 1;
                    if (with_const) {
                        size_t m = k;
                        while (m < s.size() && perl_space(s[m])) ++m;
                        if (s.compare(m, 5, "const") == 0) k = m + 5;
                    }
                    i = k;
                    changed = true;
                    continue;
                }
            }
            out += s[i++];
        }
        if (!changed) return any;
        any = true;
        s = std::move(out);
    }
}

}  // namespace

std::string pprof_short_name(std::string s) {
    if (s.find_first_of("(<> \t\n\r\f\v") == std::string::npos) return s;  // a C name
    strip_groups(s, '(', ')', true);                                       // argument types (and `const`)
    if (!s.empty() && s.back() == '>') {                                   // a trailing <hexaddress>
        size_t lt = s.rfind('<');
        bool hex = lt != std::string::npos;
        for (size_t i = lt + 1; hex && i + 1 < s.size(); ++i)
            hex = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
        if (hex) s.erase(lt);
    }
    strip_groups(s, '<', '>', false);  // template arguments
    // A leading return type: keep from the last `\s+\w+::`.
    for (size_t i = s.size(); i-- > 1;) {
        if (!perl_space(s[i - 1]) || !perl_word(s[i])) continue;
        size_t j = i;
        while (j < s.size() && perl_word(s[j])) ++j;
        if (s.compare(j, 2, "::") == 0) {
            s.erase(0, i);
            break;
        }
    }
    return s;
}

std::string pprof_symbols(std::string_view input, const std::string& binary) {
    static const std::string unknown = "??";
    std::string out;
    try {
        // The maps table: every line up to the first one that is not a complete maps line.
        size_t pos = 0, table_end = 0;
        while (pos < input.size()) {
            size_t start = pos;
            MapsLine m;
            if (!parse_maps_line(next_line(input, pos), m)) {
                pos = start;
                break;
            }
            table_end = pos > input.size() ? input.size() : pos;
        }

        // The requests, in input order: an address (index into `addrs`), a bad address line,
        // or a name to look up in BINARY.
        struct Req {
            enum Kind : uint8_t { Addr, BadAddr, Name } kind;
            uint64_t addr = 0;
            std::string_view name;
        };
        std::vector<Req> reqs;
        std::vector<uint64_t> addrs;
        if (pos > input.size()) pos = input.size();
        reqs.reserve((input.size() - pos) / 12 + 1);  // "0x7f..." lines are ~15 bytes
        addrs.reserve(reqs.capacity());
        while (pos < input.size()) {
            std::string_view line = trim(next_line(input, pos));
            if (line.empty()) continue;
            if (line.size() >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) {
                uint64_t addr;
                if (core::parse_hex(line.substr(2), addr)) {
                    reqs.push_back({Req::Addr, addr, {}});
                    addrs.push_back(addr);
                } else {
                    reqs.push_back({Req::BadAddr, 0, {}});
                }
            } else {
                reqs.push_back({Req::Name, 0, line});
            }
        }

        // Resolve each distinct address once, in address order: the lookups of one DSO come
        // together and walk its symbol table forwards.
        std::sort(addrs.begin(), addrs.end());
        addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
        std::vector<const std::string*> names(addrs.size(), &unknown);
        try {
            Syms syms(input.substr(0, table_end), 0);
            std::unordered_map<const std::string*, std::string> short_names;
            for (size_t i = 0; i < addrs.size(); ++i) {
                Frame f;
                if (!syms.resolve(addrs[i], f) || !f.sym) continue;
                auto [sn, add] = short_names.try_emplace(f.sym);
                if (add) sn->second = pprof_short_name(*f.sym);
                if (!sn->second.empty()) names[i] = &sn->second;
            }

            std::shared_ptr<Object> bin;
            bool bin_tried = false;
            for (const Req& r : reqs) {
                if (r.kind == Req::Name) {
                    if (!bin_tried) {
                        bin_tried = true;
                        // A FIFO or device named as BINARY would block open() or read().
                        struct stat st;
                        if (::stat(binary.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bin = get_object(binary);
                    }
                    uint64_t off = bin ? bin->file_offset(r.name) : 0;
                    if (off) {
                        char buf[24];
                        std::snprintf(buf, sizeof buf, "0x%llx\n", static_cast<unsigned long long>(off));
                        out += buf;
                    }
                    continue;
                }
                const std::string* n = &unknown;
                if (r.kind == Req::Addr)
                    n = names[static_cast<size_t>(std::lower_bound(addrs.begin(), addrs.end(), r.addr) -
                                                  addrs.begin())];
                out += *n;
                out += '\n';
            }
            return out;
        } catch (...) {
        }
        // Something failed on the way (memory): still one line per address line, in order.
        out.clear();
        for (const Req& r : reqs)
            if (r.kind != Req::Name) out += "??\n";
    } catch (...) {
    }
    return out;
}

int run_pprof_symbols(const std::string& binary) {
    std::signal(SIGPIPE, SIG_IGN);
    std::string in;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
    }
    std::string out = pprof_symbols(in, binary);
    size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::write(1, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    return 0;
}

}  // namespace perfprof::sym
