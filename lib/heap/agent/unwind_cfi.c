/* The heap agent walker's CFI parser (unwind_cfi.h): .eh_frame_hdr's binary search, the CIE and
 * FDE headers, and the FDE's program run up to the pc, keeping only what the walker tracks: the
 * CFA (rsp or rbp + offset), rbp and the return address. */
#include "heap/agent/unwind_cfi.h"

#include <stddef.h>
#include <string.h>

/* DWARF register numbers (x86-64 psABI). */
enum { DW_REG_RBP = 6, DW_REG_RSP = 7, DW_REG_RA = 16 };

/* Pointer encodings (DW_EH_PE_*): the format in the low nibble, how it applies above. */
enum {
    PE_ABSPTR = 0x00, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
    PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_ALIGNED = 0x50, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* Bounds-checked reading of [pos, end) of one segment: a read past `end` sets `bad` and
 * returns 0. `end` never lies beyond the segment. */
struct cur {
    const struct pph_mem* m;
    uint64_t pos, end;
    int bad;
};

static int cur_init(struct cur* c, const struct pph_mem* m, uint64_t pos, uint64_t len) {
    c->m = m;
    c->bad = 0;
    c->pos = pos;
    /* A segment wrapping past the top of the address space is none (end would lie below pos). */
    if (m->addr + m->len < m->addr || pos < m->addr || pos - m->addr > m->len || len > m->len - (pos - m->addr)) {
        c->end = pos;
        c->bad = 1;
        return 0;
    }
    c->end = pos + len;
    return 1;
}

static uint64_t fail(struct cur* c) {
    c->bad = 1;
    return 0;
}

static uint64_t rd_fixed(struct cur* c, unsigned n) {
    if (c->bad || c->end - c->pos < n) return fail(c);
    uint64_t v = 0;
    memcpy(&v, c->m->bytes + (c->pos - c->m->addr), n); /* little-endian host and file */
    c->pos += n;
    return v;
}

static uint8_t rd_u8(struct cur* c) {
    return (uint8_t)rd_fixed(c, 1);
}

static uint64_t rd_uleb(struct cur* c) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (c->bad || c->pos >= c->end) return fail(c);
        const uint8_t b = c->m->bytes[c->pos++ - c->m->addr];
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

static int64_t rd_sleb(struct cur* c) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (c->bad || c->pos >= c->end) return (int64_t)fail(c);
        b = c->m->bytes[c->pos++ - c->m->addr];
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* v * factor, failing on overflow (a fuzzed offset must not be undefined behaviour). */
static int64_t scaled(struct cur* c, int64_t v, int64_t factor) {
    int64_t r;
    if (__builtin_mul_overflow(v, factor, &r)) return (int64_t)fail(c);
    return r;
}

static void skip(struct cur* c, uint64_t n) {
    if (c->bad || c->end - c->pos < n) {
        fail(c);
        return;
    }
    c->pos += n;
}

/* A DW_EH_PE_* encoded value. `datarel` is the base of DW_EH_PE_datarel (only .eh_frame_hdr has
 * one; 0 elsewhere: rejected). Indirect values are not dereferenced (only a personality is). */
static uint64_t rd_enc(struct cur* c, uint8_t enc, uint64_t datarel) {
    if (enc == PE_OMIT) return fail(c);
    const uint64_t field = c->pos;
    if ((enc & 0x70) == PE_ALIGNED) {
        skip(c, (8 - (c->pos & 7)) & 7);
        return rd_fixed(c, 8);
    }
    uint64_t v;
    switch (enc & 0x0f) {
        case PE_ABSPTR:
        case PE_UDATA8:
        case PE_SDATA8: v = rd_fixed(c, 8); break;
        case PE_ULEB: v = rd_uleb(c); break;
        case PE_SLEB: v = (uint64_t)rd_sleb(c); break;
        case PE_UDATA2: v = rd_fixed(c, 2); break;
        case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)rd_fixed(c, 2); break;
        case PE_UDATA4: v = rd_fixed(c, 4); break;
        case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)rd_fixed(c, 4); break;
        default: return fail(c);
    }
    switch (enc & 0x70) {
        case 0: break;
        case PE_PCREL: v += field; break;
        case PE_DATAREL:
            if (!datarel) return fail(c);
            v += datarel;
            break;
        default: return fail(c); /* textrel, funcrel: never emitted for x86-64 */
    }
    return v;
}

