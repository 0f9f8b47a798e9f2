// --timeline FILE: Chrome's JSON trace-event format, which Perfetto UI and chrome://tracing
// open. Streamed: each event is appended to a buffer handed every 64 KiB to a thread that
// writes it, so the event loop never waits on the disk (a page cache under writeback
// throttling stalls write() for long enough to overflow the rings) and the memory held does
// not grow with the run: past kMaxPending bytes not yet written, the loop waits after all.
// close() (the profiler's finish(), which also runs on -N, workload exit and SIGINT/SIGTERM)
// writes the closing brackets.
//
//   {"traceEvents":[
//   {"ph":"X","name":"S","pid":1,"tid":2,"ts":1.5,"dur":20,"args":{...}},
//   ...
//   ],"displayTimeUnit":"ns"}
//
// Times are the events' own (perf clock ns, or TSC cycles under --tsc) divided by 1000: the
// format's microseconds, written with up to three decimals so that no nanosecond is lost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "perf-prof/profiler.h"

namespace perfprof::output {

// `s` as a JSON string with its quotes: ", \ and control characters escaped, bytes that are
// not valid UTF-8 replaced by U+FFFD (a JSON parser rejects them, and a task name or a
// tracepoint's char[] may hold any byte).
void append_json_string(std::string& out, std::string_view s);
// `ns` as microseconds: "12", "12.5", "12.345" (exact, no floating point).
void append_us(std::string& out, uint64_t ns);

class TimelineWriter {
public:
    static constexpr size_t kMaxPending = 16 << 20;

    // Creates `path` (truncated) and writes the head. Throws Error when it cannot.
    explicit TimelineWriter(const std::string& path);
    ~TimelineWriter();
    TimelineWriter(const TimelineWriter&) = delete;
    TimelineWriter& operator=(const TimelineWriter&) = delete;

    // An event is opened by one of these, given args, and closed by end().
    // A complete slice ("ph":"X") from `ts` lasting `dur` (ns).
    void complete(std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur);
    // An instant ("ph":"i") on the thread's track.
    void instant(std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts);
    // Args of the open event: a number, a string, or an array of strings (begin_array(),
    // array_item()..., end_array()); an object value by begin_object() ... end_object().
    void arg(std::string_view key, int64_t v);
    void arg_u(std::string_view key, uint64_t v);
    void arg(std::string_view key, std::string_view v);
    void begin_array(std::string_view key);
    void array_item(std::string_view v);
    void end_array() { close_one(); }
    void begin_object(std::string_view key);
    void end_object() { close_one(); }
    // Closes the event, and any array or object left open in its args.
    void end();

    // Metadata naming a track ("ph":"M").
    void thread_name(uint32_t pid, uint32_t tid, std::string_view name);
    void process_name(uint32_t pid, std::string_view name);

    // Writes the tail and closes the file; later events are dropped. Idempotent.
    void close();
    bool closed() const { return fd_ < 0; }
    uint64_t events() const { return events_; }
    const std::string& path() const { return path_; }

private:
    void head(char ph, std::string_view name, uint32_t pid, uint32_t tid, uint64_t ts);
    void key(std::string_view k);
    void open(char bracket, char closer);
    void close_one();
    void flush();
    void write_loop();

    std::string path_;
    int fd_ = -1;
    std::string buf_;
    bool first_event_ = true;
    int depth_ = 0;  // open args object, arrays and objects in it; -1: the event is dropped
    char closers_[8] = {};
    bool first_member_ = true;
    // The writer thread's side: what it has to write, and whether close() waits for it.
    std::mutex mu_;
    std::condition_variable cv_;
    std::string pending_;
    bool stopping_ = false;
    std::thread thread_;
    uint64_t events_ = 0;
};

// The tracks of a timeline: the first event of a thread names its track and its process's
// by their comm (metadata events), and gives the thread's process id (the tgid, read from
// /proc once per thread; the thread itself when it is gone). What it remembers is bounded: past
// kMaxThreads threads it starts over, naming tracks again (a repeated name is harmless).
class TimelineTracks {
public:
    static constexpr size_t kMaxThreads = 65536;
    // `tgid_of(tid)`: the thread's process, or < 0 when unknown.
    TimelineTracks(TimelineWriter& w, Context& ctx, int (*tgid_of)(int tid))
        : w_(w), ctx_(ctx), tgid_of_(tgid_of) {}

    // The process id of `tid`'s track, naming it at its first use.
    uint32_t pid(uint32_t tid);
    // The same for a sample that carries its process id (PERF_SAMPLE_TID): `pid`.
    uint32_t pid(uint32_t pid, uint32_t tid);
    // A named track of its own (multi-trace's keys): `tid` in the pseudo process `pid`.
    void name_track(uint32_t pid, std::string_view process, uint32_t tid, std::string_view name);
    size_t size() const { return pids_.size(); }

private:
    uint32_t name(uint32_t pid, uint32_t tid);

    TimelineWriter& w_;
    Context& ctx_;
    int (*tgid_of_)(int);
    std::unordered_map<uint32_t, uint32_t> pids_;   // tid -> pid, named already
    std::unordered_map<uint32_t, bool> processes_;  // pids named
};

// The fields of a tracepoint or probe sample as args of the open event: integers as numbers,
// char[] and __data_loc strings as strings, other arrays as strings of hex bytes.
void append_field_args(TimelineWriter& w, const Sample& s);
// One event of a slice as an object arg `key`: "event" (its name, left out when empty), with
// `ids` its "pid" and "tid", its "cpu", and with `fields` its record's fields.
void append_event_arg(TimelineWriter& w, std::string_view key, std::string_view event, const Sample& s,
                      bool ids = false, bool fields = true);

// The --timeline writer the options ask for, or null.
std::unique_ptr<TimelineWriter> timeline_from_options(const Options& opt);

}  // namespace perfprof::output
