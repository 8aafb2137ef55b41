// d3d12_device.cpp - the D3D12 + DirectML device the project's Windows programs share (see d3d12_device.h).
#include "d3d12_device.h"

#include <cstdio>
#include <cstring>
#include <cstdlib>

namespace dmlh {

const char* const kTypeNames[12] = {"UNKNOWN", "FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8",
                                    "INT32",   "INT16",   "INT8",    "FLOAT64", "UINT64", "INT64"};
const unsigned kTypeBytes[12] = {0, 4, 2, 4, 2, 1, 4, 2, 1, 8, 8, 8};

std::string level_label(unsigned level) {
    return strf("%u_%u", (level >> 12) & 0xF, (level >> 8) & 0xF);
}

// Loads DirectML.dll; returns an error message or "".
static std::string load_directml(DmlDevice& dev, const DeviceOptions& opt) {
    LoadedModule loaded = load_module(opt.dml_path, "DirectML.dll");
    if (!loaded.module)
        return "cannot load DirectML.dll (" + loaded.why + "); pass --dml PATH or put DirectML.dll next to the program";
    dev.dml_module = loaded.module;
    dev.dml_path = loaded.path;
    dev.dml_version = loaded.version;
    return std::string();
}

const char kDeviceUsage[] =
    "  --dml PATH              DirectML.dll to load (default: next to this exe, else the DLL search path)\n"
    "  --adapter N             DXGI adapter index (default 0)\n"
    "  --warp                  the WARP software adapter instead\n"
    "  --debug-layer           the D3D12 debug layer and DML_CREATE_DEVICE_FLAG_DEBUG\n"
    "                          (needs DirectML.Debug.dll next to DirectML.dll)\n";

const char* option_value(int argc, char** argv, int& i) {
    if (i + 1 >= argc) {
        log_line("%s needs a value", argv[i]);
        return nullptr;
    }
    return argv[++i];
}

bool reject_option(const std::string& argument, const char* usage) {
    log_line("unknown option %s", argument.c_str());
    fputs(usage, stderr);
    fputs(kDeviceUsage, stderr);
    return false;
}

OptionRead read_device_option(int argc, char** argv, int& i, DeviceOptions& opt) {
    const std::string a = argv[i];
    if (a == "--warp") {
        opt.warp = true;
    } else if (a == "--debug-layer") {
        opt.debug_layer = true;
    } else if (a == "--dml" || a == "--adapter") {
        const char* v = option_value(argc, argv, i);
        if (!v) return OptionRead::kBad;
        if (a == "--dml") {
            opt.dml_path = v;
        } else {
            opt.adapter = atoi(v);
        }
    } else {
        return OptionRead::kNotMine;
    }
    return OptionRead::kTaken;
}

std::string create_dml_device(DmlDevice& dev, const DeviceOptions& opt) {
    dev.mark("begin");
    std::string err = load_directml(dev, opt);
    if (!err.empty()) return err;
    dev.mark("directml_loaded");
    auto create1 = reinterpret_cast<PFN_DMLCreateDevice1>(
        reinterpret_cast<void*>(GetProcAddress(dev.dml_module, "DMLCreateDevice1")));
    auto create0 = reinterpret_cast<PFN_DMLCreateDevice>(
        reinterpret_cast<void*>(GetProcAddress(dev.dml_module, "DMLCreateDevice")));
    if (!create1 && !create0) return dev.dml_path + " exports neither DMLCreateDevice1 nor DMLCreateDevice";

    // Debug layer first: it must be on before the D3D12 device exists.
    std::string d3d_debug = "off";
    if (opt.debug_layer) {
        Com<ID3D12Debug> debug;
        HRESULT hr = D3D12GetDebugInterface(__uuidof(ID3D12Debug), debug.put());
        if (SUCCEEDED(hr) && debug) {
            debug->EnableDebugLayer();
            d3d_debug = "on";
        } else {
            d3d_debug = "unavailable (D3D12GetDebugInterface: " + hr_text(hr) + ")";
        }
    }

    Com<IDXGIFactory4> factory;
    HRESULT hr = CreateDXGIFactory1(__uuidof(IDXGIFactory4), factory.put());
    if (FAILED(hr)) return "CreateDXGIFactory1(IDXGIFactory4): " + hr_text(hr);
    dev.mark("dxgi_factory");
    if (opt.warp) hr = factory->EnumWarpAdapter(__uuidof(IDXGIAdapter1), dev.adapter.put());
    else hr = factory->EnumAdapters1(UINT(opt.adapter), dev.adapter.put_typed());
    if (FAILED(hr))
        return opt.warp ? "IDXGIFactory4::EnumWarpAdapter: " + hr_text(hr)
                        : strf("IDXGIFactory1::EnumAdapters1(%d): ", opt.adapter) + hr_text(hr);
    DXGI_ADAPTER_DESC1 desc;
    memset(&desc, 0, sizeof desc);
    hr = dev.adapter->GetDesc1(&desc);
    if (SUCCEEDED(hr)) {
        dev.adapter_name = utf8(desc.Description);
        dev.add_extra("adapter_source", opt.warp ? "IDXGIFactory4::EnumWarpAdapter + IDXGIAdapter1::GetDesc1"
                                                 : strf("IDXGIFactory1::EnumAdapters1(%d) + IDXGIAdapter1::GetDesc1",
                                                        opt.adapter));
        dev.add_extra("adapter_vendor_device", strf("%04X:%04X", desc.VendorId, desc.DeviceId));
        dev.add_extra("adapter_luid", strf("%08lX:%08lX", (unsigned long)desc.AdapterLuid.HighPart,
                                           (unsigned long)desc.AdapterLuid.LowPart));
        dev.add_extra("adapter_software", (desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE) ? "yes" : "no");
        dev.add_extra("adapter_dedicated_video_memory_mib",
                      strf("%llu", (unsigned long long)(desc.DedicatedVideoMemory >> 20)));
    } else {
        dev.adapter_name = "unknown adapter (IDXGIAdapter1::GetDesc1: " + hr_text(hr) + ")";
    }
    LARGE_INTEGER umd;
    umd.QuadPart = 0;
    hr = dev.adapter->CheckInterfaceSupport(__uuidof(IDXGIDevice), &umd);
    if (SUCCEEDED(hr))
        dev.driver_version = strf("%u.%u.%u.%u", HIWORD(umd.HighPart), LOWORD(umd.HighPart), HIWORD(umd.LowPart),
                                  LOWORD(umd.LowPart));
    else
        dev.driver_version = "unknown (IDXGIAdapter::CheckInterfaceSupport(IDXGIDevice): " + hr_text(hr) + ")";

    dev.mark("dxgi_adapter");
    hr = D3D12CreateDevice(dev.adapter.get(), D3D_FEATURE_LEVEL_11_0, __uuidof(ID3D12Device), dev.d3d.put());
    if (FAILED(hr)) return "D3D12CreateDevice(feature level 11_0): " + hr_text(hr);
    dev.mark("d3d12_device");

    // D3D facts for `extra`.
    D3D_FEATURE_LEVEL levels[] = {D3D_FEATURE_LEVEL_11_0, D3D_FEATURE_LEVEL_11_1, D3D_FEATURE_LEVEL_12_0,
                                  D3D_FEATURE_LEVEL_12_1};
    D3D12_FEATURE_DATA_FEATURE_LEVELS fl = {UINT(sizeof levels / sizeof levels[0]), levels, D3D_FEATURE_LEVEL_11_0};
    hr = dev.d3d->CheckFeatureSupport(D3D12_FEATURE_FEATURE_LEVELS, &fl, sizeof fl);
    dev.add_extra("d3d_feature_level",
                  SUCCEEDED(hr) ? strf("%u_%u", (unsigned(fl.MaxSupportedFeatureLevel) >> 12) & 0xF,
                                       (unsigned(fl.MaxSupportedFeatureLevel) >> 8) & 0xF)
                                : "unknown (" + hr_text(hr) + ")");
    static const unsigned shader_models[] = {0x68, 0x67, 0x66, 0x65, 0x64, 0x63, 0x62, 0x61, 0x60, 0x51};
    for (unsigned sm : shader_models) {  // a runtime that does not know a model rejects the query
        D3D12_FEATURE_DATA_SHADER_MODEL data = {D3D_SHADER_MODEL(sm)};
        if (SUCCEEDED(dev.d3d->CheckFeatureSupport(D3D12_FEATURE_SHADER_MODEL, &data, sizeof data))) {
            dev.add_extra("d3d_shader_model", strf("%u_%u", (unsigned(data.HighestShaderModel) >> 4) & 0xF,
                                                   unsigned(data.HighestShaderModel) & 0xF));
            break;
        }
    }

    DML_CREATE_DEVICE_FLAGS flags = opt.debug_layer ? DML_CREATE_DEVICE_FLAG_DEBUG : DML_CREATE_DEVICE_FLAG_NONE;
    std::string dml_debug = "off";
    auto create = [&](DML_CREATE_DEVICE_FLAGS f) -> HRESULT {
        return create1 ? create1(dev.d3d.get(), f, DML_FEATURE_LEVEL_1_0, DMLH_IID(IDMLDevice), dev.dml.put())
                       : create0(dev.d3d.get(), f, DMLH_IID(IDMLDevice), dev.dml.put());
    };
    hr = create(flags);
    if (FAILED(hr) && flags != DML_CREATE_DEVICE_FLAG_NONE) {
        dml_debug = "unavailable (DML_CREATE_DEVICE_FLAG_DEBUG: " + hr_text(hr) +
                    "; DirectML.Debug.dll must sit next to DirectML.dll)";
        log_line("DirectML debug layer unavailable (%s); continuing without it", hr_text(hr).c_str());
        hr = create(DML_CREATE_DEVICE_FLAG_NONE);
    } else if (SUCCEEDED(hr) && flags != DML_CREATE_DEVICE_FLAG_NONE) {
        dml_debug = "on";
    }
    if (FAILED(hr))
        return std::string(create1 ? "DMLCreateDevice1(minimum 1_0)" : "DMLCreateDevice") + ": " + hr_text(hr);
    dev.mark("dml_device");
    dev.add_extra("dml_create_device", create1 ? "DMLCreateDevice1 (minimum feature level 1_0)" : "DMLCreateDevice");

    // Feature level: ask DirectML. A DLL older than the header may reject levels it does not know,
    // so the list is shortened from the top until the query succeeds.
    static const DML_FEATURE_LEVEL all_levels[] = {
        DML_FEATURE_LEVEL_1_0, DML_FEATURE_LEVEL_2_0, DML_FEATURE_LEVEL_2_1, DML_FEATURE_LEVEL_3_0,
        DML_FEATURE_LEVEL_3_1, DML_FEATURE_LEVEL_4_0, DML_FEATURE_LEVEL_4_1, DML_FEATURE_LEVEL_5_0,
        DML_FEATURE_LEVEL_5_1, DML_FEATURE_LEVEL_5_2, DML_FEATURE_LEVEL_6_0, DML_FEATURE_LEVEL_6_1,
#if DML_TARGET_VERSION >= 0x6200
        DML_FEATURE_LEVEL_6_2,
#endif
#if DML_TARGET_VERSION >= 0x6300
        DML_FEATURE_LEVEL_6_3,
#endif
#if DML_TARGET_VERSION >= 0x6400
        DML_FEATURE_LEVEL_6_4,
#endif
    };
    UINT count = UINT(sizeof all_levels / sizeof all_levels[0]);
    for (; count > 0; count--) {
        DML_FEATURE_QUERY_FEATURE_LEVELS query = {count, all_levels};
        DML_FEATURE_DATA_FEATURE_LEVELS data;
        memset(&data, 0, sizeof data);
        hr = dev.dml->CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, sizeof query, &query, sizeof data, &data);
        if (SUCCEEDED(hr)) {
            dev.feature_level = unsigned(data.MaxSupportedFeatureLevel);
            dev.feature_level_source = strf("IDMLDevice::CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS) over "
                                            "1_0..%s", level_label(unsigned(all_levels[count - 1])).c_str());
            break;
        }
    }
    if (!dev.feature_level) return "IDMLDevice::CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS): " + hr_text(hr);

