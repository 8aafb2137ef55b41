// dml_harness.cpp - a dmlconform native harness that runs each case on DirectML.
//
// It speaks the frame protocol of docs/native-harness.md on stdin/stdout and executes the five
// gradient operators (ACTIVATION_RELU_GRAD, ELEMENT_WISE_CLIP_GRAD1, SLICE_GRAD, MAX_POOLING_GRAD,
// RESAMPLE_GRAD1) on the real DirectML.dll, which it loads at run time (LoadLibrary +
// DMLCreateDevice1). One D3D12 + DirectML device and one descriptor heap serve every case; each case
// gets its own operator, buffers and binding table.
//
//   dml_harness.exe [--dml PATH] [--adapter N | --warp] [--debug-layer] [--disable-metacommands]
//                   [--fence-timeout-ms N] [--poison BYTE|none] [--timings FILE] [--heap-per-case]
//                   [--verbose]
//
// stdout carries frames only: at start-up the harness moves the real stdout to a private
// descriptor and points descriptor 1 (and the Win32 standard output handle) at stderr, so text that
// DirectML, the D3D12 runtime or Wine might print can never corrupt the stream. Logs go to stderr.
//
// Build: Makefile (mingw-w64 cross compiler) or CMakeLists.txt (MSVC); see README.md.
#include "d3d12_device.h"

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "protocol.h"
#include "server.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::is_device_loss;
using dmlh::JValue;
using dmlh::kTypeBytes;
using dmlh::kTypeCount;
using dmlh::kTypeNames;
using dmlh::level_label;
using dmlh::log_line;
using dmlh::strf;

#define DMLH_VERSION "1.0"

// ---------------------------------------------------------------------------------------------
// The header facts the harness depends on, checked against whichever DirectML.h is in use.
// ---------------------------------------------------------------------------------------------
static_assert(DML_OPERATOR_ACTIVATION_RELU_GRAD == 129, "DML_OPERATOR_ACTIVATION_RELU_GRAD");
static_assert(DML_OPERATOR_MAX_POOLING_GRAD == 131, "DML_OPERATOR_MAX_POOLING_GRAD");
static_assert(DML_OPERATOR_SLICE_GRAD == 135, "DML_OPERATOR_SLICE_GRAD");
static_assert(DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 == 154, "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1");
static_assert(DML_OPERATOR_RESAMPLE_GRAD1 == 162, "DML_OPERATOR_RESAMPLE_GRAD1");
static_assert(DML_TENSOR_DATA_TYPE_FLOAT32 == 1 && DML_TENSOR_DATA_TYPE_FLOAT16 == 2 &&
              DML_TENSOR_DATA_TYPE_INT8 == 8 && DML_TENSOR_DATA_TYPE_INT64 == 11, "DML_TENSOR_DATA_TYPE");
