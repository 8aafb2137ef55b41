// recording.h - what every dispatchable's run records and submits on the device: the command list begun, closed,
// executed and waited for (a lost device ends the process), barriers, the shared descriptor heap (executor.h's
// CaseHeap), the reused buffers made or grown and filled from the upload buffer (CaseBuffers). Used by the run that
// the packed cases (executor.cpp) and the cases with buffer images (bound_run.cpp) share (dispatch.cpp).
#pragma once

#include <string>

#include "executor.h"

inline UINT64 align_up(UINT64 v, UINT64 a) { return (v + a - 1) / a * a; }

DML_BINDING_PROPERTIES binding_properties(IDMLDispatchable* d);  // IDMLDispatchable::GetBindingProperties
D3D12_CPU_DESCRIPTOR_HANDLE heap_cpu_start(ID3D12DescriptorHeap* h);
D3D12_GPU_DESCRIPTOR_HANDLE heap_gpu_start(ID3D12DescriptorHeap* h);
D3D12_CPU_DESCRIPTOR_HANDLE cpu_at(D3D12_CPU_DESCRIPTOR_HANDLE base, UINT index, UINT increment);
D3D12_GPU_DESCRIPTOR_HANDLE gpu_at(D3D12_GPU_DESCRIPTOR_HANDLE base, UINT index, UINT increment);

void uav_barrier(ID3D12GraphicsCommandList* list);  // every UAV access
// The device's allocator and command list reset; false with `r` filled on failure.
bool begin_list(Harness& h, Reply& r, const char* what);
// Closes, executes and waits for the command list; false with `r` filled on failure (a lost device: no return).
bool submit(Harness& h, Reply& r, const char* what);

// The shared heap, made or grown to hold `descriptors`.
HRESULT case_descriptor_heap(Device& dev, CaseHeap& shared, UINT descriptors, ID3D12DescriptorHeap*& heap);
// The buffer, made or grown to hold `size` bytes (rounded up to 256, as a fresh buffer of the case's own would be):
// by powers of two from 64 KiB, or exactly with --buffers-per-case.
HRESULT ensure_buffer(Device& dev, CaseBuffer& b, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES initial,
                      D3D12_RESOURCE_FLAGS flags);
// A resource barrier to `state` when the buffer is in another.
void move_to(ID3D12GraphicsCommandList* list, CaseBuffer& b, D3D12_RESOURCE_STATES state);
// `bytes` of the upload buffer at `offset` copied to the start of `b`, which is left for unordered access.
void fill(ID3D12GraphicsCommandList* list, CaseBuffer& b, ID3D12Resource* upload, UINT64 offset, UINT64 bytes);
// Every reused buffer dropped (after a failed case: the states recorded for them may not have been reached).
void forget_buffers(CaseBuffers& bufs);
