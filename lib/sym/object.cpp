// One ELF object's symbols (SPEC §5.4): header facts at open, the symbol table on first use.
//
// Loading is kept lean because `--symbols` on a 100 MB library must finish in a few ms: only the
// section headers, the symbol tables and their string tables are read (never DWARF), with pread
// straight into their final buffers; each string table is kept whole as one block of the string
// pool and symbols point into it (no per-symbol allocation); the table is sorted once; names are
// demangled on first display.
//
// Sources (§5.4.3): <debug root>/.build-id/XX/YYYY.debug instead of the binary when it yields
// symbols; else the binary (every SHT_SYMTAB and SHT_DYNSYM, plus .gnu_debugdata, decompressed
// with a 256 MiB cap); if that yields no .symtab, the .gnu_debuglink file next to the binary, in
// its .debug/ folder or under the debug root; else the debug file of a debuginfod server
// (sym/debuginfod.h) when DEBUGINFOD_URLS is set. A debug file is rejected when its build-id
// differs from the binary's (used instead of the debuglink CRC, which would mean reading the whole file).
//
// Thread safety: loading is guarded by a once_flag and demangled names by a mutex, so one Object
// may be shared between threads.
//
// Duplicates (same start): the table keeps one entry per (start, name); among entries with the
// same start, find() returns the preferred one: a function (FUNC/IFUNC) over other types, then
// the larger size, then the one met first (.symtab before .dynsym, then MiniDebugInfo).
#include "sym/object.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sym/debuginfod.h"
#include "sym/elf_file.h"
#include "sym/symbol_loader.h"
#include "unwind/cfi_table.h"

namespace perfprof::sym {

namespace {

class ElfObject final : public Object {
public:
    ElfObject(std::string path, std::string open_path, std::string debug_root)
        : open_path_(std::move(open_path)) {
        path_ = std::move(path);
        debug_root_ = std::move(debug_root);
        ElfFile f = ElfFile::open(open_path_, &st_);
        if (f) read_header(f.get());
    }
    ElfObject(std::string name, std::string image, bool) {
        path_ = std::move(name);
        image_ = ElfFile::memory(std::move(image));
        if (image_) read_header(image_.get());
        if (type_ == ObjectType::Unknown) image_ = {};
    }

    std::string share_key() const override {
        if (type_ == ObjectType::Unknown) return {};
        if (!build_id_.empty()) return "b:" + build_id_;
        if (!image_ && st_.st_ino)
            return "i:" + std::to_string(st_.st_dev) + ":" + std::to_string(st_.st_ino) + ":" +
                   std::to_string(st_.st_mtim.tv_sec) + "." + std::to_string(st_.st_mtim.tv_nsec);
        return "p:" + path_;
    }

    const Symbol* find(uint64_t addr) override {
        load();
        // First entry with start > addr, then back to the first of the run with the greatest
        // start <= addr (the preferred duplicate).
        auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                                   [](uint64_t a, const SymbolEntry& e) { return a < e.sym.start; });
        if (it == syms_.begin()) return nullptr;
        --it;
        uint64_t start = it->sym.start;
        while (it != syms_.begin() && std::prev(it)->sym.start == start) --it;
        const Symbol& s = it->sym;
        if (addr - s.start < s.size || addr == s.start) return &s;
        return nullptr;
    }

    const std::string& name(const Symbol& s) override {
        std::lock_guard lk(names_mu_);
        // A symbol of this table: its slot by index (no hashing); any other: by address.
        auto* e = reinterpret_cast<const SymbolEntry*>(&s);
        if (!syms_.empty() && std::less_equal<>()(syms_.data(), e) &&
            std::less<>()(e, syms_.data() + syms_.size())) {
            if (name_slot_.empty()) name_slot_.resize(syms_.size());
            uint32_t& slot = name_slot_[static_cast<size_t>(e - syms_.data())];
            if (slot == 0) {
                names_.push_back(demangle(s.name));
                slot = static_cast<uint32_t>(names_.size());
            }
            return names_[slot - 1];
        }
        auto [it, fresh] = foreign_.try_emplace(&s);
        if (fresh) it->second = demangle(s.name ? s.name : "");
        return it->second;
    }

    uint64_t file_offset(std::string_view raw) override {
        load();
        if (raw.empty() || type_ == ObjectType::Unknown) return 0;
        const SymbolEntry* best = nullptr;
        for (const SymbolEntry& e : syms_)
            if (e.func && (!best || e.seq < best->seq) && raw == e.sym.name) best = &e;
        if (!best) return 0;
        return best->sym.start - (text_addr_ - text_offset_);
    }

    bool stripped() override {
        load();
        return stripped_;
    }

