#include "flamegraph/svg.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/fd.h"
#include "core/text.h"
#include "perf-prof/error.h"

namespace perfprof::flamegraph {

void append_escaped(std::string& out, std::string_view s) {
    for (size_t i = 0; i < s.size(); i++) {
        const char c = s[i];
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                if (static_cast<unsigned char>(c) >= 0x80) {
                    const size_t n = core::utf8_length(s.substr(i));
                    if (n == 0) {
                        out += '?';
                    } else {
                        out.append(s.substr(i, n));
                        i += n - 1;
                    }
                } else if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                    out += '?';
                } else {
                    out += c;
                }
        }
    }
}

void append_fixed(std::string& out, double v, int decimals, bool keep_zeros) {
    if (!std::isfinite(v)) v = 0;
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (ec != std::errc()) {
        out += '0';
        return;
    }
    std::string_view t(buf, size_t(end - buf));
    // Trailing zeros of the fraction carry nothing and cost bytes in 100k-frame pictures.
    if (!keep_zeros && t.find('.') != std::string_view::npos) {
        while (t.back() == '0') t.remove_suffix(1);
        if (t.back() == '.') t.remove_suffix(1);
    }
    if (t == "-0") t = "0";
    out.append(t);
}

void append_grouped(std::string& out, uint64_t n) {
    const std::string digits = std::to_string(n);
    for (size_t i = 0; i < digits.size(); i++) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
}

void append_uint(std::string& out, uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, size_t(end - buf));
}

void append_int(std::string& out, int64_t v) {
    if (v < 0) out += '-';
    append_uint(out, v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v));
}

void append_attr(std::string& out, std::string_view name, double v) {
    out += ' ';
    out.append(name);
    out += "=\"";
    append_fixed(out, v);
    out += '"';
}

void begin_document(std::string& out, int width, int height, std::string_view css) {
    out += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
    out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"";
    append_int(out, width);
    out += "\" height=\"";
    append_int(out, height);
    out += "\" viewBox=\"0 0 ";
    append_int(out, width);
    out += ' ';
    append_int(out, height);
    out += "\">\n<style type=\"text/css\"><![CDATA[\n";
    out.append(css);
    out += "\n]]></style>\n";
}

void append_script(std::string& out, std::string_view js) {
    out += "<script type=\"text/ecmascript\"><![CDATA[\n";
    out.append(js);
    out += "\n]]></script>\n";
}

void end_document(std::string& out) {
    out += "</svg>\n";
}

void write_file(const std::string& path, std::string_view text) {
    write_file(path, [&](const TextSink& sink) { sink(text); });
}

void write_file(const std::string& path, const std::function<void(const TextSink&)>& produce) {
    if (path.empty() || path == "-") {
        produce([](std::string_view piece) {
            if (std::fwrite(piece.data(), 1, piece.size(), stdout) != piece.size())
                throw Error::sys(errno, "cannot write the picture to stdout");
        });
        if (std::fflush(stdout) != 0) throw Error::sys(errno, "cannot write the picture to stdout");
        return;
    }
    const std::string tmp = path + ".tmp";
    core::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) throw Error::sys(errno, "cannot create '" + path + "'");
    try {
        produce([&](std::string_view piece) {
            if (!core::write_all(fd.get(), piece)) throw Error::sys(errno, "cannot write '" + path + "'");
        });
        if (::close(fd.release()) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
            throw Error::sys(errno, "cannot write '" + path + "'");
    } catch (...) {
        fd.reset();
        ::unlink(tmp.c_str());
        throw;
    }
}

}  // namespace perfprof::flamegraph
