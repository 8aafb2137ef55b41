// bound_run.cpp - a case with buffer images on the device (see bound_run.h).
#include "bound_run.h"

#include <cstring>
#include <string>

#include "harness.h"
#include "recording.h"

using dmlh::Com;
using dmlh::log_line;
using dmlh::strf;

#define TRY(call, what)                               \
    do {                                              \
        HRESULT hr_ = (call);                         \
        if (FAILED(hr_)) return failure(h, hr_, what); \
    } while (0)

static Reply record_and_run(Harness& h, IDMLCompiledOperator* compiled, IDMLOperatorInitializer* init,
                            const DML_BINDING_PROPERTIES& ip, const DML_BINDING_PROPERTIES& ep, const OpInfo& info,
                            BoundCase& c);

Reply execute_bound(Harness& h, const OpInfo& info, IDMLCompiledOperator* compiled, BoundCase& c) {
    Device& dev = h.dev;
    if (int(c.images.size()) > kMaxImages) return Reply::make("error", "too many buffer images in one request");
    Com<IDMLOperatorInitializer> init;
    IDMLCompiledOperator* ops[] = {compiled};
    TRY(dev.dml->CreateOperatorInitializer(1, ops, DMLH_IID(IDMLOperatorInitializer), init.put()),
        "IDMLDevice::CreateOperatorInitializer");
    DML_BINDING_PROPERTIES ip = binding_properties(init.get()), ep = binding_properties(compiled);
    h.timer.lap(kInitializer);
    if (dev.opt.verbose)
        log_line("%s (%s path): binding properties: initializer %u descriptors, temporary %llu; execution %u "
                 "descriptors, temporary %llu, persistent %llu", info.name, path_name(c.path),
                 ip.RequiredDescriptorCount, (unsigned long long)ip.TemporaryResourceSize, ep.RequiredDescriptorCount,
                 (unsigned long long)ep.TemporaryResourceSize, (unsigned long long)ep.PersistentResourceSize);
    Reply r = record_and_run(h, compiled, init.get(), ip, ep, info, c);
    if (r.status != "ok") forget_buffers(h.buffers);  // the states recorded for them may not have been reached
    return r;
}

