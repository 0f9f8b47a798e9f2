// pprof's profile.proto (package perftools.profiles; ANCHORS.md §7.3), built in memory and
// encoded with our own ProtoWriter. Strings, mappings, functions and locations are interned:
// each distinct one gets one id (ids count from 1, string 0 is ""), and samples with the same
// locations and labels are summed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace perfprof::output {

class PprofBuilder {
public:
    struct ValueType {
        std::string type, unit;  // e.g. "cpu", "nanoseconds"
    };
    struct Label {
        uint64_t key = 0, str = 0;  // string ids (str 0: a numeric label)
        int64_t num = 0;
    };

    // Every sample carries one value per sample type, in this order.
    PprofBuilder(const std::vector<ValueType>& sample_types, const ValueType& period_type, int64_t period);

    uint64_t string_id(std::string_view s);
    // A mapping, by all of its fields; `has_lines` also marks an existing one.
    uint64_t mapping(uint64_t start, uint64_t limit, uint64_t file_offset, std::string_view file,
                     std::string_view build_id, bool has_lines);
    uint64_t function(std::string_view name, std::string_view system_name, std::string_view file,
                      int64_t start_line);
    // A location holding one line of one function (line 0: unknown); mapping 0 = none.
    uint64_t location(uint64_t mapping_id, uint64_t address, uint64_t function_id, int64_t line);
    // Adds `values` (one per sample type) to the sample of these locations (leaf first) and labels.
    void sample(std::span<const uint64_t> location_ids, std::span<const int64_t> values,
                std::span<const Label> labels);

    void set_time(int64_t time_nanos, int64_t duration_nanos) {
        time_nanos_ = time_nanos;
        duration_nanos_ = duration_nanos;
    }
    // A comment line (pprof shows it with -comments) and the sample type pprof shows first.
    void comment(std::string_view text) { comments_.push_back(string_id(text)); }
    void default_sample_type(std::string_view type) { default_type_ = string_id(type); }
    size_t sample_types() const { return types_.size() / 2; }
    size_t samples() const { return samples_.size(); }

    // The processes profiled: the samples whose numeric label `key` is one of `nums` (pid).
    // Their program file is the main binary.
    void main_processes(uint64_t key, std::vector<int64_t> nums) {
        main_key_ = key;
        main_nums_ = std::move(nums);
    }
    // The Profile message (not compressed). The first mapping written is the main binary's
    // (pprof's "File:"): see main_mapping().
    std::string encode() const;

private:
    struct Mapping {
        uint64_t start, limit, file_offset, file, build_id;
        bool has_lines;
    };
    struct Function {
        uint64_t name, system_name, file;
        int64_t start_line;
    };
    struct Location {
        uint64_t mapping, address, function;
        int64_t line;
    };
    struct Sample {
        std::vector<uint64_t> locations;
        std::vector<Label> labels;
        std::vector<int64_t> values;
    };
    size_t main_mapping() const;
    bool program_file(size_t mapping_index) const;
    // The id of the record `key` stands for; `make` appends it to `vec` when new.
    template <class T, class Make>
    static uint64_t intern(std::unordered_map<std::string, uint64_t>& ids, std::vector<T>& vec,
                           const std::string& key, Make make);

    std::vector<uint64_t> types_;  // sample_type as (type, unit) string id pairs
    uint64_t period_type_ = 0, period_unit_ = 0;
    int64_t period_ = 0, time_nanos_ = 0, duration_nanos_ = 0;
    std::vector<uint64_t> comments_;
    uint64_t default_type_ = 0;

    std::vector<std::string> strings_;
    std::unordered_map<std::string, uint64_t> string_ids_;
    std::vector<Mapping> mappings_;
    std::vector<Function> functions_;
    std::vector<Location> locations_;
    std::vector<Sample> samples_;
    std::unordered_map<std::string, uint64_t> mapping_ids_, function_ids_, location_ids_, sample_ids_;
    std::string key_;  // scratch for the keys above
    uint64_t main_key_ = 0;
    std::vector<int64_t> main_nums_;
};

// `data` as a gzip file (RFC 1952, zlib's deflate at the default level). Throws Error on failure.
std::string gzip(std::string_view data);

}  // namespace perfprof::output