int pph_cfi_parse_hdr(const struct pph_mem* seg, uint64_t hdr, struct pph_cfi* out) {
    struct cur c;
    if (!cur_init(&c, seg, hdr, 4)) return PPH_CFI_BAD;
    const uint8_t version = rd_u8(&c), eh_enc = rd_u8(&c), count_enc = rd_u8(&c), table_enc = rd_u8(&c);
    if (version != 1) return PPH_CFI_UNSUPPORTED;
    cur_init(&c, seg, hdr + 4, seg->len - (hdr + 4 - seg->addr)); /* the rest of the segment */
    const uint64_t eh_frame = rd_enc(&c, eh_enc, hdr);
    if (c.bad) return PPH_CFI_BAD;
    /* The table is searched in place: only the encoding every linker writes is accepted. */
    if (count_enc == PE_OMIT || table_enc != (PE_DATAREL | PE_SDATA4)) return PPH_CFI_UNSUPPORTED;
    const uint64_t count = rd_enc(&c, count_enc, hdr);
    if (c.bad) return PPH_CFI_BAD;
    if (count > UINT32_MAX || (c.end - c.pos) / 8 < count) return PPH_CFI_BAD;
    out->hdr_seg = *seg;
    out->hdr = hdr;
    out->table = c.pos;
    out->eh_frame = eh_frame;
    out->fde_count = (uint32_t)count;
    return PPH_CFI_OK;
}

/* ------------------------------------------------------------------ CIEs, FDEs, programs */

struct cie {
    uint64_t insns, insns_end; /* the initial instructions */
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    uint8_t augmented; /* 'z': FDEs carry augmentation data to skip */
    uint8_t signal;    /* 'S' */
};

/* One entry's header: its length field at `at`; sets *body (after the length) and *end. */
static int entry_bounds(const struct pph_mem* m, uint64_t at, uint64_t* body, uint64_t* end) {
    struct cur c;
    if (!cur_init(&c, m, at, 4)) return 0;
    const uint64_t len = rd_fixed(&c, 4);
    /* 0 ends the section; 0xffffffff (64-bit DWARF) is never emitted in .eh_frame. */
    if (len == 0 || len >= 0xfffffff0u) return 0;
    if (!cur_init(&c, m, at + 4, len)) return 0;
    *body = at + 4;
    *end = at + 4 + len;
    return 1;
}

static int parse_cie(const struct pph_mem* m, uint64_t at, struct cie* out) {
    uint64_t body, end;
    if (!entry_bounds(m, at, &body, &end)) return PPH_CFI_BAD;
    struct cur c;
    cur_init(&c, m, body, end - body);
    if (rd_fixed(&c, 4) != 0) return PPH_CFI_BAD; /* a CIE's id is 0 in .eh_frame */
    const uint8_t version = rd_u8(&c);
    if (version != 1 && version != 3 && version != 4) return PPH_CFI_UNSUPPORTED;
    char aug[8];
    unsigned naug = 0;
    for (;;) {
        const uint8_t ch = rd_u8(&c);
        if (c.bad) return PPH_CFI_BAD;
        if (!ch) break;
        if (naug == sizeof aug) return PPH_CFI_UNSUPPORTED;
        aug[naug++] = (char)ch;
    }
    if (version == 4 && (rd_u8(&c) != 8 || rd_u8(&c) != 0)) return PPH_CFI_UNSUPPORTED;
    out->code_align = rd_uleb(&c);
    out->data_align = rd_sleb(&c);
    out->ra_reg = version == 1 ? rd_u8(&c) : rd_uleb(&c);
    out->fde_enc = PE_ABSPTR;
    out->augmented = 0;
    out->signal = 0;
    if (naug) {
        /* Without 'z' the augmentation data cannot be skipped (GCC 2's "eh"). */
        if (aug[0] != 'z') return PPH_CFI_UNSUPPORTED;
        const uint64_t len = rd_uleb(&c);
        if (c.bad || c.end - c.pos < len) return PPH_CFI_BAD;
        struct cur a = c;
        a.end = c.pos + len;
        for (unsigned i = 1; i < naug; i++) {
            switch (aug[i]) {
                case 'R': out->fde_enc = rd_u8(&a); break;
                case 'P': {
                    const uint8_t enc = rd_u8(&a);
                    if (!a.bad) rd_enc(&a, (uint8_t)(enc & ~PE_INDIRECT), 0); /* only skipped */
                    break;
                }
                case 'L': rd_u8(&a); break;
                case 'S': out->signal = 1; break;
                default: return PPH_CFI_UNSUPPORTED;
            }
        }
        if (a.bad) return PPH_CFI_BAD;
        out->augmented = 1;
        c.pos += len;
    }
    if (c.bad) return PPH_CFI_BAD;
    /* x86-64 has 1 and -8; bounded, the products below cannot overflow unnoticed. */
    if (out->code_align == 0 || out->code_align > 256 || out->data_align < -256 || out->data_align > 256)
        return PPH_CFI_UNSUPPORTED;
    out->insns = c.pos;
    out->insns_end = end;
    return PPH_CFI_OK;
}

