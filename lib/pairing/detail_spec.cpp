// Parsing --detail (pairing/detail_spec.h).
#include "pairing/detail_spec.h"

#include <string>

#include "core/parse.h"
#include "perf-prof/error.h"

namespace perfprof::pairing {

namespace {

uint64_t detail_time(std::string_view text, std::string_view item) {
    try {
        return core::parse_time_ns(text);
    } catch (const Error&) {
        throw Error::usage("--detail: bad time in '" + std::string(item) + "'");
    }
}

}  // namespace

DetailSpec parse_detail(std::string_view text) {
    DetailSpec d;
    if (text.empty()) return d;
    bool one = false, two = false;
    for (size_t pos = 0;;) {
        const size_t comma = text.find(',', pos);
        const std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
        // `1` and `2` are sides, never a bare TIME of 1 or 2 ns.
        if (item == "samecpu")
            d.samecpu = true;
        else if (item == "samepid")
            d.samepid = true;
        else if (item == "sametid")
            d.sametid = true;
        else if (item == "samekey")
            d.samekey = true;
        else if (item == "1")
            one = true;
        else if (item == "2")
            two = true;
        else if (item.starts_with("hide<"))
            d.hide = detail_time(item.substr(5), item);
        else if (item.starts_with("-"))
            d.before = detail_time(item.substr(1), item);
        else if (!item.empty() && (item[0] == '+' || (item[0] >= '0' && item[0] <= '9')))
            d.after = detail_time(item, item);
        else
            throw Error::usage("--detail: unknown item '" + std::string(item) + "'");
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    if (one != two) d.side1 = one, d.side2 = two;
    return d;
}

}  // namespace perfprof::pairing
