/* The heap agent walker's call-frame information parser (x86-64): from an object's
 * .eh_frame_hdr search table and .eh_frame, the rule of one code address. Pure: it reads only the
 * bytes it is given (`struct pph_mem`), every read bounds-checked, so malformed or truncated
 * sections make it fail, never read outside them (tests/fuzz/agent_cfi_fuzz.cpp feeds it
 * arbitrary bytes). No allocation, no library call, no global state: it runs inside malloc.
 *
 * DWARF facts used: DWARF 5 §6.4 (call frame instructions), the LSB's .eh_frame variant (CIE
 * pointers relative to the field, augmentation strings 'z', 'R', 'P', 'L', 'S', DW_EH_PE_*
 * pointer encodings) and .eh_frame_hdr (version 1, a table of datarel sdata4 pairs sorted by
 * initial location). Registers: the System V x86-64 psABI's DWARF numbers (6 rbp, 7 rsp, 16 the
 * return address). */
#ifndef PERFPROF_HEAP_AGENT_UNWIND_CFI_H
#define PERFPROF_HEAP_AGENT_UNWIND_CFI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Readable bytes: `len` bytes at address `addr` (the address the object's pointers refer to)
 * lie at `bytes`. In the process both are the same; the fuzz target maps a buffer anywhere. */
struct pph_mem {
    const uint8_t* bytes;
    uint64_t addr, len;
};

/* One object's call-frame information: the segments holding .eh_frame_hdr and .eh_frame (often
 * the same), and the search table found in the header by pph_cfi_parse_hdr(). */
struct pph_cfi {
    struct pph_mem hdr_seg, eh_seg;
    uint64_t hdr;       /* address of .eh_frame_hdr: the base of the table's datarel entries */
    uint64_t table;     /* address of the table's first (initial location, FDE) pair */
    uint64_t eh_frame;  /* address of .eh_frame, as the header says */
    uint32_t fde_count;
};

/* The rule of one code address: how to find the caller's frame. */
enum {
    PPH_RULE_VALID = 0x01,      /* always set in a rule (an all-zero word is no rule) */
    PPH_RULE_CFA_RBP = 0x02,    /* CFA = rbp + cfa_off (else rsp + cfa_off) */
    PPH_RULE_RBP_SAVED = 0x04,  /* the caller's rbp is at CFA + rbp_off (else rbp is unchanged) */
    PPH_RULE_RBP_LOST = 0x08,   /* the caller's rbp is not recoverable here (undefined, or in
                                   another register or an expression): a caller whose CFA is
                                   rbp-based ends the walk */
    PPH_RULE_SIGNAL = 0x10,     /* the CIE says 'S': a signal trampoline's frame */
    PPH_RULE_OUTERMOST = 0x20,  /* the return address is undefined: the outermost frame */
    PPH_RULE_STOP = 0x40,       /* no rule the walker can use (no FDE covers the address, or it
                                   needs a DWARF expression): a cached "stop here" */
};
struct pph_rule {
    int32_t cfa_off;
    int16_t rbp_off;
    int8_t ra_off; /* the return address is at CFA + ra_off (normally -8) */
    uint8_t flags;
};

/* What a lookup found. */
enum {
    PPH_CFI_OK = 0,          /* *rule is the address's rule */
    PPH_CFI_NONE = 1,        /* no FDE covers the address */
    PPH_CFI_UNSUPPORTED = 2, /* the FDE needs what the walker does not do (a CFA expression, a
                                return address in a register or an expression) */
    PPH_CFI_BAD = 3,         /* malformed or truncated call-frame information */
};

/* Reads the .eh_frame_hdr at address `hdr` (inside `seg`): version 1, a datarel sdata4 table.
 * Fills out->hdr_seg, hdr, table, fde_count and eh_frame; the caller sets out->eh_seg (the
 * segment holding eh_frame). PPH_CFI_OK, or PPH_CFI_UNSUPPORTED (another table encoding, no
 * table) or PPH_CFI_BAD. */
int pph_cfi_parse_hdr(const struct pph_mem* seg, uint64_t hdr, struct pph_cfi* out);

/* The rule at `pc`: the table's binary search, then the FDE's CIE and program. */
int pph_cfi_find(const struct pph_cfi* cfi, uint64_t pc, struct pph_rule* rule);

/* The rule at `pc` from the FDE at address `fde` in `eh` (no table): PPH_CFI_NONE when that
 * FDE does not cover pc. */
int pph_cfi_fde_rule(const struct pph_mem* eh, uint64_t fde, uint64_t pc, struct pph_rule* rule);

#ifdef __cplusplus
}
#endif

#endif
