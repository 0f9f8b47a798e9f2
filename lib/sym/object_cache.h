// The objects of one Symbolizer, shared by every process that maps them (SPEC §5.4.1: keyed by
// build-id, else (dev, inode), else path), for as long as someone holds them.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sym/object.h"

namespace perfprof::sym {

class ObjectCache {
public:
    // `debug_root`: where separate debug files are looked for ("/usr/lib/debug"; tests point
    // it at a private folder). A trailing '/' is dropped.
    explicit ObjectCache(std::string debug_root = kDefaultDebugRoot);
    ObjectCache(const ObjectCache&) = delete;
    ObjectCache& operator=(const ObjectCache&) = delete;

    // get_object(path, open_path) under this cache's debug root, or the live object already
    // known by the same key. Thread-safe.
    std::shared_ptr<Object> get(const std::string& path, const std::string& open_path = {});
    const std::string& debug_root() const { return debug_root_; }
    // SIGUSR2 statistics (SPEC §5.5): one line per live shared object — users, type, symbols
    // (when loaded), memory, build-id prefix, path.
    void print_stats(FILE* out) const;

private:
    std::string debug_root_;
    mutable std::mutex mu_;
    std::map<std::string, std::weak_ptr<Object>> by_key_;
};

}  // namespace perfprof::sym
