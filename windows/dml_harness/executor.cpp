// executor.cpp - one case on the device (see executor.h).
#include "executor.h"

#include <cstring>
#include <string>

#include "harness.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::is_device_loss;
using dmlh::log_line;
using dmlh::strf;

static DML_BINDING_PROPERTIES binding_properties(IDMLDispatchable* d) {
    return dmlh::call_aggregate_getter<DML_BINDING_PROPERTIES>(d, 8);  // IDMLDispatchable::GetBindingProperties
}
static D3D12_CPU_DESCRIPTOR_HANDLE heap_cpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_CPU_DESCRIPTOR_HANDLE>(h, 9);  // GetCPUDescriptorHandleForHeapStart
}
static D3D12_GPU_DESCRIPTOR_HANDLE heap_gpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_GPU_DESCRIPTOR_HANDLE>(h, 10);  // GetGPUDescriptorHandleForHeapStart
}

static UINT64 align_up(UINT64 v, UINT64 a) { return (v + a - 1) / a * a; }

static HRESULT make_buffer(Device& dev, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES state,
                           D3D12_RESOURCE_FLAGS flags, Com<ID3D12Resource>& out) {
    D3D12_HEAP_PROPERTIES hp;
    memset(&hp, 0, sizeof hp);
    hp.Type = heap;
    D3D12_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof rd);
    rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    rd.Width = align_up(size ? size : 1, 256);
    rd.Height = 1;
    rd.DepthOrArraySize = 1;
    rd.MipLevels = 1;
    rd.Format = DXGI_FORMAT_UNKNOWN;
    rd.SampleDesc.Count = 1;
    rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    rd.Flags = flags;
    return dev.d3d->CreateCommittedResource(&hp, D3D12_HEAP_FLAG_NONE, &rd, state, nullptr, __uuidof(ID3D12Resource),
                                            out.put());
}

static void transition(ID3D12GraphicsCommandList* list, ID3D12Resource* r, D3D12_RESOURCE_STATES before,
                       D3D12_RESOURCE_STATES after) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
    b.Transition.pResource = r;
    b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
    b.Transition.StateBefore = before;
    b.Transition.StateAfter = after;
    list->ResourceBarrier(1, &b);
}

static void uav_barrier(ID3D12GraphicsCommandList* list) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
    b.UAV.pResource = nullptr;  // every UAV access
    list->ResourceBarrier(1, &b);
}

static bool begin_list(Harness& h, Reply& r, const char* what) {
    Device& dev = h.dev;
    HRESULT hr = dev.allocator->Reset();
    if (FAILED(hr)) {
        r = failure(h, hr, std::string("ID3D12CommandAllocator::Reset (") + what + ")");
        return false;
    }
    hr = dev.list->Reset(dev.allocator.get(), nullptr);
    if (FAILED(hr)) {
        r = failure(h, hr, std::string("ID3D12GraphicsCommandList::Reset (") + what + ")");
        return false;
    }
    return true;
}

// Closes, executes and waits for the command list; false with `r` filled on failure.
static bool submit(Harness& h, Reply& r, const char* what) {
    Device& dev = h.dev;
    HRESULT hr = dev.list->Close();
    if (FAILED(hr)) {
        r = failure(h, hr, std::string("ID3D12GraphicsCommandList::Close (") + what + ")");
        return false;
    }
    ID3D12CommandList* lists[] = {dev.list.get()};
    dev.queue->ExecuteCommandLists(1, lists);
    UINT64 value = ++dev.fence_value;
    hr = dev.queue->Signal(dev.fence.get(), value);
    if (FAILED(hr)) {
        r = failure(h, hr, std::string("ID3D12CommandQueue::Signal (") + what + ")");
        return false;
    }
    if (dev.fence->GetCompletedValue() < value) {
        hr = dev.fence->SetEventOnCompletion(value, dev.event);
        if (FAILED(hr)) {
            r = failure(h, hr, std::string("ID3D12Fence::SetEventOnCompletion (") + what + ")");
            return false;
        }
        DWORD wait = WaitForSingleObject(dev.event, dev.opt.fence_timeout_ms);
        if (wait != WAIT_OBJECT_0 && dev.fence->GetCompletedValue() < value) {
            HRESULT reason = dev.d3d->GetDeviceRemovedReason();
            r = Reply::make("device_removed",
                            strf("the fence for the %s did not signal within %lu ms (WaitForSingleObject: %lu); "
                                 "ID3D12Device::GetDeviceRemovedReason: %s", what,
                                 (unsigned long)dev.opt.fence_timeout_ms, (unsigned long)wait, hr_text(reason).c_str()));
            r.hresult = strf("0x%08lX", (unsigned long)(FAILED(reason) ? reason : HRESULT(0x887A0006L)));
            device_lost_exit(h, r);
        }
    }
    HRESULT reason = dev.d3d->GetDeviceRemovedReason();
    if (FAILED(reason)) {
        r = failure(h, reason, std::string("the ") + what);
        return false;
    }
    return true;
}

