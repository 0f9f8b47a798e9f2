// Small text helpers shared by the /proc, kallsyms and maps readers, and whole reads and
// writes of file descriptors (no exceptions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::core {

// The whole file, or "" when it cannot be read (a process that is gone, a missing file).
std::string read_file_or_empty(const std::string& path);

// What `fd` gives from where it is up to the end of the file (or an error).
std::string read_fd(int fd);

// All of `data` to `fd`, through short writes and EINTR; false on an error (errno says which).
bool write_all(int fd, std::string_view data);

// 1-16 hex digits, any case, nothing else.
bool parse_hex(std::string_view s, uint64_t& v);
// 1-20 decimal digits, nothing else, up to 2^64-1: the numbers of /proc and sysfs.
bool parse_dec(std::string_view s, uint64_t& v);

// The line of `text` starting at `pos` (without its '\n'); `pos` moves past it. Loop while
// pos < text.size().
std::string_view next_line(std::string_view text, size_t& pos);

// The next field of `line` separated by spaces or tabs, starting at `pos` (advanced).
std::string_view next_field(std::string_view line, size_t& pos);

// The value of `field` (e.g. "Tgid:") in the text of a /proc/PID/status file: the rest of its
// line, leading blanks removed; "" when the field is absent. Only whole lines match.
std::string_view status_value(std::string_view status_text, std::string_view field);

// status_value of the file at `status_path` ("/proc/PID/status"); "" when it cannot be read.
std::string status_field(const std::string& status_path, std::string_view field);

// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), 0 when there is none (or `s` is empty).
size_t utf8_length(std::string_view s);

// Whether `path` names a shared object by its file name: "libc.so.6", "ld-linux-x86-64.so.2",
// "libfoo.so" (".so" ending the name or followed by a '.'); not "server.sock".
bool is_shared_object(std::string_view path);

// The command line perf-prof was started with, words shell-quoted where needed, argv[0] shown
// as "perf-prof": what a picture's subtitle says was profiled. Set once by main().
void set_command_line(int argc, char** argv);
const std::string& command_line();

// /sys/devices/system/cpu/online as the kernel writes it ("0-3,8"), without its newline; ""
// when it cannot be read.
std::string online_cpus_text();

// For "did you mean": the candidate nearest to `word` by edit distance, when at most 2 edits
// (and fewer than half its letters) away; the first of equally near ones; "" when none is.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace perfprof::core
