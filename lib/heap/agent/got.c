/* Inject mode: the agent takes over the allocator entries of every loaded object by writing its
 * hooks' addresses into their GOT slots (R_X86_64_JUMP_SLOT: calls through the PLT;
 * R_X86_64_GLOB_DAT: calls and address-takings through the GOT, as libc's own strdup calls
 * malloc), found through each object's dynamic section (dl_iterate_phdr). Slots in RELRO pages
 * are written between two mprotect calls, the pages left read-only again. Each slot's original
 * value is kept and written back by pph_got_restore(). The agent's own object is never patched.
 * Objects loaded later (dlopen, itself patched) are patched when it returns; those unloaded
 * (dlclose) are forgotten, their slots never written again.
 *
 * The saved slots and the objects seen live in mmap'd tables (never malloc), serialised by a
 * spin lock (patching is rare: the attach, each dlopen and dlclose, the detach). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap/agent/agent.h"

#define MAX_SLOTS 16384
#define MAX_OBJECTS 4096

struct saved_slot {
    uint64_t* slot;
    uint64_t orig, hook;
    const void* object; /* the object's program headers: its identity while it is loaded */
    int relro;
};

static struct saved_slot* g_slots;
static size_t g_nslots;
static const void** g_objects; /* program headers of the objects patched */
static size_t g_nobjects;
static int g_lock;

