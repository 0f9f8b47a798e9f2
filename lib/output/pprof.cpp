#include "output/pprof.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "core/text.h"
#include "output/proto_writer.h"
#include "perf-prof/error.h"

namespace perfprof::output {

namespace {

// Field numbers of profile.proto (upstream perftools.profiles); field 1 of Mapping, Location
// and Function is the id.
namespace profile {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
                   kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12, kComment = 13,
                   kDefaultSampleType = 14;
}
namespace value_type {
constexpr uint32_t kType = 1, kUnit = 2;
}
namespace sample {
constexpr uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label {
constexpr uint32_t kKey = 1, kStr = 2, kNum = 3;
}
namespace mapping {
constexpr uint32_t kMemoryStart = 2, kMemoryLimit = 3, kFileOffset = 4, kFilename = 5, kBuildId = 6,
                   kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9;
}
namespace location {
constexpr uint32_t kMappingId = 2, kAddress = 3, kLine = 4;
}
namespace line {
constexpr uint32_t kFunctionId = 1, kLine = 2;
}
namespace function {
constexpr uint32_t kName = 2, kSystemName = 3, kFilename = 4, kStartLine = 5;
}

void put(std::string& key, uint64_t v) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

PprofBuilder::PprofBuilder(const std::vector<ValueType>& sample_types, const ValueType& period_type,
                           int64_t period)
    : period_(period) {
    strings_.emplace_back();
    string_ids_.emplace("", 0);
    for (const ValueType& t : sample_types) {
        types_.push_back(string_id(t.type));
        types_.push_back(string_id(t.unit));
    }
    period_type_ = string_id(period_type.type);
    period_unit_ = string_id(period_type.unit);
}

uint64_t PprofBuilder::string_id(std::string_view s) {
    key_.assign(s);
    auto [it, fresh] = string_ids_.try_emplace(key_, strings_.size());
    if (fresh) strings_.push_back(key_);
    return it->second;
}

template <class T, class Make>
uint64_t PprofBuilder::intern(std::unordered_map<std::string, uint64_t>& ids, std::vector<T>& vec,
                              const std::string& key, Make make) {
    auto [it, fresh] = ids.try_emplace(key, vec.size() + 1);
    if (fresh) vec.push_back(make());
    return it->second;
}

uint64_t PprofBuilder::mapping(uint64_t start, uint64_t limit, uint64_t file_offset, std::string_view file,
                               std::string_view build_id, bool has_lines) {
    const Mapping m{start, limit, file_offset, string_id(file), string_id(build_id), has_lines};
    key_.clear();
    for (uint64_t v : {m.start, m.limit, m.file_offset, m.file, m.build_id}) put(key_, v);
    const uint64_t id = intern(mapping_ids_, mappings_, key_, [&] { return m; });
    mappings_[id - 1].has_lines |= has_lines;
    return id;
}

uint64_t PprofBuilder::function(std::string_view name, std::string_view system_name, std::string_view file,
                                int64_t start_line) {
    const Function f{string_id(name), string_id(system_name), string_id(file), start_line};
    key_.clear();
    for (uint64_t v : {f.name, f.system_name, f.file, uint64_t(f.start_line)}) put(key_, v);
    return intern(function_ids_, functions_, key_, [&] { return f; });
}

uint64_t PprofBuilder::location(uint64_t mapping_id, uint64_t address, uint64_t function_id, int64_t line) {
    key_.clear();
    for (uint64_t v : {mapping_id, address, function_id, uint64_t(line)}) put(key_, v);
    return intern(location_ids_, locations_, key_, [&] {
        return Location{mapping_id, address, function_id, line};
    });
}

void PprofBuilder::sample(std::span<const uint64_t> location_ids, std::span<const int64_t> values,
                          std::span<const Label> labels) {
    key_.clear();
    put(key_, uint64_t(location_ids.size()));
    for (uint64_t l : location_ids) put(key_, l);
    for (const Label& l : labels)
        for (uint64_t v : {l.key, l.str, uint64_t(l.num)}) put(key_, v);
    const uint64_t id = intern(sample_ids_, samples_, key_, [&] {
        return Sample{{location_ids.begin(), location_ids.end()},
                      {labels.begin(), labels.end()},
                      std::vector<int64_t>(types_.size() / 2)};
    });
    std::vector<int64_t>& sum = samples_[id - 1].values;
    for (size_t i = 0; i < sum.size() && i < values.size(); ++i) sum[i] += values[i];
}

bool PprofBuilder::program_file(size_t i) const {
    const std::string& f = strings_[mappings_[i].file];
    return !f.empty() && f[0] != '[' && !core::is_shared_object(f);
}

// pprof calls the first mapping the main binary (its "File:" line). Ours is the program file
// (neither a pseudo-file such as "[kernel.kallsyms]" nor a shared library) in the most samples
// (by the first value, once per sample) of the profiled processes, or of all processes when
// those have none (system-wide); without any, the first program file added, else the first
// mapping. The first added was whichever process's chain happened to be symbolized first.
size_t PprofBuilder::main_mapping() const {
    std::vector<int64_t> all(mappings_.size()), main(mappings_.size());
    std::vector<uint64_t> seen;
    bool any_main = false;
    for (const Sample& s : samples_) {
        bool of_main = false;
        for (const Label& l : s.labels)
            of_main |= main_key_ && l.key == main_key_ && !l.str &&
                       std::find(main_nums_.begin(), main_nums_.end(), l.num) != main_nums_.end();
        const int64_t w = s.values.empty() ? 0 : s.values[0];
        seen.clear();
        for (uint64_t loc : s.locations) {
            const uint64_t m = locations_[loc - 1].mapping;
            if (!m || !program_file(m - 1) || std::find(seen.begin(), seen.end(), m) != seen.end()) continue;
            seen.push_back(m);
            all[m - 1] += w;
            if (of_main) {
                main[m - 1] += w;
                any_main |= w > 0;
            }
        }
    }
    const std::vector<int64_t>& weight = any_main ? main : all;
    size_t best = mappings_.size();
    for (size_t i = 0; i < mappings_.size(); ++i)
        if (weight[i] > 0 && (best == mappings_.size() || weight[i] > weight[best])) best = i;
    if (best < mappings_.size()) return best;
    for (size_t i = 0; i < mappings_.size(); ++i)
        if (program_file(i)) return i;
    return 0;
}

std::string PprofBuilder::encode() const {
    // Mapping ids as written: the main binary's and the first one's swapped.
    std::vector<uint64_t> id(mappings_.size() + 1);
    for (size_t i = 0; i < id.size(); ++i) id[i] = i;
    if (!mappings_.empty()) std::swap(id[1], id[main_mapping() + 1]);
    std::vector<Mapping> mappings(mappings_.size());
    for (size_t i = 0; i < mappings_.size(); ++i) mappings[id[i + 1] - 1] = mappings_[i];

    ProtoWriter out, m, sub;
    auto put_value_type = [&](uint32_t field, uint64_t type, uint64_t unit) {
        m.clear();
        m.uint64_nz(value_type::kType, type);
        m.uint64_nz(value_type::kUnit, unit);
        out.message(field, m);
    };
    // Message `field` for each of `records`, with its id (field 1 of Mapping, Location and
    // Function: its position from 1) and what `fill` writes into `m`.
    auto with_ids = [&](uint32_t field, const auto& records, auto fill) {
        for (size_t i = 0; i < records.size(); ++i) {
            m.clear();
            m.uint64(1, i + 1);
            fill(records[i]);
            out.message(field, m);
        }
    };
    for (size_t i = 0; i + 1 < types_.size(); i += 2)
        put_value_type(profile::kSampleType, types_[i], types_[i + 1]);
    for (const Sample& s : samples_) {
        m.clear();
        m.packed_uint64(sample::kLocationId, s.locations);
        m.packed_int64(sample::kValue, s.values);
        for (const Label& l : s.labels) {
            sub.clear();
            sub.uint64_nz(label::kKey, l.key);
            sub.uint64_nz(label::kStr, l.str);
            sub.int64_nz(label::kNum, l.num);
            m.message(sample::kLabel, sub);
        }
        out.message(profile::kSample, m);
    }
    with_ids(profile::kMapping, mappings, [&](const Mapping& p) {
        m.uint64_nz(mapping::kMemoryStart, p.start);
        m.uint64_nz(mapping::kMemoryLimit, p.limit);
        m.uint64_nz(mapping::kFileOffset, p.file_offset);
        m.uint64_nz(mapping::kFilename, p.file);
        m.uint64_nz(mapping::kBuildId, p.build_id);
        // Our own symbols: pprof keeps them and does not look for the binaries.
        m.boolean(mapping::kHasFunctions, true);
        if (p.has_lines) {
            m.boolean(mapping::kHasFilenames, true);
            m.boolean(mapping::kHasLineNumbers, true);
        }
    });
    with_ids(profile::kLocation, locations_, [&](const Location& l) {
        m.uint64_nz(location::kMappingId, id[l.mapping]);
        m.uint64_nz(location::kAddress, l.address);
        sub.clear();
        sub.uint64_nz(line::kFunctionId, l.function);
        sub.int64_nz(line::kLine, l.line);
        m.message(location::kLine, sub);
    });
    with_ids(profile::kFunction, functions_, [&](const Function& f) {
        m.uint64_nz(function::kName, f.name);
        m.uint64_nz(function::kSystemName, f.system_name);
        m.uint64_nz(function::kFilename, f.file);
        m.int64_nz(function::kStartLine, f.start_line);
    });
    for (const std::string& str : strings_) out.bytes(profile::kStringTable, str);
    out.int64_nz(profile::kTimeNanos, time_nanos_);
    out.int64_nz(profile::kDurationNanos, duration_nanos_);
    put_value_type(profile::kPeriodType, period_type_, period_unit_);
    out.int64_nz(profile::kPeriod, period_);
    for (uint64_t c : comments_) out.uint64(profile::kComment, c);
    out.uint64_nz(profile::kDefaultSampleType, default_type_);
    return out.data();
}

std::string gzip(std::string_view data) {
    z_stream z{};
    // windowBits 15 + 16: the gzip wrapper (header and CRC-32 trailer) instead of zlib's.
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw Error("gzip: cannot initialise zlib");
    // In chunks: zlib counts in 32-bit lengths.
    constexpr size_t kChunk = size_t(1) << 30;
    std::string out;
    char buf[1 << 16];
    const char* p = data.data();
    size_t left = data.size();
    int rc = Z_OK;
    do {
        const size_t in = std::min(kChunk, left);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
        z.avail_in = uInt(in);
        const int flush = in == left ? Z_FINISH : Z_NO_FLUSH;
        do {
            z.next_out = reinterpret_cast<Bytef*>(buf);
            z.avail_out = sizeof buf;
            rc = deflate(&z, flush);
            if (rc == Z_STREAM_ERROR) break;
            out.append(buf, sizeof buf - z.avail_out);
        } while (z.avail_out == 0);
        p += in;
        left -= in;
    } while (left > 0 && rc != Z_STREAM_ERROR);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) throw Error("gzip: compression failed");
    return out;
}

}  // namespace perfprof::output
