// protocol.h - the frame protocol of docs/native-harness.md: a minimal JSON reader, frame I/O and a
// JSON writer for replies. No DirectML dependencies (it builds on any C++17 compiler; the stdout split uses
// the C runtime's descriptor calls, io.h on Windows and unistd.h elsewhere).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace dmlh {

constexpr int kProtocolVersion = 1;
constexpr uint32_t kMaxHeaderBytes = 16u * 1024u * 1024u;
constexpr uint64_t kMaxPayloadBytes = uint64_t(1) << 36;

// ---------------------------------------------------------------------------------------------
// JSON values: enough for what the runner sends (objects, arrays, strings, numbers, literals).
// ---------------------------------------------------------------------------------------------
struct JValue {
    enum Type { Null, Bool, Number, String, Array, Object } type = Null;
    double num = 0;         // Number, Bool
    bool is_int = false;    // Number written without fraction/exponent and within int64
    long long inum = 0;     // exact value when is_int
    std::string str;        // String
    std::vector<JValue> items;                            // Array
    std::vector<std::pair<std::string, JValue>> members;  // Object, in document order

    const JValue* get(const char* key) const;  // member of an object, or nullptr
    const char* c_str() const { return type == String ? str.c_str() : nullptr; }
};

// Parses exactly one JSON value spanning the whole text; on failure returns false and says where.
bool json_parse(const char* text, size_t len, JValue& out, std::string& error);

// ---------------------------------------------------------------------------------------------
// JSON writing (replies are ASCII: everything else is \u-escaped).
// ---------------------------------------------------------------------------------------------
std::string json_string(const std::string& text);

// ---------------------------------------------------------------------------------------------
// Frames: "DMLC", uint32 header length, uint64 payload length (little-endian), JSON, payload.
// ---------------------------------------------------------------------------------------------
struct Frame {
    JValue header;
    std::vector<uint8_t> payload;
};

enum class ReadStatus {
    Ok,          // a frame with a JSON object header
    End,         // clean end of stream before a frame
    Broken,      // the stream cannot be trusted any more (bad magic, short read, absurd lengths)
    BadHeader,   // the frame was delimited correctly but its header is not a JSON object
};

ReadStatus read_frame(FILE* in, Frame& frame, std::string& error);

// Writes one frame in one piece (the operating system's write, past the C runtime's buffer); returns false
// when the reader went away.
bool write_frame(FILE* out, const std::string& header, const void* payload, uint64_t payload_len);

// stdout carries frames only: moves the real stdout to a private descriptor and returns it as the frame stream,
// pointing descriptor 1 (and, on Windows, STD_OUTPUT_HANDLE) at stderr, so that text a library prints can never
// corrupt the stream. stdin and the frame stream are switched to binary mode.
FILE* claim_stdout_for_frames();

}  // namespace dmlh
