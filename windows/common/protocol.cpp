// protocol.cpp - JSON reader/writer and frame I/O for the Windows programs (see protocol.h).
// The JSON reader follows examples/c_harness/dmlc_harness.c: recursive descent, depth-limited,
// numbers copied out before strtod/strtoll so they cannot run past the header.
#include "protocol.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if defined(_WIN32)
#include <fcntl.h>
#include <io.h>
#include <windows.h>
#else
#include <unistd.h>
#endif

namespace dmlh {

const JValue* JValue::get(const char* key) const {
    if (type != Object) return nullptr;
    for (const auto& m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

namespace {

struct Parser {
    const char* p;
    const char* end;
    std::string error;

    bool fail(const char* what) {
        if (error.empty()) error = what;
        return false;
    }

    void skip_ws() {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    }

    static void put_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }

    bool parse_string(std::string& out) {
        p++;  // opening quote
        while (p < end && *p != '"') {
            char c = *p++;
            if ((unsigned char)c < 0x20) return fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p >= end) return fail("unterminated escape");
            c = *p++;
            switch (c) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case '"': case '\\': case '/': out += c; break;
            case 'u': {
                unsigned cp = 0;
                for (int i = 0; i < 4; i++) {
                    if (p >= end) return fail("short \\u escape");
                    char h = *p++;
                    int v = (h >= '0' && h <= '9') ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                    if (v < 0) return fail("bad \\u escape");
                    cp = cp * 16 + unsigned(v);
                }
                put_utf8(out, cp);  // surrogate pairs are not combined: the runner sends ASCII only
                break;
            }
            default: return fail("unknown escape");
            }
        }
        if (p >= end) return fail("unterminated string");
        p++;  // closing quote
        return true;
    }

    bool parse_value(JValue& v, int depth) {
        skip_ws();
        if (p >= end) return fail("unexpected end of JSON");
        if (depth > 64) return fail("JSON nested too deeply");
        char c = *p;
        if (c == '{' || c == '[') {
            bool object = c == '{';
            v.type = object ? JValue::Object : JValue::Array;
            p++;
            skip_ws();
            if (p < end && *p == (object ? '}' : ']')) {
                p++;
                return true;
            }
            for (;;) {
                skip_ws();
                std::string key;
                if (object) {
                    if (p >= end || *p != '"') return fail("object key must be a string");
                    if (!parse_string(key)) return false;
                    skip_ws();
                    if (p >= end || *p++ != ':') return fail("missing ':' in object");
                }
                JValue item;
                if (!parse_value(item, depth + 1)) return false;
                if (object) v.members.emplace_back(std::move(key), std::move(item));
                else v.items.push_back(std::move(item));
                skip_ws();
                if (p < end && *p == ',') {
                    p++;
                    continue;
                }
                if (p < end && *p == (object ? '}' : ']')) {
                    p++;
                    return true;
                }
                return fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.type = JValue::String;
            return parse_string(v.str);
        }
        static const struct { const char* word; JValue::Type type; double value; } words[] = {
            {"true", JValue::Bool, 1}, {"false", JValue::Bool, 0}, {"null", JValue::Null, 0}};
        for (const auto& w : words) {
            size_t len = strlen(w.word);
            if (size_t(end - p) >= len && memcmp(p, w.word, len) == 0) {
                v.type = w.type;
                v.num = w.value;
                p += len;
                return true;
            }
        }
        char text[64];
        size_t len = 0;
        while (p + len < end && len < sizeof text - 1 && strchr("+-0123456789.eE", p[len]) && p[len]) len++;
        if (len == 0) return fail("unexpected character");
        memcpy(text, p, len);
        text[len] = '\0';
        char* stop = nullptr;
        v.type = JValue::Number;
        v.num = strtod(text, &stop);
        if (stop != text + len) return fail("malformed number");
        p += len;
        if (!strpbrk(text, ".eE")) {
            errno = 0;
            long long i = strtoll(text, nullptr, 10);
            if (errno != ERANGE) {
                v.is_int = true;
                v.inum = i;
            }
        }
        return true;
    }
};

bool read_exact(FILE* in, void* dst, size_t n) {
    return n == 0 || fread(dst, 1, n, in) == n;
}

void put_le(unsigned char* p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t get_le(const unsigned char* p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

}  // namespace

bool json_parse(const char* text, size_t len, JValue& out, std::string& error) {
    Parser ps{text, text + len, {}};
    out = JValue();
    bool ok = ps.parse_value(out, 0);
    if (ok) {
        ps.skip_ws();
        if (ps.p != ps.end) ok = ps.fail("trailing characters after the JSON value");
    }
    if (!ok) error = ps.error + " at byte " + std::to_string(ps.p - text);
    return ok;
}

std::string json_string(const std::string& text) {
    // ASCII out: control characters and every non-ASCII code point (UTF-8 in, e.g. an adapter name
    // with a trademark sign) become \u escapes, as UTF-16 surrogate pairs above U+FFFF. A byte that
    // is not part of valid UTF-8 is written as the code point of the same value.
    std::string out = "\"";
    char buf[16];
    for (size_t i = 0; i < text.size();) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
            i++;
            continue;
        }
        if (c >= 0x20 && c < 0x7F) {
            out += char(c);
            i++;
            continue;
        }
        unsigned cp = c;
        size_t len = 1;
        if (c >= 0xC2 && c <= 0xF4) {
            size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            unsigned v = c & (0x7F >> need);
            size_t k = 1;
            for (; k < need && i + k < text.size() && ((unsigned char)text[i + k] & 0xC0) == 0x80; k++)
                v = (v << 6) | ((unsigned char)text[i + k] & 0x3F);
            if (k == need && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) {
                cp = v;
                len = need;
            }
        }
        if (cp > 0xFFFF) {
            cp -= 0x10000;
            snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            snprintf(buf, sizeof buf, "\\u%04x", cp);
        }
        out += buf;
        i += len;
    }
    return out + "\"";
}

ReadStatus read_frame(FILE* in, Frame& frame, std::string& error) {
    unsigned char prefix[16];
    size_t got = fread(prefix, 1, sizeof prefix, in);
    if (got == 0) return ReadStatus::End;
    if (got != sizeof prefix) {
        error = "stream ended inside a frame prefix";
        return ReadStatus::Broken;
    }
    if (memcmp(prefix, "DMLC", 4) != 0) {
        error = "bad magic (expected DMLC)";
        return ReadStatus::Broken;
    }
    uint64_t header_len = get_le(prefix + 4, 4), payload_len = get_le(prefix + 8, 8);
    if (header_len == 0 || header_len > kMaxHeaderBytes) {
        error = "header length " + std::to_string(header_len) + " outside 1..16 MiB";
        return ReadStatus::Broken;
    }
    if (payload_len > kMaxPayloadBytes) {
        error = "payload length " + std::to_string(payload_len) + " above 2^36";
        return ReadStatus::Broken;
    }
    std::string text(size_t(header_len), '\0');
    if (!read_exact(in, &text[0], text.size())) {
        error = "stream ended inside a frame header";
        return ReadStatus::Broken;
    }
    try {
        frame.payload.resize(size_t(payload_len));
    } catch (...) {
        error = "cannot allocate a payload of " + std::to_string(payload_len) + " bytes";
        return ReadStatus::Broken;
    }
    if (!read_exact(in, frame.payload.data(), frame.payload.size())) {
        error = "stream ended inside a frame payload";
        return ReadStatus::Broken;
    }
    std::string json_error;
    if (!json_parse(text.data(), text.size(), frame.header, json_error)) {
        error = "header is not valid JSON: " + json_error;
        return ReadStatus::BadHeader;
    }
    if (frame.header.type != JValue::Object) {
        error = "header is not a JSON object";
        return ReadStatus::BadHeader;
    }
    return ReadStatus::Ok;
}

// All of `data` with the operating system's own writes, past the C runtime's buffer (flushed first, should anything
// sit there): a frame goes out in one write where the pipe takes it whole, so the reader never sees a prefix
// without its frame, and under Wine a reply costs one WriteFile instead of one per part and a flush.
static bool write_all(FILE* out, const char* data, size_t size) {
    if (fflush(out) != 0) return false;
#if defined(_WIN32)
    HANDLE handle = reinterpret_cast<HANDLE>(_get_osfhandle(_fileno(out)));
    if (handle == INVALID_HANDLE_VALUE) return false;
    while (size) {
        DWORD chunk = size > (1u << 30) ? (1u << 30) : DWORD(size), written = 0;
        if (!WriteFile(handle, data, chunk, &written, nullptr) || written == 0) return false;
        data += written;
        size -= written;
    }
#else
    while (size) {
        ssize_t written = write(fileno(out), data, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        size -= size_t(written);
    }
#endif
    return true;
}

bool write_frame(FILE* out, const std::string& header, const void* payload, uint64_t payload_len) {
    unsigned char prefix[16];
    memcpy(prefix, "DMLC", 4);
    put_le(prefix + 4, header.size(), 4);
    put_le(prefix + 8, payload_len, 8);
    std::string frame;
    bool whole = true;
    try {
        frame.reserve(sizeof prefix + header.size() + size_t(payload_len));
    } catch (...) {
        whole = false;  // no room for a copy of a very large payload: the prefix and header, then the payload
    }
    frame.append(reinterpret_cast<const char*>(prefix), sizeof prefix);
    frame += header;
    if (whole && payload_len) frame.append(static_cast<const char*>(payload), size_t(payload_len));
    if (!write_all(out, frame.data(), frame.size())) return false;
    return whole || payload_len == 0 || write_all(out, static_cast<const char*>(payload), size_t(payload_len));
}

FILE* claim_stdout_for_frames() {
    fflush(stdout);
    FILE* frames = nullptr;
#if defined(_WIN32)
    _setmode(_fileno(stdin), _O_BINARY);
    _setmode(_fileno(stdout), _O_BINARY);
    int frames_fd = _dup(_fileno(stdout));
    if (frames_fd >= 0 && _dup2(_fileno(stderr), _fileno(stdout)) == 0) {
        frames = _fdopen(frames_fd, "wb");
        SetStdHandle(STD_OUTPUT_HANDLE, GetStdHandle(STD_ERROR_HANDLE));
    }
    if (!frames) frames = stdout;  // could not split: stdout stays the frame stream
    _setmode(_fileno(frames), _O_BINARY);
#else
    int frames_fd = dup(fileno(stdout));
    if (frames_fd >= 0 && dup2(fileno(stderr), fileno(stdout)) >= 0) frames = fdopen(frames_fd, "wb");
    if (!frames) frames = stdout;
#endif
    setvbuf(frames, nullptr, _IOFBF, 1 << 16);
    return frames;
}

}  // namespace dmlh
