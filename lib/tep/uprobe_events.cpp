#include "tep/uprobe_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/fd.h"
#include "tep/tracefs.h"

namespace perfprof::tep {

std::string uprobe_events_path() {
    return tracefs_dir() + "/uprobe_events";
}

int uprobe_events_append(const std::string& definition) {
    // O_APPEND without O_TRUNC: opening uprobe_events for writing with O_TRUNC (as a shell's
    // `>` does) clears every uprobe event of the system first.
    core::Fd fd(::open(uprobe_events_path().c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!fd) return -errno;
    // One write per definition: the kernel parses each write on its own.
    const std::string line = definition + "\n";
    ssize_t n;
    do {
        n = ::write(fd.get(), line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    if (static_cast<size_t>(n) != line.size()) return -EIO;
    return 0;
}

int uprobe_event_remove(const std::string& group, const std::string& name) {
    return uprobe_events_append("-:" + group + "/" + name);
}

std::string uprobe_events_echo(const std::string& definition) {
    return "echo '" + definition + "' > " + uprobe_events_path();
}

std::vector<UprobeEvent> parse_uprobe_events(const std::string& text) {
    std::vector<UprobeEvent> out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        // KIND:GROUP/NAME TARGET[ ARGS]
        if (line.size() < 4 || line[1] != ':') continue;
        size_t slash = line.find('/', 2), sp = line.find(' ', 2);
        if (slash == std::string::npos || sp == std::string::npos || slash > sp) continue;
        UprobeEvent e;
        e.kind = line[0];
        e.group = line.substr(2, slash - 2);
        e.name = line.substr(slash + 1, sp - slash - 1);
        size_t args = line.find(' ', sp + 1);
        e.target = line.substr(sp + 1, args == std::string::npos ? std::string::npos : args - sp - 1);
        if (args != std::string::npos) e.args = line.substr(args + 1);
        e.line = std::move(line);
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<UprobeEvent> uprobe_events(const std::string& group) {
    std::vector<UprobeEvent> all = parse_uprobe_events(read_file(uprobe_events_path()));
    if (group.empty()) return all;
    std::vector<UprobeEvent> out;
    for (UprobeEvent& e : all)
        if (e.group == group) out.push_back(std::move(e));
    return out;
}

}  // namespace perfprof::tep
