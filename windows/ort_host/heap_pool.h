// heap_pool.h - shader-visible descriptor heaps kept for reuse across the DML EP's sessions (--ep dml under Wine).
//
// Every DML EP session creates shader-visible descriptor heaps of its own (its command recorder's pool, and one for
// each operator or fused graph it initializes) and releases them with the session. Under Wine's vkd3d 1.6 over
// lavapipe a shader-visible heap costs about a second and 1.5 GB of freshly zeroed memory whatever its size (vkd3d
// sizes its Vulkan descriptor pools from the device's limits), which was nearly all of a case's time on that stack.
// The pool hooks the device's CreateDescriptorHeap: a shader-visible heap whose every reference but the pool's own
// was released is handed out again (one at least as large, of the same type, flags and node mask), else a new one
// is made, its size rounded up to a power of two (from 1,024 to 65,536 descriptors) so that later requests fit.
// A D3D12 program may release a heap only once the GPU is done with it, and never relies on what a new heap holds,
// so a session sees what it would see in a heap of its own. --fresh-heaps turns the pool off.
#pragma once

#include <string>

#include "d3d12_device.h"

// Hooks the device's CreateDescriptorHeap (its vtable's slot, shared by every device of the process: the host makes
// one); "" or why it could not.
std::string install_heap_pool(ID3D12Device* device);

// Heaps the pool made and heaps it handed out again, for the host's log and its hello.
struct HeapPoolCounts {
    unsigned long long created = 0, reused = 0;
};
HeapPoolCounts heap_pool_counts();
