// harness.h - what main() owns for the whole process and hands to every request.
#pragma once

#include <string>

#include "device.h"
#include "executor.h"
#include "server.h"
#include "timing.h"

struct Harness {
    PhaseTimer timer;     // first: its clock starts when the harness does (--timings)
    dmlh::Server server;  // replies: the real stdout (server.h)
    Device dev;           // options in dev.opt
    CaseHeap heap;        // the descriptor heap every case shares (executor.h)
    CaseBuffers buffers;  // the buffers every case reuses (executor.h)
    std::string case_id;  // the request being served, for a device_removed reply out of any call
};
