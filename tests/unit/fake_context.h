// A Context for unit tests of a profiler's parts (lib/pairing): no session behind it, output
// kept in memory, WALL(ev) a fixed text, task names from a function, and a Tep the test may
// feed hand-written formats (nothing reads tracefs unless a test asks it to).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/profiler.h"
#include "sym/symbolizer.h"
#include "tep/tep.h"

namespace perfprof::unit {

class FakeContext : public Context {
public:
    FakeContext(std::string wall, int cpus, std::function<std::string(uint32_t)> comm_of)
        : wall_(std::move(wall)), cpus_(cpus), comm_of_(std::move(comm_of)) {
        out_ = open_memstream(&buf_, &len_);
    }
    ~FakeContext() override {
        std::fclose(out_);
        std::free(buf_);
    }
    const Options& options() const override { return opt_; }
    tep::Tep& tep() override { return tep_; }
    std::string_view comm(uint32_t tid) override {
        return comms_.try_emplace(tid, comm_of_(tid)).first->second;
    }
    void wall(uint64_t, std::string& out) override { out += wall_; }
    int64_t realtime(uint64_t t) override { return int64_t(t); }
    FILE* out() override { return out_; }
    const filter::EvalHooks* eval_hooks() override { return nullptr; }
    const std::vector<int>& threads() const override { return threads_; }
    int cpu_count() const override { return cpus_; }
    bool forwarding() const override { return false; }
    bool tsc_time() const override { return false; }
    sym::Symbolizer& symbolizer() override { return symbols_; }
    bool set_exec_env(int, const std::string&, const std::string&) override { return false; }

    // What was printed since the last call.
    std::string take() {
        std::fflush(out_);
        std::string r(buf_ + taken_, len_ - taken_);
        taken_ = len_;
        return r;
    }

private:
    std::string wall_;
    int cpus_;
    std::function<std::string(uint32_t)> comm_of_;
    Options opt_;
    tep::Tep tep_;
    sym::Symbolizer symbols_;
    std::vector<int> threads_;
    std::map<uint32_t, std::string> comms_;
    FILE* out_ = nullptr;
    char* buf_ = nullptr;
    size_t len_ = 0, taken_ = 0;
};

}  // namespace perfprof::unit
