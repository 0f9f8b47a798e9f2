#include "sql/schema.h"

#include <sqlite3.h>

#include <cstring>

extern "C" {
#include <event-parse.h>
}

namespace perfprof::sql {

const char* type_name(ColType t) {
    switch (t) {
        case ColType::Integer:
            return "INTEGER";
        case ColType::Text:
            return "TEXT";
        case ColType::Blob:
            return "BLOB";
        case ColType::Null:
            break;
    }
    return "NULL";
}

ColType column_type(const std::string& type, unsigned long flags, int size, const std::string& conv) {
    const bool array = flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC);
    if (flags & TEP_FIELD_IS_STRING) {
        // A %p extension (an address, a MAC) or bytes not printed as a string are binary.
        if (!conv.empty() && conv[0] == 'p') return ColType::Blob;
        const bool bytes = type.find("u8") != std::string::npos || type.find("unsigned") != std::string::npos;
        if (bytes && conv != "s") return ColType::Blob;
        return ColType::Text;
    }
    if (array) return ColType::Blob;
    if (size == 1 || size == 2 || size == 4 || size == 8) return ColType::Integer;
    return ColType::Null;
}

namespace {

Column column_of(const tep_format_field& f, const PrintInfo& info) {
    Column c;
    c.name = f.name;
    auto conv = info.conv.find(c.name);
    c.type = column_type(f.type ? f.type : "", f.flags, f.size, conv == info.conv.end() ? "" : conv->second);
    c.offset = uint32_t(f.offset);
    c.size = uint32_t(f.size);
    c.is_signed = f.flags & TEP_FIELD_IS_SIGNED;
    c.dynamic = f.flags & TEP_FIELD_IS_DYNAMIC;
    c.relative = f.flags & TEP_FIELD_IS_RELATIVE;
    return c;
}

void add_functions(Layout& l, const PrintInfo& info) {
    for (const Symbolic& s : info.symbolic)
        l.functions.push_back("symbolic('" + l.table + "." + s.field + "', " + s.field + ")");
    for (const Column& c : l.columns) {
        auto conv = info.conv.find(c.name);
        if (conv == info.conv.end() || conv->second.size() < 2 || conv->second[0] != 'p') continue;
        const std::string& p = conv->second;
        const char kind = p[1];
        const bool host = p.find('h') != std::string::npos || p.find('l') != std::string::npos;
        std::string fn;
        if (kind == 'S' || kind == 's' || kind == 'F' || kind == 'f')
            fn = "ksymbol";
        else if ((kind == 'I' || kind == 'i') && p.size() >= 3 && p[2] == '4')
            fn = host ? "ipv4_hstr" : "ipv4_str";
        else if ((kind == 'I' || kind == 'i') && p.size() >= 3 && p[2] == '6')
            fn = "ipv6_str";
        else if ((kind == 'I' || kind == 'i') && p.size() >= 3 && p[2] == 'S')
            fn = host ? "ipsa_hstr" : "ipsa_str";
        else if (kind == 'U')
            fn = (p.find('L') != std::string::npos || p.find('l') != std::string::npos) ? "guid_str"
                                                                                        : "uuid_str";
        else if (kind == 'M' || kind == 'm')
            fn = "mac_str";
        if (!fn.empty()) l.functions.push_back(fn + "(" + c.name + ")");
    }
    if (l.sys == "raw_syscalls") l.functions.emplace_back("syscall(id)");
    if (l.sys == "syscalls") l.functions.emplace_back("syscall(__syscall_nr)");
}

}  // namespace

Layout layout_of(const tep_event& ev, const PrintInfo& info, std::string table) {
    Layout l;
    l.table = std::move(table);
    l.sys = ev.system ? ev.system : "";
    l.name = ev.name ? ev.name : "";
    for (int i = 0; i < ev.format.nr_common; ++i) {
        const tep_format_field* f = ev.format.common_fields;
        for (int k = 0; f && k < i; ++k) f = f->next;
        if (f && std::strcmp(f->name, "common_type") != 0) l.columns.push_back(column_of(*f, info));
    }
    for (const tep_format_field* f = ev.format.fields; f; f = f->next)
        l.columns.push_back(column_of(*f, info));
    add_functions(l, info);
    return l;
}

std::string quoted(const std::string& ident) {
    std::string q = "\"";
    for (char c : ident) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + '"';
}

std::string create_sql(const Layout& l) {
    std::string s = "CREATE TABLE " + quoted(l.table) +
                    " (_pid INTEGER, _tid INTEGER, _time INTEGER, _cpu INTEGER, _period INTEGER";
    for (const Column& c : l.columns) s += ", " + quoted(c.name) + " " + type_name(c.type);
    return s + ")";
}

std::string insert_sql(const Layout& l) {
    std::string s = "INSERT INTO " + quoted(l.table) + " VALUES (?,?,?,?,?";
    for (size_t i = 0; i < l.columns.size(); ++i) s += ",?";
    return s + ")";
}

namespace {

int64_t integer_at(const uint8_t* p, uint32_t size, bool is_signed) {
    switch (size) {
        case 1: {
            uint8_t v;
            std::memcpy(&v, p, 1);
            return is_signed ? int64_t(int8_t(v)) : int64_t(v);
        }
        case 2: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return is_signed ? int64_t(int16_t(v)) : int64_t(v);
        }
        case 4: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return is_signed ? int64_t(int32_t(v)) : int64_t(v);
        }
        default: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return v;
        }
    }
}

void bind_column(sqlite3_stmt* stmt, int idx, const Column& c, const uint8_t* raw, uint32_t raw_size) {
    if (c.type == ColType::Null || c.offset + c.size > raw_size) {
        sqlite3_bind_null(stmt, idx);
        return;
    }
    if (c.type == ColType::Integer) {
        sqlite3_bind_int64(stmt, idx, integer_at(raw + c.offset, c.size, c.is_signed));
        return;
    }
    const uint8_t* data = raw + c.offset;
    uint32_t len = c.size;
    if (c.dynamic) {
        uint32_t loc;
        std::memcpy(&loc, raw + c.offset, 4);
        uint32_t off = loc & 0xffff;
        if (c.relative) off += c.offset + c.size;
        len = loc >> 16;
        if (off > raw_size || len > raw_size - off) {
            sqlite3_bind_null(stmt, idx);
            return;
        }
        data = raw + off;
    }
    if (c.type == ColType::Text) {
        const void* nul = std::memchr(data, 0, len);
        const int n = nul ? int(static_cast<const uint8_t*>(nul) - data) : int(len);
        sqlite3_bind_text(stmt, idx, reinterpret_cast<const char*>(data), n, SQLITE_STATIC);
    } else {
        sqlite3_bind_blob(stmt, idx, data, int(len), SQLITE_STATIC);
    }
}

}  // namespace

void bind_row(sqlite3_stmt* stmt, const Layout& l, const Sample& s) {
    sqlite3_bind_int64(stmt, 1, s.pid);
    sqlite3_bind_int64(stmt, 2, s.tid);
    sqlite3_bind_int64(stmt, 3, int64_t(s.time));
    sqlite3_bind_int64(stmt, 4, s.cpu);
    sqlite3_bind_int64(stmt, 5, int64_t(s.period));
    const auto* raw = static_cast<const uint8_t*>(s.raw);
    int idx = 6;
    for (const Column& c : l.columns) bind_column(stmt, idx++, c, raw, raw ? s.raw_size : 0);
}

}  // namespace perfprof::sql
