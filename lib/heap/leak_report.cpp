#include "heap/leak_report.h"

#include <algorithm>

#include "core/time.h"

namespace perfprof::heap {

void append_stats(uint64_t total_alloc, uint64_t total_free, const AllocList* alloc_list, std::string& out) {
    core::append_wall(core::realtime_now_ns(), out);
    out += " \nKMEMLEAK STATS:\n";
    if (alloc_list)
        out += "ALLOC LIST num " + std::to_string(alloc_list->num) + " mem " +
               std::to_string(alloc_list->mem) + "\n";
    out += "TOTAL alloc " + std::to_string(total_alloc) + " free " + std::to_string(total_free) + "\n";
}

void append_leak_groups(std::vector<LeakGroup>& groups, stack::Printer& printer, bool comms,
                        const char* title, std::string& out, const char* lead) {
    std::stable_sort(groups.begin(), groups.end(), [](const LeakGroup& a, const LeakGroup& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.pid < b.pid;
    });
    if (title && *title) {
        out += title;
        out += '\n';
    }
    for (LeakGroup& g : groups) {
        out += std::string(lead) + " " + std::to_string(g.bytes) + " bytes in " + std::to_string(g.objects) +
               " objects allocated from:\n";
        if (comms && !g.comms.empty()) {
            std::stable_sort(g.comms.begin(), g.comms.end(), [](const CommTally& a, const CommTally& b) {
                return a.bytes != b.bytes ? a.bytes > b.bytes : a.objects > b.objects;
            });
            out += "    comms:";
            for (const CommTally& c : g.comms)
                out += ' ' + c.comm + '(' + std::to_string(c.bytes) + '/' + std::to_string(c.objects) + ')';
            out += '\n';
        }
        printer.print(g.chain.data(), g.chain.size(), g.pid, out);
    }
}

}  // namespace perfprof::heap