/* How the walker sees a register of the caller. */
enum { R_SAME, R_OFFSET, R_UNDEF, R_OTHER };
struct reg_rule {
    uint8_t kind;
    int64_t off;
};
struct state {
    int64_t cfa_off;
    uint64_t cfa_reg;
    int cfa_expr; /* DW_CFA_def_cfa_expression */
    struct reg_rule rbp, ra;
};
enum { MAX_REMEMBERED = 8 }; /* DW_CFA_remember_state depth (GCC nests 1-2) */

static struct reg_rule* tracked(struct state* s, const struct cie* cie, uint64_t reg) {
    if (reg == DW_REG_RBP) return &s->rbp;
    if (reg == cie->ra_reg) return &s->ra;
    return NULL;
}

/* Runs the program [c.pos, c.end), the location starting at `loc`, until the location passes
 * `pc`. `init` is the state after the CIE's initial instructions (NULL while running them).
 * PPH_CFI_OK or PPH_CFI_BAD. */
static int run(struct cur* c, const struct cie* cie, uint64_t loc, uint64_t pc, struct state* s,
               const struct state* init) {
    struct state stack[MAX_REMEMBERED];
    unsigned depth = 0;
    while (!c->bad && c->pos < c->end) {
        const uint8_t op = rd_u8(c);
        uint64_t reg = 0, delta = 0;
        int64_t off = 0;
        struct reg_rule* r;
        switch (op >> 6) {
            case 1: delta = op & 0x3f; goto advance;
            case 2:
                reg = op & 0x3f;
                off = scaled(c, (int64_t)rd_uleb(c), cie->data_align);
                goto offset;
            case 3: reg = op & 0x3f; goto restore;
            default: break;
        }
        switch (op) {
            case 0x00: break; /* DW_CFA_nop */
            case 0x01: {      /* DW_CFA_set_loc */
                const uint64_t to = rd_enc(c, cie->fde_enc, 0);
                if (c->bad) return PPH_CFI_BAD;
                if (to > pc) return PPH_CFI_OK;
                loc = to;
                break;
            }
            case 0x02: delta = rd_fixed(c, 1); goto advance;
            case 0x03: delta = rd_fixed(c, 2); goto advance;
            case 0x04: delta = rd_fixed(c, 4); goto advance;
            case 0x05: /* DW_CFA_offset_extended */
                reg = rd_uleb(c);
                off = scaled(c, (int64_t)rd_uleb(c), cie->data_align);
                goto offset;
            case 0x11: /* DW_CFA_offset_extended_sf */
                reg = rd_uleb(c);
                off = scaled(c, rd_sleb(c), cie->data_align);
                goto offset;
            case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
                reg = rd_uleb(c);
                off = scaled(c, (int64_t)rd_uleb(c), -cie->data_align);
                goto offset;
            case 0x06: reg = rd_uleb(c); goto restore; /* DW_CFA_restore_extended */
            case 0x07:                                 /* DW_CFA_undefined */
                if ((r = tracked(s, cie, rd_uleb(c)))) r->kind = R_UNDEF;
                break;
            case 0x08: /* DW_CFA_same_value */
                if ((r = tracked(s, cie, rd_uleb(c)))) r->kind = R_SAME;
                break;
            case 0x09: /* DW_CFA_register */
                if ((r = tracked(s, cie, rd_uleb(c)))) r->kind = R_OTHER;
                rd_uleb(c);
                break;
            case 0x14: /* DW_CFA_val_offset */
            case 0x15: /* DW_CFA_val_offset_sf */
                if ((r = tracked(s, cie, rd_uleb(c)))) r->kind = R_OTHER;
                if (op == 0x14)
                    rd_uleb(c);
                else
                    rd_sleb(c);
                break;
            case 0x10: /* DW_CFA_expression */
            case 0x16: /* DW_CFA_val_expression */
                if ((r = tracked(s, cie, rd_uleb(c)))) r->kind = R_OTHER;
                skip(c, rd_uleb(c));
                break;
            case 0x0a: /* DW_CFA_remember_state */
                if (depth == MAX_REMEMBERED) return PPH_CFI_BAD;
                stack[depth++] = *s;
                break;
            case 0x0b: /* DW_CFA_restore_state */
                if (depth == 0) return PPH_CFI_BAD;
                *s = stack[--depth];
                break;
            case 0x0c: /* DW_CFA_def_cfa */
                s->cfa_reg = rd_uleb(c);
                s->cfa_off = (int64_t)rd_uleb(c);
                s->cfa_expr = 0;
                break;
            case 0x12: /* DW_CFA_def_cfa_sf */
                s->cfa_reg = rd_uleb(c);
                s->cfa_off = scaled(c, rd_sleb(c), cie->data_align);
                s->cfa_expr = 0;
                break;
            case 0x0d: /* DW_CFA_def_cfa_register */
                s->cfa_reg = rd_uleb(c);
                s->cfa_expr = 0;
                break;
            case 0x0e: s->cfa_off = (int64_t)rd_uleb(c); break; /* DW_CFA_def_cfa_offset */
            case 0x13: s->cfa_off = scaled(c, rd_sleb(c), cie->data_align); break; /* ..._offset_sf */
            case 0x0f:                                                     /* DW_CFA_def_cfa_expression */
                s->cfa_expr = 1;
                skip(c, rd_uleb(c));
                break;
            case 0x2e: rd_uleb(c); break; /* DW_CFA_GNU_args_size */
            default: return PPH_CFI_BAD;  /* unknown (or another architecture's) opcode */
        }
        continue;
    advance:
        /* The row ends where the next begins: a row starting past pc is not pc's. */
        if (!init) return PPH_CFI_BAD; /* a CIE's initial instructions have no locations */
        if (c->bad) return PPH_CFI_BAD;
        if (__builtin_mul_overflow(delta, cie->code_align, &delta) || delta > pc - loc) return PPH_CFI_OK;
        loc += delta;
        continue;
    offset:
        if ((r = tracked(s, cie, reg))) {
            r->kind = R_OFFSET;
            r->off = off;
        }
        continue;
    restore:
        if (!init) return PPH_CFI_BAD;
        if (reg == DW_REG_RBP) s->rbp = init->rbp;
        else if (reg == cie->ra_reg) s->ra = init->ra;
        continue;
    }
    return c->bad ? PPH_CFI_BAD : PPH_CFI_OK;
}

