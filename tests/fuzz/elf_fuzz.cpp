// libFuzzer target: arbitrary bytes as an in-memory ELF image (the vDSO path of lib/sym/object),
// then every query an Object answers. Nothing may crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sym/object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace perfprof::sym;
    auto obj = object_from_image("[fuzz]", std::string(reinterpret_cast<const char*>(data), size));
    size_t n = obj->symbol_count();
    (void)obj->memory_bytes();
    // Addresses around the text section and at every interesting small value.
    uint64_t base = obj->text_addr();
    for (uint64_t a : {uint64_t(0), uint64_t(1), base, base + 1, base + 0x40, ~uint64_t(0)}) {
        if (const Symbol* s = obj->find(a)) (void)obj->name(*s).size();
    }
    for (uint64_t a = 0; a < 0x2000 && n > 0; a += 7) {
        if (const Symbol* s = obj->find(base + a)) {
            (void)obj->name(*s).size();
            (void)obj->file_offset(s->name);
        }
    }
    (void)obj->file_offset("main");
    (void)obj->file_offset("");
    (void)demangle(std::string_view(reinterpret_cast<const char*>(data), size < 256 ? size : 256));
    return 0;
}
