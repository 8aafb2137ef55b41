// device.h - the harness's device: D3D12 + DirectML (d3d12_device.h) and what the harness records on it,
// created once.
#pragma once

#include <string>

#include "d3d12_device.h"
#include "options.h"

struct Device : dmlh::DmlDevice {
    Options opt;
    dmlh::Com<ID3D12CommandAllocator> allocator;
    dmlh::Com<ID3D12GraphicsCommandList> list;
    dmlh::Com<ID3D12Fence> fence;
    UINT64 fence_value = 0;
    HANDLE event = nullptr;
    dmlh::Com<IDMLCommandRecorder> recorder;
    DML_EXECUTION_FLAGS exec_flags = DML_EXECUTION_FLAG_NONE;
};

// Creates everything; returns an error message or "".
std::string init_device(Device& dev);
