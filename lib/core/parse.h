// Parsers for option values (SPEC §1.3). All of them throw Error::usage on bad input.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace perfprof::core {

// "0-3,8,10-11" → {0,1,2,3,8,10,11}: sorted, duplicates removed. Ids above 1<<20 are refused.
std::vector<int> parse_cpu_list(std::string_view text);

// The same list syntax for other ids from 0 to `max`; `noun` names them in the messages
// ("invalid prio list '0-200': prio number above 139 in '0-200'").
std::vector<int> parse_id_list(std::string_view text, std::string_view noun, int max);

// "12,7,12" → {12,7}: command-line order kept, duplicates dropped, every id > 0.
std::vector<int> parse_pid_list(std::string_view text);

// SPEC §1.3 TIME in ns: "[+]DIGITS[s|ms|us|ns|Ms|Us|Ns]"; no unit = ns; unknown unit is an error.
uint64_t parse_time_ns(std::string_view text);

// C strtoll(text, 0) with the whole text consumed. `option` is the long name without dashes,
// used in "option `NAME' expects a numerical value".
long long parse_number(std::string_view text, std::string_view option);

// A number >= 0 ("option `NAME' must not be negative"), or one from 0 to `max`.
uint64_t parse_count(std::string_view text, std::string_view option);
uint64_t parse_bounded(std::string_view text, std::string_view option, uint64_t max);

// An optional-value option that is 0 or 1 and means 1 when given bare (--irqs_disabled).
int parse_zero_or_one(std::optional<std::string_view> text, std::string_view option);

// -m/--mmap-pages: a positive power of two that fits an int.
int parse_pages(std::string_view text);

// A percentage 0..100 (e.g. --watermark); `option` as for parse_number.
int parse_percent(std::string_view text, std::string_view option);

}  // namespace perfprof::core