static Reply record_and_run(Harness& h, IDMLCompiledOperator* compiled, IDMLOperatorInitializer* init,
                            const DML_BINDING_PROPERTIES& ip, const DML_BINDING_PROPERTIES& ep, const OpInfo& info,
                            BoundCase& c) {
    Device& dev = h.dev;
    PhaseTimer& timer = h.timer;
    CaseBuffers& bufs = h.buffers;
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
    const int n = int(c.images.size());
    // The upload buffer: each image and zeros to its 256-byte boundary, then zeros for the temporary and persistent
    // resources; the readback buffer: each image at the same place.
    UINT64 at[kMaxImages] = {}, region[kMaxImages] = {}, upload_size = 0;
    for (int k = 0; k < n; k++) {
        at[k] = upload_size;
        region[k] = align_up(c.images[k].nbytes, 256);
        upload_size += region[k];
    }
    const UINT64 images_size = upload_size;
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
        TRY(ensure_buffer(dev, bufs.image[k], D3D12_HEAP_TYPE_DEFAULT, c.images[k].nbytes,
                          D3D12_RESOURCE_STATE_COPY_DEST, uav),
            "ID3D12Device::CreateCommittedResource (" + c.images[k].name + ")");
    TRY(ensure_buffer(dev, bufs.upload, D3D12_HEAP_TYPE_UPLOAD, upload_size, D3D12_RESOURCE_STATE_GENERIC_READ,
                      D3D12_RESOURCE_FLAG_NONE),
        "ID3D12Device::CreateCommittedResource (upload buffer)");
    TRY(ensure_buffer(dev, bufs.readback, D3D12_HEAP_TYPE_READBACK, images_size, D3D12_RESOURCE_STATE_COPY_DEST,
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
        for (int k = 0; k < n; k++)
            if (c.images[k].nbytes) memcpy(bytes + at[k], c.images[k].data, size_t(c.images[k].nbytes));
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
        c.path == ExecPath::Graph ? "IDMLDevice::CreateBindingTable (compiled graph)"
                                  : "IDMLDevice::CreateBindingTable (compiled operator)");
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
    // The operator's inputs (the graph's, in the same order), then its output (the graph's first) and, on the graph
    // path, the edges copy (the graph's second output), bound like the output over its own image.
    const int n_in = info.input_count;
    DML_BUFFER_BINDING in_binding[2], out_binding[2];
    DML_BINDING_DESC in_desc[2], out_desc[2];
    for (int i = 0; i < n_in; i++) {
        in_binding[i] = {bufs.image[c.in_image[i]].resource.get(), c.in[i].binding_offset,
                         c.in[i].buffer.TotalTensorSizeInBytes};
        in_desc[i] = {DML_BINDING_TYPE_BUFFER, &in_binding[i]};
    }
    UINT n_out = 1;
    out_binding[0] = {bufs.image[c.out_image].resource.get(), c.out.binding_offset, c.out.buffer.TotalTensorSizeInBytes};
    if (c.edges_image >= 0)
        out_binding[n_out++] = {bufs.image[c.edges_image].resource.get(), c.out.binding_offset,
                                c.out.buffer.TotalTensorSizeInBytes};
    for (UINT k = 0; k < n_out; k++) out_desc[k] = {DML_BINDING_TYPE_BUFFER, &out_binding[k]};
    exec_table->BindInputs(UINT(n_in), in_desc);
    exec_table->BindOutputs(n_out, out_desc);
    if (ep.TemporaryResourceSize) exec_table->BindTemporaryResource(&exec_temp_desc);
    if (persistent_size) exec_table->BindPersistentResource(&persistent_desc);
    timer.lap(kBind);

    Reply r;
    ID3D12DescriptorHeap* heaps[] = {heap};
    ID3D12GraphicsCommandList* list = dev.list.get();
    if (!begin_list(h, r, "dispatch")) return r;
    list->SetDescriptorHeaps(1, heaps);
    timer.gpu_mark(dev, list, kGpuInitBegin);
    if (temp_size) fill(list, bufs.temp, upload, zeros_at, temp_region);
    if (persistent_size) fill(list, bufs.persistent, upload, zeros_at, persistent_region);
    dev.recorder->RecordDispatch(list, init, init_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuInitEnd);
    timer.gpu_mark(dev, list, kGpuBegin);
    for (int k = 0; k < n; k++) fill(list, bufs.image[k], upload, at[k], region[k]);
    timer.gpu_mark(dev, list, kGpuUploaded);
    dev.recorder->RecordDispatch(list, compiled, exec_table.get());
    uav_barrier(list);
    timer.gpu_mark(dev, list, kGpuDispatched);
    ID3D12Resource* readback = bufs.readback.resource.get();
    for (int k = 0; k < n; k++) {
        move_to(list, bufs.image[k], D3D12_RESOURCE_STATE_COPY_SOURCE);
        if (c.images[k].nbytes)
            list->CopyBufferRegion(readback, at[k], bufs.image[k].resource.get(), 0, c.images[k].nbytes);
    }
    timer.gpu_mark(dev, list, kGpuReadBack);
    if (!submit(h, r, c.path == ExecPath::Graph ? "compiled graph dispatch" : "operator dispatch")) return r;
    timer.lap(kDispatch);

    // Every image, as read back, one after another (each a multiple of 16 bytes: 16-byte aligned in the payload).
    Reply ok = Reply::make("ok", "");
    UINT64 total = 0;
    for (int k = 0; k < n; k++) total += c.images[k].nbytes;
    ok.data.resize(size_t(total));
    if (total) {
        void* p = nullptr;
        D3D12_RANGE range = {0, SIZE_T(images_size)};
        TRY(readback->Map(0, &range, &p), "ID3D12Resource::Map (readback buffer)");
        UINT64 offset = 0;
        for (int k = 0; k < n; k++) {
            memcpy(ok.data.data() + offset, static_cast<const unsigned char*>(p) + at[k], size_t(c.images[k].nbytes));
            ok.images.push_back({c.images[k].name, offset, c.images[k].nbytes});
            offset += c.images[k].nbytes;
        }
        D3D12_RANGE none = {0, 0};
        readback->Unmap(0, &none);
    } else {
        for (int k = 0; k < n; k++) ok.images.push_back({c.images[k].name, 0, 0});
    }
    ok.with_images = true;
    timer.lap(kReadback);
    if (dev.opt.verbose) {
        std::string dbg = info_queue_text(dev);
        if (!dbg.empty()) log_line("debug layer: %s", dbg.c_str());
    }
    return ok;
}