    size_t symbol_count() override {
        load();
        return syms_.size();
    }

    size_t memory_bytes() const override {
        size_t pool = 0;
        for (const Block& b : pool_) pool += b.size();
        return sizeof(*this) + pool + syms_.capacity() * sizeof(SymbolEntry) + image_.image.capacity() +
               name_slot_.capacity() * sizeof(uint32_t) + names_.size() * (sizeof(std::string) + 32) +
               cfi_.memory_bytes();
    }

private:
    void read_header(Elf* elf) {
        GElf_Ehdr eh;
        if (!gelf_getehdr(elf, &eh)) return;
        if (eh.e_type == ET_EXEC)
            type_ = ObjectType::Exec;
        else if (eh.e_type == ET_DYN)
            type_ = ObjectType::Dyn;
        else
            return;
        Section text;
        if (find_section(elf, ".text", &text)) {
            text_addr_ = text.sh.sh_addr;
            text_offset_ = text.sh.sh_offset;
        }
        build_id_ = read_build_id(elf);
    }

    void load() {
        std::call_once(loaded_, [this] {
            do_load();
            done_.store(true, std::memory_order_release);
        });
    }

public:
    bool loaded() const override { return done_.load(std::memory_order_acquire); }

    unwind::CfiTable& cfi() override {
        std::call_once(cfi_once_, [this] { build_cfi(); });
        return cfi_;
    }

private:
    void do_load() {
        if (type_ == ObjectType::Unknown) return;
        SymbolLoader ld{pool_, syms_};
        if (image_) {
            ld.load(image_.get(), -1, image_.image.size(), 0);  // the image stays for cfi()
        } else {
            load_file(ld);
        }
        stripped_ = ld.symtab_syms == 0;
        finish();
    }

    // A debug file's symbols, if it is an ELF of the same build (when both have a build-id).
    bool try_debug_file(SymbolLoader& ld, const std::string& file) {
        if (file == open_path_ || file == path_) return false;
        ElfFile d = ElfFile::open(file);
        if (!d) return false;
        if (!build_id_.empty()) {
            std::string id = read_build_id(d.get());
            if (!id.empty() && id != build_id_) return false;
        }
        size_t pool_size = ld.pool.size(), nsyms = ld.syms.size();
        if (ld.load(d.get(), d.fd.get(), d.file_size, 0) > 0) return true;
        ld.pool.resize(pool_size);
        ld.syms.erase(ld.syms.begin() + static_cast<ptrdiff_t>(nsyms), ld.syms.end());
        return false;
    }

    void load_file(SymbolLoader& ld) {
        std::vector<std::string> debug = debug_files(nullptr);
        // §5.4.3 step 1: the separate debug file by build-id, instead of the binary.
        if (!debug.empty() && try_debug_file(ld, debug.front())) return;
        // The file changed since it was opened: its symbols would not match what was mapped.
        ElfFile f = open_self();
        if (!f) return;
        ld.load(f.get(), f.fd.get(), f.file_size, 0);
        if (ld.symtab_syms > 0) return;
        // Only the dynamic table, or none: .gnu_debuglink next to the file, in its .debug/,
        // and under the debug root; then the debuginfod servers.
        debug = debug_files(f.get());
        for (size_t i = build_id_.size() > 2 ? 1 : 0; i < debug.size(); i++)
            if (try_debug_file(ld, debug[i])) return;
        std::string remote = Debuginfod::process().debug_file(build_id_, path_);
        if (!remote.empty() && try_debug_file(ld, remote)) remote_debug_ = std::move(remote);
    }

    // The binary's .eh_frame and .debug_frame, then the .debug_frame of its debug file (by
    // build-id, else by debuglink) for what they leave uncovered.
    void build_cfi() {
        if (type_ == ObjectType::Unknown) return;
        load();  // which finds the debug file a debuginfod server may hold
        std::deque<std::string> bytes;
        std::vector<unwind::FrameSection> secs;
        auto add = [&](Elf* elf, const char* name, unwind::FrameSection::Kind kind) {
            Section sec;
            if (!find_section(elf, name, &sec) || sec.sh.sh_type == SHT_NOBITS) return false;
            // Debian's debug files compress their DWARF sections (SHF_COMPRESSED).
            if ((sec.sh.sh_flags & SHF_COMPRESSED) && elf_compress(sec.scn, 0, 0) < 0) return false;
            Elf_Data* d = elf_getdata(sec.scn, nullptr);
            if (!d || !d->d_buf || d->d_size == 0) return false;
            bytes.emplace_back(static_cast<const char*>(d->d_buf), d->d_size);
            secs.push_back(
                {kind, reinterpret_cast<const uint8_t*>(bytes.back().data()), d->d_size, sec.sh.sh_addr});
            return true;
        };
        auto add_both = [&](Elf* elf) {
            add(elf, ".eh_frame", unwind::FrameSection::EhFrame);
            add(elf, ".debug_frame", unwind::FrameSection::DebugFrame);
        };
        if (image_) {
            add_both(image_.get());
        } else {
            ElfFile f = open_self();
            if (!f) return;
            add_both(f.get());
            for (const std::string& file : debug_files(f.get())) {
                ElfFile d = ElfFile::open(file);
                if (!d || (!build_id_.empty() && read_build_id(d.get()) != build_id_)) continue;
                if (add(d.get(), ".debug_frame", unwind::FrameSection::DebugFrame)) break;
            }
        }
        cfi_ = unwind::CfiTable::build(secs);
    }

