// TEMPORARY (removed when the impls and timeline branches merge): lets the core link first.
#include "pairing/model.h"
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
}  // namespace perfprof::pairing