// The shared heap (executor.h), made or grown to hold `descriptors`.
static HRESULT case_descriptor_heap(Device& dev, CaseHeap& shared, UINT descriptors, ID3D12DescriptorHeap*& heap) {
    if (dev.opt.heap_per_case && shared.heap) {  // the previous case's heap: its work has completed
        shared.heap->Release();
        shared.heap = nullptr;
        shared.size = 0;
    }
    if (!shared.heap || shared.size < descriptors) {
        UINT size = shared.size * 2 > 64 ? shared.size * 2 : 64;
        if (size < descriptors || dev.opt.heap_per_case) size = descriptors;
        D3D12_DESCRIPTOR_HEAP_DESC hd;
        memset(&hd, 0, sizeof hd);
        hd.Type = D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV;
        hd.NumDescriptors = size;
        hd.Flags = D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE;
        ID3D12DescriptorHeap* grown = nullptr;
        HRESULT hr = dev.d3d->CreateDescriptorHeap(&hd, __uuidof(ID3D12DescriptorHeap), reinterpret_cast<void**>(&grown));
        if (FAILED(hr)) return hr;
        if (shared.heap) shared.heap->Release();  // the GPU is idle: every submission was waited for
        shared.heap = grown;
        shared.size = size;
    }
    heap = shared.heap;
    return S_OK;
}

#define TRY(call, what)                               \
    do {                                              \
        HRESULT hr_ = (call);                         \
        if (FAILED(hr_)) return failure(h, hr_, what); \
    } while (0)

