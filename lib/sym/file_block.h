// Memory for symbol and string tables read from ELF files. Large tables are allocated
// pre-faulted (MAP_POPULATE): one page fault per 4 KiB cost more than reading them on this
// kind of VM. Shared by the object loader and the --symbols service.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace perfprof::sym {

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

// One owned block of bytes, not zero-filled.
class Block {
public:
    Block() = default;
    explicit Block(size_t n) : p_(static_cast<char*>(populated_alloc(n))), n_(n) {}
    Block(Block&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    Block& operator=(Block&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        return *this;
    }
    ~Block() {
        if (p_) populated_free(p_, n_);
    }
    char* data() const { return p_; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }

private:
    char* p_ = nullptr;
    size_t n_ = 0;
};

// `n` bytes at `off` of the file, exactly, NUL-terminated (n + 1 bytes); empty on a short
// read or when [off, off + n) is not inside `file_size` (checked before allocating, so a
// corrupt section header cannot ask for gigabytes).
Block pread_block(int fd, uint64_t off, uint64_t n, uint64_t file_size);

}  // namespace perfprof::sym
