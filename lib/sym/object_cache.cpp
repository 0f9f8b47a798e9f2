#include "sym/object_cache.h"

#include <vector>

namespace perfprof::sym {

namespace {

const char* type_name(ObjectType t) {
    return t == ObjectType::Exec ? "EXEC" : t == ObjectType::Dyn ? "DYN" : "UNKNOWN";
}

}  // namespace

ObjectCache::ObjectCache(std::string debug_root) : debug_root_(std::move(debug_root)) {
    while (debug_root_.size() > 1 && debug_root_.back() == '/') debug_root_.pop_back();
}

std::shared_ptr<Object> ObjectCache::get(const std::string& path, const std::string& open_path) {
    std::shared_ptr<Object> obj = get_object(path, open_path, debug_root_);
    std::string key = obj->share_key();
    if (key.empty()) return obj;
    std::lock_guard lk(mu_);
    auto& slot = by_key_[key];
    if (auto live = slot.lock()) return live;
    slot = obj;
    // Drop expired entries now and then so the map does not grow without bound.
    if (by_key_.size() > 64 && (by_key_.size() & 63) == 0)
        std::erase_if(by_key_, [](const auto& kv) { return kv.second.expired(); });
    return obj;
}

void ObjectCache::print_stats(FILE* out) const {
    std::vector<std::shared_ptr<Object>> live;
    {
        std::lock_guard lk(mu_);
        for (const auto& kv : by_key_)
            if (auto o = kv.second.lock()) live.push_back(std::move(o));
    }
    std::fprintf(out, "  symbol objects: %zu\n", live.size());
    for (const auto& o : live) {
        char syms[32] = "not loaded";
        if (o->loaded()) std::snprintf(syms, sizeof syms, "%zu symbols", o->symbol_count());
        std::fprintf(out, "    users %ld %-7s %-14s %8zu bytes build-id %.8s %s\n", o.use_count() - 1,
                     type_name(o->type()), syms, o->memory_bytes(),
                     o->build_id().empty() ? "-" : o->build_id().c_str(), o->path().c_str());
    }
}

}  // namespace perfprof::sym