Reply execute(Harness& h, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out) {
    Device& dev = h.dev;
    PhaseTimer& timer = h.timer;
    if (dev.info_queue) dev.info_queue->ClearStoredMessages();
    Com<IDMLOperator> op;
    HRESULT hr = dev.dml->CreateOperator(&d.op, DMLH_IID(IDMLOperator), op.put());
    timer.lap(kCreate);
    if (FAILED(hr)) {
        if (is_device_loss(hr)) return failure(h, hr, "IDMLDevice::CreateOperator");
        if ((unsigned long)hr == 0x8007000EUL) return failure(h, hr, "IDMLDevice::CreateOperator");
        std::string dbg = info_queue_text(dev);
        return Reply::make("refused", "IDMLDevice::CreateOperator: " + hr_text(hr) +
                                          (dbg.empty() ? "" : "; debug layer: " + dbg));
    }
    Com<IDMLCompiledOperator> compiled;
    hr = dev.dml->CompileOperator(op.get(), dev.exec_flags, DMLH_IID(IDMLCompiledOperator), compiled.put());
    timer.lap(kCompile);
    if (FAILED(hr)) {
        if ((unsigned long)hr == 0x80070057UL) {
            std::string dbg = info_queue_text(dev);
            return Reply::make("refused", "IDMLDevice::CompileOperator: " + hr_text(hr) +
                                              (dbg.empty() ? "" : "; debug layer: " + dbg));
        }
        return failure(h, hr, "IDMLDevice::CompileOperator");
    }
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

    // Resources: every one is created before anything is recorded.
    UINT descriptors = ip.RequiredDescriptorCount > ep.RequiredDescriptorCount ? ip.RequiredDescriptorCount
                                                                               : ep.RequiredDescriptorCount;
    ID3D12DescriptorHeap* heap = nullptr;
    TRY(case_descriptor_heap(dev, h.heap, descriptors ? descriptors : 1, heap), "ID3D12Device::CreateDescriptorHeap");
    timer.lap(kHeap);
    const D3D12_RESOURCE_FLAGS uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
    UINT64 temp_size = ip.TemporaryResourceSize > ep.TemporaryResourceSize ? ip.TemporaryResourceSize
                                                                           : ep.TemporaryResourceSize;
    Com<ID3D12Resource> temp, persistent;
    if (temp_size)
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, temp_size, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, uav, temp),
            "ID3D12Device::CreateCommittedResource (temporary resource)");
    if (ep.PersistentResourceSize)
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, ep.PersistentResourceSize, D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                        uav, persistent),
            "ID3D12Device::CreateCommittedResource (persistent resource)");

    const int n_in = info.input_count;
    Com<ID3D12Resource> in_buf[2], out_buf, upload, readback;
    UINT64 upload_offset[3] = {0, 0, 0}, upload_size = 0;
    for (int i = 0; i < n_in; i++) {
        upload_offset[i] = upload_size;
        upload_size = align_up(upload_size + in[i]->buffer.TotalTensorSizeInBytes, 256);
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, in[i]->buffer.TotalTensorSizeInBytes,
                        D3D12_RESOURCE_STATE_COPY_DEST, uav, in_buf[i]),
            "ID3D12Device::CreateCommittedResource (" + in[i]->name + ")");
    }
    const UINT64 out_size = out.buffer.TotalTensorSizeInBytes;
    upload_offset[2] = upload_size;
    if (dev.opt.poison >= 0) upload_size += out_size;
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, out_size, D3D12_RESOURCE_STATE_COPY_DEST, uav, out_buf),
        "ID3D12Device::CreateCommittedResource (" + out.name + ")");
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_UPLOAD, upload_size, D3D12_RESOURCE_STATE_GENERIC_READ,
                    D3D12_RESOURCE_FLAG_NONE, upload),
        "ID3D12Device::CreateCommittedResource (upload buffer)");
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_READBACK, out_size, D3D12_RESOURCE_STATE_COPY_DEST,
                    D3D12_RESOURCE_FLAG_NONE, readback),
        "ID3D12Device::CreateCommittedResource (readback buffer)");
    timer.lap(kResources);
    {
        void* p = nullptr;
        D3D12_RANGE none = {0, 0};
        TRY(upload->Map(0, &none, &p), "ID3D12Resource::Map (upload buffer)");
        auto* bytes = static_cast<unsigned char*>(p);
        for (int i = 0; i < n_in; i++) {
            memset(bytes + upload_offset[i], 0, size_t(in[i]->buffer.TotalTensorSizeInBytes));
            if (in[i]->nbytes) memcpy(bytes + upload_offset[i], in[i]->data, size_t(in[i]->nbytes));
        }
        if (dev.opt.poison >= 0) memset(bytes + upload_offset[2], dev.opt.poison, size_t(out_size));
        D3D12_RANGE all = {0, SIZE_T(upload_size)};
        upload->Unmap(0, &all);
    }
    timer.lap(kUpload);

    // Binding table: first for the initializer, then reset for the compiled operator.
    DML_BINDING_TABLE_DESC btd;
    btd.Dispatchable = init.get();
    btd.CPUDescriptorHandle = heap_cpu_start(heap);
    btd.GPUDescriptorHandle = heap_gpu_start(heap);
    btd.SizeInDescriptors = descriptors;
    Com<IDMLBindingTable> table;
    TRY(dev.dml->CreateBindingTable(&btd, DMLH_IID(IDMLBindingTable), table.put()), "IDMLDevice::CreateBindingTable");
    DML_BUFFER_BINDING temp_binding = {temp.get(), 0, temp_size};
    DML_BUFFER_BINDING persistent_binding = {persistent.get(), 0, ep.PersistentResourceSize};
    DML_BINDING_DESC temp_desc = {DML_BINDING_TYPE_BUFFER, &temp_binding};
    DML_BINDING_DESC persistent_desc = {DML_BINDING_TYPE_BUFFER, &persistent_binding};
    if (ip.TemporaryResourceSize) {
        temp_binding.SizeInBytes = ip.TemporaryResourceSize;
        table->BindTemporaryResource(&temp_desc);
    }
    if (ep.PersistentResourceSize) table->BindOutputs(1, &persistent_desc);  // the initializer fills it
    timer.lap(kResources);

    Reply r;
    ID3D12DescriptorHeap* heaps[] = {heap};
    if (!begin_list(h, r, "operator initializer")) return r;
    timer.gpu_mark(dev, dev.list.get(), kGpuInitBegin);
    dev.list->SetDescriptorHeaps(1, heaps);
    dev.recorder->RecordDispatch(dev.list.get(), init.get(), table.get());
    timer.gpu_mark(dev, dev.list.get(), kGpuInitEnd);
    if (!submit(h, r, "operator initializer dispatch")) return r;
    timer.lap(kInitialize);

    btd.Dispatchable = compiled.get();
    TRY(table->Reset(&btd), "IDMLBindingTable::Reset (compiled operator)");
    DML_BUFFER_BINDING in_binding[2];
    DML_BINDING_DESC in_desc[2];
    for (int i = 0; i < n_in; i++) {
        in_binding[i] = {in_buf[i].get(), 0, in[i]->buffer.TotalTensorSizeInBytes};
        in_desc[i] = {DML_BINDING_TYPE_BUFFER, &in_binding[i]};
    }
    DML_BUFFER_BINDING out_binding = {out_buf.get(), 0, out_size};
    DML_BINDING_DESC out_desc = {DML_BINDING_TYPE_BUFFER, &out_binding};
    table->BindInputs(UINT(n_in), in_desc);
    table->BindOutputs(1, &out_desc);
    if (ep.TemporaryResourceSize) {
        temp_binding.SizeInBytes = ep.TemporaryResourceSize;
        table->BindTemporaryResource(&temp_desc);
    }
    if (ep.PersistentResourceSize) table->BindPersistentResource(&persistent_desc);
    timer.lap(kBind);

    if (!begin_list(h, r, "operator dispatch")) return r;
    timer.gpu_mark(dev, dev.list.get(), kGpuBegin);
    for (int i = 0; i < n_in; i++) {
        if (in[i]->buffer.TotalTensorSizeInBytes)
            dev.list->CopyBufferRegion(in_buf[i].get(), 0, upload.get(), upload_offset[i],
                                       in[i]->buffer.TotalTensorSizeInBytes);
        transition(dev.list.get(), in_buf[i].get(), D3D12_RESOURCE_STATE_COPY_DEST,
                   D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    }
    if (dev.opt.poison >= 0 && out_size)
        dev.list->CopyBufferRegion(out_buf.get(), 0, upload.get(), upload_offset[2], out_size);
    transition(dev.list.get(), out_buf.get(), D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    timer.gpu_mark(dev, dev.list.get(), kGpuUploaded);
    dev.list->SetDescriptorHeaps(1, heaps);
    dev.recorder->RecordDispatch(dev.list.get(), compiled.get(), table.get());
    uav_barrier(dev.list.get());
    timer.gpu_mark(dev, dev.list.get(), kGpuDispatched);
    transition(dev.list.get(), out_buf.get(), D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
    if (out_size) dev.list->CopyBufferRegion(readback.get(), 0, out_buf.get(), 0, out_size);
    timer.gpu_mark(dev, dev.list.get(), kGpuReadBack);
    if (!submit(h, r, "operator dispatch")) return r;
    timer.lap(kDispatch);

    Reply ok = Reply::make("ok", "");
    ok.data.resize(size_t(out.nbytes));
    if (out.nbytes) {
        void* p = nullptr;
        D3D12_RANGE range = {0, SIZE_T(out_size)};
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
