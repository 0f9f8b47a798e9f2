#include "event/merged_events.h"

#include <string>

namespace perfprof::event {

namespace {

constexpr MergedEvent kMerged[] = {
    {"kmem", "kmalloc_node", "kmalloc", "node", "node != -1"},
    {"kmem", "kmem_cache_alloc_node", "kmem_cache_alloc", "node", "node != -1"},
};

}  // namespace

const MergedEvent* merged_event(std::string_view sys, std::string_view old_name) {
    for (const MergedEvent& m : kMerged)
        if (m.sys == sys && m.old_name == old_name) return &m;
    return nullptr;
}

EventItem as_merged(const EventItem& item, const MergedEvent& m) {
    EventItem r = item;
    r.name = std::string(m.name);
    r.filter = std::string(m.filter);
    // Spaces inside the parentheses: the kernel reads an unquoted value up to a space, so
    // "(call_site.function==rb_alloc)" would look up the symbol "rb_alloc)" and fail.
    if (item.has_filter && !item.filter.empty()) r.filter += " && ( " + item.filter + " )";
    r.has_filter = true;
    return r;
}

}  // namespace perfprof::event
