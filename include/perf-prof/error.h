// perfprof::Error — the one exception type of setup and teardown (DESIGN.md "Errors").
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

namespace perfprof {

class Error : public std::runtime_error {
public:
    enum class Kind { Runtime, Usage };

    explicit Error(const std::string& msg, std::string hint = {}, Kind kind = Kind::Runtime)
        : std::runtime_error(msg), hint_(std::move(hint)), kind_(kind) {}

    // A usage error: main prints the message and exits 129 (SPEC §1.8).
    static Error usage(const std::string& msg, std::string hint = {}) {
        return Error(msg, std::move(hint), Kind::Usage);
    }
    // A failed system call: "msg: strerror(errnum)".
    static Error sys(int errnum, const std::string& msg, std::string hint = {}) {
        return Error(msg + ": " + std::strerror(errnum), std::move(hint));
    }

    const std::string& hint() const noexcept { return hint_; }
    Kind kind() const noexcept { return kind_; }

private:
    std::string hint_;
    Kind kind_;
};

}  // namespace perfprof
