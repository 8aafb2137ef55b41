// d3d12_device.h - what the Windows programs of this project share: COM ownership, HRESULT text, logging,
// and the D3D12 + DirectML device they run on (DXGI adapter -> D3D12 device at feature level 11_0 -> IDMLDevice
// from DirectML.dll loaded at run time -> a DIRECT command queue). Used by the DirectML harness
// (dml_harness.cpp) and by the ONNX Runtime host (../ort_dml_host/ort_dml_host.cpp), which hands this device and
// queue to ONNX Runtime's DirectML execution provider: under Wine, ONNX Runtime's own adapter selection fails
// (CreateDXGIFactory in dml_provider_factory.cc: DXGI_ERROR_UNSUPPORTED), a process's own device does not.
#pragma once

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include "directml_api.h"

#include <d3d12sdklayers.h>
#include <dxgi1_4.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace dmlh {

// ---------------------------------------------------------------------------------------------
// Text and logging.
// ---------------------------------------------------------------------------------------------
// Every log line starts with this ("dml-harness: " unless the program says otherwise).
extern const char* g_log_prefix;
void log_line(const char* fmt, ...);
std::string strf(const char* fmt, ...);
std::string utf8(const wchar_t* w);
std::wstring widen(const std::string& s);
std::string hr_text(HRESULT hr);   // "E_INVALIDARG (0x80070057)" or "HRESULT 0x........"
bool is_device_loss(HRESULT hr);   // DXGI_ERROR_DEVICE_REMOVED, _HUNG, _RESET, _DRIVER_INTERNAL_ERROR
std::string level_label(unsigned level);  // 0x6400 -> "6_4"
std::string file_version(const wchar_t* path);  // "1.15.4.0" from the file's VS_FIXEDFILEINFO, or ""
std::string exe_dir();  // the folder of the running program, UTF-8
std::string compiler_name();  // "mingw-w64 g++ 12.2.0", "MSVC 1939"
std::string wine_version();   // wine_get_version() from ntdll under Wine; "" on Windows

// A DLL loaded from the given path, else from beside the program, else from the DLL search path: the first of
// those that loads. A path with a folder is loaded with the altered search path, so that the DLL finds the DLLs
// beside it (onnxruntime.dll its providers and DirectML.dll).
struct LoadedModule {
    HMODULE module = nullptr;
    std::string path;     // where it was loaded from (UTF-8)
    std::string version;  // its file version, or ""
    std::string why;      // when module is null: each place tried and why it failed
};
LoadedModule load_module(const std::string& given_path, const char* file_name);

// DML_TENSOR_DATA_TYPE names and element sizes, indexed by the enum value (1..11).
extern const char* const kTypeNames[12];
extern const unsigned kTypeBytes[12];
constexpr int kTypeCount = 11;

// Owning pointer for COM objects.
template <class T>
struct Com {
    T* p = nullptr;
    Com() = default;
    Com(const Com&) = delete;
    Com& operator=(const Com&) = delete;
    ~Com() { reset(); }
    void reset() {
        if (p) p->Release();
        p = nullptr;
    }
    T* operator->() const { return p; }
    T* get() const { return p; }
    explicit operator bool() const { return p != nullptr; }
    void** put() {
        reset();
        return reinterpret_cast<void**>(&p);
    }
    T** put_typed() {
        reset();
        return &p;
    }
};

// ---------------------------------------------------------------------------------------------
// The device.
// ---------------------------------------------------------------------------------------------
struct DeviceOptions {
    std::string dml_path;  // empty: DirectML.dll next to the exe, then the DLL search path
    int adapter = 0;
    bool warp = false;
    bool debug_layer = false;
};

struct DmlDevice {
    HMODULE dml_module = nullptr;
    std::string dml_path, dml_version;
    Com<IDXGIAdapter1> adapter;
    std::string adapter_name, driver_version;
    Com<ID3D12Device> d3d;
    Com<IDMLDevice> dml;
    Com<ID3D12CommandQueue> queue;  // DIRECT
    Com<ID3D12InfoQueue> info_queue;  // with the debug layer only
    unsigned feature_level = 0;  // from IDMLDevice::CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS)
    std::string feature_level_source;
    bool type_supported[12] = {};  // DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT per DML_TENSOR_DATA_TYPE
    // Facts for a handshake's `extra`, in the order they were found.
    std::vector<std::pair<std::string, std::string>> extra;

    void add_extra(const std::string& key, const std::string& value) { extra.emplace_back(key, value); }
};

// Loads DirectML.dll and creates the adapter, D3D12 device, IDMLDevice and command queue; returns an error
// message, or "" on success.
std::string create_dml_device(DmlDevice& dev, const DeviceOptions& opt);

// The device's command-line options, the same in every program: --dml PATH, --adapter N, --warp, --debug-layer.
// kDeviceUsage is their usage lines. read_device_option takes argv[i] (and its value, moving i past it) into `opt`
// when it is one of them: kTaken; kNotMine for any other argument; kBad (logged) for one without its value.
extern const char kDeviceUsage[];
enum class OptionRead { kTaken, kNotMine, kBad };
OptionRead read_device_option(int argc, char** argv, int& i, DeviceOptions& opt);
// The value of the option argv[i] (moving i to it), or null (logged) when the command line ends there.
const char* option_value(int argc, char** argv, int& i);

// The aggregate-returning methods, called through their vtable slots with MSVC's calling convention
// (hidden result pointer after `this`), which is what DirectML.dll and d3d12.dll implement. mingw-w64
// 10's ID3D12DescriptorHeap_Get*DescriptorHandleForHeapStart (and g++'s C++ member calls) return
// such structs in a register instead, which reads garbage.
template <class R>
R call_aggregate_getter(void* object, int slot) {
    typedef R*(STDMETHODCALLTYPE * Fn)(void* self, R* result);
    Fn fn = reinterpret_cast<Fn>((*reinterpret_cast<void***>(object))[slot]);
    R result;
    memset(&result, 0, sizeof result);
    fn(object, &result);
    return result;
}

}  // namespace dmlh
