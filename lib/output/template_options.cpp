#include "output/template_options.h"

namespace perfprof::output {

void TemplateOptions::flag(bool on, std::string_view name) {
    if (on) {
        given_.append(name);
        given_ += ' ';
    } else {
        hints_ += '[';
        hints_.append(name);
        hints_ += "] ";
    }
}

void TemplateOptions::value(bool given, std::string_view name, std::string_view value) {
    if (given) {
        given_.append(name);
        given_ += ' ';
        given_.append(value);
        given_ += ' ';
    } else {
        hints_ += '[';
        hints_.append(name);
        hints_ += " .] ";
    }
}

void TemplateOptions::given(std::string_view text) {
    given_.append(text);
    given_ += ' ';
}

void TemplateOptions::attach(const Options& opt) {
    value(!opt.cpus.empty(), "-C", opt.cpus);
    value(!opt.pids.empty(), "-p", opt.pids);
    value(opt.interval_ms != 0, "-i", std::to_string(opt.interval_ms));
}

void TemplateOptions::pages(const Options& opt) {
    value(opt.mmap_pages.has_value(), "-m", opt.mmap_pages ? std::to_string(*opt.mmap_pages) : std::string());
}

}  // namespace perfprof::output
