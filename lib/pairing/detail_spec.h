// multi-trace --detail's sub-arguments (SPEC §4.6.7): the window printed around a pair (-TIME,
// +TIME, hide<TIME) and the tests its events must pass (samecpu, samepid, sametid, samekey, on
// side 1, 2 or both). The timeline (pairing/timeline.h) prints by them.
#pragma once

#include <cstdint>
#include <string_view>

namespace perfprof::pairing {

// The --detail sub-arguments, comma-separated, any order.
struct DetailSpec {
    uint64_t before = 0;  // -TIME: also the events in the TIME before event1
    uint64_t after = 0;   // +TIME or TIME: also the events in the TIME after event2
    uint64_t hide = 0;    // hide<TIME: between the two, collapse runs closer than TIME
    bool samecpu = false, samepid = false, sametid = false, samekey = false;
    bool side1 = true, side2 = true;  // `1` / `2`: the same* tests on that side only
    bool any_same() const { return samecpu || samepid || sametid || samekey; }
};

// "" (bare --detail) gives the defaults. Throws Error::usage naming a malformed item:
// "--detail: unknown item 'x'" / "--detail: bad time in '-5q'".
DetailSpec parse_detail(std::string_view text);

}  // namespace perfprof::pairing
