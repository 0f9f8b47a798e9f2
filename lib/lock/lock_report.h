// lock's report: the waits of lock/futex_waits summed per lock (process, address) and, with
// stacks, per waiting stack with the stacks of the releases that ended them (the holders),
// printed at each -i tick and at exit:
//
//   {WALL(now)}
//   LOCK               PID     COMM             WAITS    TIMEOUT  INTR     RETRY    total(us) ...
//   0x000055d0c2b4a040 1234    lockhold         100      0        0        3        500123.456 ...
//
// with mean, p50, p99 and max after total (quantiles from output::LatencyDist's sketch, as the
// task-state and multi-trace tables), rows by total wait, then with -g:
//
//   waiting stacks, by total wait
//   [1] 100 waits  total 500123.456  mean 5001.234  p50 ...  p99 ...  max ... (us)  1234 lockhold
//       {waiter's stack lines}
//     released by 1235 holder: 100 waits  total 500123.456 us
//       {holder's stack lines}
//
// Rows are cleared after printing; stack ids are the caller's (0: none, printed as such).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lock/futex_waits.h"
#include "output/latency.h"

namespace perfprof::lock {

class LockReport {
public:
    static constexpr size_t kMaxLocks = 50;     // table rows printed (the rest summed in a line)
    static constexpr size_t kMaxStacks = 10;    // waiting stacks printed
    static constexpr size_t kMaxHolders = 3;    // holder stacks under each
    static constexpr size_t kHoldersKept = 32;  // holders counted per waiting stack (rest: "others")

    // What the renderer asks its caller: a process's name, and a stack's lines (each "    "
    // indented; the renderer adds `indent` more in front of every line).
    struct Names {
        std::function<std::string_view(uint32_t pid)> comm;
        std::function<void(uint32_t pid, uint32_t stack, std::string& out)> stack;
    };

    explicit LockReport(bool stacks) : stacks_(stacks) {}

    // A wait of `len` (ns, or TSC cycles under --tsc: the caller's unit).
    void add(const Wait& w, uint64_t len);
    void retry(uint32_t pid, uint64_t uaddr, uint32_t stack);
    bool empty() const { return locks_.empty(); }

    // The report after `wall`, in `unit` ("us": values / 1000); clears every row.
    void render(std::string_view wall, const char* unit, const Names& names, std::string& out);

    // Tests: the row of a lock or of a waiting stack, null when none.
    struct Holder {
        uint32_t stack = 0, tid = 0;
        uint64_t waits = 0, total = 0;
    };
    struct Row {
        uint32_t pid = 0;
        uint64_t uaddr = 0;
        uint32_t stack = 0;
        output::LatencyDist dist;
        uint64_t timedout = 0, interrupted = 0, retries = 0;
        std::vector<Holder> holders;  // stack rows only
        Holder others;                // holders past kHoldersKept, and the unknown ones
    };
    const Row* lock_row(uint32_t pid, uint64_t uaddr) const;
    const Row* stack_row(uint32_t pid, uint32_t stack) const;

private:
    struct KeyHash {
        size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
            return size_t((k.second ^ (uint64_t(k.first) << 40)) * 0x9e3779b97f4a7c15ull >> 16);
        }
    };
    using Index = std::unordered_map<std::pair<uint32_t, uint64_t>, uint32_t, KeyHash>;

    Row& row(Index& index, std::vector<Row>& rows, uint32_t pid, uint64_t key);
    void render_locks(const char* unit, const Names& names, std::string& out);
    void render_stacks(const char* unit, const Names& names, std::string& out);

    bool stacks_;
    Index lock_index_, stack_index_;
    std::vector<Row> locks_, stack_rows_;
};

}  // namespace perfprof::lock
