// device.cpp - the harness's device (see device.h).
#include "device.h"

using dmlh::hr_text;
using dmlh::strf;

std::string init_device(Device& dev) {
    std::string err = dmlh::create_dml_device(dev, dev.opt);
    if (!err.empty()) return err;
    HRESULT hr;
    if (FAILED(hr = dev.d3d->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_DIRECT, __uuidof(ID3D12CommandAllocator),
                                                    dev.allocator.put())))
        return "ID3D12Device::CreateCommandAllocator: " + hr_text(hr);
    if (FAILED(hr = dev.d3d->CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_DIRECT, dev.allocator.get(), nullptr,
                                               __uuidof(ID3D12GraphicsCommandList), dev.list.put())))
        return "ID3D12Device::CreateCommandList: " + hr_text(hr);
    dev.list->Close();  // recording starts per submission
    if (FAILED(hr = dev.d3d->CreateFence(0, D3D12_FENCE_FLAG_NONE, __uuidof(ID3D12Fence), dev.fence.put())))
        return "ID3D12Device::CreateFence: " + hr_text(hr);
    dev.event = CreateEventW(nullptr, FALSE, FALSE, nullptr);
    if (!dev.event) return strf("CreateEvent: error %lu", GetLastError());
    if (FAILED(hr = dev.dml->CreateCommandRecorder(DMLH_IID(IDMLCommandRecorder), dev.recorder.put())))
        return "IDMLDevice::CreateCommandRecorder: " + hr_text(hr);
    dev.mark("harness_objects");

    if (dev.opt.disable_metacommands) dev.exec_flags = DML_EXECUTION_FLAG_DISABLE_META_COMMANDS;
    dev.add_extra("dml_execution_flags", dev.opt.disable_metacommands ? "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS"
                                                                       : "DML_EXECUTION_FLAG_NONE");
    dev.add_extra("output_poison", dev.opt.poison < 0 ? "none" : strf("0x%02X per byte", dev.opt.poison));
    dev.add_extra("fence_timeout_ms", strf("%lu", (unsigned long)dev.opt.fence_timeout_ms));
    return std::string();
}
