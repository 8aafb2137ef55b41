// replies.cpp - result replies and failures (see replies.h).
#include "replies.h"

#include <cstdio>
#include <cstdlib>

#include "descriptions.h"
#include "harness.h"
#include "protocol.h"

using dmlh::hr_text;
using dmlh::is_device_loss;
using dmlh::log_line;
using dmlh::strf;

void send_reply(const dmlh::Server& server, const std::string& id, const Reply& r, const Tensor* out) {
    std::string h = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":" +
                    dmlh::json_string(r.status);
    if (r.status == "ok" && r.with_images) {
        h += ",\"images\":[";
        for (size_t i = 0; i < r.images.size(); i++)
            h += strf("%s{\"name\":%s,\"offset\":%llu,\"nbytes\":%llu}", i ? "," : "",
                      dmlh::json_string(r.images[i].name).c_str(), (unsigned long long)r.images[i].offset,
                      (unsigned long long)r.images[i].nbytes);
        h += "]}";
        server.send(h, r.data.data(), r.data.size());
        return;
    }
    if (r.status == "ok" && out) {
        h += strf(",\"outputs\":[{\"name\":%s,\"DataType\":%d,\"Sizes\":[", dmlh::json_string(out->name).c_str(),
                  out->dtype);
        for (size_t i = 0; i < out->sizes.size(); i++) h += strf("%s%u", i ? "," : "", out->sizes[i]);
        h += strf("],\"offset\":0,\"nbytes\":%llu}]}", (unsigned long long)r.data.size());
        server.send(h, r.data.data(), r.data.size());
        return;
    }
    h += ",\"message\":" + dmlh::json_string(r.message);
    if (!r.hresult.empty()) h += ",\"hresult\":" + dmlh::json_string(r.hresult);
    h += "}";
    server.send(h);
}

std::string info_queue_text(Device& dev, size_t limit) {
    if (!dev.info_queue) return std::string();
    std::string text;
    UINT64 n = dev.info_queue->GetNumStoredMessages();
    for (UINT64 i = 0; i < n && text.size() < limit; i++) {
        SIZE_T len = 0;
        if (FAILED(dev.info_queue->GetMessage(i, nullptr, &len)) || !len) continue;
        std::vector<unsigned char> buf(len);
        auto* msg = reinterpret_cast<D3D12_MESSAGE*>(buf.data());
        if (SUCCEEDED(dev.info_queue->GetMessage(i, msg, &len)) && msg->pDescription)
            text += std::string(text.empty() ? "" : " | ") + msg->pDescription;
    }
    dev.info_queue->ClearStoredMessages();
    if (text.size() > limit) text = text.substr(0, limit) + "...";
    return text;
}

// Reply, flush and leave at once (the protocol's device_removed). Nothing is released first: resources the
// GPU may still be using would be freed under it, and on vkd3d/lavapipe that teardown crashes (SIGSEGV)
// before the reply would have gone out.
void device_lost_exit(Harness& h, const Reply& r) {
    send_reply(h.server, h.case_id, r, nullptr);
    fflush(h.server.frames);
    log_line("%s: device removed (%s); exiting so that the runner starts a fresh harness", h.case_id.c_str(),
             r.message.c_str());
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 3);
    _exit(3);
}

Reply failure(Harness& h, HRESULT hr, const std::string& call) {
    Device& dev = h.dev;
    HRESULT reason = dev.d3d->GetDeviceRemovedReason();
    if (is_device_loss(hr) || FAILED(reason)) {
        HRESULT code = FAILED(reason) ? reason : hr;
        Reply r = Reply::make("device_removed", call + " returned " + hr_text(hr) +
                                                    "; ID3D12Device::GetDeviceRemovedReason: " + hr_text(reason));
        r.hresult = strf("0x%08lX", (unsigned long)code);
        device_lost_exit(h, r);
    }
    std::string dbg = info_queue_text(dev);
    return Reply::make("error", call + ": " + hr_text(hr) + (dbg.empty() ? "" : "; debug layer: " + dbg));
}
