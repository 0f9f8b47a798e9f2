// TEMPORARY (removed when the impls and timeline branches merge): lets the core link first.
#include "pairing/model.h"
#include "pairing/timeline.h"
#include "perf-prof/error.h"

namespace perfprof::pairing {
std::unique_ptr<Impl> make_pair(Env&) {
    throw Error::usage("--impl pair not implemented");
}
std::unique_ptr<Impl> make_kmemprof(Env&) {
    throw Error::usage("--impl kmemprof not implemented");
}
std::unique_ptr<Impl> make_syscalls(Env&) {
    throw Error::usage("--impl syscalls not implemented");
}
DetailSpec parse_detail(std::string_view) {
    return {};
}
struct Timeline::State {};
Timeline::Timeline(Env&, const DetailSpec&) {
    throw Error::usage("--detail not implemented yet");
}
Timeline::~Timeline() = default;
Timeline::Node* Timeline::push(const Sample&, uint64_t, bool) {
    return nullptr;
}
Timeline::Node* Timeline::next_ready(bool) {
    return nullptr;
}
Sample Timeline::sample(const Node*) {
    return {};
}
uint64_t Timeline::key(const Node*) {
    return 0;
}
void Timeline::pin(Node*) {}
void Timeline::unpin(Node*) {}
void Timeline::release() {}
void Timeline::print_window(const Pair&, const Sample&, const Sample&, uint64_t) {}
void Timeline::print_lost(const Sample&, uint64_t, uint64_t) {}
size_t Timeline::nodes() const {
    return 0;
}
size_t Timeline::bytes() const {
    return 0;
}
size_t Timeline::peak_nodes() const {
    return 0;
}
}  // namespace perfprof::pairing
