// d3d12_device.h - the D3D12 + DirectML device the project's Windows programs run on (DXGI adapter -> D3D12
// device at feature level 11_0 -> IDMLDevice from DirectML.dll loaded at run time -> a DIRECT command queue) and
// the device's command-line options. Used by the DirectML harness (../dml_harness) and by the ONNX Runtime host
// (../ort_host), which hands this device and queue to ONNX Runtime's DirectML execution provider: under Wine, ONNX
// Runtime's own adapter selection fails (CreateDXGIFactory in dml_provider_factory.cc: DXGI_ERROR_UNSUPPORTED), a
// process's own device does not.
#pragma once

#include "util.h"
#include "directml_api.h"

#include <d3d12sdklayers.h>
#include <dxgi1_4.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace dmlh {

std::string level_label(unsigned level);  // 0x6400 -> "6_4"

// DML_TENSOR_DATA_TYPE names and element sizes, indexed by the enum value (1..11).
extern const char* const kTypeNames[12];
extern const unsigned kTypeBytes[12];
constexpr int kTypeCount = 11;

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
    // When each step of the device's creation ended (QueryPerformanceCounter), for the programs' --timings start
    // line: where a start's time goes, and which step is contended when several programs start at once.
    std::vector<std::pair<const char*, LONGLONG>> startup_marks;

    void add_extra(const std::string& key, const std::string& value) { extra.emplace_back(key, value); }
    void mark(const char* step) { startup_marks.emplace_back(step, qpc_now()); }
};

// Loads DirectML.dll and creates the adapter, D3D12 device, IDMLDevice and command queue; returns an error
// message, or "" on success.
std::string create_dml_device(DmlDevice& dev, const DeviceOptions& opt);

// A committed buffer of at least `size` bytes (rounded up to 256, at least 256) in a heap of the given type.
HRESULT create_buffer(ID3D12Device* d3d, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES state,
                      D3D12_RESOURCE_FLAGS flags, ID3D12Resource** out);

// The device's command-line options, the same in every program: --dml PATH, --adapter N, --warp, --debug-layer.
// kDeviceUsage is their usage lines. read_device_option takes argv[i] (and its value, moving i past it) into `opt`
// when it is one of them: kTaken; kNotMine for any other argument; kBad (logged) for one without its value.
extern const char kDeviceUsage[];
enum class OptionRead { kTaken, kNotMine, kBad };
OptionRead read_device_option(int argc, char** argv, int& i, DeviceOptions& opt);
// The value of the option argv[i] (moving i to it), or null (logged) when the command line ends there.
const char* option_value(int argc, char** argv, int& i);
// An argument that is no option of the program: logged, then the program's usage and the device's; returns false.
bool reject_option(const std::string& argument, const char* usage);

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
