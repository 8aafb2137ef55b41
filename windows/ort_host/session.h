// session.h - the session the host keeps: one, the last model's. A DML EP session held ~3 GB of lavapipe's
// host-backed memory, so a session is released as soon as another model comes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ort_api.h"
#include "replies.h"
#include "runtime.h"

struct Host;

struct CachedSession {
    std::vector<uint8_t> model;  // the bytes it was created from
    ort::Session* session = nullptr;
};

void release_cached(Runtime& rt, CachedSession& cached);

// True, with the reason, when the device handed to the DML EP is lost.
bool device_lost(Runtime& rt, HRESULT* reason);

// The cached session for these model bytes, created if needed; nullptr with `f` filled when it cannot be.
ort::Session* session_for(Host& host, const std::string& id, const uint8_t* model, size_t len, Failure& f);
