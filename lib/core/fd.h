// RAII owners for C handles: CPtr (unique_ptr with a C deleter), CRef (get/put refcounts),
// Fd and Mmap (move-only). See ANCHORS.md §6.5.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <utility>

namespace perfprof::core {

template <auto Fn>
struct CDeleter {
    template <class T>
    void operator()(T* p) const noexcept {
        if (p) (void)Fn(p);
    }
};
template <class T, auto Fn>
using CPtr = std::unique_ptr<T, CDeleter<Fn>>;

// For get/put-refcounted C objects: copy = get, destroy = put.
template <class T, T* (*Get)(T*), void (*Put)(T*)>
class CRef {
public:
    CRef() = default;
    static CRef adopt(T* p) { return CRef(p); }  // takes over the creator's reference
    CRef(const CRef& o) : p_(o.p_ ? Get(o.p_) : nullptr) {}
    CRef(CRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    CRef& operator=(CRef o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~CRef() {
        if (p_) Put(p_);
    }
    T* get() const { return p_; }
    explicit operator bool() const { return p_ != nullptr; }

private:
    explicit CRef(T* p) : p_(p) {}
    T* p_ = nullptr;
};

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

class Mmap {
public:
    Mmap() = default;
    Mmap(void* p, size_t len) : p_(p), len_(len) {}
    Mmap(Mmap&& o) noexcept : p_(std::exchange(o.p_, nullptr)), len_(std::exchange(o.len_, 0)) {}
    Mmap& operator=(Mmap&& o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
            len_ = std::exchange(o.len_, 0);
        }
        return *this;
    }
    Mmap(const Mmap&) = delete;
    Mmap& operator=(const Mmap&) = delete;
    ~Mmap() { reset(); }
    void* get() const { return p_; }
    size_t size() const { return len_; }
    void reset() {
        if (p_) ::munmap(p_, len_);
        p_ = nullptr;
        len_ = 0;
    }

private:
    void* p_ = nullptr;
    size_t len_ = 0;
};

}  // namespace perfprof::core
