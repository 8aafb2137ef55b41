// timing.h - per-request phase times (--timings FILE), for benchmarks/bench_directml.py. One JSON line per
// request, microseconds from QueryPerformanceCounter, plus the GPU's own timestamps around the
// initializer, the upload copies, the dispatch and the readback copy. Off unless asked for; the
// replies are the same either way (the timestamp queries touch no tensor).
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "d3d12_device.h"
#include "util.h"

enum Phase {
    kWait,         // since the previous reply: the runner's side and reading this request
    kDecode,       // request -> tensor and operator descriptions
    kCreate,       // IDMLDevice::CreateOperator
    kCompile,      // IDMLDevice::CompileOperator
    kInitializer,  // IDMLDevice::CreateOperatorInitializer + binding properties
    kHeap,         // the descriptor heap: made after the handshake (counted in the first request), grown at a
                   // case that needs more, or made for every case with --heap-per-case
    kResources,    // buffers, binding table
    kUpload,       // inputs and poison into the upload buffer (CPU)
    kInitialize,   // initializer recorded, submitted and waited for
    kBind,         // binding table reset and bound for the operator
    kDispatch,     // upload copies, dispatch, readback copy recorded, submitted and waited for
    kReadback,     // output out of the readback buffer (CPU)
    kRelease,      // the case's objects released (its operator, initializer, binding tables; buffers per case)
    kReply,        // the reply frame written
    kPhaseCount
};
// GPU timestamps written per request: initializer before/after (with the zeroing of its temporary and persistent
// resources); before the upload copies, after them, after the dispatch, after the readback copy.
enum GpuMark { kGpuInitBegin, kGpuInitEnd, kGpuBegin, kGpuUploaded, kGpuDispatched, kGpuReadBack, kGpuMarks };

using dmlh::qpc_now;  // QueryPerformanceCounter's ticks (common/util.h)

struct PhaseTimer {
    FILE* file = nullptr;
    double ticks_per_us = 1;
    LONGLONG origin = 0;  // construction: the harness's first object, made as main() begins
    long long origin_unix_us = 0;
    LONGLONG last = 0;
    LONGLONG request_start = 0;  // when the request being served had been read
    double us[kPhaseCount] = {};
    std::string op, status;
    // Timestamp queries on the device's queue; created on first use and never released (they live as
    // long as the device, which is released only by process exit).
    ID3D12QueryHeap* queries = nullptr;
    ID3D12Resource* query_readback = nullptr;
    UINT64 gpu_frequency = 0;
    bool gpu_written[kGpuMarks] = {};
    double startup_heap_us = 0;  // the heap made after the handshake: added to the first request's heap phase
    bool first_written = false;

    PhaseTimer();
    double since_origin_us(LONGLONG t) const { return double(t - origin) / ticks_per_us; }
    // Time since the last lap goes to phase p.
    void lap(Phase p);
    // Time since the last lap was spent making the descriptor heap before any request (`since` begins it).
    void startup_heap(LONGLONG since);
    // The start line: when main() began, the device's creation time and the end of each of its steps (`marks`).
    void open(const std::string& path_pattern, const std::string& device_error,
              const std::vector<std::pair<const char*, LONGLONG>>& marks);
    // A request has been read: the time since the previous one ended is the wait.
    void begin_request();
    void end_request(const std::string& id);
    // Timestamp m recorded in `list` (the query heap and its readback buffer made on first use).
    void gpu_mark(dmlh::DmlDevice& dev, ID3D12GraphicsCommandList* list, GpuMark m);
    bool read_gpu_ticks(UINT64* ticks);
};
