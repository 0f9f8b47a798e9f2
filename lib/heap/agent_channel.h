// perf-prof's end of the heap agent's channel (lib/heap/agent/wire.h): creates the shared
// mapping under /dev/shm for one target process, lays out its header, sampling gaps and ring,
// and reads what the agent writes: the ring's records (drain) and the stack table. Everything
// the agent wrote is untrusted input (the target may be buggy or hostile): every index and
// length read from the mapping is checked against the layout perf-prof chose, kept here.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "heap/agent/wire.h"

namespace perfprof::heap {

struct AgentChannelOptions {
    uint32_t mode = PPH_FULL;  // pph_mode
    uint64_t rate = 0;         // PPH_SAMPLED: mean bytes between kept allocations
    uint32_t flags = 0;        // pph_flags
    int target_pid = 0;
    uid_t uid = uid_t(-1);  // owner of the file (the target's user); -1: ours
    gid_t gid = gid_t(-1);
    // 0: the mode's default (full: 256 Ki slots, 64 Ki stacks, 4 Mi pool words; sampled: 16 Ki,
    // 16 Ki, 1 Mi). Slots are rounded up to powers of two.
    uint64_t ring_slots = 0, stack_slots = 0, pool_words = 0;
    uint32_t max_frames = PPH_MAX_FRAMES;
};

class AgentChannel {
public:
    // Creates /dev/shm/perf-prof-heap.<pid>.<n> (O_EXCL, mode 0600, owned by o.uid/o.gid) and
    // maps it. Throws Error with the reason.
    explicit AgentChannel(const AgentChannelOptions& o);
    // Wraps an existing mapping (tests, the fuzz target): nothing is created or unlinked; the
    // layout is read from the header and checked against `size`. Throws Error when it does not fit.
    AgentChannel(void* mapping, size_t size);
    ~AgentChannel();
    AgentChannel(const AgentChannel&) = delete;
    AgentChannel& operator=(const AgentChannel&) = delete;

    const std::string& path() const { return path_; }
    pph_header* header() const { return h_; }
    size_t size() const { return size_; }
    // Removes the file (once the agent has mapped it; the destructor does too).
    void unlink_path();

    uint32_t state() const;     // pph_state
    std::string error() const;  // the agent's line (PPH_STATE_FAILED), NUL-bounded
    // Waits until the agent left PPH_STATE_NONE, or timeout_ms: the state then.
    uint32_t wait_attached(int timeout_ms) const;
    // Calls fn for each record written, in ring order; renews the heartbeat. Returns the count.
    size_t drain(const std::function<void(const pph_rec&)>& fn);
    void heartbeat();
    // Whether a record was claimed but never written (its producer died between the two, or was
    // forked away); skip_stalled() passes it, once the process cannot write it any more.
    bool stalled() const;
    void skip_stalled();
    // The return addresses of stack `id` (a record's stack field), innermost first; empty when
    // id is 0, out of the table, not ready yet, or its frames lie outside the pool.
    std::span<const uint64_t> stack(uint32_t id) const;
    // The agent waits at exit (PPH_EXIT_WAITING): lets it go on.
    void finish_exit_scan();

private:
    void layout(const AgentChannelOptions& o);

    std::string path_;
    bool owned_ = false, unlinked_ = true;
    pph_header* h_ = nullptr;
    size_t size_ = 0;
    // The layout as perf-prof knows it (never re-read from the shared header).
    pph_rec* ring_ = nullptr;
    const pph_stack* stacks_ = nullptr;
    const uint64_t* pool_ = nullptr;
    uint64_t ring_slots_ = 0, stack_slots_ = 0, pool_words_ = 0;
    uint32_t max_frames_ = 0;
    uint64_t tail_ = 0;  // the consumer's position (perf-prof's own copy)
};

}  // namespace perfprof::heap
