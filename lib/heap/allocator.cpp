#include "heap/allocator.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "core/fd.h"
#include "core/text.h"
#include "perf-prof/error.h"
#include "sym/object.h"
#include "sym/syms.h"

namespace perfprof::heap {

namespace {

struct Entry {
    const char* name;
    FnKind kind;
};

constexpr Entry kCFunctions[] = {
    {"malloc", FnKind::Malloc},
    {"calloc", FnKind::Calloc},
    {"realloc", FnKind::Realloc},
    {"reallocarray", FnKind::Reallocarray},
    {"memalign", FnKind::Memalign},
    {"aligned_alloc", FnKind::Memalign},
    {"posix_memalign", FnKind::PosixMemalign},
    {"valloc", FnKind::Valloc},
    {"pvalloc", FnKind::Valloc},
    {"free", FnKind::Free},
    {"cfree", FnKind::Free},
};

// operator new/delete: libstdc++'s call malloc and free, but tcmalloc and jemalloc define their
// own, which do not.
constexpr Entry kCxxOperators[] = {
    {"_Znwm", FnKind::Malloc},
    {"_Znam", FnKind::Malloc},
    {"_ZnwmRKSt9nothrow_t", FnKind::Malloc},
    {"_ZnamRKSt9nothrow_t", FnKind::Malloc},
    {"_ZnwmSt11align_val_t", FnKind::Malloc},
    {"_ZnamSt11align_val_t", FnKind::Malloc},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", FnKind::Malloc},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", FnKind::Malloc},
    {"_ZdlPv", FnKind::Free},
    {"_ZdaPv", FnKind::Free},
    {"_ZdlPvm", FnKind::Free},
    {"_ZdaPvm", FnKind::Free},
    {"_ZdlPvSt11align_val_t", FnKind::Free},
    {"_ZdaPvSt11align_val_t", FnKind::Free},
    {"_ZdlPvmSt11align_val_t", FnKind::Free},
    {"_ZdaPvmSt11align_val_t", FnKind::Free},
    {"_ZdlPvRKSt9nothrow_t", FnKind::Free},
    {"_ZdaPvRKSt9nothrow_t", FnKind::Free},
};

std::string base_name(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

bool is_libc(const std::string& path) {
    return starts_with(base_name(path), "libc.so") || starts_with(base_name(path), "libc-");
}

// The dynamic loader has a minimal malloc of its own for its start-up, never the process's.
bool is_loader(const std::string& path) {
    return starts_with(base_name(path), "ld-linux") || starts_with(base_name(path), "ld64.so") ||
           starts_with(base_name(path), "ld-musl");
}

std::string allocator_name(const std::string& path, bool executable) {
    const std::string b = base_name(path);
    for (const char* n : {"tcmalloc", "jemalloc", "mimalloc"})
        if (b.find(n) != std::string::npos) return n;
    if (is_libc(path)) return "glibc";
    return executable ? b + " (static)" : b;
}

std::string pt_interp(const std::string& path) {
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error::sys(errno, "cannot open " + path);
    elf_version(EV_CURRENT);
    Elf* e = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
    if (!e) throw Error(path + " is not an ELF file");
    std::string interp;
    size_t n = 0;
    if (elf_getphdrnum(e, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(e, int(i), &ph) || ph.p_type != PT_INTERP || ph.p_filesz < 2) continue;
            interp.resize(ph.p_filesz);
            if (::pread(fd.get(), interp.data(), interp.size(), off_t(ph.p_offset)) != ssize_t(interp.size()))
                interp.clear();
            interp.resize(interp.find('\0') == std::string::npos ? interp.size() : interp.find('\0'));
        }
    elf_end(e);
    return interp;
}

// `interp --list path`: what the loader maps for it, in load order.
std::string loader_list(const std::string& interp, const std::string& path) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw Error::sys(errno, "pipe");
    const pid_t child = ::fork();
    if (child < 0) throw Error::sys(errno, "fork");
    if (child == 0) {
        ::dup2(p[1], 1);
        int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);  // its dup2 copy stays open
        if (null >= 0) ::dup2(null, 2);
        ::execl(interp.c_str(), interp.c_str(), "--list", path.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(p[1]);
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t r = ::read(p[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        out.append(buf, size_t(r));
    }
    ::close(p[0]);
    int st = 0;
    while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        throw Error(interp + " --list " + path + " failed: cannot tell which libraries " + path + " loads");
    return out;
}

}  // namespace

Allocator choose_allocator(const std::vector<std::string>& objects) {
    Allocator a;
    for (size_t i = 0; i < objects.size() && a.path.empty(); i++) {
        const std::string& path = objects[i];
        if (is_loader(path)) continue;
        auto obj = sym::get_object(path);
        if (obj->type() == sym::ObjectType::Unknown || !obj->file_offset("malloc") ||
            !obj->file_offset("free"))
            continue;
        a.name = allocator_name(path, i == 0);
        a.path = path;
        std::vector<uint64_t> seen;  // aliases (aligned_alloc = memalign, cfree = free) once
        auto add = [&](const Entry& e) {
            uint64_t off = obj->file_offset(e.name);
            if (!off || std::find(seen.begin(), seen.end(), off) != seen.end()) return;
            seen.push_back(off);
            a.probes.push_back({e.name, e.kind, off});
        };
        for (const Entry& e : kCFunctions) add(e);
        if (a.name != "glibc")
            for (const Entry& e : kCxxOperators) add(e);
    }
    // exit() of libc, or of the executable itself when it is static.
    for (size_t i = 0; i < objects.size() && !a.exit_offset; i++) {
        if (!is_libc(objects[i]) && i != 0) continue;
        if (uint64_t off = sym::get_object(objects[i])->file_offset("exit")) {
            a.exit_path = objects[i];
            a.exit_offset = off;
        }
    }
    return a;
}

namespace {

// The objects process `pid` maps, as choose_allocator wants them: the executable first, then
// the libraries with libc last (interposers before it, as the loader orders a preloaded
// allocator). Opened through the process's root: a containerised process resolves too.
std::vector<std::string> process_objects(int pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string maps = core::read_file_or_empty(proc + "/maps");
    if (maps.empty()) throw Error("no process " + std::to_string(pid));
    std::vector<std::string> objects;
    char exe[4096];
    ssize_t n = ::readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
    std::string exe_path = n > 0 ? std::string(exe, size_t(n)) : std::string();
    auto add = [&](const std::string& path) {
        std::string p = proc + "/root" + path;
        if (std::find(objects.begin(), objects.end(), p) == objects.end()) objects.push_back(p);
    };
    std::vector<std::string> libs;
    sym::MapsLine m;
    for (size_t pos = 0; pos < maps.size();) {
        if (!sym::parse_maps_line(core::next_line(maps, pos), m)) continue;
        if (m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
        if (m.path != exe_path) libs.push_back(m.path);
    }
    if (!exe_path.empty()) add(exe_path);
    std::stable_partition(libs.begin(), libs.end(), [](const std::string& p) { return !is_libc(p); });
    for (const std::string& l : libs) add(l);
    if (objects.empty()) throw Error("process " + std::to_string(pid) + " maps no files");
    return objects;
}

// The objects `command_path` will map: itself, then what its dynamic loader lists.
std::vector<std::string> command_objects(const std::string& command_path) {
    std::vector<std::string> objects = {command_path};
    const std::string interp = pt_interp(command_path);
    if (interp.empty()) return objects;
    std::istringstream in(loader_list(interp, command_path));
    std::string line;
    while (std::getline(in, line)) {
        std::string path;
        size_t arrow = line.find("=> ");
        if (arrow != std::string::npos) {
            path = line.substr(arrow + 3);
        } else {
            size_t b = line.find_first_not_of(" \t");
            if (b != std::string::npos && line[b] == '/') path = line.substr(b);
        }
        path = path.substr(0, path.find(" ("));
        if (!path.empty() && path[0] == '/' && path != command_path &&
            std::find(objects.begin(), objects.end(), path) == objects.end())
            objects.push_back(path);
    }
    return objects;
}

}  // namespace

Allocator find_allocator(int pid) {
    Allocator a = choose_allocator(process_objects(pid));
    if (a.path.empty())
        throw Error("process " + std::to_string(pid) +
                    " has no known allocator: none of its objects defines malloc and free");
    return a;
}

Allocator find_allocator_for_command(const std::string& command_path) {
    Allocator a = choose_allocator(command_objects(command_path));
    if (a.path.empty())
        throw Error(command_path +
                    " has no known allocator: neither it nor its libraries define malloc and free");
    return a;
}

namespace {

// The allocators' own prefixed entry points: a program calling them is not caught by
// interposing malloc (jemalloc built with --with-jemalloc-prefix and its extended API,
// tcmalloc's, mimalloc's, rpmalloc, dlmalloc, TBB's scalable allocator).
constexpr const char* kPrefixedEntries[] = {"je_malloc", "je_mallocx", "mallocx",
                                            "tc_malloc", "mi_malloc",  "rpmalloc",
                                            "dlmalloc",  "je_calloc",  "scalable_malloc"};

// What the agent's checks read of an ELF object: whether the loader runs for it, and which of
// the names asked about its dynamic symbol table defines (a function) or imports.
struct DynamicInfo {
    bool interp = false;  // PT_INTERP: a dynamic executable (a library has none)
    std::vector<std::string> defines, imports;
};

bool among(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

DynamicInfo dynamic_info(const std::string& path, const std::vector<std::string>& names) {
    DynamicInfo d;
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error::sys(errno, "cannot open " + path);
    elf_version(EV_CURRENT);
    Elf* e = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        if (e) elf_end(e);
        throw Error(path + " is not an ELF file");
    }
    size_t n = 0;
    if (elf_getphdrnum(e, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, int(i), &ph) && ph.p_type == PT_INTERP) d.interp = true;
        }
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) break;
            const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
            if (!name || !among(names, name)) continue;
            const int type = GELF_ST_TYPE(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF)
                d.imports.emplace_back(name);
            else if (type == STT_FUNC || type == STT_GNU_IFUNC)
                d.defines.emplace_back(name);
        }
    }
    elf_end(e);
    return d;
}

