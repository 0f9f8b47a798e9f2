#include "sym/file_block.h"

#include <sys/mman.h>
#include <unistd.h>

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
