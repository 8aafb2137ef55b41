// executor.cpp - one case on the device (see executor.h).
#include "executor.h"

#include <cstring>
#include <initializer_list>
#include <string>

#include "dispatchables.h"
#include "harness.h"
#include "recording.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::is_device_loss;
using dmlh::log_line;
using dmlh::strf;

#define TRY(call, what)                               \
    do {                                              \
        HRESULT hr_ = (call);                         \
        if (FAILED(hr_)) return failure(h, hr_, what); \
    } while (0)

void make_heap_early(Harness& h) {
    if (h.dev.opt.heap_per_case) return;
    const LONGLONG began = qpc_now();
    ID3D12DescriptorHeap* heap = nullptr;
    case_descriptor_heap(h.dev, h.heap, 64, heap);
    h.timer.startup_heap(began);
}

// Buffers larger than this are not kept for the next case: a rare large case would otherwise hold its memory (host
// memory, on lavapipe) for the rest of the run, several times over.
static const UINT64 kKeptBufferBytes = UINT64(64) << 20;

void release_case_buffers(Harness& h) {
    if (h.dev.opt.buffers_per_case) {
        forget_buffers(h.buffers);
        return;
    }
    CaseBuffers& bufs = h.buffers;
    for (CaseBuffer* b : {&bufs.in[0], &bufs.in[1], &bufs.out, &bufs.temp, &bufs.persistent, &bufs.upload,
                          &bufs.readback})
        if (b->capacity > kKeptBufferBytes) {
            b->resource.reset();
            b->capacity = 0;
        }
    for (CaseBuffer& b : bufs.image)
        if (b.capacity > kKeptBufferBytes) {
            b.resource.reset();
            b.capacity = 0;
        }
}

static Reply record_and_run(Harness& h, const OpInfo& info, IDMLCompiledOperator* compiled,
                            IDMLOperatorInitializer* init, const DML_BINDING_PROPERTIES& ip,
                            const DML_BINDING_PROPERTIES& ep, Tensor* const* in, Tensor& out);

Reply execute(Harness& h, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out) {
    Device& dev = h.dev;
    PhaseTimer& timer = h.timer;
    if (dev.info_queue) dev.info_queue->ClearStoredMessages();
    Com<IDMLCompiledOperator> compiled;
    Reply made = compile_operator(h, d, compiled);
    if (made.status != "ok") return made;
    Com<IDMLOperatorInitializer> init;
    IDMLCompiledOperator* ops[] = {compiled.get()};
    TRY(dev.dml->CreateOperatorInitializer(1, ops, DMLH_IID(IDMLOperatorInitializer), init.put()),
        "IDMLDevice::CreateOperatorInitializer");
    DML_BINDING_PROPERTIES ip = binding_properties(init.get()), ep = binding_properties(compiled.get());
    timer.lap(kInitializer);
    if (dev.opt.verbose)
        log_line("%s: binding properties: initializer %u descriptors, temporary %llu; execution %u descriptors, "
             "temporary %llu, persistent %llu", info.name, ip.RequiredDescriptorCount,
             (unsigned long long)ip.TemporaryResourceSize, ep.RequiredDescriptorCount,
             (unsigned long long)ep.TemporaryResourceSize, (unsigned long long)ep.PersistentResourceSize);
    Reply r = record_and_run(h, info, compiled.get(), init.get(), ip, ep, in, out);
    if (r.status != "ok") forget_buffers(h.buffers);  // the states recorded for them may not have been reached
    return r;
}

