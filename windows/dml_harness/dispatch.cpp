// dispatch.cpp - one dispatchable run on the device (see dispatch.h).
#include "dispatch.h"

#include <cstring>
#include <string>

#include "harness.h"
#include "recording.h"

using dmlh::Com;
using dmlh::log_line;

#define TRY(call, what)                               \
    do {                                              \
        HRESULT hr_ = (call);                         \
        if (FAILED(hr_)) return failure(h, hr_, what); \
    } while (0)

static Reply record_and_run(Harness& h, const Run& run, IDMLOperatorInitializer* init,
                            const DML_BINDING_PROPERTIES& ip, const DML_BINDING_PROPERTIES& ep);

Reply execute_run(Harness& h, const Run& run) {
    Device& dev = h.dev;
    Com<IDMLOperatorInitializer> init;
    IDMLCompiledOperator* ops[] = {run.compiled};
    TRY(dev.dml->CreateOperatorInitializer(1, ops, DMLH_IID(IDMLOperatorInitializer), init.put()),
        "IDMLDevice::CreateOperatorInitializer");
    DML_BINDING_PROPERTIES ip = binding_properties(init.get()), ep = binding_properties(run.compiled);
    h.timer.lap(kInitializer);
    if (dev.opt.verbose)
        log_line("%s: binding properties: initializer %u descriptors, temporary %llu; execution %u descriptors, "
                 "temporary %llu, persistent %llu", run.label.c_str(), ip.RequiredDescriptorCount,
                 (unsigned long long)ip.TemporaryResourceSize, ep.RequiredDescriptorCount,
                 (unsigned long long)ep.TemporaryResourceSize, (unsigned long long)ep.PersistentResourceSize);
    Reply r = record_and_run(h, run, init.get(), ip, ep);
    if (r.status != "ok") forget_buffers(h.buffers);  // the states recorded for them may not have been reached
    return r;
}

