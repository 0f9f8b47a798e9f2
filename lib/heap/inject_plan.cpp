// Planning an injection (heap/inject_plan.h).
#include "heap/inject_plan.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "core/text.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "sym/object.h"

namespace perfprof::heap::inject {

namespace {

std::string base_name(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

bool maps_file(const std::vector<sym::MapsLine>& maps, const FileId& f) {
    return std::any_of(maps.begin(), maps.end(), [&](const sym::MapsLine& m) { return f.is(m); });
}

// A libc function's file offset. A separate debug file's .symtab (which the object reads
// instead of the .dynsym when installed) names the exported versions "dlopen@@GLIBC_2.34".
uint64_t versioned_offset(sym::Object& obj, const std::string& name) {
    for (const char* version : {"", "@@GLIBC_2.34", "@@GLIBC_2.2.5"})
        if (uint64_t off = obj.file_offset(name + version)) return off;
    return 0;
}

}  // namespace

std::vector<sym::MapsLine> read_maps(int pid) {
    const std::string text = core::read_file_or_empty("/proc/" + std::to_string(pid) + "/maps");
    std::vector<sym::MapsLine> maps;
    sym::MapsLine m;
    for (size_t pos = 0; pos < text.size();)
        if (sym::parse_maps_line(core::next_line(text, pos), m)) maps.push_back(m);
    return maps;
}

uint64_t address_of(const std::vector<sym::MapsLine>& maps, const FileId& f, uint64_t off) {
    for (const sym::MapsLine& m : maps)
        if (f.is(m) && m.offset <= off && off < m.offset + (m.end - m.start))
            return m.start + (off - m.offset);
    return 0;
}

bool sigmask_has(const std::string& hex, int sig) {
    if (hex.empty()) return false;
    const uint64_t mask = std::strtoull(hex.c_str(), nullptr, 16);
    return (mask >> (sig - 1)) & 1;
}

Plan make_plan(int pid, const std::string& so_path, const char* fn, int timeout_ms) {
    Plan p;
    p.pid = pid;
    p.who = "process " + std::to_string(pid);
    p.fn = fn ? fn : "";
    p.timeout_ms = timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs;
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string root = proc + "/root";  // its files, as it sees them
    const char st = perf::task_state(pid);
    if (!perf::alive_state(st)) throw Error("cannot inject into " + p.who + ": no such process");
    const std::vector<sym::MapsLine> maps = read_maps(pid);
    if (maps.empty()) throw Error("cannot inject into " + p.who + ": its memory map cannot be read");
    if (core::status_field(proc + "/status", "Seccomp:") == "1")
        throw Error("cannot inject into " + p.who + ": it runs in seccomp's strict mode (no open or mmap)");
    if (sigmask_has(core::status_field(proc + "/status", "SigIgn:"), SIGSEGV))
        throw Error("cannot inject into " + p.who + ": it ignores SIGSEGV, which ends an injected call");

    // The file, as the process sees it (its mount namespace, through /proc/PID/root).
    std::string abs = so_path;
    if (abs.empty() || abs[0] != '/') {
        char* r = ::realpath(so_path.c_str(), nullptr);
        if (!r) throw Error::sys(errno, "cannot inject " + so_path);
        abs = r;
        std::free(r);
    }
    struct stat sb;
    if (::stat((root + abs).c_str(), &sb) != 0)
        throw Error("cannot inject " + abs + " into " + p.who + ": the process does not see that file " +
                    "(another mount namespace?)");
    p.so = FileId{abs, ::major(sb.st_dev), ::minor(sb.st_dev), uint64_t(sb.st_ino)};
    p.fn_offset = sym::get_object(abs, root + abs)->file_offset(p.fn);
    if (!p.fn_offset) throw Error("cannot inject " + abs + ": it defines no function " + p.fn);
    if (maps_file(maps, p.so)) p.fn_addr = address_of(maps, p.so, p.fn_offset);

    // dlopen: libc's (glibc >= 2.34; musl's libc is its loader), else libdl's.
    std::vector<std::string> paths;
    for (const sym::MapsLine& m : maps)
        if (!m.path.empty() && m.path[0] == '/' && !m.path.ends_with(" (deleted)") &&
            std::find(paths.begin(), paths.end(), m.path) == paths.end())
            paths.push_back(m.path);
    auto is_libc = [](const std::string& b) { return starts_with(b, "libc.so") || starts_with(b, "libc-"); };
    auto is_loader = [](const std::string& b) {
        return starts_with(b, "ld-linux") || starts_with(b, "ld64.so") || starts_with(b, "ld-musl");
    };
    auto is_libdl = [](const std::string& b) {
        return starts_with(b, "libdl.so") || starts_with(b, "libdl-");
    };
    bool dynamic = false;
    for (const std::string& path : paths)
        if (is_libc(base_name(path)) || is_loader(base_name(path))) {
            dynamic = true;
            for (const sym::MapsLine& m : maps)
                if (m.path == path && m.perms.find('x') != std::string::npos)
                    p.unsafe_text.emplace_back(m.start, m.end);
        }
    for (int pass = 0; pass < 2 && !p.dlopen; pass++)
        for (const std::string& path : paths) {
            const std::string b = base_name(path);
            if (pass == 0 ? !(is_libc(b) || starts_with(b, "ld-musl")) : !is_libdl(b)) continue;
            auto obj = sym::get_object(path, root + path);
            const FileId id{path, 0, 0, 0};
            if (uint64_t off = versioned_offset(*obj, "dlopen")) p.dlopen = address_of(maps, id, off);
            if (!p.dlopen) continue;
            if (uint64_t off = versioned_offset(*obj, "dlerror")) p.dlerror = address_of(maps, id, off);
            break;
        }
    if (!p.dlopen && !p.fn_addr)
        throw Error("cannot inject into " + p.who + ": " +
                    (dynamic ? "its libc has no dlopen (glibc < 2.34) and it has not loaded libdl"
                             : "it is statically linked: no dlopen to load a library with"));
    return p;
}

}  // namespace perfprof::heap::inject
