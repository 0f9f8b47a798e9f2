// The options part of a help template (SPEC §1.10, §P0 "help word"): the options the command
// line gave, with their values, then a bracketed hint for each one it did not, both in the
// order they were added ("-g -C 0 [--perins] [-p .] [-i .] ").
#pragma once

#include <string>
#include <string_view>

#include "perf-prof/options.h"

namespace perfprof::output {

class TemplateOptions {
public:
    // A flag: "NAME " when on, else "[NAME] ".
    void flag(bool on, std::string_view name);
    // An option with a value: "NAME VALUE " when given, else "[NAME .] ".
    void value(bool given, std::string_view name, std::string_view value);
    // -C, -p and -i as a profiler attached to CPUs or tasks takes them.
    void attach(const Options& opt);
    // -m.
    void pages(const Options& opt);
    // Given, without a hint when not.
    void given(std::string_view text);

    // The given options, then the hints.
    std::string text() const { return given_ + hints_; }

private:
    std::string given_, hints_;
};

}  // namespace perfprof::output
