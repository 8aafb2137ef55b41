// buffer_pool.cpp - committed buffers reused across sessions (see buffer_pool.h).
#include "buffer_pool.h"

#include <vector>

#include "vtable_hook.h"

namespace {

typedef HRESULT(STDMETHODCALLTYPE* CreateCommittedResourceFn)(ID3D12Device* self,
                                                             const D3D12_HEAP_PROPERTIES* heap_properties,
                                                             D3D12_HEAP_FLAGS heap_flags,
                                                             const D3D12_RESOURCE_DESC* desc,
                                                             D3D12_RESOURCE_STATES initial_state,
                                                             const D3D12_CLEAR_VALUE* clear_value, REFIID riid,
                                                             void** resource);

// ID3D12Device's vtable: IUnknown (3), ID3D12Object (4), then GetNodeCount ... GetCustomHeapProperties (20 methods),
// then CreateCommittedResource: the D3D12 ABI, the same in every later ID3D12DeviceN.
constexpr int kCreateCommittedResourceSlot = 27;
// Idle buffers kept at most; a session of the standard tier holds well under a megabyte of them.
constexpr unsigned long long kMaxIdleBytes = 256ull << 20;

struct Pooled {
    ID3D12Resource* resource;  // the pool's own reference
    D3D12_HEAP_PROPERTIES heap;
    D3D12_HEAP_FLAGS flags;
    D3D12_RESOURCE_DESC desc;
    D3D12_RESOURCE_STATES state;
    bool mapped;
    unsigned long long last_use;
};

struct Pool {
    SRWLOCK lock = SRWLOCK_INIT;
    CreateCommittedResourceFn original = nullptr;
    std::vector<Pooled> buffers;
    unsigned long long uses = 0;
    BufferPoolCounts counts;
};

Pool& pool() {
    static Pool p;
    return p;
}

// Whether only the pool holds the buffer: its count after an AddRef/Release pair. Nothing else can take a reference
// to a buffer no one else holds, so the answer cannot change under the caller.
bool released(ID3D12Resource* resource) {
    resource->AddRef();
    return resource->Release() == 1;
}

// Field by field: a D3D12_RESOURCE_DESC has padding, whose bytes are whatever the caller's stack held.
bool same(const Pooled& entry, const D3D12_HEAP_PROPERTIES& heap, D3D12_HEAP_FLAGS flags,
          const D3D12_RESOURCE_DESC& desc, D3D12_RESOURCE_STATES state) {
    const D3D12_HEAP_PROPERTIES& h = entry.heap;
    const D3D12_RESOURCE_DESC& d = entry.desc;
    return entry.flags == flags && entry.state == state && h.Type == heap.Type &&
           h.CPUPageProperty == heap.CPUPageProperty && h.MemoryPoolPreference == heap.MemoryPoolPreference &&
           h.CreationNodeMask == heap.CreationNodeMask && h.VisibleNodeMask == heap.VisibleNodeMask &&
           d.Dimension == desc.Dimension && d.Alignment == desc.Alignment && d.Width == desc.Width &&
           d.Height == desc.Height && d.DepthOrArraySize == desc.DepthOrArraySize && d.MipLevels == desc.MipLevels &&
           d.Format == desc.Format && d.SampleDesc.Count == desc.SampleDesc.Count &&
           d.SampleDesc.Quality == desc.SampleDesc.Quality && d.Layout == desc.Layout && d.Flags == desc.Flags;
}

bool cpu_visible(const D3D12_HEAP_PROPERTIES& heap) {
    return heap.Type == D3D12_HEAP_TYPE_UPLOAD || heap.Type == D3D12_HEAP_TYPE_READBACK ||
           (heap.Type == D3D12_HEAP_TYPE_CUSTOM && heap.CPUPageProperty != D3D12_CPU_PAGE_PROPERTY_NOT_AVAILABLE);
}

void free_entry(Pooled& entry) {
    if (entry.mapped) entry.resource->Unmap(0, nullptr);
    entry.resource->Release();
}

// Frees idle buffers, the longest idle first, until those left take at most kMaxIdleBytes.
void trim(Pool& p) {
    unsigned long long idle = 0;
    for (const Pooled& entry : p.buffers)
        if (released(entry.resource)) idle += entry.desc.Width;
    while (idle > kMaxIdleBytes) {
        size_t oldest = p.buffers.size();
        for (size_t i = 0; i < p.buffers.size(); i++)
            if (released(p.buffers[i].resource) &&
                (oldest == p.buffers.size() || p.buffers[i].last_use < p.buffers[oldest].last_use))
                oldest = i;
        if (oldest == p.buffers.size()) return;
        idle -= p.buffers[oldest].desc.Width;
        free_entry(p.buffers[oldest]);
        p.buffers.erase(p.buffers.begin() + static_cast<std::ptrdiff_t>(oldest));
        p.counts.freed++;
    }
}

HRESULT STDMETHODCALLTYPE create_committed_resource(ID3D12Device* self, const D3D12_HEAP_PROPERTIES* heap,
                                                     D3D12_HEAP_FLAGS flags, const D3D12_RESOURCE_DESC* desc,
                                                     D3D12_RESOURCE_STATES state, const D3D12_CLEAR_VALUE* clear,
                                                     REFIID riid, void** out) {
    Pool& p = pool();
    if (!heap || !desc || !out || clear || desc->Dimension != D3D12_RESOURCE_DIMENSION_BUFFER)
        return p.original(self, heap, flags, desc, state, clear, riid, out);
    AcquireSRWLockExclusive(&p.lock);
    HRESULT hr = E_FAIL;
    Pooled* found = nullptr;
    for (Pooled& entry : p.buffers)
        if (same(entry, *heap, flags, *desc, state) && released(entry.resource)) {
            found = &entry;
            break;
        }
    if (found) {
        hr = found->resource->QueryInterface(riid, out);
        if (SUCCEEDED(hr)) {
            found->last_use = ++p.uses;
            p.counts.reused++;
        }
    } else {
        ID3D12Resource* resource = nullptr;
        hr = p.original(self, heap, flags, desc, state, nullptr, __uuidof(ID3D12Resource),
                        reinterpret_cast<void**>(&resource));
        if (SUCCEEDED(hr)) {
            void* data = nullptr;
            const D3D12_RANGE nothing = {0, 0};
            // Kept mapped while pooled: a user's own Map and Unmap then only count (vkd3d maps a heap once).
            const bool mapped = cpu_visible(*heap) && SUCCEEDED(resource->Map(0, &nothing, &data));
            hr = resource->QueryInterface(riid, out);
            if (SUCCEEDED(hr)) {
                p.buffers.push_back({resource, *heap, flags, *desc, state, mapped, ++p.uses});
                p.counts.created++;
                trim(p);
            } else {
                if (mapped) resource->Unmap(0, nullptr);
                resource->Release();
            }
        }
    }
    ReleaseSRWLockExclusive(&p.lock);
    return hr;
}

}  // namespace

std::string install_buffer_pool(ID3D12Device* device) {
    return hook_vtable_slot_once(device, kCreateCommittedResourceSlot, &create_committed_resource, &pool().original);
}

BufferPoolCounts buffer_pool_counts() {
    Pool& p = pool();
    AcquireSRWLockShared(&p.lock);
    BufferPoolCounts counts = p.counts;
    ReleaseSRWLockShared(&p.lock);
    return counts;
}
