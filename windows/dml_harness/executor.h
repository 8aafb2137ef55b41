// executor.h - running one packed case on the device: its operator created and compiled, one buffer per input
// filled with its bytes and the output's with the poison, bound whole, run by dispatch.h (initializer and operator
// recorded into one command list, submitted), and the output read back; the buffers and descriptor heap every case
// reuses.
#pragma once

#include "descriptions.h"
#include "operators.h"
#include "replies.h"

struct Harness;

// The shader-visible descriptor heap every case's binding tables are written into, grown when a case needs more.
// Creating one costs seconds on Wine's vkd3d 1.6 over lavapipe whatever its size (most of it zeroing a fresh
// allocation), far more than everything else a case does, so it is made once, not per case (--heap-per-case
// still does that). Rewriting its descriptors is safe: every submission is waited for before the next case
// begins. The heap lives as long as the device (process exit releases both).
struct CaseHeap {
    ID3D12DescriptorHeap* heap = nullptr;
    UINT size = 0;
};

// One buffer a case uses, kept for the next case (up to 64 MiB) and grown by powers of two when a case needs more. Creating and
// releasing committed resources is most of what a case costs on a GPU driver (a memory allocation each, under
// vkd3d); a case still sees exactly what a fresh buffer would show it: before any work, the bytes it binds and the
// rest up to a 256-byte boundary are written (inputs and zeros, the poison or zeros for the output, zeros for the
// temporary and persistent resources). --buffers-per-case makes them afresh for every case (the old way).
struct CaseBuffer {
    dmlh::Com<ID3D12Resource> resource;
    UINT64 capacity = 0;
    D3D12_RESOURCE_STATES state = D3D12_RESOURCE_STATE_COMMON;
};

// The most buffer images one request binds (bound_run.h): two inputs, an output and its graph copy, with room.
constexpr int kMaxImages = 8;

struct CaseBuffers {
    CaseBuffer in[2], out, temp, persistent;  // DEFAULT heap, unordered access
    CaseBuffer upload, readback;              // UPLOAD, READBACK heaps
    CaseBuffer image[kMaxImages];             // DEFAULT heap, unordered access: the buffers of a request's images
};

// Creates, compiles, initializes and dispatches the operator; the output read back into the reply's data.
Reply execute(Harness& h, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out);

// Releases the buffers --buffers-per-case makes for each case, and otherwise those above 64 MiB; timed as the case's
// release.
void release_case_buffers(Harness& h);

// The shared descriptor heap made before the first request (not with --heap-per-case): right after the handshake,
// while the runner is still loading its suites, instead of at the first case. Failing here is left to that case.
void make_heap_early(Harness& h);
