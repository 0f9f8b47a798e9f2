// Memory for symbol and string tables read from ELF files. Large tables are allocated
// pre-faulted (MAP_POPULATE): one page fault per 4 KiB cost more than reading them on this
// kind of VM. Shared by the object loader and the --symbols service.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace perfprof::sym {

// For a process that symbolizes one batch and exits (`--symbols`): malloc keeps large blocks
// and freed memory in its arenas, so that prefault_heap() is not undone.
void tune_heap_for_batch();
// Makes `bytes` of the calling thread's malloc arena resident now, in one call (a first-touch
// fault per page costs ~10 us on VMs; populating costs ~0.2 us a page). Only for a batch
// process (after tune_heap_for_batch(): the caller knows), else freed memory goes back to the
// kernel and the work is lost.
void prefault_heap(size_t bytes);

void* populated_alloc(size_t n);
void populated_free(void* p, size_t n);

template <class T>
struct PopulatedAllocator {
    using value_type = T;
    PopulatedAllocator() = default;
    template <class U>
    PopulatedAllocator(const PopulatedAllocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(populated_alloc(n * sizeof(T))); }
    void deallocate(T* p, size_t n) { populated_free(p, n * sizeof(T)); }
    bool operator==(const PopulatedAllocator&) const { return true; }
};

// One owned block of bytes, not zero-filled: allocated, or a read-only mapping of a file.
class Block {
public:
    Block() = default;
    explicit Block(size_t n) : p_(static_cast<char*>(populated_alloc(n))), n_(n) {}
    Block(Block&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)),
          n_(std::exchange(o.n_, 0)),
          map_(std::exchange(o.map_, nullptr)),
          map_len_(std::exchange(o.map_len_, 0)) {}
    Block& operator=(Block&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        std::swap(map_, o.map_);
        std::swap(map_len_, o.map_len_);
        return *this;
    }
    ~Block();
    char* data() const { return p_; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }

private:
    friend Block map_block(int fd, uint64_t off, uint64_t n, uint64_t file_size, bool strings);
    char* p_ = nullptr;
    size_t n_ = 0;
    void* map_ = nullptr;  // when mapped: the mapping p_ lies in
    size_t map_len_ = 0;
};

// `n` bytes at `off` of the file, exactly, NUL-terminated (n + 1 bytes); empty on a short
// read or when [off, off + n) is not inside `file_size` (checked before allocating, so a
// corrupt section header cannot ask for gigabytes).
Block pread_block(int fd, uint64_t off, uint64_t n, uint64_t file_size);

// The same bytes mapped from the page cache (populated, not copied: several times faster for
// megabytes of tables), size() == n. `strings`: a string table, which must end in NUL (then
// data()[size() - 1] == '\0' as with pread_block). Falls back to pread_block when the file
// cannot be mapped or a string table does not end in NUL. A file truncated while mapped raises
// SIGBUS on access: only for short-lived work (`--symbols`), not for the profilers' objects.
Block map_block(int fd, uint64_t off, uint64_t n, uint64_t file_size, bool strings);

}  // namespace perfprof::sym
