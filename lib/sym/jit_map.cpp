#include "sym/jit_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "core/text.h"

namespace perfprof::sym {

namespace {

bool blank(char c) {
    return c == ' ' || c == '\t';
}

// A hex field as perf's strtoull(…, 16) reads it: an optional 0x, then 1-16 digits.
bool hex_field(std::string_view line, size_t& pos, uint64_t& v) {
    while (pos < line.size() && blank(line[pos])) pos++;
    size_t end = pos;
    while (end < line.size() && !blank(line[end])) end++;
    std::string_view f = line.substr(pos, end - pos);
    if (f.size() > 2 && f[0] == '0' && (f[1] == 'x' || f[1] == 'X')) f.remove_prefix(2);
    pos = end;
    return core::parse_hex(f, v);
}

// Process ids: the "Uid:" fields (real, effective, saved, filesystem) and the last "NSpid:" field
// (the pid the process sees itself as, which names its map) of /proc/PID/status.
void read_status(int pid, std::vector<uid_t>& uids, std::string& nspid) {
    const std::string text = core::read_file_or_empty("/proc/" + std::to_string(pid) + "/status");
    const std::string_view uid_line = core::status_value(text, "Uid:");
    size_t f = 0;
    for (std::string_view v; !(v = core::next_field(uid_line, f)).empty();) {
        uint64_t n = 0;
        if (core::parse_dec(v, n) && n <= UINT32_MAX) uids.push_back(uid_t(n));
    }
    const std::string_view nspid_line = core::status_value(text, "NSpid:");
    f = 0;
    for (std::string_view v; !(v = core::next_field(nspid_line, f)).empty();) nspid = v;
}

std::string link_of(const std::string& path) {
    char buf[256];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

constexpr size_t kChunk = 1u << 20;  // bytes read at once; a longer line is skipped

}  // namespace

bool parse_jit_map_line(std::string_view line, JitMapLine& out) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    size_t pos = 0;
    uint64_t start, size;
    if (!hex_field(line, pos, start) || !hex_field(line, pos, size)) return false;
    if (size == 0 || start + size < start) return false;
    // One run of blanks separates the size from the name; the name keeps its own blanks.
    if (pos >= line.size() || !blank(line[pos])) return false;
    while (pos < line.size() && blank(line[pos])) pos++;
    if (pos == line.size()) return false;
    out.start = start;
    out.size = size;
    out.name = line.substr(pos);
    return true;
}

void JitSymbols::add(const JitMapLine& l) {
    if (full_) return;
    uint32_t id;
    if (auto it = name_ids_.find(l.name); it != name_ids_.end()) {
        id = it->second;
    } else {
        if (name_bytes_ + l.name.size() > kMaxNameBytes || names_.size() >= UINT32_MAX) {
            full_ = true;
            return;
        }
        id = uint32_t(names_.size());
        names_.emplace_back(l.name);
        name_bytes_ += l.name.size();
        name_ids_.emplace(names_.back(), id);
    }
    // Each line adds one piece and splits at most one other in two.
    if (pieces_.size() + 2 > kMaxPieces) {
        full_ = true;
        return;
    }
    const uint64_t s = l.start, e = l.start + l.size;
    auto p = pieces_.lower_bound(s);
    if (p != pieces_.begin() && std::prev(p)->second.end > s) --p;
    // What the new line overlaps goes; the parts of older functions outside it stay theirs.
    while (p != pieces_.end() && p->first < e) {
        const uint64_t ps = p->first;
        const Piece old = p->second;
        p = pieces_.erase(p);
        if (ps < s) pieces_.emplace(ps, Piece{s, old.fn_start, old.fn_size, old.name});
        if (old.end > e) {
            pieces_.emplace(e, Piece{old.end, old.fn_start, old.fn_size, old.name});
            break;
        }
    }
    pieces_.emplace(s, Piece{e, s, l.size, id});
}

size_t JitSymbols::add_text(std::string_view text) {
    size_t n = 0;
    for (size_t p = 0; p < text.size() && !full_;) {
        JitMapLine l;
        if (parse_jit_map_line(core::next_line(text, p), l)) {
            add(l);
            n++;
        }
    }
    return n;
}

const std::string* JitSymbols::find(uint64_t addr, uint64_t* start, uint64_t* size) const {
    auto it = pieces_.upper_bound(addr);
    if (it == pieces_.begin()) return nullptr;
    --it;
    if (addr >= it->second.end) return nullptr;
    *start = it->second.fn_start;
    *size = it->second.fn_size;
    return &names_[it->second.name];
}

void JitSymbols::clear() {
    pieces_.clear();
    name_ids_.clear();
    names_.clear();
    name_bytes_ = 0;
    full_ = false;
}

JitMap::JitMap(int pid) : pid_(pid) {
    std::string nspid;
    read_status(pid, uids_, nspid);
    host_path_ = "/tmp/perf-" + std::to_string(pid) + ".map";
    display_ = host_path_;
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string their_ns = link_of(proc + "/ns/mnt");
    if (!nspid.empty() && !their_ns.empty() && their_ns != link_of("/proc/self/ns/mnt")) {
        // Held open, the directory stays reachable after the process (and its /proc entry) is
        // gone, for symbolization at the end of a run.
        ns_tmp_.reset(::open((proc + "/root/tmp").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        ns_name_ = "perf-" + nspid + ".map";
        display_ = "/tmp/" + ns_name_;
    }
}

int JitMap::open_file() const {
    // O_NONBLOCK: a FIFO planted under the name opens without waiting for a writer.
    constexpr int kFlags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW;
    if (ns_tmp_) return ::openat(ns_tmp_.get(), ns_name_.c_str(), kFlags);
    return ::open(host_path_.c_str(), kFlags);
}

void JitMap::refresh() {
    core::Fd fd(open_file());
    if (fd.get() < 0) return;
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    if (st.st_uid != 0 && st.st_uid != ::geteuid() &&
        std::find(uids_.begin(), uids_.end(), st.st_uid) == uids_.end())
        return;
    const auto size = uint64_t(st.st_size);
    // The bytes before where the last read ended are still there: the same file, grown (an
    // inode number is reused at once when a file is removed and another one made).
    bool same = st.st_dev == dev_ && st.st_ino == ino_ && size >= read_;
    if (same && !last_.empty()) {
        std::string now(last_.size(), '\0');
        same =
            ::pread(fd.get(), now.data(), now.size(), off_t(read_ - last_.size())) == ssize_t(now.size()) &&
            now == last_;
    }
    if (!same) {
        // Another file under the name (or the same one cut short): start over.
        syms_.clear();
        read_ = 0;
        last_.clear();
        dev_ = st.st_dev;
        ino_ = st.st_ino;
    }
    if (size == read_ || syms_.full()) return;
    std::string buf;
    bool skipping = false;  // inside a line longer than a chunk
    while (read_ < size && !syms_.full()) {
        buf.resize(size_t(std::min<uint64_t>(kChunk, size - read_)));
        const ssize_t n = ::pread(fd.get(), buf.data(), buf.size(), off_t(read_));
        if (n <= 0) return;
        const std::string_view got(buf.data(), size_t(n));
        const size_t nl = got.rfind('\n');
        if (nl == std::string_view::npos) {
            if (read_ + uint64_t(n) < size || got.size() == kChunk) {
                read_ += uint64_t(n);  // a giant line: no name is that long
                skipping = true;
                continue;
            }
            // The last line, its newline not written yet: taken now, and read again (whole,
            // covering the same range) when the file grows.
            if (!skipping) syms_.add_text(got);
            return;
        }
        std::string_view whole = got.substr(0, nl + 1);
        if (skipping) {
            whole.remove_prefix(whole.find('\n') + 1);
            skipping = false;
        }
        syms_.add_text(whole);
        read_ += nl + 1;
        last_.assign(got.substr(nl + 1 - std::min<size_t>(nl + 1, 64), std::min<size_t>(nl + 1, 64)));
        if (nl + 1 < got.size() && read_ + (got.size() - nl - 1) == size) {
            syms_.add_text(got.substr(nl + 1));  // an unfinished last line, as above
            return;
        }
        if (uint64_t(n) < buf.size()) return;
    }
}

const std::string* JitMap::find(uint64_t addr, uint64_t* start, uint64_t* size) {
    if (const std::string* name = syms_.find(addr, start, size)) return name;
    // A miss costs one stat: the file is read only when it changed since it was last looked at.
    struct stat st;
    const int r = ns_tmp_ ? ::fstatat(ns_tmp_.get(), ns_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW)
                          : ::lstat(host_path_.c_str(), &st);
    if (r != 0) return nullptr;
    const Seen now{st.st_dev, st.st_ino, uint64_t(st.st_size), st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
    if (now == seen_) return nullptr;
    seen_ = now;
    refresh();
    return syms_.find(addr, start, size);
}

}  // namespace perfprof::sym
