// Tracepoints that recent kernels merged into another one (SPEC §2.3; issue 24 item 9).
//
// Linux 6.1 removed kmem:kmalloc_node and kmem:kmem_cache_alloc_node: kmem:kmalloc and
// kmem:kmem_cache_alloc gained a `node` field instead, NUMA_NO_NODE (-1) unless the caller asked
// for a node. Scripts written for older kernels name the old events; where the running kernel
// lacks one, the resolver opens the merged event filtered on that field. `node != -1` keeps the
// allocations that asked for a node, which is what the _node variants were for; the _node calls
// that passed NUMA_NO_NODE cannot be told apart from plain kmalloc() any more, and they stay with
// kmem:kmalloc, so a script listing both names still sees each allocation (those with a node on
// both events, as a filter cannot make two events disjoint from one side).
#pragma once

#include <string_view>

#include "event/event_spec.h"

namespace perfprof::event {

struct MergedEvent {
    std::string_view sys, old_name;  // the name older kernels have
    std::string_view name;           // the event it became
    std::string_view field;          // the field that tells the old event's records apart
    std::string_view filter;         // on `name`: the old event's records
};

// The entry for sys:old_name, or nullptr when that name was never merged.
const MergedEvent* merged_event(std::string_view sys, std::string_view old_name);

// `item` (naming m's old event) made to name m's merged event: the name, and the filter
// "FILTER && ( USER FILTER )", or FILTER alone.
EventItem as_merged(const EventItem& item, const MergedEvent& m);

}  // namespace perfprof::event
