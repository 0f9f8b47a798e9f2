// What the user's statements say about each table (SPEC §P2 memory mode): the column to
// index, and the WHERE constraints the kernel's filter language can express, pushed down as
// the event's filter. A small SQL tokenizer; anything it does not understand pushes nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sql/schema.h"

namespace perfprof::sql {

struct Token {
    enum Kind { Ident, Number, String, Op } kind;
    std::string text;  // String: the contents, quotes removed; Ident: "a.b" kept whole
};
std::vector<Token> tokens(std::string_view sql);

std::string lower(std::string s);

// The column the statements constrain (WHERE) or group/order by alone most often for `l`
// ("" = none), or `index_attr` when it names an INTEGER or TEXT column (else `warning` says
// "index field 'f' not found|integer or string, using 'auto'").
std::string index_column(const Layout& l, const std::string& index_attr,
                         const std::vector<std::string>& statements, std::string* warning);

// Whether a WHERE clause of a statement reading `l`'s table names `column` (an index on it can
// save a full scan; for GROUP BY / ORDER BY alone, building it costs what one sort does).
bool constrained(const Layout& l, const std::string& column, const std::vector<std::string>& statements);

// The kernel filter equivalent to the WHERE clauses of every statement that reads `l`'s table,
// or "" when one of them reads it otherwise: each statement must read only this table
// (`FROM t [alias]`) with a WHERE of `column OP literal` terms joined by AND, on event fields
// or _cpu (as CPU); OP one of = == != <> < > <= >= (integers), = != GLOB (text). One
// statement's terms join with &&; several statements' with || in parentheses.
std::string pushdown_filter(const Layout& l, const std::vector<std::string>& statements);

}  // namespace perfprof::sql
