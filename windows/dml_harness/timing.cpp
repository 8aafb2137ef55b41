// timing.cpp - per-request phase times, --timings (see timing.h).
#include "timing.h"

#include <cstring>

#include "protocol.h"

using dmlh::log_line;
using dmlh::strf;

static const char* const kPhaseNames[kPhaseCount] = {"wait",      "decode",   "create",   "compile", "initializer",
                                                     "heap",      "resources", "upload", "initialize", "bind",
                                                     "dispatch",  "readback", "release", "reply"};

PhaseTimer::PhaseTimer() {
    ticks_per_us = dmlh::qpc_ticks_per_us();
    origin = last = qpc_now();
    origin_unix_us = dmlh::unix_us_now();
}

void PhaseTimer::lap(Phase p) {
    if (!file) return;
    LONGLONG now = qpc_now();
    us[p] += double(now - last) / ticks_per_us;
    last = now;
}

void PhaseTimer::startup_heap(LONGLONG since) {
    if (!file) return;
    startup_heap_us += double(qpc_now() - since) / ticks_per_us;
}

void PhaseTimer::open(const std::string& path_pattern, const std::string& device_error,
                      const std::vector<std::pair<const char*, LONGLONG>>& marks) {
    file = dmlh::open_timings_file(path_pattern);
    if (!file) return;
    LONGLONG now = qpc_now();
    std::string steps;
    for (const auto& [step, at] : marks) steps += strf("%s\"%s\":%.1f", steps.empty() ? "" : ",", step, since_origin_us(at));
    fprintf(file, "{\"event\":\"start\",\"pid\":%lu,\"main_unix_us\":%lld,\"device_us\":%.1f,\"device\":%s,"
            "\"steps_us\":{%s}}\n", (unsigned long)GetCurrentProcessId(), origin_unix_us, since_origin_us(now),
            dmlh::json_string(device_error.empty() ? "ready" : device_error).c_str(), steps.c_str());
    fflush(file);
    last = now;
}

void PhaseTimer::begin_request() {
    if (!file) return;
    for (double& u : us) u = 0;
    for (bool& w : gpu_written) w = false;
    op.clear();
    status.clear();
    lap(kWait);
    request_start = last;
}

void PhaseTimer::end_request(const std::string& id) {
    if (!file) return;
    lap(kReply);
    if (!first_written) {
        us[kHeap] += startup_heap_us;
        first_written = true;
    }
    std::string line = "{\"id\":" + dmlh::json_string(id) + ",\"op\":" + dmlh::json_string(op) +
                       ",\"status\":" + dmlh::json_string(status) +
                       strf(",\"t_us\":%.1f", since_origin_us(request_start));
    for (int p = 0; p < kPhaseCount; p++) line += strf(",\"%s\":%.1f", kPhaseNames[p], us[p]);
    UINT64 ticks[kGpuMarks] = {};
    if (gpu_frequency && read_gpu_ticks(ticks)) {
        auto span = [&](GpuMark a, GpuMark b) {
            return gpu_written[a] && gpu_written[b] && ticks[b] >= ticks[a]
                       ? strf("%.1f", double(ticks[b] - ticks[a]) * 1e6 / double(gpu_frequency))
                       : std::string("null");
        };
        line += ",\"gpu_initialize\":" + span(kGpuInitBegin, kGpuInitEnd) + ",\"gpu_upload\":" +
                span(kGpuBegin, kGpuUploaded) + ",\"gpu_dispatch\":" + span(kGpuUploaded, kGpuDispatched) +
                ",\"gpu_readback\":" + span(kGpuDispatched, kGpuReadBack);
    }
    line += "}\n";
    fputs(line.c_str(), file);
    fflush(file);
    last = qpc_now();  // writing the line is not the runner's time
}

void PhaseTimer::gpu_mark(dmlh::DmlDevice& dev, ID3D12GraphicsCommandList* list, GpuMark m) {
    if (!file) return;
    if (!queries && !gpu_frequency) {
        gpu_frequency = 1;  // tried once; 0 again below when anything fails
        D3D12_QUERY_HEAP_DESC qd;
        memset(&qd, 0, sizeof qd);
        qd.Type = D3D12_QUERY_HEAP_TYPE_TIMESTAMP;
        qd.Count = kGpuMarks;
        UINT64 frequency = 0;
        if (FAILED(dev.queue->GetTimestampFrequency(&frequency)) || !frequency ||
            FAILED(dev.d3d->CreateQueryHeap(&qd, __uuidof(ID3D12QueryHeap), reinterpret_cast<void**>(&queries)))) {
            queries = nullptr;
            gpu_frequency = 0;
            log_line("--timings: no GPU timestamps on this device");
            return;
        }
        if (FAILED(dmlh::create_buffer(dev.d3d.get(), D3D12_HEAP_TYPE_READBACK, 256, D3D12_RESOURCE_STATE_COPY_DEST,
                                       D3D12_RESOURCE_FLAG_NONE, &query_readback))) {
            queries->Release();
            queries = nullptr;
            gpu_frequency = 0;
            return;
        }
        gpu_frequency = frequency;
    }
    if (!queries) return;
    list->EndQuery(queries, D3D12_QUERY_TYPE_TIMESTAMP, UINT(m));
    gpu_written[m] = true;
    // The last mark of a request resolves them all into the readback buffer, in the same list.
    if (m == kGpuReadBack) list->ResolveQueryData(queries, D3D12_QUERY_TYPE_TIMESTAMP, 0, kGpuMarks,
                                                  query_readback, 0);
}

bool PhaseTimer::read_gpu_ticks(UINT64* ticks) {
    if (!query_readback || !gpu_written[kGpuReadBack]) return false;
    void* p = nullptr;
    D3D12_RANGE range = {0, sizeof(UINT64) * kGpuMarks};
    if (FAILED(query_readback->Map(0, &range, &p))) return false;
    memcpy(ticks, p, sizeof(UINT64) * kGpuMarks);
    D3D12_RANGE none = {0, 0};
    query_readback->Unmap(0, &none);
    return true;
}
