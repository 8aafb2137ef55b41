// replies.h - result replies, and the failures that become them: an HRESULT naming its call, the debug
// layer's text, and the lost device that ends the process.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "device.h"
#include "server.h"

struct Harness;
struct Tensor;

// One buffer image of a reply with buffers (bound_run.h): its name and where its bytes lie in Reply::data.
struct ImageEntry {
    std::string name;
    uint64_t offset, nbytes;
};

struct Reply {
    std::string status;  // ok, refused, unsupported, error, device_removed
    std::string message;
    std::string hresult;  // device_removed only
    std::vector<uint8_t> data;
    bool with_images = false;       // ok for a request with buffers: "images" instead of "outputs"
    std::vector<ImageEntry> images;

    static Reply make(const char* status, std::string message) {
        Reply r;
        r.status = status;
        r.message = std::move(message);
        return r;
    }
};

// The result frame; `out` (with r.data as its bytes) only for status ok; r.images instead when r.with_images.
void send_reply(const dmlh::Server& server, const std::string& id, const Reply& r, const Tensor* out);

// Text the debug layer left in the D3D12 info queue (DirectML's debug layer reports there too).
std::string info_queue_text(Device& dev, size_t limit = 1500);

// A lost device: the reply to the case being served, then the process ends (exit code 3).
[[noreturn]] void device_lost_exit(Harness& h, const Reply& r);

// A failed HRESULT outside CreateOperator/CompileOperator: device loss or an error naming the call.
Reply failure(Harness& h, HRESULT hr, const std::string& call);