static_assert(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT == 0 && DML_FEATURE_FEATURE_LEVELS == 1, "DML_FEATURE");
static_assert(DML_INTERPOLATION_MODE_LINEAR == 1 && DML_AXIS_DIRECTION_DECREASING == 1, "enums");
static_assert(sizeof(DML_SCALAR_UNION) == 8, "DML_SCALAR_UNION is 8 bytes");
#if defined(_WIN64)
static_assert(sizeof(DML_BUFFER_TENSOR_DESC) == 48, "DML_BUFFER_TENSOR_DESC layout");
static_assert(offsetof(DML_BUFFER_TENSOR_DESC, TotalTensorSizeInBytes) == 32, "DML_BUFFER_TENSOR_DESC layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, MinMaxDataType) == 24, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, Min) == 32, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, Max) == 40, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_SLICE_GRAD_OPERATOR_DESC, InputWindowStrides) == 40, "SLICE_GRAD layout");
static_assert(offsetof(DML_MAX_POOLING_GRAD_OPERATOR_DESC, Dilations) == 64, "MAX_POOLING_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD1_OPERATOR_DESC, DimensionCount) == 24, "RESAMPLE_GRAD1 layout");
static_assert(offsetof(DML_RESAMPLE_GRAD1_OPERATOR_DESC, OutputPixelOffsets) == 48, "RESAMPLE_GRAD1 layout");
static_assert(sizeof(DML_BINDING_PROPERTIES) == 24, "DML_BINDING_PROPERTIES layout");
static_assert(sizeof(DML_BINDING_TABLE_DESC) == 32, "DML_BINDING_TABLE_DESC layout");
#endif

static bool g_verbose = false;

static DML_BINDING_PROPERTIES binding_properties(IDMLDispatchable* d) {
    return dmlh::call_aggregate_getter<DML_BINDING_PROPERTIES>(d, 8);  // IDMLDispatchable::GetBindingProperties
}
static D3D12_CPU_DESCRIPTOR_HANDLE heap_cpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_CPU_DESCRIPTOR_HANDLE>(h, 9);  // GetCPUDescriptorHandleForHeapStart
}
static D3D12_GPU_DESCRIPTOR_HANDLE heap_gpu_start(ID3D12DescriptorHeap* h) {
    return dmlh::call_aggregate_getter<D3D12_GPU_DESCRIPTOR_HANDLE>(h, 10);  // GetGPUDescriptorHandleForHeapStart
}

// ---------------------------------------------------------------------------------------------
// Options.
// ---------------------------------------------------------------------------------------------
struct Options : dmlh::DeviceOptions {  // DirectML.dll, adapter, debug layer: d3d12_device.h
    bool disable_metacommands = false;
    DWORD fence_timeout_ms = 60000;
    int poison = 0xCD;             // byte pre-filled into every output buffer; -1: none
    std::string timings_path;      // --timings: per-case phase times appended here; empty: none
    bool heap_per_case = false;    // a descriptor heap of its own for every case (the old way; for comparison)
};

static const char kUsage[] =
    "usage: dml_harness.exe [options]   (speaks docs/native-harness.md on stdin/stdout)\n"
    "  --disable-metacommands  compile with DML_EXECUTION_FLAG_DISABLE_META_COMMANDS\n"
    "  --fence-timeout-ms N    GPU wait before the device counts as hung (default 60000)\n"
    "  --poison BYTE|none      byte written into output buffers before each dispatch (default 0xCD)\n"
    "  --timings FILE          append one JSON line of phase times (microseconds) per request to FILE;\n"
    "                          %p in FILE becomes the process id (replies are unchanged)\n"
    "  --heap-per-case         a new descriptor heap for every case instead of one for all (slow under\n"
    "                          vkd3d + lavapipe; for comparison with the shared heap)\n"
    "  --verbose               log every step to stderr\n"
    "the device:\n";

static bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        const dmlh::OptionRead device = dmlh::read_device_option(argc, argv, i, o);
        if (device == dmlh::OptionRead::kBad) return false;
        if (device == dmlh::OptionRead::kTaken) continue;
        const std::string a = argv[i];
        const char* v = nullptr;
        if (a == "--disable-metacommands") {
            o.disable_metacommands = true;
        } else if (a == "--fence-timeout-ms") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.fence_timeout_ms = DWORD(strtoul(v, nullptr, 10));
        } else if (a == "--poison") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.poison = strcmp(v, "none") == 0 ? -1 : int(strtol(v, nullptr, 0) & 0xFF);
        } else if (a == "--timings") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.timings_path = v;
        } else if (a == "--heap-per-case") {
            o.heap_per_case = true;
        } else if (a == "--verbose") {
            g_verbose = true;
        } else {
            log_line("unknown option %s", a.c_str());
            fputs(kUsage, stderr);
            fputs(dmlh::kDeviceUsage, stderr);
            return false;
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// The device: D3D12 + DirectML (d3d12_device.cpp) and what the harness records on it, created once.
// ---------------------------------------------------------------------------------------------
struct Device : dmlh::DmlDevice {
    Options opt;
    Com<ID3D12CommandAllocator> allocator;
    Com<ID3D12GraphicsCommandList> list;
    Com<ID3D12Fence> fence;
    UINT64 fence_value = 0;
    HANDLE event = nullptr;
    Com<IDMLCommandRecorder> recorder;
    DML_EXECUTION_FLAGS exec_flags = DML_EXECUTION_FLAG_NONE;
};

// Creates everything; returns an error message or "".
static std::string init_device(Device& dev) {
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

    if (dev.opt.disable_metacommands) dev.exec_flags = DML_EXECUTION_FLAG_DISABLE_META_COMMANDS;
    dev.add_extra("dml_execution_flags", dev.opt.disable_metacommands ? "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS"
                                                                       : "DML_EXECUTION_FLAG_NONE");
    dev.add_extra("output_poison", dev.opt.poison < 0 ? "none" : strf("0x%02X per byte", dev.opt.poison));
    dev.add_extra("fence_timeout_ms", strf("%lu", (unsigned long)dev.opt.fence_timeout_ms));
    return std::string();
}

// ---------------------------------------------------------------------------------------------
// Operators: the data types each support table of the seed pages admits, by feature level.
// ---------------------------------------------------------------------------------------------
static unsigned type_mask(std::initializer_list<int> types) {
    unsigned m = 0;
    for (int t : types) m |= 1u << t;
    return m;
}

enum : int { F32 = 1, F16 = 2, U32 = 3, U16 = 4, U8 = 5, I32 = 6, I16 = 7, I8 = 8, F64 = 9, U64 = 10, I64 = 11 };

struct OpInfo {
    const char* name;
    DML_OPERATOR_TYPE type;
    const char* inputs[2];  // tensor fields in struct order
    int input_count;
    struct Row { unsigned level; unsigned types; } rows[3];  // highest row at or below the device level wins
};

static const OpInfo kOps[] = {
    {"ACTIVATION_RELU_GRAD", DML_OPERATOR_ACTIVATION_RELU_GRAD, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x3000, type_mask({F32, F16})}, {0x5100, type_mask({F32, F16, I32, I16, I8})}, {0, 0}}},
    {"ELEMENT_WISE_CLIP_GRAD1", DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x5000, type_mask({F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}, {0, 0}}},
    {"SLICE_GRAD", DML_OPERATOR_SLICE_GRAD, {"InputGradientTensor", nullptr}, 1,
     {{0x3000, type_mask({F32, F16, I32, I16, I8, U32, U16, U8})},
      {0x4100, type_mask({F64, F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}}},
    {"MAX_POOLING_GRAD", DML_OPERATOR_MAX_POOLING_GRAD, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x3000, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
    {"RESAMPLE_GRAD1", DML_OPERATOR_RESAMPLE_GRAD1, {"InputGradientTensor", nullptr}, 1,
     {{0x5100, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
};

static const OpInfo* find_op(const std::string& name) {
    std::string n = name.compare(0, 13, "DML_OPERATOR_") == 0 ? name.substr(13) : name;
    for (const OpInfo& op : kOps)
        if (n == op.name) return &op;
    return nullptr;
}

static unsigned supported_types(const Device& dev, const OpInfo& op) {
    unsigned table = 0;
    for (const auto& row : op.rows)
        if (row.level && row.level <= dev.feature_level) table = row.types;
    unsigned device = 0;
    for (int t = 1; t <= kTypeCount; t++)
        if (dev.type_supported[t]) device |= 1u << t;
    return table & device;
}

static std::string hello_reply(const Device& dev) {
    std::string h = strf("{\"type\":\"hello\",\"protocol\":%d,\"name\":\"dml_harness\",\"version\":\"%s\",",
                         dmlh::kProtocolVersion, DMLH_VERSION);
    h += "\"adapter\":" + dmlh::json_string(dev.adapter_name);
    h += ",\"driver_version\":" + dmlh::json_string(dev.driver_version);
    h += ",\"api\":" + dmlh::json_string("DirectML " + (dev.dml_version.empty() ? std::string("(version unknown)")
                                                                                 : dev.dml_version));
    h += ",\"feature_level\":" + dmlh::json_string(level_label(dev.feature_level));
    h += ",\"feature_level_source\":" + dmlh::json_string(dev.feature_level_source);
    h += ",\"operators\":{";
    bool first_op = true;
    for (const OpInfo& op : kOps) {
        unsigned types = supported_types(dev, op);
        if (!types) continue;  // introduced above the device's level: omitted, so valid cases are NOT_SUPPORTED
        h += std::string(first_op ? "" : ",") + "\"" + op.name + "\":[";
        bool first = true;
        for (int t = 1; t <= kTypeCount; t++)
            if (types & (1u << t)) {
                h += std::string(first ? "" : ",") + "\"" + kTypeNames[t] + "\"";
                first = false;
            }
        h += "]";
        first_op = false;
    }
    h += "},\"extra\":{";
    for (size_t i = 0; i < dev.extra.size(); i++)
        h += (i ? "," : "") + dmlh::json_string(dev.extra[i].first) + ":" + dmlh::json_string(dev.extra[i].second);
    h += "}}";
    return h;
}

// ---------------------------------------------------------------------------------------------
// Replies.
// ---------------------------------------------------------------------------------------------
static dmlh::Server g_server;  // replies: the real stdout (server.h)
static std::string g_case_id;  // the request being served

struct Reply {
    std::string status;  // ok, refused, unsupported, error, device_removed
    std::string message;
    std::string hresult;  // device_removed only
    std::vector<uint8_t> data;

    static Reply make(const char* status, std::string message) {
        Reply r;
        r.status = status;
        r.message = std::move(message);
        return r;
    }
};

struct Tensor {
    std::string name;
    int dtype = 0;
    std::vector<UINT> sizes;
    const uint8_t* data = nullptr;  // inputs
    uint64_t nbytes = 0;            // product(Sizes) x element size (saturated)
    DML_BUFFER_TENSOR_DESC buffer;
    DML_TENSOR_DESC desc;
};

static void send_reply(const std::string& id, const Reply& r, const Tensor* out) {
    std::string h = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":" +
                    dmlh::json_string(r.status);
    if (r.status == "ok" && out) {
        h += strf(",\"outputs\":[{\"name\":%s,\"DataType\":%d,\"Sizes\":[", dmlh::json_string(out->name).c_str(),
                  out->dtype);
        for (size_t i = 0; i < out->sizes.size(); i++) h += strf("%s%u", i ? "," : "", out->sizes[i]);
        h += strf("],\"offset\":0,\"nbytes\":%llu}]}", (unsigned long long)r.data.size());
        g_server.send(h, r.data.data(), r.data.size());
        return;
    }
    h += ",\"message\":" + dmlh::json_string(r.message);
    if (!r.hresult.empty()) h += ",\"hresult\":" + dmlh::json_string(r.hresult);
    h += "}";
    g_server.send(h);
}

// Text the debug layer left in the D3D12 info queue (DirectML's debug layer reports there too).
static std::string info_queue_text(Device& dev, size_t limit = 1500) {
    if (!dev.info_queue) return std::string();
    std::string text;
    UINT64 n = dev.info_queue->GetNumStoredMessages();
    for (UINT64 i = 0; i < n && text.size() < limit; i++) {
        SIZE_T len = 0;
        if (FAILED(dev.info_queue->GetMessage(i, nullptr, &len)) || !len) continue;
        std::vector<unsigned char> buf(len);
        auto* msg = reinterpret_cast<D3D12_MESSAGE*>(buf.data());
        if (SUCCEEDED(dev.info_queue->GetMessage(i, msg, &len)) && msg->pDescription)
            text += std::string(text.empty() ? "" : " | ") + msg->pDescription;
    }
    dev.info_queue->ClearStoredMessages();
    if (text.size() > limit) text = text.substr(0, limit) + "...";
    return text;
}

// A lost device: reply, flush and leave at once (the protocol's device_removed). Nothing is released
// first: resources the GPU may still be using would be freed under it, and on vkd3d/lavapipe that
// teardown crashes (SIGSEGV) before the reply would have gone out.
[[noreturn]] static void device_lost_exit(const Reply& r) {
    send_reply(g_case_id, r, nullptr);
    fflush(g_server.frames);
    log_line("%s: device removed (%s); exiting so that the runner starts a fresh harness", g_case_id.c_str(),
             r.message.c_str());
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 3);
    _exit(3);
}

// A failed HRESULT outside CreateOperator/CompileOperator: device loss or an error naming the call.
static Reply failure(Device& dev, HRESULT hr, const std::string& call) {
    HRESULT reason = dev.d3d->GetDeviceRemovedReason();
    if (is_device_loss(hr) || FAILED(reason)) {
        HRESULT code = FAILED(reason) ? reason : hr;
        Reply r = Reply::make("device_removed", call + " returned " + hr_text(hr) +
                                                    "; ID3D12Device::GetDeviceRemovedReason: " + hr_text(reason));
        r.hresult = strf("0x%08lX", (unsigned long)code);
        device_lost_exit(r);
    }
    std::string dbg = info_queue_text(dev);
    return Reply::make("error", call + ": " + hr_text(hr) + (dbg.empty() ? "" : "; debug layer: " + dbg));
}

// ---------------------------------------------------------------------------------------------
// Request decoding.
// ---------------------------------------------------------------------------------------------
static const size_t kMaxWireDims = 32;  // longer arrays are refused, not misread

// Reads a tensor entry into t; on a problem fills `bad` (status + message) and returns false.
static bool read_tensor(const JValue& entry, const std::vector<uint8_t>& payload, bool with_data, Tensor& t,
                        Reply& bad) {
    const JValue* name = entry.get("name");
    const JValue* type = entry.get("DataType");
    const JValue* sizes = entry.get("Sizes");
    if (!name || !name->c_str()) {
        bad = Reply::make("error", "tensor entry without a string 'name'");
        return false;
    }
    t.name = name->str;
    if (!type || !type->is_int || type->inum < 1 || type->inum > kTypeCount) {
        bad = Reply::make("error", t.name + ": DataType must be a DML_TENSOR_DATA_TYPE value 1..11");
        return false;
    }
    t.dtype = int(type->inum);
    if (!sizes || sizes->type != JValue::Array || sizes->items.size() > kMaxWireDims) {
        bad = Reply::make("error", t.name + ": Sizes must be an array of at most 32 integers");
        return false;
    }
    uint64_t count = 1;
    bool saturated = false;
    for (const JValue& s : sizes->items) {
        if (!s.is_int || s.inum < 0) {
            bad = Reply::make("error", t.name + ": Sizes must hold non-negative integers");
            return false;
        }
        if (s.inum > 0xFFFFFFFFLL) {
            bad = Reply::make("refused", strf("harness validation: %s.Sizes holds %lld, which does not fit the UINT of "
                                              "DML_BUFFER_TENSOR_DESC::Sizes; not passed to DirectML",
                                              t.name.c_str(), s.inum));
            return false;
        }
        t.sizes.push_back(UINT(s.inum));
        uint64_t v = uint64_t(s.inum);
        if (v && count > UINT64_MAX / v) saturated = true;
        else count *= v;
    }
    uint64_t es = kTypeBytes[t.dtype];
    t.nbytes = (saturated || count > UINT64_MAX / es) ? UINT64_MAX : count * es;
    if (with_data) {
        const JValue* off = entry.get("offset");
        const JValue* nb = entry.get("nbytes");
        if (!off || !nb || !off->is_int || !nb->is_int || off->inum < 0 || nb->inum < 0) {
            bad = Reply::make("error", t.name + ": offset and nbytes must be non-negative integers");
            return false;
        }
        if (uint64_t(nb->inum) != t.nbytes) {
            bad = Reply::make("error", strf("%s: nbytes %lld disagrees with DataType x Sizes (%llu)", t.name.c_str(),
                                            nb->inum, (unsigned long long)t.nbytes));
            return false;
        }
        if (uint64_t(off->inum) > payload.size() || t.nbytes > payload.size() - uint64_t(off->inum)) {
            bad = Reply::make("error", t.name + ": tensor bytes lie outside the payload");
            return false;
        }
        t.data = payload.data() + off->inum;
    }
    // DML_BUFFER_TENSOR_DESC, packed (Strides NULL); TotalTensorSizeInBytes as DMLCalcBufferTensorSize
    // computes it for packed strides: element count x element size, rounded up to a multiple of 4.
    memset(&t.buffer, 0, sizeof t.buffer);
    t.buffer.DataType = DML_TENSOR_DATA_TYPE(t.dtype);
    t.buffer.Flags = DML_TENSOR_FLAG_NONE;
    t.buffer.DimensionCount = UINT(t.sizes.size());
    t.buffer.Sizes = t.sizes.empty() ? nullptr : t.sizes.data();
    t.buffer.Strides = nullptr;
    t.buffer.TotalTensorSizeInBytes = t.nbytes > UINT64_MAX - 3 ? UINT64_MAX : (t.nbytes + 3) & ~uint64_t(3);
    t.buffer.GuaranteedBaseOffsetAlignment = 0;
    t.desc.Type = DML_TENSOR_TYPE_BUFFER;
    t.desc.Desc = &t.buffer;
    return true;
}

// Parameter decoding. Each returns false with `bad` filled: "error" for a malformed request,
// "refused" for a value DirectML's field cannot hold or an array whose length disagrees with
// DimensionCount (DirectML would read past the array).
struct Params {
    const JValue* obj;
    Reply bad;

    const JValue* field(const char* name) {
        const JValue* v = obj ? obj->get(name) : nullptr;
        if (!v) bad = Reply::make("error", strf("request lacks params.%s", name));
        return v;
    }

    bool uint_value(const char* name, UINT& out) {
        const JValue* v = field(name);
        if (!v) return false;
        if (!v->is_int) {
            bad = Reply::make("error", strf("params.%s must be an integer", name));
            return false;
        }
        if (v->inum < 0 || v->inum > 0xFFFFFFFFLL) {
            bad = Reply::make("refused", strf("harness validation: params.%s = %lld does not fit its UINT field; "
                                              "not passed to DirectML", name, v->inum));
            return false;
        }
        out = UINT(v->inum);
        return true;
    }

    const JValue* array(const char* name, UINT count) {
        const JValue* v = field(name);
        if (!v) return nullptr;
        if (v->type != JValue::Array) {
            bad = Reply::make("error", strf("params.%s must be an array", name));
            return nullptr;
        }
        if (v->items.size() != count) {
            bad = Reply::make("refused", strf("harness validation: DimensionCount is %u but params.%s has %u "
                                              "element(s); DirectML reads DimensionCount elements, so the description "
                                              "is not passed to it", count, name, unsigned(v->items.size())));
            return nullptr;
        }
        return v;
    }

    // An integer array of DimensionCount elements whose values must fit the field's element type.
    template <typename T>
    bool integers(const char* name, UINT count, std::vector<T>& out, long long lowest, long long highest,
                  const char* type_name) {
        const JValue* v = array(name, count);
        if (!v) return false;
        out.clear();
        for (const JValue& e : v->items) {
            if (!e.is_int) {
                bad = Reply::make("error", strf("params.%s must hold integers", name));
                return false;
            }
            if (e.inum < lowest || e.inum > highest) {
                bad = Reply::make("refused", strf("harness validation: params.%s holds %lld, which does not fit "
                                                  "its %s elements; not passed to DirectML", name, e.inum, type_name));
                return false;
            }
            out.push_back(T(e.inum));
        }
        out.push_back(0);  // never read by DirectML; keeps data() valid when count is 0
        return true;
    }

    bool uints(const char* name, UINT count, std::vector<UINT>& out) {
        return integers(name, count, out, 0, 0xFFFFFFFFLL, "UINT");
    }

    bool ints(const char* name, UINT count, std::vector<INT>& out) {
        return integers(name, count, out, INT32_MIN, INT32_MAX, "INT");
    }

    bool floats(const char* name, UINT count, std::vector<FLOAT>& out) {
        const JValue* v = array(name, count);
        if (!v) return false;
        out.clear();
        for (const JValue& e : v->items) {
            double d;
            if (e.type == JValue::Number) {
                d = e.num;
            } else if (e.type == JValue::String) {
                char* end = nullptr;
                d = strtod(e.str.c_str(), &end);
                if (end == e.str.c_str() || *end) {
                    bad = Reply::make("error", strf("params.%s: %s is not a number", name, e.str.c_str()));
                    return false;
                }
            } else {
                bad = Reply::make("error", strf("params.%s must hold numbers", name));
                return false;
            }
            out.push_back(FLOAT(d));  // float32 values arrive exactly, so this conversion is exact
        }
        out.push_back(0);
        return true;
    }

    bool scalar(const char* name, DML_SCALAR_UNION& out) {
        const JValue* v = field(name);
        if (!v) return false;
        char* end = nullptr;
        unsigned long long bits = v->c_str() ? strtoull(v->str.c_str(), &end, 16) : 0;
        if (!v->c_str() || end == v->str.c_str() || *end) {
            bad = Reply::make("error", strf("params.%s must be a hex string of the union's 8 bytes", name));
            return false;
        }
        uint64_t b = bits;
        static_assert(sizeof b == sizeof out, "union size");
        memcpy(&out, &b, sizeof out);  // little-endian: the value sits in the member of MinMaxDataType
        return true;
    }
};

// The operator description with the storage it points into.
struct OpDesc {
    std::vector<UINT> u[5];
    std::vector<INT> strides;
    std::vector<FLOAT> f[3];
    DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC relu;
    DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC clip;
    DML_SLICE_GRAD_OPERATOR_DESC slice;
    DML_MAX_POOLING_GRAD_OPERATOR_DESC pool;
    DML_RESAMPLE_GRAD1_OPERATOR_DESC resample;
    DML_OPERATOR_DESC op;
};

static bool build_desc(const OpInfo& info, Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    memset(&d.relu, 0, sizeof d.relu);
    memset(&d.clip, 0, sizeof d.clip);
    memset(&d.slice, 0, sizeof d.slice);
    memset(&d.pool, 0, sizeof d.pool);
    memset(&d.resample, 0, sizeof d.resample);
    d.op.Type = info.type;
    UINT n = 0;
    switch (info.type) {
    case DML_OPERATOR_ACTIVATION_RELU_GRAD:
        d.relu = {&in[0]->desc, &in[1]->desc, &out.desc};
        d.op.Desc = &d.relu;
        return true;
    case DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1: {
        UINT mmt = 0;
        if (!p.uint_value("MinMaxDataType", mmt) || !p.scalar("Min", d.clip.Min) || !p.scalar("Max", d.clip.Max))
            return false;
        d.clip.InputTensor = &in[0]->desc;
        d.clip.InputGradientTensor = &in[1]->desc;
        d.clip.OutputGradientTensor = &out.desc;
        d.clip.MinMaxDataType = DML_TENSOR_DATA_TYPE(mmt);
        d.op.Desc = &d.clip;
        return true;
    }
    case DML_OPERATOR_SLICE_GRAD:
        if (!p.uint_value("DimensionCount", n) || !p.uints("InputWindowOffsets", n, d.u[0]) ||
            !p.uints("InputWindowSizes", n, d.u[1]) || !p.ints("InputWindowStrides", n, d.strides))
            return false;
        d.slice = {&in[0]->desc, &out.desc, n, d.u[0].data(), d.u[1].data(), d.strides.data()};
        d.op.Desc = &d.slice;
        return true;
    case DML_OPERATOR_MAX_POOLING_GRAD:
        if (!p.uint_value("DimensionCount", n) || !p.uints("Strides", n, d.u[0]) || !p.uints("WindowSize", n, d.u[1]) ||
            !p.uints("StartPadding", n, d.u[2]) || !p.uints("EndPadding", n, d.u[3]) ||
            !p.uints("Dilations", n, d.u[4]))
            return false;
        d.pool = {&in[0]->desc, &in[1]->desc, &out.desc, n, d.u[0].data(), d.u[1].data(),
                  d.u[2].data(), d.u[3].data(), d.u[4].data()};
        d.op.Desc = &d.pool;
        return true;
    case DML_OPERATOR_RESAMPLE_GRAD1: {
        UINT mode = 0, rounding = 0;
        if (!p.uint_value("InterpolationMode", mode) || !p.uint_value("RoundingDirection", rounding) ||
            !p.uint_value("DimensionCount", n) || !p.floats("Scales", n, d.f[0]) ||
            !p.floats("InputPixelOffsets", n, d.f[1]) || !p.floats("OutputPixelOffsets", n, d.f[2]))
            return false;
        d.resample = {&in[0]->desc, &out.desc, DML_INTERPOLATION_MODE(mode), DML_AXIS_DIRECTION(rounding), n,
                      d.f[0].data(), d.f[1].data(), d.f[2].data()};
        d.op.Desc = &d.resample;
        return true;
    }
    default:
        p.bad = Reply::make("unsupported", strf("operator type %d is not implemented", int(info.type)));
        return false;
    }
}

// ---------------------------------------------------------------------------------------------
// Per-request phase times (--timings FILE), for benchmarks/bench_directml.py. One JSON line per
// request, microseconds from QueryPerformanceCounter, plus the GPU's own timestamps around the
// initializer, the upload copies, the dispatch and the readback copy. Off unless asked for; the
// replies are the same either way (the timestamp queries touch no tensor).
// ---------------------------------------------------------------------------------------------
enum Phase {
    kWait,         // since the previous reply: the runner's side and reading this request
    kDecode,       // request -> tensor and operator descriptions
    kCreate,       // IDMLDevice::CreateOperator
    kCompile,      // IDMLDevice::CompileOperator
    kInitializer,  // IDMLDevice::CreateOperatorInitializer + binding properties
    kHeap,         // the descriptor heap: made at the first case (or every case with --heap-per-case)
    kResources,    // buffers, binding table
    kUpload,       // inputs and poison into the upload buffer (CPU)
    kInitialize,   // initializer recorded, submitted and waited for
    kBind,         // binding table reset and bound for the operator
    kDispatch,     // upload copies, dispatch, readback copy recorded, submitted and waited for
    kReadback,     // output out of the readback buffer (CPU)
    kReply,        // the case's objects released, the reply frame written
    kPhaseCount
};
static const char* const kPhaseNames[kPhaseCount] = {"wait",      "decode", "create",     "compile", "initializer",
                                                     "heap",      "resources", "upload", "initialize", "bind",
                                                     "dispatch",  "readback", "reply"};
// GPU timestamps written per request: initializer before/after; dispatch list start, after the upload
// copies, after the dispatch, after the readback copy.
enum GpuMark { kGpuInitBegin, kGpuInitEnd, kGpuBegin, kGpuUploaded, kGpuDispatched, kGpuReadBack, kGpuMarks };

static LONGLONG qpc_now() {
    LARGE_INTEGER t;
    QueryPerformanceCounter(&t);
    return t.QuadPart;
}

struct PhaseTimer {
    FILE* file = nullptr;
    double ticks_per_us = 1;
    LONGLONG origin = 0;  // static initialisation, i.e. just before main()
    long long origin_unix_us = 0;
    LONGLONG last = 0;
    LONGLONG request_start = 0;  // when the request being served had been read
    double us[kPhaseCount] = {};
    std::string op, status;
    // Timestamp queries on the device's queue; created on first use and never released (they live as
    // long as the device, which is released only by process exit).
    ID3D12QueryHeap* queries = nullptr;
    ID3D12Resource* query_readback = nullptr;
    UINT64 gpu_frequency = 0;
    bool gpu_written[kGpuMarks] = {};

    PhaseTimer() {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        ticks_per_us = double(f.QuadPart) / 1e6;
        origin = last = qpc_now();
        FILETIME ft;
        GetSystemTimeAsFileTime(&ft);  // 100 ns since 1601
        long long t100 = (long long)(((unsigned long long)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
        origin_unix_us = (t100 - 116444736000000000LL) / 10;
    }
    double since_origin_us(LONGLONG t) const { return double(t - origin) / ticks_per_us; }
    // Time since the last lap goes to phase p.
    void lap(Phase p) {
        if (!file) return;
        LONGLONG now = qpc_now();
        us[p] += double(now - last) / ticks_per_us;
        last = now;
    }
    void open(const std::string& path_pattern, const std::string& device_error) {
        std::string path = path_pattern;
        size_t at = path.find("%p");
        if (at != std::string::npos) path.replace(at, 2, strf("%lu", (unsigned long)GetCurrentProcessId()));
        file = fopen(path.c_str(), "ab");
        if (!file) {
            log_line("--timings: cannot open %s for appending; no timings", path.c_str());
            return;
        }
        LONGLONG now = qpc_now();
        fprintf(file, "{\"event\":\"start\",\"pid\":%lu,\"main_unix_us\":%lld,\"device_us\":%.1f,\"device\":%s}\n",
                (unsigned long)GetCurrentProcessId(), origin_unix_us, since_origin_us(now),
                dmlh::json_string(device_error.empty() ? "ready" : device_error).c_str());
        fflush(file);
        last = now;
    }
    // A request has been read: the time since the previous one ended is the wait.
    void begin_request() {
        if (!file) return;
        for (double& u : us) u = 0;
        for (bool& w : gpu_written) w = false;
        op.clear();
        status.clear();
        lap(kWait);
        request_start = last;
    }
    void end_request(const std::string& id) {
        if (!file) return;
        lap(kReply);
        std::string line = "{\"id\":" + dmlh::json_string(id) + ",\"op\":" + dmlh::json_string(op) +
                           ",\"status\":" + dmlh::json_string(status) +
                           strf(",\"t_us\":%.1f", since_origin_us(request_start));
        for (int p = 0; p < kPhaseCount; p++) line += strf(",\"%s\":%.1f", kPhaseNames[p], us[p]);
        UINT64 ticks[kGpuMarks] = {};
        if (gpu_frequency && read_gpu_ticks(ticks)) {
            auto span = [&](GpuMark a, GpuMark b) {
                return gpu_written[a] && gpu_written[b] && ticks[b] >= ticks[a]
                           ? strf("%.1f", double(ticks[b] - ticks[a]) * 1e6 / double(gpu_frequency))
                           : std::string("null");
            };
            line += ",\"gpu_initialize\":" + span(kGpuInitBegin, kGpuInitEnd) + ",\"gpu_upload\":" +
                    span(kGpuBegin, kGpuUploaded) + ",\"gpu_dispatch\":" + span(kGpuUploaded, kGpuDispatched) +
                    ",\"gpu_readback\":" + span(kGpuDispatched, kGpuReadBack);
        }
        line += "}\n";
        fputs(line.c_str(), file);
        fflush(file);
        last = qpc_now();  // writing the line is not the runner's time
    }
    // Timestamp m recorded in `list` (the query heap and its readback buffer made on first use).
    void gpu_mark(Device& dev, ID3D12GraphicsCommandList* list, GpuMark m) {
        if (!file) return;
        if (!queries && !gpu_frequency) {
            gpu_frequency = 1;  // tried once; 0 again below when anything fails
            D3D12_QUERY_HEAP_DESC qd;
            memset(&qd, 0, sizeof qd);
            qd.Type = D3D12_QUERY_HEAP_TYPE_TIMESTAMP;
            qd.Count = kGpuMarks;
            UINT64 frequency = 0;
            if (FAILED(dev.queue->GetTimestampFrequency(&frequency)) || !frequency ||
                FAILED(dev.d3d->CreateQueryHeap(&qd, __uuidof(ID3D12QueryHeap), reinterpret_cast<void**>(&queries)))) {
                queries = nullptr;
                gpu_frequency = 0;
                log_line("--timings: no GPU timestamps on this device");
                return;
            }
            D3D12_HEAP_PROPERTIES hp;
            memset(&hp, 0, sizeof hp);
            hp.Type = D3D12_HEAP_TYPE_READBACK;
            D3D12_RESOURCE_DESC rd;
            memset(&rd, 0, sizeof rd);
            rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
            rd.Width = 256;
            rd.Height = rd.DepthOrArraySize = rd.MipLevels = 1;
            rd.SampleDesc.Count = 1;
            rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
            if (FAILED(dev.d3d->CreateCommittedResource(&hp, D3D12_HEAP_FLAG_NONE, &rd, D3D12_RESOURCE_STATE_COPY_DEST,
                                                        nullptr, __uuidof(ID3D12Resource),
                                                        reinterpret_cast<void**>(&query_readback)))) {
                queries->Release();
                queries = nullptr;
                gpu_frequency = 0;
                return;
            }
            gpu_frequency = frequency;
        }
        if (!queries) return;
        list->EndQuery(queries, D3D12_QUERY_TYPE_TIMESTAMP, UINT(m));
        gpu_written[m] = true;
        // The last mark of a request resolves them all into the readback buffer, in the same list.
        if (m == kGpuReadBack) list->ResolveQueryData(queries, D3D12_QUERY_TYPE_TIMESTAMP, 0, kGpuMarks,
                                                      query_readback, 0);
    }
    bool read_gpu_ticks(UINT64* ticks) {
        if (!query_readback || !gpu_written[kGpuReadBack]) return false;
        void* p = nullptr;
        D3D12_RANGE range = {0, sizeof(UINT64) * kGpuMarks};
        if (FAILED(query_readback->Map(0, &range, &p))) return false;
        memcpy(ticks, p, sizeof(UINT64) * kGpuMarks);
        D3D12_RANGE none = {0, 0};
        query_readback->Unmap(0, &none);
        return true;
    }
};
static PhaseTimer g_timer;

// ---------------------------------------------------------------------------------------------
// Execution.
// ---------------------------------------------------------------------------------------------
static UINT64 align_up(UINT64 v, UINT64 a) { return (v + a - 1) / a * a; }

static HRESULT make_buffer(Device& dev, D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_STATES state,
                           D3D12_RESOURCE_FLAGS flags, Com<ID3D12Resource>& out) {
    D3D12_HEAP_PROPERTIES hp;
    memset(&hp, 0, sizeof hp);
    hp.Type = heap;
    D3D12_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof rd);
    rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    rd.Width = align_up(size ? size : 1, 256);
    rd.Height = 1;
    rd.DepthOrArraySize = 1;
    rd.MipLevels = 1;
    rd.Format = DXGI_FORMAT_UNKNOWN;
    rd.SampleDesc.Count = 1;
    rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    rd.Flags = flags;
    return dev.d3d->CreateCommittedResource(&hp, D3D12_HEAP_FLAG_NONE, &rd, state, nullptr, __uuidof(ID3D12Resource),
                                            out.put());
}

static void transition(ID3D12GraphicsCommandList* list, ID3D12Resource* r, D3D12_RESOURCE_STATES before,
                       D3D12_RESOURCE_STATES after) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
    b.Transition.pResource = r;
    b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
    b.Transition.StateBefore = before;
    b.Transition.StateAfter = after;
    list->ResourceBarrier(1, &b);
}

static void uav_barrier(ID3D12GraphicsCommandList* list) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
    b.UAV.pResource = nullptr;  // every UAV access
    list->ResourceBarrier(1, &b);
}

static bool begin_list(Device& dev, Reply& r, const char* what) {
    HRESULT hr = dev.allocator->Reset();
    if (FAILED(hr)) {
        r = failure(dev, hr, std::string("ID3D12CommandAllocator::Reset (") + what + ")");
        return false;
    }
    hr = dev.list->Reset(dev.allocator.get(), nullptr);
    if (FAILED(hr)) {
        r = failure(dev, hr, std::string("ID3D12GraphicsCommandList::Reset (") + what + ")");
        return false;
    }
    return true;
}

// Closes, executes and waits for the command list; false with `r` filled on failure.
static bool submit(Device& dev, Reply& r, const char* what) {
    HRESULT hr = dev.list->Close();
    if (FAILED(hr)) {
        r = failure(dev, hr, std::string("ID3D12GraphicsCommandList::Close (") + what + ")");
        return false;
    }
    ID3D12CommandList* lists[] = {dev.list.get()};
    dev.queue->ExecuteCommandLists(1, lists);
    UINT64 value = ++dev.fence_value;
    hr = dev.queue->Signal(dev.fence.get(), value);
    if (FAILED(hr)) {
        r = failure(dev, hr, std::string("ID3D12CommandQueue::Signal (") + what + ")");
        return false;
    }
    if (dev.fence->GetCompletedValue() < value) {
        hr = dev.fence->SetEventOnCompletion(value, dev.event);
        if (FAILED(hr)) {
            r = failure(dev, hr, std::string("ID3D12Fence::SetEventOnCompletion (") + what + ")");
            return false;
        }
        DWORD wait = WaitForSingleObject(dev.event, dev.opt.fence_timeout_ms);
        if (wait != WAIT_OBJECT_0 && dev.fence->GetCompletedValue() < value) {
            HRESULT reason = dev.d3d->GetDeviceRemovedReason();
            r = Reply::make("device_removed",
                            strf("the fence for the %s did not signal within %lu ms (WaitForSingleObject: %lu); "
                                 "ID3D12Device::GetDeviceRemovedReason: %s", what,
                                 (unsigned long)dev.opt.fence_timeout_ms, (unsigned long)wait, hr_text(reason).c_str()));
            r.hresult = strf("0x%08lX", (unsigned long)(FAILED(reason) ? reason : HRESULT(0x887A0006L)));
            device_lost_exit(r);
        }
    }
    HRESULT reason = dev.d3d->GetDeviceRemovedReason();
    if (FAILED(reason)) {
        r = failure(dev, reason, std::string("the ") + what);
        return false;
    }
    return true;
}

// The shader-visible descriptor heap every case's binding table is written into, grown when a case needs more.
// Creating one costs seconds on Wine's vkd3d 1.6 over lavapipe whatever its size (most of it zeroing a fresh
// allocation), far more than everything else a case does, so it is made once, not per case (--heap-per-case
// still does that); a case's table starts at the heap's first descriptor either way. Rewriting those
// descriptors is safe: every submission is waited for before the next case begins. The heap lives as long as
// the device (process exit releases both).
static ID3D12DescriptorHeap* g_case_heap = nullptr;
static UINT g_case_heap_size = 0;

static HRESULT case_descriptor_heap(Device& dev, UINT descriptors, ID3D12DescriptorHeap*& heap) {
    if (dev.opt.heap_per_case && g_case_heap) {  // the previous case's heap: its work has completed
        g_case_heap->Release();
        g_case_heap = nullptr;
        g_case_heap_size = 0;
    }
    if (!g_case_heap || g_case_heap_size < descriptors) {
        UINT size = g_case_heap_size * 2 > 64 ? g_case_heap_size * 2 : 64;
        if (size < descriptors || dev.opt.heap_per_case) size = descriptors;
        D3D12_DESCRIPTOR_HEAP_DESC hd;
        memset(&hd, 0, sizeof hd);
        hd.Type = D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV;
        hd.NumDescriptors = size;
        hd.Flags = D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE;
        ID3D12DescriptorHeap* grown = nullptr;
        HRESULT hr = dev.d3d->CreateDescriptorHeap(&hd, __uuidof(ID3D12DescriptorHeap), reinterpret_cast<void**>(&grown));
        if (FAILED(hr)) return hr;
        if (g_case_heap) g_case_heap->Release();  // the GPU is idle: every submission was waited for
        g_case_heap = grown;
        g_case_heap_size = size;
    }
    heap = g_case_heap;
    return S_OK;
}

#define TRY(call, what)                              \
    do {                                             \
        HRESULT hr_ = (call);                        \
        if (FAILED(hr_)) return failure(dev, hr_, what); \
    } while (0)

// Creates, compiles, initializes and dispatches the operator; reads the output back.
static Reply execute(Device& dev, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out) {
    if (dev.info_queue) dev.info_queue->ClearStoredMessages();
    Com<IDMLOperator> op;
    HRESULT hr = dev.dml->CreateOperator(&d.op, DMLH_IID(IDMLOperator), op.put());
    g_timer.lap(kCreate);
    if (FAILED(hr)) {
        if (is_device_loss(hr)) return failure(dev, hr, "IDMLDevice::CreateOperator");
        if ((unsigned long)hr == 0x8007000EUL) return failure(dev, hr, "IDMLDevice::CreateOperator");
        std::string dbg = info_queue_text(dev);
        return Reply::make("refused", "IDMLDevice::CreateOperator: " + hr_text(hr) +
                                          (dbg.empty() ? "" : "; debug layer: " + dbg));
    }
    Com<IDMLCompiledOperator> compiled;
    hr = dev.dml->CompileOperator(op.get(), dev.exec_flags, DMLH_IID(IDMLCompiledOperator), compiled.put());
    g_timer.lap(kCompile);
    if (FAILED(hr)) {
        if ((unsigned long)hr == 0x80070057UL) {
            std::string dbg = info_queue_text(dev);
            return Reply::make("refused", "IDMLDevice::CompileOperator: " + hr_text(hr) +
                                              (dbg.empty() ? "" : "; debug layer: " + dbg));
        }
        return failure(dev, hr, "IDMLDevice::CompileOperator");
    }
    Com<IDMLOperatorInitializer> init;
    IDMLCompiledOperator* ops[] = {compiled.get()};
    TRY(dev.dml->CreateOperatorInitializer(1, ops, DMLH_IID(IDMLOperatorInitializer), init.put()),
        "IDMLDevice::CreateOperatorInitializer");
    DML_BINDING_PROPERTIES ip = binding_properties(init.get()), ep = binding_properties(compiled.get());
    g_timer.lap(kInitializer);
    if (g_verbose)
        log_line("%s: binding properties: initializer %u descriptors, temporary %llu; execution %u descriptors, "
             "temporary %llu, persistent %llu", info.name, ip.RequiredDescriptorCount,
             (unsigned long long)ip.TemporaryResourceSize, ep.RequiredDescriptorCount,
             (unsigned long long)ep.TemporaryResourceSize, (unsigned long long)ep.PersistentResourceSize);

    // Resources: every one is created before anything is recorded.
    UINT descriptors = ip.RequiredDescriptorCount > ep.RequiredDescriptorCount ? ip.RequiredDescriptorCount
                                                                               : ep.RequiredDescriptorCount;
    ID3D12DescriptorHeap* heap = nullptr;
    TRY(case_descriptor_heap(dev, descriptors ? descriptors : 1, heap), "ID3D12Device::CreateDescriptorHeap");
    g_timer.lap(kHeap);
    const D3D12_RESOURCE_FLAGS uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
    UINT64 temp_size = ip.TemporaryResourceSize > ep.TemporaryResourceSize ? ip.TemporaryResourceSize
                                                                           : ep.TemporaryResourceSize;
    Com<ID3D12Resource> temp, persistent;
    if (temp_size)
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, temp_size, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, uav, temp),
            "ID3D12Device::CreateCommittedResource (temporary resource)");
    if (ep.PersistentResourceSize)
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, ep.PersistentResourceSize, D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                        uav, persistent),
            "ID3D12Device::CreateCommittedResource (persistent resource)");

    const int n_in = info.input_count;
    Com<ID3D12Resource> in_buf[2], out_buf, upload, readback;
    UINT64 upload_offset[3] = {0, 0, 0}, upload_size = 0;
    for (int i = 0; i < n_in; i++) {
        upload_offset[i] = upload_size;
        upload_size = align_up(upload_size + in[i]->buffer.TotalTensorSizeInBytes, 256);
        TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, in[i]->buffer.TotalTensorSizeInBytes,
                        D3D12_RESOURCE_STATE_COPY_DEST, uav, in_buf[i]),
            "ID3D12Device::CreateCommittedResource (" + in[i]->name + ")");
    }
    const UINT64 out_size = out.buffer.TotalTensorSizeInBytes;
    upload_offset[2] = upload_size;
    if (dev.opt.poison >= 0) upload_size += out_size;
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_DEFAULT, out_size, D3D12_RESOURCE_STATE_COPY_DEST, uav, out_buf),
        "ID3D12Device::CreateCommittedResource (" + out.name + ")");
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_UPLOAD, upload_size, D3D12_RESOURCE_STATE_GENERIC_READ,
                    D3D12_RESOURCE_FLAG_NONE, upload),
        "ID3D12Device::CreateCommittedResource (upload buffer)");
    TRY(make_buffer(dev, D3D12_HEAP_TYPE_READBACK, out_size, D3D12_RESOURCE_STATE_COPY_DEST,
                    D3D12_RESOURCE_FLAG_NONE, readback),
        "ID3D12Device::CreateCommittedResource (readback buffer)");
    g_timer.lap(kResources);
    {
        void* p = nullptr;
        D3D12_RANGE none = {0, 0};
        TRY(upload->Map(0, &none, &p), "ID3D12Resource::Map (upload buffer)");
        auto* bytes = static_cast<unsigned char*>(p);
        for (int i = 0; i < n_in; i++) {
            memset(bytes + upload_offset[i], 0, size_t(in[i]->buffer.TotalTensorSizeInBytes));
            if (in[i]->nbytes) memcpy(bytes + upload_offset[i], in[i]->data, size_t(in[i]->nbytes));
        }
        if (dev.opt.poison >= 0) memset(bytes + upload_offset[2], dev.opt.poison, size_t(out_size));
        D3D12_RANGE all = {0, SIZE_T(upload_size)};
        upload->Unmap(0, &all);
    }
    g_timer.lap(kUpload);

    // Binding table: first for the initializer, then reset for the compiled operator.
    DML_BINDING_TABLE_DESC btd;
    btd.Dispatchable = init.get();
    btd.CPUDescriptorHandle = heap_cpu_start(heap);
    btd.GPUDescriptorHandle = heap_gpu_start(heap);
    btd.SizeInDescriptors = descriptors;
    Com<IDMLBindingTable> table;
    TRY(dev.dml->CreateBindingTable(&btd, DMLH_IID(IDMLBindingTable), table.put()), "IDMLDevice::CreateBindingTable");
    DML_BUFFER_BINDING temp_binding = {temp.get(), 0, temp_size};
    DML_BUFFER_BINDING persistent_binding = {persistent.get(), 0, ep.PersistentResourceSize};
    DML_BINDING_DESC temp_desc = {DML_BINDING_TYPE_BUFFER, &temp_binding};
    DML_BINDING_DESC persistent_desc = {DML_BINDING_TYPE_BUFFER, &persistent_binding};
    if (ip.TemporaryResourceSize) {
        temp_binding.SizeInBytes = ip.TemporaryResourceSize;
        table->BindTemporaryResource(&temp_desc);
    }
    if (ep.PersistentResourceSize) table->BindOutputs(1, &persistent_desc);  // the initializer fills it
    g_timer.lap(kResources);

    Reply r;
    ID3D12DescriptorHeap* heaps[] = {heap};
    if (!begin_list(dev, r, "operator initializer")) return r;
    g_timer.gpu_mark(dev, dev.list.get(), kGpuInitBegin);
    dev.list->SetDescriptorHeaps(1, heaps);
    dev.recorder->RecordDispatch(dev.list.get(), init.get(), table.get());
    g_timer.gpu_mark(dev, dev.list.get(), kGpuInitEnd);
    if (!submit(dev, r, "operator initializer dispatch")) return r;
    g_timer.lap(kInitialize);

    btd.Dispatchable = compiled.get();
    TRY(table->Reset(&btd), "IDMLBindingTable::Reset (compiled operator)");
    DML_BUFFER_BINDING in_binding[2];
    DML_BINDING_DESC in_desc[2];
    for (int i = 0; i < n_in; i++) {
        in_binding[i] = {in_buf[i].get(), 0, in[i]->buffer.TotalTensorSizeInBytes};
        in_desc[i] = {DML_BINDING_TYPE_BUFFER, &in_binding[i]};
    }
    DML_BUFFER_BINDING out_binding = {out_buf.get(), 0, out_size};
    DML_BINDING_DESC out_desc = {DML_BINDING_TYPE_BUFFER, &out_binding};
    table->BindInputs(UINT(n_in), in_desc);
    table->BindOutputs(1, &out_desc);
    if (ep.TemporaryResourceSize) {
        temp_binding.SizeInBytes = ep.TemporaryResourceSize;
        table->BindTemporaryResource(&temp_desc);
    }
    if (ep.PersistentResourceSize) table->BindPersistentResource(&persistent_desc);
    g_timer.lap(kBind);

    if (!begin_list(dev, r, "operator dispatch")) return r;
    g_timer.gpu_mark(dev, dev.list.get(), kGpuBegin);
    for (int i = 0; i < n_in; i++) {
        if (in[i]->buffer.TotalTensorSizeInBytes)
            dev.list->CopyBufferRegion(in_buf[i].get(), 0, upload.get(), upload_offset[i],
                                       in[i]->buffer.TotalTensorSizeInBytes);
        transition(dev.list.get(), in_buf[i].get(), D3D12_RESOURCE_STATE_COPY_DEST,
                   D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    }
    if (dev.opt.poison >= 0 && out_size)
        dev.list->CopyBufferRegion(out_buf.get(), 0, upload.get(), upload_offset[2], out_size);
    transition(dev.list.get(), out_buf.get(), D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    g_timer.gpu_mark(dev, dev.list.get(), kGpuUploaded);
    dev.list->SetDescriptorHeaps(1, heaps);
    dev.recorder->RecordDispatch(dev.list.get(), compiled.get(), table.get());
    uav_barrier(dev.list.get());
    g_timer.gpu_mark(dev, dev.list.get(), kGpuDispatched);
    transition(dev.list.get(), out_buf.get(), D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
    if (out_size) dev.list->CopyBufferRegion(readback.get(), 0, out_buf.get(), 0, out_size);
    g_timer.gpu_mark(dev, dev.list.get(), kGpuReadBack);
    if (!submit(dev, r, "operator dispatch")) return r;
    g_timer.lap(kDispatch);

    Reply ok = Reply::make("ok", "");
    ok.data.resize(size_t(out.nbytes));
    if (out.nbytes) {
        void* p = nullptr;
        D3D12_RANGE range = {0, SIZE_T(out_size)};
        TRY(readback->Map(0, &range, &p), "ID3D12Resource::Map (readback buffer)");
        memcpy(ok.data.data(), p, size_t(out.nbytes));
        D3D12_RANGE none = {0, 0};
        readback->Unmap(0, &none);
    }
    g_timer.lap(kReadback);
    if (g_verbose) {
        std::string dbg = info_queue_text(dev);
        if (!dbg.empty()) log_line("debug layer: %s", dbg.c_str());
    }
    return ok;
}

static void handle_run(Device& dev, const dmlh::Frame& frame, const std::string& id) {
    const JValue& h = frame.header;
    const JValue* op_name = h.get("op");
    if (!op_name || !op_name->c_str()) {
        send_reply(id, Reply::make("error", "run request without a string 'op'"), nullptr);
        return;
    }
    const OpInfo* info = find_op(op_name->str);
    if (!info) {
        send_reply(id, Reply::make("unsupported", "this harness does not implement " + op_name->str), nullptr);
        return;
    }
    const JValue* inputs = h.get("inputs");
    const JValue* outputs = h.get("outputs");
    if (!inputs || inputs->type != JValue::Array || !outputs || outputs->type != JValue::Array) {
        send_reply(id, Reply::make("error", "run request needs 'inputs' and 'outputs' arrays"), nullptr);
        return;
    }
    auto find = [](const JValue* list, const char* name) -> const JValue* {
        for (const JValue& e : list->items) {
            const JValue* n = e.get("name");
            if (n && n->c_str() && n->str == name) return &e;
        }
        return nullptr;
    };
    Tensor in[2], out;
    Tensor* in_ptrs[2] = {&in[0], &in[1]};
    Reply bad;
    for (int i = 0; i < info->input_count; i++) {
        const JValue* e = find(inputs, info->inputs[i]);
        if (!e) {
            send_reply(id, Reply::make("error", strf("request lacks input %s of %s", info->inputs[i], info->name)),
                       nullptr);
            return;
        }
        if (!read_tensor(*e, frame.payload, true, in[i], bad)) {
            send_reply(id, bad, nullptr);
            return;
        }
    }
    const JValue* e = find(outputs, "OutputGradientTensor");
    if (!e) {
        send_reply(id, Reply::make("error", strf("request lacks output OutputGradientTensor of %s", info->name)),
                   nullptr);
        return;
    }
    if (!read_tensor(*e, frame.payload, false, out, bad)) {
        send_reply(id, bad, nullptr);
        return;
    }
    const JValue* params = h.get("params");
    Params p{params && params->type == JValue::Object ? params : nullptr, Reply()};
    OpDesc d;
    g_timer.op = info->name;
    if (!build_desc(*info, p, in_ptrs, out, d)) {
        send_reply(id, p.bad, nullptr);
        return;
    }
    if (out.nbytes > (uint64_t(1) << 36)) {  // the reply could not carry it; DirectML may still refuse first
        Com<IDMLOperator> op;
        HRESULT hr = dev.dml->CreateOperator(&d.op, DMLH_IID(IDMLOperator), op.put());
        send_reply(id, FAILED(hr) ? Reply::make("refused", "IDMLDevice::CreateOperator: " + hr_text(hr))
                                  : Reply::make("unsupported", "the output exceeds the protocol's 2^36-byte payload"),
                   nullptr);
        return;
    }
    g_timer.lap(kDecode);
    Reply r = execute(dev, *info, d, in_ptrs, out);
    g_timer.status = r.status;
    if (g_verbose || r.status == "error")
        log_line("%s: %s%s%s", id.c_str(), r.status.c_str(), r.message.empty() ? "" : ": ", r.message.c_str());
    send_reply(id, r, &out);
}

// ---------------------------------------------------------------------------------------------
// main: stdout becomes frames-only (protocol.h), the device comes up, then the request loop.
// ---------------------------------------------------------------------------------------------
int main(int argc, char** argv) {
    g_server.frames = dmlh::claim_stdout_for_frames();
    Device dev;
    if (!parse_options(argc, argv, dev.opt)) return 2;
    std::string init_error = init_device(dev);
    if (!dev.opt.timings_path.empty()) g_timer.open(dev.opt.timings_path, init_error);
    if (init_error.empty())
        log_line("%s, DirectML %s (%s), feature level %s", dev.adapter_name.c_str(), dev.dml_version.c_str(),
             dev.dml_path.c_str(), level_label(dev.feature_level).c_str());
    else
        log_line("cannot start: %s", init_error.c_str());

    g_server.program = "dml_harness";
    g_server.request_type = "run";
    g_server.init_error = init_error;
    g_server.hello = [&dev] { g_server.send(hello_reply(dev)); };
    g_server.serve = [&dev](const std::string& id, dmlh::Frame& frame) {
        g_case_id = id;
        g_timer.begin_request();
        handle_run(dev, frame, id);
        g_timer.end_request(id);
    };
    g_server.reply_error = [](const std::string& id, const std::string& message) {
        send_reply(id, Reply::make("error", message), nullptr);
    };
    return g_server.run(stdin);
}
