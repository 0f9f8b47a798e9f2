#include "sym/file_block.h"

#include <sys/mman.h>
#include <unistd.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace perfprof::sym {

namespace {
constexpr size_t kPopulateMin = size_t(256) << 10;
}

void* populated_alloc(size_t n) {
    if (n < kPopulateMin) return ::operator new(n);
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
}

void populated_free(void* p, size_t n) {
    if (n < kPopulateMin)
        ::operator delete(p);
    else
        ::munmap(p, n);
}

void tune_heap_for_batch() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);   // the largest it takes: big blocks stay in the arenas
    mallopt(M_TRIM_THRESHOLD, INT32_MAX);  // and freed memory (populated or not) stays mapped
}

void prefault_heap(size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    void* p = std::malloc(bytes);
    if (!p) return;
    uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t b = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
    if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_POPULATE_WRITE);  // EINVAL before 5.14
    std::free(p);
#else
    (void)bytes;
#endif
}

Block::~Block() {
    if (map_)
        ::munmap(map_, map_len_);
    else if (p_)
        populated_free(p_, n_);
}

Block map_block(int fd, uint64_t off, uint64_t n, uint64_t file_size, bool strings) {
    if (off > file_size || n > file_size - off || n == 0) return {};
    uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t base = off & ~(page - 1);
    size_t len = static_cast<size_t>(off + n - base);
    void* m = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(base));
    if (m == MAP_FAILED) return pread_block(fd, off, n, file_size);
    Block b;
    b.map_ = m, b.map_len_ = len;
    b.p_ = static_cast<char*>(m) + (off - base), b.n_ = static_cast<size_t>(n);
    if (strings && b.p_[n - 1] != '\0') return pread_block(fd, off, n, file_size);
    return b;
}

Block pread_block(int fd, uint64_t off, uint64_t n, uint64_t file_size) {
    if (off > file_size || n > file_size - off) return {};
    Block b(n + 1);
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::pread(fd, b.data() + done, n - done, static_cast<off_t>(off + done));
        if (r <= 0) return {};
        done += static_cast<size_t>(r);
    }
    b.data()[n] = '\0';
    return b;
}

}  // namespace perfprof::sym
