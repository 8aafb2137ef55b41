// heap_pool.cpp - shader-visible descriptor heaps reused across sessions (see heap_pool.h).
#include "heap_pool.h"

#include <vector>

#include "vtable_hook.h"

namespace {

typedef HRESULT(STDMETHODCALLTYPE* CreateDescriptorHeapFn)(ID3D12Device* self, const D3D12_DESCRIPTOR_HEAP_DESC* desc,
                                                          REFIID riid, void** heap);

// ID3D12Device's vtable: IUnknown (3), ID3D12Object (4), then GetNodeCount, CreateCommandQueue,
// CreateCommandAllocator, CreateGraphicsPipelineState, CreateComputePipelineState, CreateCommandList,
// CheckFeatureSupport, CreateDescriptorHeap: the D3D12 ABI, the same in every later ID3D12DeviceN.
constexpr int kCreateDescriptorHeapSlot = 14;

struct Pooled {
    ID3D12DescriptorHeap* heap;  // the pool's own reference
    D3D12_DESCRIPTOR_HEAP_DESC desc;
};

struct Pool {
    SRWLOCK lock = SRWLOCK_INIT;
    CreateDescriptorHeapFn original = nullptr;
    std::vector<Pooled> heaps;
    HeapPoolCounts counts;
};

Pool& pool() {
    static Pool p;
    return p;
}

// Whether only the pool holds the heap: its count after an AddRef/Release pair. Nothing else can take a reference
// to a heap no one else holds, so the answer cannot change under the caller.
bool released(ID3D12DescriptorHeap* heap) {
    heap->AddRef();
    return heap->Release() == 1;
}

UINT pooled_size(UINT wanted) {
    if (wanted > 65536) return wanted;
    UINT size = 1024;
    while (size < wanted) size *= 2;
    return size;
}

HRESULT STDMETHODCALLTYPE create_descriptor_heap(ID3D12Device* self, const D3D12_DESCRIPTOR_HEAP_DESC* desc,
                                                  REFIID riid, void** out) {
    Pool& p = pool();
    if (!desc || !out || !(desc->Flags & D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE))
        return p.original(self, desc, riid, out);
    AcquireSRWLockExclusive(&p.lock);
    Pooled* best = nullptr;
    for (Pooled& entry : p.heaps)
        if (entry.desc.Type == desc->Type && entry.desc.Flags == desc->Flags && entry.desc.NodeMask == desc->NodeMask &&
            entry.desc.NumDescriptors >= desc->NumDescriptors && (!best || entry.desc.NumDescriptors <
                                                                               best->desc.NumDescriptors) &&
            released(entry.heap))
            best = &entry;
    HRESULT hr;
    if (best) {
        hr = best->heap->QueryInterface(riid, out);
        if (SUCCEEDED(hr)) p.counts.reused++;
    } else {
        D3D12_DESCRIPTOR_HEAP_DESC bigger = *desc;
        bigger.NumDescriptors = pooled_size(desc->NumDescriptors);
        ID3D12DescriptorHeap* heap = nullptr;
        hr = p.original(self, &bigger, __uuidof(ID3D12DescriptorHeap), reinterpret_cast<void**>(&heap));
        if (FAILED(hr) && bigger.NumDescriptors != desc->NumDescriptors) {  // the rounding asked too much: as asked
            bigger = *desc;
            hr = p.original(self, desc, __uuidof(ID3D12DescriptorHeap), reinterpret_cast<void**>(&heap));
        }
        if (SUCCEEDED(hr)) {
            p.heaps.push_back({heap, bigger});
            p.counts.created++;
            hr = heap->QueryInterface(riid, out);
        }
    }
    ReleaseSRWLockExclusive(&p.lock);
    return hr;
}

}  // namespace

std::string install_heap_pool(ID3D12Device* device) {
    return hook_vtable_slot_once(device, kCreateDescriptorHeapSlot, &create_descriptor_heap, &pool().original);
}

HeapPoolCounts heap_pool_counts() {
    Pool& p = pool();
    AcquireSRWLockShared(&p.lock);
    HeapPoolCounts counts = p.counts;
    ReleaseSRWLockShared(&p.lock);
    return counts;
}