/* The walker's rule from the state at the pc. */
static int to_rule(const struct state* s, const struct cie* cie, struct pph_rule* rule) {
    memset(rule, 0, sizeof *rule);
    rule->flags = PPH_RULE_VALID | (cie->signal ? PPH_RULE_SIGNAL : 0);
    if (s->cfa_expr || (s->cfa_reg != DW_REG_RSP && s->cfa_reg != DW_REG_RBP)) return PPH_CFI_UNSUPPORTED;
    if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX) return PPH_CFI_UNSUPPORTED;
    rule->cfa_off = (int32_t)s->cfa_off;
    if (s->cfa_reg == DW_REG_RBP) rule->flags |= PPH_RULE_CFA_RBP;
    switch (s->ra.kind) {
        case R_UNDEF: rule->flags |= PPH_RULE_OUTERMOST; break;
        case R_OFFSET:
            if (s->ra.off < INT8_MIN || s->ra.off > INT8_MAX) return PPH_CFI_UNSUPPORTED;
            rule->ra_off = (int8_t)s->ra.off;
            break;
        default: return PPH_CFI_UNSUPPORTED; /* in a register, an expression, or not saved */
    }
    switch (s->rbp.kind) {
        case R_SAME: break;
        case R_OFFSET:
            if (s->rbp.off < INT16_MIN || s->rbp.off > INT16_MAX) {
                rule->flags |= PPH_RULE_RBP_LOST;
            } else {
                rule->rbp_off = (int16_t)s->rbp.off;
                rule->flags |= PPH_RULE_RBP_SAVED;
            }
            break;
        default: rule->flags |= PPH_RULE_RBP_LOST; break;
    }
    return PPH_CFI_OK;
}