static void lock(void) {
    while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&g_lock, __ATOMIC_RELAXED)) __builtin_ia32_pause();
}
static void unlock(void) {
    __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

void pph_got_tables(uint64_t* start, uint64_t* end) {
    *start = (uint64_t)(uintptr_t)g_slots;
    *end = g_slots ? *start + MAX_SLOTS * sizeof *g_slots + MAX_OBJECTS * sizeof *g_objects : 0;
}

static int tables(void) {
    if (g_slots) return 0;
    void* s = mmap(0, MAX_SLOTS * sizeof *g_slots + MAX_OBJECTS * sizeof *g_objects, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) return -1;
    g_slots = s;
    g_objects = (const void**)(g_slots + MAX_SLOTS);
    return 0;
}

/* Writes a slot; RELRO pages (read-only once relocated) are opened for the write and closed. */
static void write_slot(uint64_t* slot, uint64_t v, int relro) {
    if (!relro) {
        __atomic_store_n(slot, v, __ATOMIC_RELEASE);
        return;
    }
    void* page = (void*)((uintptr_t)slot & ~(uintptr_t)4095);
    if (mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0) return;
    __atomic_store_n(slot, v, __ATOMIC_RELEASE);
    mprotect(page, 4096, PROT_READ);
}

/* The pph_sym of a symbol name, or -1. */
static int sym_of(const char* name) {
    for (int s = 0; s < PPH_S_COUNT; s++)
        if (name[0] == pph_sym_names[s][0] && !strcmp(name, pph_sym_names[s])) return s;
    return -1;
}

static int seen(const void* object) {
    for (size_t i = 0; i < g_nobjects; i++)
        if (g_objects[i] == object) return 1;
    return 0;
}

struct patch_ctx {
    const char* why;
    int patched;
};

/* A dynamic entry's address: relocated in place by the loader for most objects, not for the
 * vDSO (whose dynamic section is read-only). */
static uint64_t dyn_addr(uint64_t v, uint64_t base) {
    return v < base ? v + base : v;
}

static void patch_relocs(const struct dl_phdr_info* info, const ElfW(Rela) * r, size_t bytes,
                         const ElfW(Sym) * symtab, const char* strtab, uint64_t relro_lo, uint64_t relro_hi,
                         struct patch_ctx* ctx) {
    for (size_t i = 0; i < bytes / sizeof *r; i++) {
        const uint32_t type = ELF64_R_TYPE(r[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
        const uint32_t si = ELF64_R_SYM(r[i].r_info);
        if (!si) continue;
        const int s = sym_of(strtab + symtab[si].st_name);
        if (s < 0) continue;
        uint64_t* slot = (uint64_t*)(info->dlpi_addr + r[i].r_offset);
        const uint64_t hook = (uint64_t)(uintptr_t)pph_hooks[s];
        const uint64_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == hook) continue;
        if (g_nslots == MAX_SLOTS) {
            ctx->why = "too many allocator slots to patch";
            return;
        }
        if (!pph_real[s]) pph_resolve(s);
        const int relro = (uint64_t)(uintptr_t)slot >= relro_lo && (uint64_t)(uintptr_t)slot < relro_hi;
        g_slots[g_nslots++] = (struct saved_slot){slot, cur, hook, info->dlpi_phdr, relro};
        write_slot(slot, hook, relro);
        ctx->patched++;
    }
}

static int patch_object(struct dl_phdr_info* info, size_t size, void* arg) {
    (void)size;
    struct patch_ctx* ctx = arg;
    const uint64_t self = (uint64_t)(uintptr_t)&patch_object;
    const ElfW(Dyn)* dyn = 0;
    uint64_t relro_lo = 0, relro_hi = 0;
    int ours = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        const uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= a && self < a + ph->p_memsz) ours = 1;
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn)*)a;
        if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = a & ~4095ull;
            relro_hi = (a + ph->p_memsz) & ~4095ull; /* the loader protects whole pages only */
        }
    }
    if (ours || !dyn || seen(info->dlpi_phdr) || ctx->why) return 0;
    if (info->dlpi_name && !strcmp(info->dlpi_name, "linux-vdso.so.1")) return 0;
    if (g_nobjects == MAX_OBJECTS) {
        ctx->why = "too many objects loaded";
        return 1;
    }
    g_objects[g_nobjects++] = info->dlpi_phdr;
    const ElfW(Sym)* symtab = 0;
    const char* strtab = 0;
    uint64_t jmprel = 0, pltrelsz = 0, rela = 0, relasz = 0, pltrel = DT_RELA;
    for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
            case DT_SYMTAB:
                symtab = (const ElfW(Sym)*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
                break;
            case DT_STRTAB:
                strtab = (const char*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
                break;
            case DT_JMPREL:
                jmprel = dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
                break;
            case DT_PLTRELSZ:
                pltrelsz = d->d_un.d_val;
                break;
            case DT_PLTREL:
                pltrel = d->d_un.d_val;
                break;
            case DT_RELA:
                rela = dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
                break;
            case DT_RELASZ:
                relasz = d->d_un.d_val;
                break;
        }
    }
    if (!symtab || !strtab) return 0;
    if (jmprel && pltrel == DT_RELA)
        patch_relocs(info, (const ElfW(Rela)*)jmprel, pltrelsz, symtab, strtab, relro_lo, relro_hi, ctx);
    if (rela) patch_relocs(info, (const ElfW(Rela)*)rela, relasz, symtab, strtab, relro_lo, relro_hi, ctx);
    return 0;
}

int pph_got_patch_new(const char** why) {
    lock();
    struct patch_ctx ctx = {0, 0};
    if (tables() < 0)
        ctx.why = "no memory for the slot table";
    else
        dl_iterate_phdr(patch_object, &ctx);
    unlock();
    *why = ctx.why;
    return ctx.why ? -1 : ctx.patched;
}

void pph_got_restore(void) {
    lock();
    for (size_t i = g_nslots; i-- > 0;) {
        struct saved_slot* s = &g_slots[i];
        /* A slot someone else rewrote since (a lazy binding cannot: it was ours) keeps its value. */
        if (__atomic_load_n(s->slot, __ATOMIC_ACQUIRE) == s->hook) write_slot(s->slot, s->orig, s->relro);
    }
    g_nslots = 0;
    g_nobjects = 0;
    unlock();
}

