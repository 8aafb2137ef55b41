// buffer_pool.h - committed buffers kept for reuse across the DML EP's sessions (--ep dml under Wine).
//
// Every DML EP session allocates its buffers afresh (its allocator's buckets, its upload and readback heaps: ten
// committed buffers for a small graph) and frees them with the session. Under Wine's vkd3d 1.6 each committed
// buffer is a Vulkan allocation of its own, and an upload or readback buffer is mapped and unmapped around each use;
// on NVIDIA's driver every allocation, free, map and unmap takes the kernel driver's lock, shared by every process on
// the GPU. Sampled on the H100 with eight hosts, half the host threads' samples that were not idle were waits for
// that lock (os_acquire_rwlock_{read,write}), and sessions stopped scaling past four hosts.
//
// The pool hooks the device's CreateCommittedResource: a buffer whose every reference but the pool's own was
// released is handed out again to a request for the very same buffer (heap properties, heap flags, resource
// description and initial state all equal), else a new one is made and kept; CPU-visible buffers stay mapped while
// pooled, so their users' Map and Unmap cost no driver call. Idle buffers beyond kMaxIdleBytes are freed, the
// longest idle first. A D3D12 program may release a buffer only once the GPU is done with it, and what a new buffer
// holds is undefined under vkd3d (it does not zero committed memory, nor does ONNX Runtime's own allocator when it
// hands a session's freed buffer out again), so a session sees what it could see in a buffer of its own.
// Textures and resources with a clear value are not pooled. --fresh-buffers turns the pool off.
#pragma once

#include <string>

#include "d3d12_device.h"

// Hooks the device's CreateCommittedResource (its vtable's slot, shared by every device of the process: the host
// makes one); "" or why it could not.
std::string install_buffer_pool(ID3D12Device* device);

// Buffers the pool made, handed out again and freed as idle, for the host's log, its hello and --timings.
struct BufferPoolCounts {
    unsigned long long created = 0, reused = 0, freed = 0;
};
BufferPoolCounts buffer_pool_counts();