int pph_cfi_fde_rule(const struct pph_mem* eh, uint64_t fde, uint64_t pc, struct pph_rule* rule) {
    uint64_t body, end;
    if (!entry_bounds(eh, fde, &body, &end)) return PPH_CFI_BAD;
    struct cur c;
    cur_init(&c, eh, body, end - body);
    const uint64_t cie_delta = rd_fixed(&c, 4);
    if (c.bad || cie_delta == 0 || cie_delta > body) return PPH_CFI_BAD; /* 0: a CIE, not an FDE */
    struct cie cie;
    int rc = parse_cie(eh, body - cie_delta, &cie);
    if (rc != PPH_CFI_OK) return rc;
    const uint64_t begin = rd_enc(&c, cie.fde_enc, 0);
    const uint64_t range = rd_enc(&c, cie.fde_enc & 0x0f, 0);
    if (cie.augmented) skip(&c, rd_uleb(&c));
    if (c.bad) return PPH_CFI_BAD;
    if (pc < begin || pc - begin >= range) return PPH_CFI_NONE;

    struct state init = {.cfa_off = 8, .cfa_reg = DW_REG_RSP, .rbp = {R_SAME, 0}, .ra = {R_SAME, 0}};
    struct cur ci;
    cur_init(&ci, eh, cie.insns, cie.insns_end - cie.insns);
    if ((rc = run(&ci, &cie, begin, pc, &init, NULL)) != PPH_CFI_OK) return rc;
    struct state s = init;
    if ((rc = run(&c, &cie, begin, pc, &s, &init)) != PPH_CFI_OK) return rc;
    return to_rule(&s, &cie, rule);
}

int pph_cfi_find(const struct pph_cfi* cfi, uint64_t pc, struct pph_rule* rule) {
    /* The table's entries are (initial location, FDE address) relative to the header, sorted by
     * location: the last entry at or below pc is the only candidate. */
    const int64_t rel = (int64_t)(pc - cfi->hdr);
    if (cfi->fde_count == 0 || rel < INT32_MIN || rel > INT32_MAX) return PPH_CFI_NONE;
    struct cur c;
    if (!cur_init(&c, &cfi->hdr_seg, cfi->table, (uint64_t)cfi->fde_count * 8)) return PPH_CFI_BAD;
    const uint8_t* t = cfi->hdr_seg.bytes + (cfi->table - cfi->hdr_seg.addr);
    uint32_t lo = 0, hi = cfi->fde_count; /* the answer is in [lo, hi): entry lo-1 at most */
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        int32_t loc;
        memcpy(&loc, t + (uint64_t)mid * 8, 4);
        if (loc <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return PPH_CFI_NONE;
    int32_t loc, fde;
    memcpy(&fde, t + (uint64_t)(lo - 1) * 8 + 4, 4);
    int rc = pph_cfi_fde_rule(&cfi->eh_seg, cfi->hdr + (uint64_t)(int64_t)fde, pc, rule);
    /* An empty FDE (a function of no bytes) may share its location with the one covering pc. */
    for (uint32_t i = lo - 1; rc == PPH_CFI_NONE && i > 0 && i + 4 > lo; i--) {
        memcpy(&loc, t + (uint64_t)(i - 1) * 8, 4);
        int32_t next;
        memcpy(&next, t + (uint64_t)i * 8, 4);
        if (loc != next) break;
        memcpy(&fde, t + (uint64_t)(i - 1) * 8 + 4, 4);
        rc = pph_cfi_fde_rule(&cfi->eh_seg, cfi->hdr + (uint64_t)(int64_t)fde, pc, rule);
    }
    return rc;
}
