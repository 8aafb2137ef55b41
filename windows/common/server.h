// server.h - the serving side that the project's Windows programs share (the DirectML harness and the ONNX
// Runtime host, ../ort_host): the frame stream replies go to, the error frame that ends a process, and the
// request loop of docs/native-harness.md (a hello first, then requests until the end of the stream or "bye").
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "protocol.h"

namespace dmlh {

struct Server {
    FILE* frames = nullptr;    // where replies go: claim_stdout_for_frames()
    std::string program;       // "dml_harness", as in "dml_harness speaks protocol 1 only"
    std::string request_type;  // the one request the program serves: "run", "run_model"
    std::string init_error;    // why the program cannot serve: the hello is answered with it, then exit 2

    std::function<void()> hello;  // sends the hello reply (the protocol version and init_error already checked)
    std::function<void(const std::string& id, Frame& frame)> serve;  // a request, after the handshake
    std::function<void(const std::string& id, const std::string& message)> reply_error;  // a result, status error
    // Optional: a message type of the program's own; true when it answered it. Any other type is an error
    // result when it has an id, and is logged and ignored when it has none.
    std::function<bool(const std::string& type, const std::string& id)> other;

    // One frame out, flushed; a reader that went away ends the process (exit 0, logged).
    void send(const std::string& header, const void* payload = nullptr, uint64_t payload_len = 0) const;
    // An error frame, then exit(code).
    [[noreturn]] void fail(const std::string& message, int code) const;
    // Serves the frames from `in`: 0 at the end of the stream or "bye", 2 when the stream cannot be
    // resynchronised (logged).
    int run(FILE* in) const;
};

}  // namespace dmlh