// The case's buffers filled, the initializer and the operator recorded (into one command list; two submissions with
// --buffers-per-case, as before), submitted and waited for, the output read back.
static Reply record_and_run(Harness& h, const OpInfo& info, IDMLCompiledOperator* compiled,
                            IDMLOperatorInitializer* init, const DML_BINDING_PROPERTIES& ip,
                            const DML_BINDING_PROPERTIES& ep, Tensor* const* in, Tensor& out) {
    Device& dev = h.dev;
    PhaseTimer& timer = h.timer;
    CaseBuffers& bufs = h.buffers;
    // The initializer's binding table, then the operator's, side by side in the heap: both are recorded into one
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
    const int n_in = info.input_count;
    const UINT64 out_size = out.buffer.TotalTensorSizeInBytes;
    // The upload buffer: each input's bytes and zeros to its 256-byte boundary, the output's poison (or zeros) and
    // zeros to its boundary, then zeros for the temporary and persistent resources.
    UINT64 in_region[2] = {0, 0}, in_at[2] = {0, 0}, upload_size = 0;
    for (int i = 0; i < n_in; i++) {
        in_at[i] = upload_size;
        in_region[i] = align_up(in[i]->buffer.TotalTensorSizeInBytes, 256);
        upload_size += in_region[i];
    }
    const UINT64 out_at = upload_size, out_region = align_up(out_size, 256);
    upload_size += out_region;
    const UINT64 zeros_at = upload_size, temp_region = align_up(temp_size, 256),
                 persistent_region = align_up(persistent_size, 256);
    upload_size += temp_region > persistent_region ? temp_region : persistent_region;

    if (temp_size)
        TRY(ensure_buffer(dev, bufs.temp, D3D12_HEAP_TYPE_DEFAULT, temp_size, uav_state, uav),
            "ID3D12Device::CreateCommittedResource (temporary resource)");
    if (persistent_size)
        TRY(ensure_buffer(dev, bufs.persistent, D3D12_HEAP_TYPE_DEFAULT, persistent_size, uav_state, uav),
            "ID3D12Device::CreateCommittedResource (persistent resource)");
    for (int i = 0; i < n_in; i++)
        TRY(ensure_buffer(dev, bufs.in[i], D3D12_HEAP_TYPE_DEFAULT, in[i]->buffer.TotalTensorSizeInBytes,
                          D3D12_RESOURCE_STATE_COPY_DEST, uav),
            "ID3D12Device::CreateCommittedResource (" + in[i]->name + ")");
    TRY(ensure_buffer(dev, bufs.out, D3D12_HEAP_TYPE_DEFAULT, out_size, D3D12_RESOURCE_STATE_COPY_DEST, uav),
        "ID3D12Device::CreateCommittedResource (" + out.name + ")");
    TRY(ensure_buffer(dev, bufs.upload, D3D12_HEAP_TYPE_UPLOAD, upload_size, D3D12_RESOURCE_STATE_GENERIC_READ,
                      D3D12_RESOURCE_FLAG_NONE),
        "ID3D12Device::CreateCommittedResource (upload buffer)");
    TRY(ensure_buffer(dev, bufs.readback, D3D12_HEAP_TYPE_READBACK, out_size, D3D12_RESOURCE_STATE_COPY_DEST,
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
        for (int i = 0; i < n_in; i++)
            if (in[i]->nbytes) memcpy(bytes + in_at[i], in[i]->data, size_t(in[i]->nbytes));
        if (dev.opt.poison >= 0) memset(bytes + out_at, dev.opt.poison, size_t(out_size));
        D3D12_RANGE all = {0, SIZE_T(upload_size)};
        upload->Unmap(0, &all);
    }
    timer.lap(kUpload);

    const UINT increment = dev.d3d->GetDescriptorHandleIncrementSize(D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
    const D3D12_CPU_DESCRIPTOR_HANDLE cpu = heap_cpu_start(heap);
    const D3D12_GPU_DESCRIPTOR_HANDLE gpu = heap_gpu_start(heap);
    DML_BINDING_TABLE_DESC init_desc = {init, cpu, gpu, init_descriptors};
    DML_BINDING_TABLE_DESC exec_desc = {compiled, cpu_at(cpu, init_descriptors, increment),
                                        gpu_at(gpu, init_descriptors, increment), exec_descriptors};
    Com<IDMLBindingTable> init_table, exec_table;
    TRY(dev.dml->CreateBindingTable(&init_desc, DMLH_IID(IDMLBindingTable), init_table.put()),
        "IDMLDevice::CreateBindingTable (operator initializer)");
    TRY(dev.dml->CreateBindingTable(&exec_desc, DMLH_IID(IDMLBindingTable), exec_table.put()),
        "IDMLDevice::CreateBindingTable (compiled operator)");
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
    DML_BUFFER_BINDING in_binding[2];
    DML_BINDING_DESC in_desc[2];
    for (int i = 0; i < n_in; i++) {
        in_binding[i] = {bufs.in[i].resource.get(), 0, in[i]->buffer.TotalTensorSizeInBytes};
        in_desc[i] = {DML_BINDING_TYPE_BUFFER, &in_binding[i]};
    }
    DML_BUFFER_BINDING out_binding = {bufs.out.resource.get(), 0, out_size};
    DML_BINDING_DESC out_desc = {DML_BINDING_TYPE_BUFFER, &out_binding};
    exec_table->BindInputs(UINT(n_in), in_desc);
    exec_table->BindOutputs(1, &out_desc);
    if (ep.TemporaryResourceSize) exec_table->BindTemporaryResource(&exec_temp_desc);
    if (persistent_size) exec_table->BindPersistentResource(&persistent_desc);
    timer.lap(kBind);

    Reply r;
    ID3D12DescriptorHeap* heaps[] = {heap};
    ID3D12GraphicsCommandList* list = dev.list.get();
    if (!begin_list(h, r, dev.opt.buffers_per_case ? "operator initializer" : "operator dispatch")) return r;
    list->SetDescriptorHeaps(1, heaps);
    timer.gpu_mark(dev, list, kGpuInitBegin);
    if (temp_size) fill(list, bufs.temp, upload, zeros_at, temp_region);
    if (persistent_size) fill(list, bufs.persistent, upload, zeros_at, persistent_region);
    dev.recorder->RecordDispatch(list, init, init_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuInitEnd);
    if (dev.opt.buffers_per_case) {  // the old way: the initializer submitted and waited for on its own
        if (!submit(h, r, "operator initializer dispatch")) return r;
        timer.lap(kInitialize);
        if (!begin_list(h, r, "operator dispatch")) return r;
        list->SetDescriptorHeaps(1, heaps);
    }
    timer.gpu_mark(dev, list, kGpuBegin);
    for (int i = 0; i < n_in; i++) fill(list, bufs.in[i], upload, in_at[i], in_region[i]);
    fill(list, bufs.out, upload, out_at, out_region);
    timer.gpu_mark(dev, list, kGpuUploaded);
    dev.recorder->RecordDispatch(list, compiled, exec_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuDispatched);
    move_to(list, bufs.out, D3D12_RESOURCE_STATE_COPY_SOURCE);
    if (out_size) list->CopyBufferRegion(bufs.readback.resource.get(), 0, bufs.out.resource.get(), 0, out_size);
    timer.gpu_mark(dev, list, kGpuReadBack);
    if (!submit(h, r, "operator dispatch")) return r;
    timer.lap(kDispatch);

    Reply ok = Reply::make("ok", "");
    ok.data.resize(size_t(out.nbytes));
    if (out.nbytes) {
        void* p = nullptr;
        D3D12_RANGE range = {0, SIZE_T(out_size)};
        ID3D12Resource* readback = bufs.readback.resource.get();
        TRY(readback->Map(0, &range, &p), "ID3D12Resource::Map (readback buffer)");
        memcpy(ok.data.data(), p, size_t(out.nbytes));
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
