// What an event's print format says about its fields (SPEC §P2): the printf conversion each
// field is printed with (%s, %pI4, %ps, ...) and the __print_symbolic tables, read from
// libtraceevent's parse of the format.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

struct tep_event;
struct tep_print_arg;

namespace perfprof::sql {

// The conversions of a printf format in order, without the '%' and flags/width: "s", "u",
// "llx", "pI4", "pISpc", "ps". A '*' width or precision is its own entry "*" (it takes an
// argument). "%%" is skipped. Never reads past `fmt`.
std::vector<std::string> conversions(std::string_view fmt);

struct Symbolic {
    std::string field;
    uint64_t mask = ~0ULL;  // `REC->f & 0xffff`: the value is masked before the lookup
    std::map<int64_t, std::string> names;
};

struct PrintInfo {
    std::map<std::string, std::string> conv;  // field -> conversion of the argument that prints it
    std::vector<Symbolic> symbolic;           // one per __print_symbolic(REC->field, ...)
};

// isa: the value the kvm `isa` condition takes (1 Intel, 2 AMD/Hygon; 0 = consider both).
PrintInfo print_info(const tep_event& ev, int isa);
// The isa value of this machine (from /proc/cpuinfo's vendor_id).
int machine_isa();

}  // namespace perfprof::sql
