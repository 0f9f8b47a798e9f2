// Dynamic uprobe events through <tracefs>/uprobe_events (Documentation/trace/uprobetracer.rst):
// one definition line appended per change, never truncating the file (that would delete every
// uprobe event of the system, other tools' included). Used by `perf-prof usdt` (SPEC §7.4).
#pragma once

#include <string>
#include <vector>

namespace perfprof::tep {

// <tracefs>/uprobe_events, mounting tracefs when needed (tracefs_dir()).
std::string uprobe_events_path();

// Appends one definition ("p:GROUP/NAME PATH:0xOFFSET ARGS", "r:…", "-:GROUP/NAME …") in a
// single write. Returns 0, or -errno (the kernel answers EINVAL for a bad definition, EEXIST
// for a name in use, ENOENT when deleting what does not exist, EBUSY for an event in use).
int uprobe_events_append(const std::string& definition);

// Removes the event GROUP/NAME ("-:GROUP/NAME"). Returns 0 or -errno, as above.
int uprobe_event_remove(const std::string& group, const std::string& name);

// How to do by hand what uprobe_events_append(definition) does, for messages:
// "echo 'DEFINITION' > /sys/kernel/tracing/uprobe_events".
std::string uprobe_events_echo(const std::string& definition);

// One line of uprobe_events: "p:GROUP/NAME PATH:0x0000000000001139(0x3018) arg1=%di:s64".
struct UprobeEvent {
    char kind = 'p';  // 'p' entry, 'r' return
    std::string group, name;
    std::string target;  // "PATH:0xOFFSET" with "(0xREF_CTR)" when there is a semaphore
    std::string args;    // the fetch arguments as the kernel prints them, without leading space
    std::string line;    // the whole line
};
// Parses the text of uprobe_events; lines of another shape are ignored.
std::vector<UprobeEvent> parse_uprobe_events(const std::string& text);
// The current uprobe events, of `group` only when it is not empty.
std::vector<UprobeEvent> uprobe_events(const std::string& group = {});

}  // namespace perfprof::tep
