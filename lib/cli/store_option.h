// Storing the options of the shared table (cli/option_table.h) into Options: one switch over
// Opt, apart from the parser's passes over argv.
#pragma once

#include <string>

#include "perf-prof/options.h"

namespace perfprof::cli {

// One occurrence of `row` (not Opt::Own) with CLI11's result text `v` ("true"/"false" for
// flags): validated (Error::usage on a bad value) and stored into `opt`. Called in
// command-line order, so the last occurrence wins and -v/-q count up and down.
void store_shared_option(const OptionRow& row, const std::string& v, Options& opt);

}  // namespace perfprof::cli
