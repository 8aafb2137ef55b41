// timing.cpp - the host's per-request phase times, --timings (see timing.h).
#include "timing.h"

#include <cstring>

#include "buffer_pool.h"
#include "heap_pool.h"
#include "protocol.h"

using dmlh::log_line;
using dmlh::strf;

HostTimer g_host_timer;

static const char* const kNames[kHostPhaseCount] = {"wait", "decode", "session", "inputs", "run", "outputs", "reply"};

using dmlh::qpc_now;

HostTimer::HostTimer() {
    ticks_per_us = dmlh::qpc_ticks_per_us();
    origin = last = qpc_now();
    origin_unix_us = dmlh::unix_us_now();
}

// The query heap, its readback buffer, a fence and one recorded list per timestamp slot; false (nothing kept) when
// the device gives no timestamps.
static bool make_gpu_marks(HostTimer& t) {
    dmlh::DmlDevice& dev = *t.device;
    if (!dev.d3d || !dev.queue || FAILED(dev.queue->GetTimestampFrequency(&t.frequency)) || !t.frequency) return false;
    D3D12_QUERY_HEAP_DESC qd;
    memset(&qd, 0, sizeof qd);
    qd.Type = D3D12_QUERY_HEAP_TYPE_TIMESTAMP;
    qd.Count = 4;
    if (FAILED(dev.d3d->CreateQueryHeap(&qd, __uuidof(ID3D12QueryHeap), reinterpret_cast<void**>(&t.queries))))
        return false;
    if (FAILED(dmlh::create_buffer(dev.d3d.get(), D3D12_HEAP_TYPE_READBACK, 256, D3D12_RESOURCE_STATE_COPY_DEST,
                                   D3D12_RESOURCE_FLAG_NONE, &t.readback)) ||
        FAILED(dev.d3d->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_DIRECT, __uuidof(ID3D12CommandAllocator),
                                               reinterpret_cast<void**>(&t.allocator))) ||
        FAILED(dev.d3d->CreateFence(0, D3D12_FENCE_FLAG_NONE, __uuidof(ID3D12Fence), reinterpret_cast<void**>(&t.fence))))
        return false;
    for (int slot = 0; slot < 4; slot++) {
        if (FAILED(dev.d3d->CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_DIRECT, t.allocator, nullptr,
                                              __uuidof(ID3D12GraphicsCommandList),
                                              reinterpret_cast<void**>(&t.marks[slot]))))
            return false;
        t.marks[slot]->EndQuery(t.queries, D3D12_QUERY_TYPE_TIMESTAMP, UINT(slot));
        if (slot % 2)  // the second of a pair resolves the pair, both written by then
            t.marks[slot]->ResolveQueryData(t.queries, D3D12_QUERY_TYPE_TIMESTAMP, UINT(slot - 1), 2, t.readback,
                                            UINT64(slot - 1) * sizeof(UINT64));
        if (FAILED(t.marks[slot]->Close())) return false;
    }
    t.event = CreateEventW(nullptr, FALSE, FALSE, nullptr);
    return t.event != nullptr;
}

void HostTimer::open(const std::string& path_pattern, const std::string& start_error, dmlh::DmlDevice* dml_device) {
    file = dmlh::open_timings_file(path_pattern);
    if (!file) return;
    LONGLONG now = qpc_now();
    device = dml_device;
    if (device && start_error.empty() && !make_gpu_marks(*this)) {
        frequency = 0;
        log_line("--timings: no GPU timestamps on this device");
    }
    fprintf(file, "{\"event\":\"start\",\"pid\":%lu,\"main_unix_us\":%lld,\"device_us\":%.1f,\"device\":%s}\n",
            (unsigned long)GetCurrentProcessId(), origin_unix_us, double(now - origin) / ticks_per_us,
            dmlh::json_string(start_error.empty() ? "ready" : start_error).c_str());
    fflush(file);
    last = qpc_now();
}

void HostTimer::lap(HostPhase p) {
    if (!file) return;
    LONGLONG now = qpc_now();
    us[p] += double(now - last) / ticks_per_us;
    last = now;
}

void HostTimer::begin_request() {
    if (!file) return;
    for (double& u : us) u = 0;
    for (bool& w : written) w = false;
    session_created = false;
    status.clear();
    lap(kHostWait);
    request_start = last;
}

void HostTimer::gpu_mark(int slot) {
    if (!file || !frequency || !marks[slot]) return;
    ID3D12CommandList* lists[] = {marks[slot]};
    device->queue->ExecuteCommandLists(1, lists);
    written[slot] = true;
    if (slot == 1 || slot == 3) {  // the pair is resolved: wait for it, outside the phases being timed
        LONGLONG before = qpc_now();
        device->queue->Signal(fence, ++fence_value);
        if (fence->GetCompletedValue() < fence_value) {
            fence->SetEventOnCompletion(fence_value, event);
            WaitForSingleObject(event, 60000);
        }
        last += qpc_now() - before;  // not the request's time
    }
}

void HostTimer::end_request(const std::string& id) {
    if (!file) return;
    lap(kHostReply);
    std::string line = "{\"id\":" + dmlh::json_string(id) + ",\"status\":" + dmlh::json_string(status) +
                       strf(",\"session_created\":%s,\"t_us\":%.1f", session_created ? "true" : "false",
                            double(request_start - origin) / ticks_per_us);
    for (int p = 0; p < kHostPhaseCount; p++) line += strf(",\"%s\":%.1f", kNames[p], us[p]);
    const HeapPoolCounts heaps = heap_pool_counts();  // so far, in the whole process
    line += strf(",\"heaps_created\":%llu,\"heaps_reused\":%llu", heaps.created, heaps.reused);
    const BufferPoolCounts buffers = buffer_pool_counts();
    line += strf(",\"buffers_created\":%llu,\"buffers_reused\":%llu,\"buffers_freed\":%llu", buffers.created,
                 buffers.reused, buffers.freed);
    UINT64 ticks[4] = {};
    void* mapped = nullptr;
    D3D12_RANGE range = {0, sizeof ticks};
    if (frequency && readback && SUCCEEDED(readback->Map(0, &range, &mapped))) {
        memcpy(ticks, mapped, sizeof ticks);
        D3D12_RANGE none = {0, 0};
        readback->Unmap(0, &none);
        auto span = [&](int a, int b) {
            return written[a] && written[b] && ticks[b] >= ticks[a]
                       ? strf("%.1f", double(ticks[b] - ticks[a]) * 1e6 / double(frequency))
                       : std::string("null");
        };
        line += ",\"gpu_session\":" + span(0, 1) + ",\"gpu_run\":" + span(2, 3);
    }
    line += "}\n";
    fputs(line.c_str(), file);
    fflush(file);
    last = qpc_now();
}