static int collect_loaded(struct dl_phdr_info* info, size_t size, void* arg) {
    (void)size;
    const void** still = arg;
    for (size_t i = 0; i < g_nobjects; i++)
        if (g_objects[i] == info->dlpi_phdr) still[i] = info->dlpi_phdr;
    return 0;
}

void pph_got_forget_unloaded(void) {
    static const void* still[MAX_OBJECTS];
    lock();
    if (g_objects) {
        memset(still, 0, g_nobjects * sizeof *still);
        dl_iterate_phdr(collect_loaded, still);
        size_t k = 0;
        for (size_t i = 0; i < g_nslots; i++) {
            size_t o = 0;
            while (o < g_nobjects && g_objects[o] != g_slots[i].object) o++;
            if (o < g_nobjects && still[o]) g_slots[k++] = g_slots[i];
        }
        g_nslots = k;
        k = 0;
        for (size_t i = 0; i < g_nobjects; i++)
            if (still[i]) g_objects[k++] = g_objects[i];
        g_nobjects = k;
    }
    unlock();
}

/* ---- dlopen's search on behalf of its caller ----
 * glibc searches a name without a slash along the RUNPATH (or RPATH) of the object that called
 * dlopen, found by the call's return address, and expands $ORIGIN to that object's directory.
 * With dlopen's slot patched the caller is the agent, so the hook does that part itself: the
 * path of the first directory of the caller's RUNPATH (else RPATH) that holds the file. (Not
 * emulated: LD_LIBRARY_PATH before a RUNPATH, the RPATH of the caller's loaders.) */

/* Appends s[0..n) to buf at *at; 0 when it does not fit. */
static int put(char* buf, size_t size, size_t* at, const char* s, size_t n) {
    if (*at + n >= size) return 0;
    memcpy(buf + *at, s, n);
    *at += n;
    buf[*at] = 0;
    return 1;
}

/* The directory of the caller's object. */
static size_t origin_of(const struct link_map* lm, char* out, size_t size) {
    size_t n;
    if (lm->l_name && lm->l_name[0]) {
        n = strlen(lm->l_name);
        if (n >= size) return 0;
        memcpy(out, lm->l_name, n);
    } else {
        const ssize_t r = readlink("/proc/self/exe", out, size - 1);
        if (r <= 0) return 0;
        n = (size_t)r;
    }
    while (n > 0 && out[n - 1] != '/') n--;
    if (n > 1) n--; /* the slash itself, unless it is the root */
    out[n] = 0;
    return n;
}

/* `dir` (n bytes) with $ORIGIN or ${ORIGIN} expanded, then "/" and file, into buf. */
static int expand(const char* dir, size_t n, const char* origin, size_t on, const char* file, char* buf,
                  size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n;) {
        if (dir[i] == '$' && i + 7 <= n && !memcmp(dir + i, "$ORIGIN", 7)) {
            if (!on || !put(buf, size, &at, origin, on)) return 0;
            i += 7;
        } else if (dir[i] == '$' && i + 9 <= n && !memcmp(dir + i, "${ORIGIN}", 9)) {
            if (!on || !put(buf, size, &at, origin, on)) return 0;
            i += 9;
        } else {
            if (!put(buf, size, &at, dir + i, 1)) return 0;
            i++;
        }
    }
    return put(buf, size, &at, "/", 1) && put(buf, size, &at, file, strlen(file));
}