// The path to show for an object of `objects` (those of a process go through /proc/PID/root).
std::string shown(const std::string& path) {
    if (path.rfind("/proc/", 0) != 0) return path;
    size_t root = path.find("/root/");
    return root == std::string::npos ? path : path.substr(root + 5);
}

// The checks both cases share, on the objects in load order (executable first).
std::string unusable_objects(const std::vector<std::string>& objects, bool need_dlopen) {
    std::vector<std::string> names(std::begin(kPrefixedEntries), std::end(kPrefixedEntries));
    names.emplace_back("malloc");
    names.emplace_back("dlopen");
    std::vector<DynamicInfo> infos;
    infos.reserve(objects.size());
    for (const std::string& o : objects) infos.push_back(dynamic_info(o, names));
    const std::string exe = shown(objects.front());
    if (!infos.front().interp)
        return exe + " is statically linked: no dynamic loader can load the agent into it";
    // The executable's own definitions, exported or not (its symbol table too).
    auto exe_object = sym::get_object(objects.front());
    if (exe_object->file_offset("malloc"))
        return exe + " defines malloc itself: its own calls to it go to no symbol the agent can interpose";
    for (size_t i = 0; i < infos.size(); i++)
        for (const char* p : kPrefixedEntries) {
            if (i == 0 && exe_object->file_offset(p))
                return exe + " holds an allocator of its own (" + p + "): the agent cannot interpose it";
            if (among(infos[i].imports, p))
                return shown(objects[i]) + " calls " + p +
                       ", an allocator's prefixed entry: interposing malloc does not catch it";
        }
    auto has_dlopen = [](const DynamicInfo& d) { return among(d.defines, "dlopen"); };
    if (need_dlopen && std::none_of(infos.begin(), infos.end(), has_dlopen))
        return "no dlopen in the process to load the agent with (glibc before 2.34 without libdl)";
    return "";
}

// The text of a /proc link (a namespace, the executable), "" when unreadable.
std::string link_text(const std::string& path) {
    char buf[256];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

}  // namespace

std::string agent_unusable(int pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::vector<std::string> objects = process_objects(pid);  // throws when the process is gone
    const std::string theirs = link_text(proc + "/ns/mnt");
    if (!theirs.empty() && theirs != link_text("/proc/self/ns/mnt"))
        return "process " + std::to_string(pid) +
               " is in another mount namespace: the agent's path would not open there";
    const std::string exe = link_text(proc + "/exe");
    if (exe.empty()) throw Error("cannot read process " + std::to_string(pid) + "'s executable");
    if (objects.front() == proc + "/root" + exe) objects.erase(objects.begin());
    // The executable through /proc/PID/exe, which opens even where its path is gone.
    objects.insert(objects.begin(), proc + "/exe");
    std::string why = unusable_objects(objects, true);
    // Its name as the process knows it, not /proc/PID/exe.
    if (why.rfind(objects.front(), 0) == 0) why = exe + why.substr(objects.front().size());
    return why;
}

std::string agent_unusable(const std::string& command_path) {
    return unusable_objects(command_objects(command_path), false);
}

}  // namespace perfprof::heap