// The run's buffers filled, the initializer and the dispatchable recorded (into one command list; two submissions
// when run.initializer_apart), submitted and waited for, the buffers to read read back.
static Reply record_and_run(Harness& h, const Run& run, IDMLOperatorInitializer* init,
                            const DML_BINDING_PROPERTIES& ip, const DML_BINDING_PROPERTIES& ep) {
    Device& dev = h.dev;
    PhaseTimer& timer = h.timer;
    CaseBuffers& bufs = h.buffers;
    // The initializer's binding table, then the dispatchable's, side by side in the heap: both are recorded into one
    // command list, so neither may overwrite the other's descriptors before the list has run.
    const UINT init_descriptors = ip.RequiredDescriptorCount ? ip.RequiredDescriptorCount : 1;
    const UINT exec_descriptors = ep.RequiredDescriptorCount ? ep.RequiredDescriptorCount : 1;
    ID3D12DescriptorHeap* heap = nullptr;
    TRY(case_descriptor_heap(dev, h.heap, init_descriptors + exec_descriptors, heap),
        "ID3D12Device::CreateDescriptorHeap");
    timer.lap(kHeap);

    const D3D12_RESOURCE_FLAGS uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
    const D3D12_RESOURCE_STATES uav_state = D3D12_RESOURCE_STATE_UNORDERED_ACCESS;
    const UINT64 temp_size = ip.TemporaryResourceSize > ep.TemporaryResourceSize ? ip.TemporaryResourceSize
                                                                                 : ep.TemporaryResourceSize;
    const UINT64 persistent_size = ep.PersistentResourceSize;
    const int n = run.buffer_count;
    // The upload buffer: each buffer's bytes and zeros to its 256-byte boundary, then zeros for the temporary and
    // persistent resources; the readback buffer: each buffer read back, laid out the same way.
    UINT64 at[kMaxImages] = {}, region[kMaxImages] = {}, read_at[kMaxImages] = {}, upload_size = 0, readback_size = 0,
           read_end = 0;
    for (int k = 0; k < n; k++) {
        at[k] = upload_size;
        region[k] = align_up(run.buffers[k].size, 256);
        upload_size += region[k];
        if (run.buffers[k].read_back) {
            read_at[k] = readback_size;
            read_end = readback_size + run.buffers[k].size;
            readback_size += region[k];
        }
    }
    const UINT64 zeros_at = upload_size, temp_region = align_up(temp_size, 256),
                 persistent_region = align_up(persistent_size, 256);
    upload_size += temp_region > persistent_region ? temp_region : persistent_region;

    if (temp_size)
        TRY(ensure_buffer(dev, bufs.temp, D3D12_HEAP_TYPE_DEFAULT, temp_size, uav_state, uav),
            "ID3D12Device::CreateCommittedResource (temporary resource)");
    if (persistent_size)
        TRY(ensure_buffer(dev, bufs.persistent, D3D12_HEAP_TYPE_DEFAULT, persistent_size, uav_state, uav),
            "ID3D12Device::CreateCommittedResource (persistent resource)");
    for (int k = 0; k < n; k++)
        TRY(ensure_buffer(dev, *run.buffers[k].buffer, D3D12_HEAP_TYPE_DEFAULT, run.buffers[k].size,
                          D3D12_RESOURCE_STATE_COPY_DEST, uav),
            "ID3D12Device::CreateCommittedResource (" + *run.buffers[k].name + ")");
    TRY(ensure_buffer(dev, bufs.upload, D3D12_HEAP_TYPE_UPLOAD, upload_size, D3D12_RESOURCE_STATE_GENERIC_READ,
                      D3D12_RESOURCE_FLAG_NONE),
        "ID3D12Device::CreateCommittedResource (upload buffer)");
    TRY(ensure_buffer(dev, bufs.readback, D3D12_HEAP_TYPE_READBACK, readback_size, D3D12_RESOURCE_STATE_COPY_DEST,
                      D3D12_RESOURCE_FLAG_NONE),
        "ID3D12Device::CreateCommittedResource (readback buffer)");
    timer.lap(kResources);
    ID3D12Resource* upload = bufs.upload.resource.get();
    {
        void* p = nullptr;
        D3D12_RANGE none = {0, 0};
        TRY(upload->Map(0, &none, &p), "ID3D12Resource::Map (upload buffer)");
        auto* bytes = static_cast<unsigned char*>(p);
        memset(bytes, 0, size_t(upload_size));
        for (int k = 0; k < n; k++) {
            const RunBuffer& b = run.buffers[k];
            if (b.fill >= 0) memset(bytes + at[k], b.fill, size_t(b.size));
            if (b.data_bytes) memcpy(bytes + at[k], b.data, size_t(b.data_bytes));
        }
        D3D12_RANGE all = {0, SIZE_T(upload_size)};
        upload->Unmap(0, &all);
    }
    timer.lap(kUpload);

    const UINT increment = dev.d3d->GetDescriptorHandleIncrementSize(D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
    const D3D12_CPU_DESCRIPTOR_HANDLE cpu = heap_cpu_start(heap);
    const D3D12_GPU_DESCRIPTOR_HANDLE gpu = heap_gpu_start(heap);
    DML_BINDING_TABLE_DESC init_desc = {init, cpu, gpu, init_descriptors};
    DML_BINDING_TABLE_DESC exec_desc = {run.compiled, cpu_at(cpu, init_descriptors, increment),
                                        gpu_at(gpu, init_descriptors, increment), exec_descriptors};
    Com<IDMLBindingTable> init_table, exec_table;
    TRY(dev.dml->CreateBindingTable(&init_desc, DMLH_IID(IDMLBindingTable), init_table.put()),
        "IDMLDevice::CreateBindingTable (operator initializer)");
    TRY(dev.dml->CreateBindingTable(&exec_desc, DMLH_IID(IDMLBindingTable), exec_table.put()),
        std::string("IDMLDevice::CreateBindingTable (") + run.object + ")");
    ID3D12Resource* temp = bufs.temp.resource.get();
    ID3D12Resource* persistent = bufs.persistent.resource.get();
    DML_BUFFER_BINDING init_temp = {temp, 0, ip.TemporaryResourceSize};
    DML_BUFFER_BINDING exec_temp = {temp, 0, ep.TemporaryResourceSize};
    DML_BUFFER_BINDING persistent_binding = {persistent, 0, persistent_size};
    DML_BINDING_DESC init_temp_desc = {DML_BINDING_TYPE_BUFFER, &init_temp};
    DML_BINDING_DESC exec_temp_desc = {DML_BINDING_TYPE_BUFFER, &exec_temp};
    DML_BINDING_DESC persistent_desc = {DML_BINDING_TYPE_BUFFER, &persistent_binding};
    if (ip.TemporaryResourceSize) init_table->BindTemporaryResource(&init_temp_desc);
    if (persistent_size) init_table->BindOutputs(1, &persistent_desc);  // the initializer fills it
    // The dispatchable's inputs, then its outputs, each over its buffer at its offset.
    DML_BUFFER_BINDING in_binding[2], out_binding[2];
    DML_BINDING_DESC in_desc[2], out_desc[2];
    for (int i = 0; i < run.input_count; i++) {
        const RunBinding& b = run.inputs[i];
        in_binding[i] = {run.buffers[b.buffer].buffer->resource.get(), b.offset, b.size};
        in_desc[i] = {DML_BINDING_TYPE_BUFFER, &in_binding[i]};
    }
    for (int k = 0; k < run.output_count; k++) {
        const RunBinding& b = run.outputs[k];
        out_binding[k] = {run.buffers[b.buffer].buffer->resource.get(), b.offset, b.size};
        out_desc[k] = {DML_BINDING_TYPE_BUFFER, &out_binding[k]};
    }
    exec_table->BindInputs(UINT(run.input_count), in_desc);
    exec_table->BindOutputs(UINT(run.output_count), out_desc);
    if (ep.TemporaryResourceSize) exec_table->BindTemporaryResource(&exec_temp_desc);
    if (persistent_size) exec_table->BindPersistentResource(&persistent_desc);
    timer.lap(kBind);

    Reply r;
    ID3D12DescriptorHeap* heaps[] = {heap};
    ID3D12GraphicsCommandList* list = dev.list.get();
    if (!begin_list(h, r, run.first_list)) return r;
    list->SetDescriptorHeaps(1, heaps);
    timer.gpu_mark(dev, list, kGpuInitBegin);
    if (temp_size) fill(list, bufs.temp, upload, zeros_at, temp_region);
    if (persistent_size) fill(list, bufs.persistent, upload, zeros_at, persistent_region);
    dev.recorder->RecordDispatch(list, init, init_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuInitEnd);
    if (run.initializer_apart) {  // the old way: the initializer submitted and waited for on its own
        if (!submit(h, r, "operator initializer dispatch")) return r;
        timer.lap(kInitialize);
        if (!begin_list(h, r, run.dispatch)) return r;
        list->SetDescriptorHeaps(1, heaps);
    }
    timer.gpu_mark(dev, list, kGpuBegin);
    for (int k = 0; k < n; k++) fill(list, *run.buffers[k].buffer, upload, at[k], region[k]);
    timer.gpu_mark(dev, list, kGpuUploaded);
    dev.recorder->RecordDispatch(list, run.compiled, exec_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuDispatched);
    ID3D12Resource* readback = bufs.readback.resource.get();
    for (int k = 0; k < n; k++) {
        const RunBuffer& b = run.buffers[k];
        if (!b.read_back) continue;
        move_to(list, *b.buffer, D3D12_RESOURCE_STATE_COPY_SOURCE);
        if (b.size) list->CopyBufferRegion(readback, read_at[k], b.buffer->resource.get(), 0, b.size);
    }
    timer.gpu_mark(dev, list, kGpuReadBack);
    if (!submit(h, r, run.dispatch)) return r;
    timer.lap(kDispatch);

    // Each buffer read back, its first read_bytes, one after another.
    Reply ok = Reply::make("ok", "");
    UINT64 total = 0;
    for (int k = 0; k < n; k++)
        if (run.buffers[k].read_back) total += run.buffers[k].read_bytes;
    ok.data.resize(size_t(total));
    if (total) {
        void* p = nullptr;
        D3D12_RANGE range = {0, SIZE_T(read_end)};
        TRY(readback->Map(0, &range, &p), "ID3D12Resource::Map (readback buffer)");
        UINT64 offset = 0;
        for (int k = 0; k < n; k++) {
            const RunBuffer& b = run.buffers[k];
            if (!b.read_back) continue;
            memcpy(ok.data.data() + offset, static_cast<const unsigned char*>(p) + read_at[k], size_t(b.read_bytes));
            offset += b.read_bytes;
        }
        D3D12_RANGE none = {0, 0};
        readback->Unmap(0, &none);
    }
    timer.lap(kReadback);
    if (dev.opt.verbose) {
        std::string dbg = info_queue_text(dev);
        if (!dbg.empty()) log_line("debug layer: %s", dbg.c_str());
    }
    return ok;
}
