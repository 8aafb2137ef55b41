// server.cpp - the request loop and replies the project's Windows programs share (see server.h).
#include "server.h"

#include <cstdlib>

#include "util.h"

namespace dmlh {

void Server::send(const std::string& header, const void* payload, uint64_t payload_len) const {
    if (!write_frame(frames, header, payload, payload_len)) {
        log_line("cannot write to stdout: the runner went away");
        exit(0);
    }
}

void Server::fail(const std::string& message, int code) const {
    send("{\"type\":\"error\",\"message\":" + json_string(message) + "}");
    exit(code);
}

int Server::run(FILE* in) const {
    bool handshaken = false;
    for (;;) {
        Frame frame;
        std::string err;
        const ReadStatus st = read_frame(in, frame, err);
        if (st == ReadStatus::End) return 0;
        if (st == ReadStatus::Broken) {
            log_line("unreadable frame on stdin (%s); the stream cannot be resynchronised, exiting", err.c_str());
            return 2;
        }
        if (st == ReadStatus::BadHeader) {
            log_line("ignoring a frame: %s", err.c_str());
            reply_error("", "malformed request: " + err);
            continue;
        }
        const JValue* type = frame.header.get("type");
        const JValue* idv = frame.header.get("id");
        const bool has_id = idv && idv->c_str();
        const std::string id = has_id ? idv->str : std::string();
        const std::string kind = type && type->c_str() ? type->str : std::string();
        if (kind == "hello") {
            const JValue* version = frame.header.get("protocol");
            if (!version || !version->is_int || version->inum != kProtocolVersion)
                fail(strf("%s speaks protocol %d only", program.c_str(), kProtocolVersion), 2);
            if (!init_error.empty()) fail(init_error, 2);
            hello();
            handshaken = true;
        } else if (kind == request_type) {
            if (!has_id) {
                reply_error("", request_type + " request without a string 'id'");
            } else if (!handshaken) {
                reply_error(id, request_type + " request before the hello handshake");
            } else {
                serve(id, frame);
            }
        } else if (kind == "bye") {
            return 0;
        } else if (other && other(kind, id)) {
            continue;
        } else if (has_id) {
            reply_error(id, "unknown message type '" + kind + "'");
        } else {
            log_line("ignoring a message of type '%s'", kind.c_str());
        }
    }
}

}  // namespace dmlh