    // The binary as mapped: through open_path_, else the path as it is (a process that has
    // exited since), if it is still the same file.
    ElfFile open_self() const {
        struct stat st;
        ElfFile f = ElfFile::open(open_path_, &st);
        if (!f && open_path_ != path_) f = ElfFile::open(path_, &st);
        if (!f || st.st_dev != st_.st_dev || st.st_ino != st_.st_ino) return {};
        return f;
    }

    // Where a separate debug file of this object may be, in the order tried: by build-id under
    // the debug root, then the .gnu_debuglink name next to the file, in its .debug/ folder and
    // under the debug root.
    std::vector<std::string> debug_files(Elf* binary) const {
        std::vector<std::string> out;
        const std::string& root = debug_root_;
        if (build_id_.size() > 2) {
            std::string by_id = root;
            by_id += "/.build-id/";
            by_id.append(build_id_, 0, 2);
            by_id += '/';
            by_id.append(build_id_, 2);
            by_id += ".debug";
            out.push_back(std::move(by_id));
        }
        const std::string link = binary ? debuglink(binary) : std::string();
        if (!link.empty()) {
            const std::string dir = path_.substr(0, path_.rfind('/') + 1);
            const std::string odir = open_path_.substr(0, open_path_.rfind('/') + 1);
            for (const std::string& c : {odir + link, std::string(odir).append(".debug/").append(link),
                                         std::string(root).append(dir).append(link)})
                out.push_back(c);
        }
        if (!remote_debug_.empty()) out.push_back(remote_debug_);
        return out;
    }

    void finish() {
        std::sort(syms_.begin(), syms_.end(), [](const SymbolEntry& a, const SymbolEntry& b) {
            if (a.sym.start != b.sym.start) return a.sym.start < b.sym.start;
            if (a.func != b.func) return a.func;
            if (a.sym.size != b.sym.size) return a.sym.size > b.sym.size;
            return a.seq < b.seq;
        });
        // Drop repeats of (start, name), e.g. a function in both .symtab and .dynsym.
        size_t out = 0, run = 0;  // run: first entry of the current same-start run
        for (const SymbolEntry& e : syms_) {
            if (out > 0 && syms_[out - 1].sym.start == e.sym.start) {
                bool dup = false;
                for (size_t j = run; j < out && !dup; ++j)
                    dup = std::strcmp(syms_[j].sym.name, e.sym.name) == 0;
                if (dup) continue;
            } else {
                run = out;
            }
            syms_[out++] = e;
        }
        syms_.erase(syms_.begin() + static_cast<ptrdiff_t>(out), syms_.end());
    }

    std::string open_path_;
    struct stat st_ {};
    std::once_flag cfi_once_;
    unwind::CfiTable cfi_;
    ElfFile image_;  // object_from_image only, until loaded
    std::once_flag loaded_;
    std::atomic<bool> done_{false};
    bool stripped_ = true;      // no .symtab anywhere (set by load)
    std::string remote_debug_;  // the debug file a debuginfod server gave (set by load)
    std::vector<Block> pool_;
    SymbolEntries syms_;
    std::mutex names_mu_;
    std::vector<uint32_t> name_slot_;  // per entry: 1 + index in names_, 0 = not demangled yet
    std::deque<std::string> names_;    // a deque: references handed out stay valid
    std::unordered_map<const Symbol*, std::string> foreign_;
};

}  // namespace

std::shared_ptr<Object> get_object(const std::string& path, const std::string& open_path,
                                   const std::string& debug_root) {
    return std::make_shared<ElfObject>(path, open_path.empty() ? path : open_path, debug_root);
}

std::shared_ptr<Object> object_from_image(const std::string& name, std::string image) {
    // Not shared through a cache by build-id: the image is this process's own copy.
    return std::make_shared<ElfObject>(name, std::move(image), true);
}

}  // namespace perfprof::sym
