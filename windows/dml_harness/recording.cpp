// recording.cpp - command lists, submissions, the shared descriptor heap and the reused buffers (see recording.h).
#include "recording.h"

#include <cstring>
#include <initializer_list>
#include <string>

#include "harness.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::strf;

DML_BINDING_PROPERTIES binding_properties(IDMLDispatchable* d) {
    return dmlh::call_aggregate_getter<DML_BINDING_PROPERTIES>(d, 8);  // IDMLDispatchable::GetBindingProperties
}
D3D12_CPU_DESCRIPTOR_HANDLE heap_cpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_CPU_DESCRIPTOR_HANDLE>(h, 9);  // GetCPUDescriptorHandleForHeapStart
}
D3D12_GPU_DESCRIPTOR_HANDLE heap_gpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_GPU_DESCRIPTOR_HANDLE>(h, 10);  // GetGPUDescriptorHandleForHeapStart
}

static HRESULT make_buffer(Device& dev, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES state,
                           D3D12_RESOURCE_FLAGS flags, Com<ID3D12Resource>& out) {
    return dmlh::create_buffer(dev.d3d.get(), heap, size, state, flags, out.put_typed());
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

void uav_barrier(ID3D12GraphicsCommandList* list) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
    b.UAV.pResource = nullptr;  // every UAV access
    list->ResourceBarrier(1, &b);
}

bool begin_list(Harness& h, Reply& r, const char* what) {
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
bool submit(Harness& h, Reply& r, const char* what) {
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
HRESULT case_descriptor_heap(Device& dev, CaseHeap& shared, UINT descriptors, ID3D12DescriptorHeap*& heap) {
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

// The buffer, made or grown to hold `size` bytes (rounded up to 256, as a fresh buffer of the case's own would be):
// by powers of two from 64 KiB, or exactly with --buffers-per-case. A buffer that is replaced is idle: every
// submission was waited for.
HRESULT ensure_buffer(Device& dev, CaseBuffer& b, D3D12_HEAP_TYPE heap, UINT64 size,
                             D3D12_RESOURCE_STATES initial, D3D12_RESOURCE_FLAGS flags) {
    const UINT64 need = align_up(size ? size : 1, 256);
    if (b.resource && b.capacity >= need) return S_OK;
    b.resource.reset();
    b.capacity = 0;
    UINT64 capacity = need;
    if (!dev.opt.buffers_per_case) {
        capacity = 64 * 1024;
        while (capacity < need) capacity *= 2;
    }
    HRESULT hr = make_buffer(dev, heap, capacity, initial, flags, b.resource);
    if (FAILED(hr)) return hr;
    b.capacity = capacity;
    b.state = initial;
    return S_OK;
}

void move_to(ID3D12GraphicsCommandList* list, CaseBuffer& b, D3D12_RESOURCE_STATES state) {
    if (b.state == state) return;
    transition(list, b.resource.get(), b.state, state);
    b.state = state;
}

// `bytes` of the upload buffer at `offset` copied to the start of `b`, which is left for unordered access.
void fill(ID3D12GraphicsCommandList* list, CaseBuffer& b, ID3D12Resource* upload, UINT64 offset, UINT64 bytes) {
    move_to(list, b, D3D12_RESOURCE_STATE_COPY_DEST);
    if (bytes) list->CopyBufferRegion(b.resource.get(), 0, upload, offset, bytes);
    move_to(list, b, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
}

void forget_buffers(CaseBuffers& bufs) {
    for (CaseBuffer* b : {&bufs.in[0], &bufs.in[1], &bufs.out, &bufs.temp, &bufs.persistent, &bufs.upload,
                          &bufs.readback}) {
        b->resource.reset();
        b->capacity = 0;
    }
    for (CaseBuffer& b : bufs.image) {
        b.resource.reset();
        b.capacity = 0;
    }
}

D3D12_CPU_DESCRIPTOR_HANDLE cpu_at(D3D12_CPU_DESCRIPTOR_HANDLE base, UINT index, UINT increment) {
    base.ptr += SIZE_T(index) * increment;
    return base;
}
D3D12_GPU_DESCRIPTOR_HANDLE gpu_at(D3D12_GPU_DESCRIPTOR_HANDLE base, UINT index, UINT increment) {
    base.ptr += UINT64(index) * increment;
    return base;
}

