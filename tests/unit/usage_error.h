// The message of the usage error a command line raises, for the parser's tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/parser.h"
#include "perf-prof/error.h"

namespace perfprof::cli {

// Fails the test when `args` parse without an error, or raise one of another kind.
inline std::string usage_error_in(const std::vector<std::string>& args,
                                  const std::vector<const ProfilerInfo*>& registry) {
    try {
        parse(args, registry);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

}  // namespace perfprof::cli
