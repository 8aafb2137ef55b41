// timing.h - per-request phase times of the host (--timings FILE), for benchmarks/bench_directml.py --ep: one JSON
// line per request, microseconds from QueryPerformanceCounter, and (--ep dml) the GPU's own time between timestamps
// written on the EP's queue just before and just after session creation and the run. Off unless asked for; replies
// are the same either way (the timestamps are command lists of their own on the queue, touching no tensor).
#pragma once

#include <cstdio>
#include <string>

#include "d3d12_device.h"

enum HostPhase {
    kHostWait,     // since the previous reply: the runner's side and reading this request
    kHostDecode,   // the request's model and tensors located
    kHostSession,  // the session: created (and, for a graph the EP refused, created again verbose), or the cached one
    kHostInputs,   // input tensors wrapped for ONNX Runtime
    kHostRun,      // OrtApi::Run (the EP's work submitted and waited for, outputs copied to the CPU)
    kHostOutputs,  // outputs checked and copied into the reply
    kHostReply,    // the reply frame written
    kHostPhaseCount
};

struct HostTimer {
    FILE* file = nullptr;
    double ticks_per_us = 1;
    LONGLONG origin = 0, last = 0, request_start = 0;
    long long origin_unix_us = 0;
    double us[kHostPhaseCount] = {};
    bool session_created = false;
    std::string status;
    // GPU timestamps: slot 0/1 around session creation, 2/3 around the run; one small command list per slot.
    dmlh::DmlDevice* device = nullptr;
    ID3D12QueryHeap* queries = nullptr;
    ID3D12Resource* readback = nullptr;
    ID3D12CommandAllocator* allocator = nullptr;
    ID3D12GraphicsCommandList* marks[4] = {};
    ID3D12Fence* fence = nullptr;
    UINT64 fence_value = 0, frequency = 0;
    HANDLE event = nullptr;
    bool written[4] = {};

    HostTimer();
    void open(const std::string& path_pattern, const std::string& start_error, dmlh::DmlDevice* dml_device);
    void lap(HostPhase p);
    void begin_request();
    void end_request(const std::string& id);
    // A timestamp on the EP's queue (slots: 0 before session creation, 1 after, 2 before the run, 3 after).
    void gpu_mark(int slot);
};

extern HostTimer g_host_timer;