const char* pph_caller_path(const char* file, const void* caller, char* buf, size_t size) {
    if (!file || !*file) return file;
    Dl_info info;
    struct link_map* lm = 0;
    if (!dladdr1(caller, &info, (void**)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld) return file;
    char origin[1024];
    const size_t on = origin_of(lm, origin, sizeof origin);
    if (strchr(file, '/')) {
        /* A path: only $ORIGIN in it is the caller's. */
        if (!strstr(file, "$ORIGIN") && !strstr(file, "${ORIGIN}")) return file;
        const char* slash = strrchr(file, '/');
        return expand(file, (size_t)(slash - file), origin, on, slash + 1, buf, size) ? buf : file;
    }
    const char* strtab = 0;
    uint64_t runpath = 0, rpath = 0;
    int has_runpath = 0, has_rpath = 0;
    for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB) strtab = (const char*)dyn_addr(d->d_un.d_ptr, lm->l_addr);
        if (d->d_tag == DT_RUNPATH) runpath = d->d_un.d_val, has_runpath = 1;
        if (d->d_tag == DT_RPATH) rpath = d->d_un.d_val, has_rpath = 1;
    }
    if (!strtab || (!has_runpath && !has_rpath)) return file;
    const char* list = strtab + (has_runpath ? runpath : rpath);
    for (const char* p = list; *p;) {
        const char* end = strchr(p, ':');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && expand(p, n, origin, on, file, buf, size) && access(buf, F_OK) == 0) return buf;
        p += n + (end ? 1 : 0);
    }
    return file;
}

/* ---- the process's own definition of a symbol ----
 * dlsym(RTLD_DEFAULT) answers with the executable's PLT entry when a position-dependent
 * executable takes the function's address (its canonical address: python3 does for malloc);
 * calling that entry goes through the executable's own, patched, GOT slot, back into the hook.
 * So a defined symbol is looked for in each object's GNU hash table, in load order (the global
 * scope's order for the objects loaded at start), the agent left out. */

static uint32_t gnu_hash(const char* s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

struct lookup_ctx {
    const char* name;
    uint32_t hash;
    void* found;
};

static int lookup_object(struct dl_phdr_info* info, size_t size, void* arg) {
    (void)size;
    struct lookup_ctx* c = arg;
    const uint64_t self = (uint64_t)(uintptr_t)&lookup_object;
    const ElfW(Dyn)* dyn = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        const uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= a && self < a + ph->p_memsz) return 0; /* the agent */
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn)*)a;
    }
    if (!dyn || (info->dlpi_name && !strcmp(info->dlpi_name, "linux-vdso.so.1"))) return 0;
    const ElfW(Sym)* symtab = 0;
    const char* strtab = 0;
    const uint32_t* gh = 0;
    const uint16_t* versym = 0;
    for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
        if (d->d_tag == DT_STRTAB) strtab = (const char*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
        if (d->d_tag == DT_GNU_HASH) gh = (const uint32_t*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
        if (d->d_tag == DT_VERSYM) versym = (const uint16_t*)dyn_addr(d->d_un.d_ptr, info->dlpi_addr);
    }
    if (!symtab || !strtab || !gh) return 0;
    const uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], shift = gh[3];
    if (!nbuckets || !bloom_size) return 0;
    const uint64_t* bloom = (const uint64_t*)(gh + 4);
    const uint32_t* buckets = (const uint32_t*)(bloom + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t h = c->hash;
    const uint64_t word = bloom[(h / 64) % bloom_size];
    const uint64_t mask = (1ull << (h % 64)) | (1ull << ((h >> shift) % 64));
    if ((word & mask) != mask) return 0;
    uint32_t idx = buckets[h % nbuckets];
    if (idx < symoffset) return 0;
    for (;; idx++) {
        const uint32_t h2 = chain[idx - symoffset];
        const ElfW(Sym)* sym = &symtab[idx];
        if ((h | 1) == (h2 | 1) && !strcmp(c->name, strtab + sym->st_name) && sym->st_shndx != SHN_UNDEF &&
            ELF64_ST_TYPE(sym->st_info) == STT_FUNC && !(versym && (versym[idx] & 0x8000))) {
            c->found = (void*)(info->dlpi_addr + sym->st_value);
            return 1;
        }
        if (h2 & 1) return 0;
    }
}

void* pph_scope_lookup(const char* name) {
    struct lookup_ctx c = {name, gnu_hash(name), 0};
    dl_iterate_phdr(lookup_object, &c);
    return c.found;
}