    std::string types;
    for (int t = 1; t <= kTypeCount; t++) {
        DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT query = {DML_TENSOR_DATA_TYPE(t)};
        DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT data;
        memset(&data, 0, sizeof data);
        hr = dev.dml->CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof query, &query, sizeof data,
                                          &data);
        dev.type_supported[t] = SUCCEEDED(hr) && data.IsSupported;
        if (dev.type_supported[t]) types += std::string(types.empty() ? "" : ", ") + kTypeNames[t];
        else if (FAILED(hr)) log_line("DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT(%s): %s", kTypeNames[t], hr_text(hr).c_str());
    }
    dev.add_extra("dml_tensor_data_types", types + " (DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT)");

    D3D12_COMMAND_QUEUE_DESC qd;
    memset(&qd, 0, sizeof qd);
    qd.Type = D3D12_COMMAND_LIST_TYPE_DIRECT;
    if (FAILED(hr = dev.d3d->CreateCommandQueue(&qd, __uuidof(ID3D12CommandQueue), dev.queue.put())))
        return "ID3D12Device::CreateCommandQueue: " + hr_text(hr);
    dev.mark("queue");
    if (opt.debug_layer && FAILED(dev.d3d->QueryInterface(__uuidof(ID3D12InfoQueue), dev.info_queue.put())))
        dev.info_queue.reset();

    dev.add_extra("d3d12_debug_layer", d3d_debug);
    dev.add_extra("dml_debug_layer", dml_debug);
    dev.add_extra("dml_info_queue", dev.info_queue ? "ID3D12InfoQueue (messages quoted in refusals)" : "none");
    dev.add_extra("directml_dll", dev.dml_path);
    dev.add_extra("headers", DMLH_HEADERS);
    std::string compiler = compiler_name(), wine = wine_version();
    if (!compiler.empty()) dev.add_extra("compiler", compiler);
    if (!wine.empty()) dev.add_extra("wine", wine);
    return std::string();
}

HRESULT create_buffer(ID3D12Device* d3d, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES state,
                      D3D12_RESOURCE_FLAGS flags, ID3D12Resource** out) {
    D3D12_HEAP_PROPERTIES hp;
    memset(&hp, 0, sizeof hp);
    hp.Type = heap;
    D3D12_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof rd);
    rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    rd.Width = (size ? size + 255 : 256) / 256 * 256;
    rd.Height = rd.DepthOrArraySize = rd.MipLevels = 1;
    rd.Format = DXGI_FORMAT_UNKNOWN;
    rd.SampleDesc.Count = 1;
    rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    rd.Flags = flags;
    return d3d->CreateCommittedResource(&hp, D3D12_HEAP_FLAG_NONE, &rd, state, nullptr, __uuidof(ID3D12Resource),
                                        reinterpret_cast<void**>(out));
}

}  // namespace dmlh
