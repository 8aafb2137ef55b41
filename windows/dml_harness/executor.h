// executor.h - running one case on the device: its operator created, compiled and initialized, its buffers,
// the command lists recorded and submitted, the output read back.
#pragma once

#include "descriptions.h"
#include "operators.h"
#include "replies.h"

struct Harness;

// The shader-visible descriptor heap every case's binding table is written into, grown when a case needs more.
// Creating one costs seconds on Wine's vkd3d 1.6 over lavapipe whatever its size (most of it zeroing a fresh
// allocation), far more than everything else a case does, so it is made once, not per case (--heap-per-case
// still does that); a case's table starts at the heap's first descriptor either way. Rewriting those
// descriptors is safe: every submission is waited for before the next case begins. The heap lives as long as
// the device (process exit releases both).
struct CaseHeap {
    ID3D12DescriptorHeap* heap = nullptr;
    UINT size = 0;
};

// Creates, compiles, initializes and dispatches the operator; reads the output back.
Reply execute(Harness& h, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out);
