#include "output/timeline.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/format.h"
#include "core/text.h"
#include "perf-prof/error.h"

namespace perfprof::output {

namespace {

constexpr size_t kFlushAt = 64 * 1024;
constexpr char kHex[] = "0123456789abcdef";

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            // The common case: a run of plain ASCII appended at once.
            size_t j = i + 1;
            while (j < s.size()) {
                const auto d = static_cast<unsigned char>(s[j]);
                if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
                ++j;
            }
            out.append(s.data() + i, j - i);
            i = j;
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += kHex[c >> 4];
                    out += kHex[c & 15];
                } else if (const size_t n = core::utf8_length(s.substr(i))) {
                    out.append(s.data() + i, n);
                    i += n;
                    continue;
                } else {
                    out += "\\ufffd";
                }
        }
        ++i;
    }
    out += '"';
}

void append_us(std::string& out, uint64_t ns) {
    core::append_uint(out, ns / 1000);
    uint64_t frac = ns % 1000;
    if (!frac) return;
    char digits[4] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
    size_t n = 4;
    while (digits[n - 1] == '0') --n;  // "1.5", not "1.500"
    out.append(digits, n);
}

TimelineWriter::TimelineWriter(const std::string& path) : path_(path) {
    if (path_.empty()) throw Error::usage("--timeline needs a file name");
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw Error("cannot create the timeline file '" + path_ + "': it is a directory");
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error::sys(errno, "cannot create the timeline file '" + path_ + "'");
    buf_.reserve(kFlushAt + 4096);
    buf_ = "{\"traceEvents\":[";
    // Signals stay with the event loop's thread (its signalfd): the writer blocks them all.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([this] { write_loop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TimelineWriter::~TimelineWriter() {
    close();
}

void TimelineWriter::head(char ph, std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts) {
    if (fd_ < 0) {
        depth_ = -1;  // closed: the rest of this event goes nowhere
        return;
    }
    buf_ += first_event_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
    first_event_ = false;
    buf_ += ph;
    buf_ += "\",\"name\":";
    append_json_string(buf_, name);
    buf_ += ",\"pid\":";
    core::append_uint(buf_, pid);
    buf_ += ",\"tid\":";
    core::append_uint(buf_, tid);
    buf_ += ",\"ts\":";
    append_us(buf_, ts);
    depth_ = 0;
    first_member_ = true;
    ++events_;
}

void TimelineWriter::complete(std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur) {
    head('X', name, pid, tid, ts);
    if (depth_ < 0) return;
    buf_ += ",\"dur\":";
    append_us(buf_, dur);
}

void TimelineWriter::instant(std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts) {
    head('i', name, pid, tid, ts);
    if (depth_ < 0) return;
    buf_ += ",\"s\":\"t\"";  // on the thread's track, not across the process or the whole trace
}

void TimelineWriter::open(char bracket, char closer) {
    buf_ += bracket;
    if (depth_ < int(sizeof closers_)) closers_[depth_] = closer;
    ++depth_;
    first_member_ = true;
}

void TimelineWriter::key(std::string_view k) {
    if (depth_ == 0) {
        buf_ += ",\"args\":";
        open('{', '}');
    }
    if (!first_member_) buf_ += ',';
    first_member_ = false;
    append_json_string(buf_, k);
    buf_ += ':';
}

void TimelineWriter::arg(std::string_view k, int64_t v) {
    if (depth_ < 0) return;
    key(k);
    core::append_int(buf_, v);
}

void TimelineWriter::arg_u(std::string_view k, uint64_t v) {
    if (depth_ < 0) return;
    key(k);
    core::append_uint(buf_, v);
}

void TimelineWriter::arg(std::string_view k, std::string_view v) {
    if (depth_ < 0) return;
    key(k);
    append_json_string(buf_, v);
}

void TimelineWriter::begin_array(std::string_view k) {
    if (depth_ < 0) return;
    key(k);
    open('[', ']');
}

void TimelineWriter::array_item(std::string_view v) {
    if (depth_ < 0) return;
    if (!first_member_) buf_ += ',';
    first_member_ = false;
    append_json_string(buf_, v);
}

void TimelineWriter::begin_object(std::string_view k) {
    if (depth_ < 0) return;
    key(k);
    open('{', '}');
}

void TimelineWriter::close_one() {
    if (depth_ < 2) return;  // the args object itself is closed by end()
    --depth_;
    buf_ += depth_ < int(sizeof closers_) ? closers_[depth_] : '}';
    first_member_ = false;
}

void TimelineWriter::end() {
    if (depth_ < 0) return;
    while (depth_ > 1) close_one();
    if (depth_ == 1) buf_ += '}';  // the args object
    buf_ += '}';
    depth_ = 0;
    if (buf_.size() >= kFlushAt) flush();
}

