// FastInfo::Kind::Format: a print fmt compiled once into literal text and conversions of fields,
// printed as libtraceevent's pretty_print does: a field read as an unsigned number of its size,
// cast to the conversion's length (int, long, long long, short, char), then printf's rules.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "core/format.h"
#include "tep/fast_info.h"

namespace perfprof::tep {

namespace {

using Op = FastInfo::Op;
using Conv = Op::Conv;

// A cast libtraceevent evaluates (eval_type_str): a cast to (unsigned) int keeps the low 32
// bits, a cast to a 64-bit type keeps the value; other casts are not compiled.
bool cast_mask(std::string_view type, uint64_t& mask) {
    if (type.substr(0, 9) == "unsigned ") type.remove_prefix(9);
    if (type == "int" || type == "u32" || type == "s32") {
        mask = 0xffffffffu;
        return true;
    }
    if (type == "long" || type == "long long" || type == "u64" || type == "s64") {
        mask = ~uint64_t(0);
        return true;
    }
    return false;
}

bool numeric(const tep_format_field* f) {
    return f && !(f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC)) &&
           (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
}

// The field `name`, recorded in op.field; nullptr when it is missing or out of our range.
tep_format_field* take_field(tep_event& ev, const char* name, FastInfo& fi, Op& op) {
    tep_format_field* f = name ? tep_find_any_field(&ev, name) : nullptr;
    if (!f || f->offset < 0 || f->size <= 0 || f->offset + f->size > 0xffff) return nullptr;
    op.field = {uint16_t(f->offset), uint16_t(f->size)};
    fi.min_size = std::max(fi.min_size, uint32_t(f->offset + f->size));
    return f;
}

// Binds the conversion `op` (its spec parsed) to the argument `a`.
bool bind(tep_event& ev, tep_print_arg* a, char conv, FastInfo& fi, Op& op) {
    if (!a) return false;
    if (conv == 's') {
        if (a->type == TEP_PRINT_FIELD) {
            // A non-array field under %s is taken for a pointer by libtraceevent.
            const tep_format_field* f = take_field(ev, a->field.name, fi, op);
            if (!f || !(f->flags & TEP_FIELD_IS_ARRAY) || (f->flags & TEP_FIELD_IS_DYNAMIC)) return false;
            op.conv = Conv::Str;
            return true;
        }
        if (a->type == TEP_PRINT_STRING) {
            const tep_format_field* f = take_field(ev, a->string.string, fi, op);
            if (!f || f->size != 4) return false;
            op.relative = f->flags & TEP_FIELD_IS_RELATIVE;
            op.conv = Conv::DynStr;
            return true;
        }
        return false;
    }
    if (a->type == TEP_PRINT_TYPE) {
        if (!a->typecast.type || !cast_mask(a->typecast.type, op.mask)) return false;
        a = a->typecast.item;
        if (!a) return false;
    }
    if (a->type != TEP_PRINT_FIELD || !numeric(take_field(ev, a->field.name, fi, op))) return false;
    const bool plain = op.spec.size() >= 2 && std::strchr("0123456789.-#", op.spec[1]) == nullptr;
    // %hu and %hhu narrow the value again: printf's.
    if (plain && (conv == 'd' || conv == 'i'))
        op.conv = Conv::Int;
    else if (plain && conv == 'u' && op.length >= 0)
        op.conv = Conv::Uint;
    else
        op.conv = Conv::Printf;
    return true;
}

// Parses the conversion at fmt[i] ('%'): flags, width, precision, length, conversion. Fills
// op.spec and op.length and returns the conversion character (0: not one we compile); i ends
// past it.
char parse_spec(std::string_view fmt, size_t& i, Op& op) {
    const size_t start = i++;
    // libtraceevent does not take printf's '+' and ' ' flags: those stay its own.
    while (i < fmt.size() && std::strchr("-#0", fmt[i])) i++;
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') i++;
    if (i < fmt.size() && fmt[i] == '.') {
        i++;
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') i++;
    }
    const size_t len_at = i;
    int length = 0;
    while (i < fmt.size() && std::strchr("hlLz", fmt[i])) {
        length += fmt[i] == 'h' ? -1 : fmt[i] == 'L' ? 2 : 1;
        i++;
    }
    if (i >= fmt.size() || length < -2 || length > 2) return 0;
    const char conv = fmt[i++];
    if (!std::strchr("diuoxXs", conv) || (conv == 's' && length)) return 0;
    op.length = int8_t(length);
    // The spec printf gets: our casts below pass int, long or long long, so "%hd" and "%Lu"
    // keep their letters and "%zu" becomes "%lu".
    op.spec.assign(fmt.substr(start, len_at - start));
    if (length == -2) op.spec += "hh";
    if (length == -1) op.spec += 'h';
    if (length == 1) op.spec += 'l';
    if (length == 2) op.spec += "ll";
    op.spec += conv;
    return conv;
}

// The field as pretty_print passes it to printf for the op's length.
template <class F>
void with_value(const Op& op, uint64_t v, F&& f) {
    v &= op.mask;
    switch (op.length) {
        case -2:
            f(int(static_cast<signed char>(v)));
            break;
        case -1:
            f(int(static_cast<short>(v)));
            break;
        case 0:
            f(static_cast<int>(v));
            break;
        case 1:
            f(static_cast<long>(v));
            break;
        default:
            f(static_cast<long long>(v));
            break;
    }
}

}  // namespace

FastInfo compile_print_fmt(tep_event& ev) {
    FastInfo fi;
    // Longs of the recorded kernel as ours (a live tep leaves long_size 0: the host's).
    const int long_size = tep_get_long_size(ev.tep);
    if (!ev.print_fmt.format || ev.handler || (long_size && long_size != int(sizeof(long)))) return fi;
    const std::string_view fmt = ev.print_fmt.format;
    tep_print_arg* arg = ev.print_fmt.args;
    Op op;
    for (size_t i = 0; i < fmt.size();) {
        const char c = fmt[i];
        if (c == '\\') return {};  // escapes: left to libtraceevent
        if (c != '%') {
            op.text += c;
            i++;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
            op.text += '%';
            i += 2;
            continue;
        }
        const char conv = parse_spec(fmt, i, op);
        if (!conv || !bind(ev, arg, conv, fi, op)) return {};
        arg = arg->next;
        fi.ops.push_back(std::move(op));
        op = Op();
    }
    if (arg) return {};  // more arguments than conversions
    if (!op.text.empty()) fi.ops.push_back(std::move(op));
    fi.kind = FastInfo::Kind::Format;
    return fi;
}

bool render_format(const FastInfo& fi, const uint8_t* p, uint32_t size, std::string& out) {
    const size_t mark = out.size();
    char buf[128];
    for (const Op& op : fi.ops) {
        out += op.text;
        switch (op.conv) {
            case Conv::None:
                break;
            case Conv::Int:
                with_value(op, read_field(p, op.field), [&](auto v) { core::append_int(out, int64_t(v)); });
                break;
            case Conv::Uint:
                // %u of the int, long or long long the value was cast to.
                with_value(op, read_field(p, op.field), [&](auto v) {
                    core::append_uint(out, uint64_t(static_cast<std::make_unsigned_t<decltype(v)>>(v)));
                });
                break;
            case Conv::Printf: {
                int n = -1;
                with_value(op, read_field(p, op.field),
                           [&](auto v) { n = std::snprintf(buf, sizeof(buf), op.spec.c_str(), v); });
                if (n < 0 || n >= int(sizeof(buf))) {  // a width past our buffer
                    out.resize(mark);
                    return false;
                }
                out.append(buf, size_t(n));
                break;
            }
            case Conv::Str:
            case Conv::DynStr: {
                const char* s = reinterpret_cast<const char*>(p + op.field.offset);
                size_t n = op.field.size;
                if (op.conv == Conv::DynStr) {
                    // __data_loc: offset in the low 16 bits, length in the high ones; an empty
                    // string prints nothing. A string that is not NUL-terminated inside the
                    // record is left to libtraceevent.
                    const uint64_t loc = read_field(p, op.field);
                    size_t off = loc & 0xffff;
                    n = loc >> 16;
                    if (!n) break;
                    if (op.relative) off += op.field.offset + op.field.size;
                    if (off + n > size || !std::memchr(p + off, 0, size - off)) {
                        out.resize(mark);
                        return false;
                    }
                    s = reinterpret_cast<const char*>(p + off);
                    n = size - off;
                }
                const size_t len = strnlen(s, n);
                if (op.spec == "%s") {
                    out.append(s, len);
                } else {
                    const std::string str(s, len);
                    const int k = std::snprintf(buf, sizeof(buf), op.spec.c_str(), str.c_str());
                    if (k >= int(sizeof(buf))) {
                        out.resize(mark);
                        return false;
                    }
                    if (k > 0) out.append(buf, size_t(k));
                }
                break;
            }
        }
    }
    return true;
}

}  // namespace perfprof::tep