void TimelineWriter::thread_name(uint32_t pid, uint32_t tid, std::string_view name) {
    head('M', "thread_name", pid, tid, 0);
    arg("name", name);
    end();
}

void TimelineWriter::process_name(uint32_t pid, std::string_view name) {
    head('M', "process_name", pid, pid, 0);
    arg("name", name);
    end();
}

void TimelineWriter::flush() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return pending_.size() < kMaxPending; });
    pending_ += buf_;
    buf_.clear();
    cv_.notify_all();
}

void TimelineWriter::write_loop() {
    std::string out;
    bool failed = false;
    for (;;) {
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return !pending_.empty() || stopping_; });
            if (pending_.empty()) return;  // stopping, and all written
            out.swap(pending_);
            cv_.notify_all();
        }
        if (!failed && !core::write_all(fd_, out)) {
            // A full disk: said once; the file ends where the writes stopped.
            failed = true;
            std::fprintf(stderr, "perf-prof: timeline file '%s': %s\n", path_.c_str(), std::strerror(errno));
        }
        out.clear();
    }
}

void TimelineWriter::close() {
    if (fd_ < 0) return;
    buf_ += "\n],\"displayTimeUnit\":\"ns\"}\n";
    flush();
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    ::close(fd_);
    fd_ = -1;
}

uint32_t TimelineTracks::pid(uint32_t tid) {
    auto it = pids_.find(tid);
    if (it != pids_.end()) return it->second;
    const int tgid = tgid_of_ && tid ? tgid_of_(int(tid)) : -1;
    return name(tgid > 0 ? uint32_t(tgid) : tid, tid);
}

uint32_t TimelineTracks::pid(uint32_t pid, uint32_t tid) {
    auto it = pids_.find(tid);
    if (it != pids_.end() && it->second == pid) return pid;
    return name(pid, tid);
}

uint32_t TimelineTracks::name(uint32_t pid, uint32_t tid) {
    if (pids_.size() >= kMaxThreads) {
        pids_.clear();
        processes_.clear();
    }
    pids_[tid] = pid;
    if (processes_.emplace(pid, true).second) w_.process_name(pid, ctx_.comm(pid));
    w_.thread_name(pid, tid, ctx_.comm(tid));
    return pid;
}

void TimelineTracks::name_track(uint32_t pid, std::string_view process, uint32_t tid, std::string_view name) {
    if (processes_.emplace(pid, true).second) w_.process_name(pid, process);
    w_.thread_name(pid, tid, name);
}

void append_field_args(TimelineWriter& w, const Sample& s) {
    if (!s.event || !s.raw) return;
    const auto* raw = static_cast<const uint8_t*>(s.raw);
    const size_t size = s.raw_size;
    std::string text;
    for (const Field& f : s.event->fields) {
        if (f.name.rfind("common_", 0) == 0) continue;  // the header every record repeats
        uint32_t off = f.offset, len = f.size;
        if (f.is_dynamic) {
            if (size < size_t(f.offset) + 4) continue;
            uint32_t loc;
            std::memcpy(&loc, raw + f.offset, 4);
            off = loc & 0xffff;
            len = loc >> 16;
        }
        if (size < size_t(off) + len) continue;
        const auto* p = raw + off;
        if (f.is_string) {
            size_t n = 0;
            while (n < len && p[n]) ++n;
            w.arg(f.name, std::string_view(reinterpret_cast<const char*>(p), n));
        } else if (!f.is_array && !f.is_dynamic && (len == 1 || len == 2 || len == 4 || len == 8)) {
            uint64_t u = 0;
            std::memcpy(&u, p, len);  // little-endian: the low bytes
            if (f.is_signed && len < 8 && (u >> (len * 8 - 1) & 1)) u |= ~uint64_t(0) << (len * 8);
            if (f.is_signed)
                w.arg(f.name, int64_t(u));
            else
                w.arg_u(f.name, u);
        } else {
            text.clear();
            for (uint32_t i = 0; i < len; i++) {
                text += kHex[p[i] >> 4];
                text += kHex[p[i] & 15];
            }
            w.arg(f.name, text);
        }
    }
}

void append_event_arg(TimelineWriter& w, std::string_view key, std::string_view event, const Sample& s,
                      bool ids, bool fields) {
    w.begin_object(key);
    if (!event.empty()) w.arg("event", event);
    if (ids) {
        w.arg_u("pid", s.pid);
        w.arg_u("tid", s.tid);
    }
    if (s.cpu != UINT32_MAX) w.arg_u("cpu", s.cpu);
    if (fields) append_field_args(w, s);
    w.end_object();
}

std::unique_ptr<TimelineWriter> timeline_from_options(const Options& opt) {
    if (!opt.timeline_given) return nullptr;
    return std::make_unique<TimelineWriter>(opt.timeline);
}

}  // namespace perfprof::output
