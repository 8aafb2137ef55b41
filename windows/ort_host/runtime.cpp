// runtime.cpp - ONNX Runtime loaded, checked and set up (see runtime.h).
#include "runtime.h"

#include <cstdio>
#include <cstring>
#include <functional>

#include "buffer_pool.h"
#include "heap_pool.h"
#include "protocol.h"

using dmlh::strf;

#define HOST_VERSION "1.0"

static void ORT_API_CALL ort_log(void* param, int severity, const char* category, const char*, const char*,
                                 const char* message) {
    if (!message) return;
    LogCapture& log = *static_cast<LogCapture*>(param);
    {
        LogLock hold(log);
        if (log.active && log.text.size() < (1u << 20)) {
            log.text += message;
            log.text += '\n';
        }
    }
    if (log.echo_all || severity >= ort::LOG_WARNING)
        fprintf(stderr, "onnxruntime[%d %s]: %s\n", severity, category ? category : "", message);
}

std::string status_text(Runtime& rt, ort::Status* st, int* code) {
    if (!st) {
        if (code) *code = ort::ORT_OK;
        return std::string();
    }
    const char* msg = rt.api.GetErrorMessage(st);
    std::string text = msg ? msg : "(no message)";
    if (code) *code = rt.api.GetErrorCode(st);
    rt.api.ReleaseStatus(st);
    return text;
}

static std::string load_onnxruntime(Runtime& rt) {
    dmlh::LoadedModule loaded = dmlh::load_module(rt.opt.ort_path, "onnxruntime.dll");
    if (!loaded.module)
        return "cannot load onnxruntime.dll (" + loaded.why + "); pass --onnxruntime PATH or put onnxruntime.dll (with "
               "onnxruntime_providers_shared.dll) next to the host";
    rt.module = loaded.module;
    rt.ort_path = loaded.path;
    rt.ort_file_version = loaded.version;
    return std::string();
}

// The checks of ort_api.h: the version, then calls whose answers show that the slots hold what the header says.
static std::string check_api(Runtime& rt) {
    auto get_base = reinterpret_cast<ort::GetApiBaseFn>(reinterpret_cast<void*>(GetProcAddress(rt.module, "OrtGetApiBase")));
    if (!get_base) return rt.ort_path + " does not export OrtGetApiBase: not an ONNX Runtime DLL";
    const ort::ApiBase* base = get_base();
    if (!base || !base->GetVersionString || !base->GetApi) return "OrtGetApiBase returned no API base";
    const char* version = base->GetVersionString();
    rt.ort_version = version ? version : "";
    std::string release = rt.ort_version.substr(0, rt.ort_version.find('.', rt.ort_version.find('.') + 1));
    if (release != ort::kHeaderRelease && !rt.opt.any_ort_version)
        return strf("onnxruntime.dll is version %s; this host declares the C API of onnxruntime %s (OrtApi version "
                    "%u) and runs 1.24.x only (--any-ort-version to try another; its table is still checked)",
                    rt.ort_version.c_str(), ort::kHeaderRelease, ort::kApiVersion);
    const void* const* table = base->GetApi(ort::kApiVersion);
    if (!table)
        return strf("onnxruntime %s does not offer OrtApi version %u (GetApi returned NULL): it is older than 1.24",
                    rt.ort_version.c_str(), ort::kApiVersion);
    rt.api.resolve(table);

    const char* probe = "ort_dml_host API check";
    ort::Status* st = rt.api.CreateStatus(ort::ORT_EP_FAIL, probe);
    if (!st) return "OrtApi check: CreateStatus (slot 0) returned NULL";
    int code = rt.api.GetErrorCode(st);
    const char* msg = rt.api.GetErrorMessage(st);
    bool same = code == ort::ORT_EP_FAIL && msg && strcmp(msg, probe) == 0;
    rt.api.ReleaseStatus(st);
    if (!same) return "OrtApi check: CreateStatus/GetErrorCode/GetErrorMessage (slots 0-2) do not round-trip";

    char** names = nullptr;
    int count = 0;
    std::string err = status_text(rt, rt.api.GetAvailableProviders(&names, &count));
    if (!err.empty()) return "OrtApi check: GetAvailableProviders (slot 125): " + err;
    bool has_cpu = false, has_dml = false;
    for (int i = 0; i < count; i++) {
        std::string name = names[i] ? names[i] : "";
        rt.providers += (i ? ", " : "") + name;
        has_cpu |= name == "CPUExecutionProvider";
        has_dml |= name == "DmlExecutionProvider";
    }
    err = status_text(rt, rt.api.ReleaseAvailableProviders(names, count));
    if (!err.empty()) return "OrtApi check: ReleaseAvailableProviders (slot 126): " + err;
    if (!has_cpu) return "OrtApi check: GetAvailableProviders (slot 125) does not list CPUExecutionProvider (got: " +
                         rt.providers + ")";
    if (rt.dml()) {
        if (!has_dml)
            return "this onnxruntime.dll has no DmlExecutionProvider (providers: " + rt.providers +
                   "); use the one from the onnxruntime-directml wheel";
        const void* dml = nullptr;
        err = status_text(rt, rt.api.GetExecutionProviderApi("DML", ort::kApiVersion, &dml));
        if (!err.empty() || !dml) return "OrtApi::GetExecutionProviderApi(\"DML\") (slot 195): " + (err.empty() ? "NULL" : err);
        rt.dml_api = static_cast<const ort::DmlApi*>(dml);
    }
    return std::string();
}

// What a pool of the device's objects does, for the hello: `on` once installed, else why it is off.
static std::string pool_state(bool wine, bool fresh, const char* fresh_option,
                              const std::function<std::string()>& install, const char* on) {
    if (!wine) return "off (not under Wine)";
    if (fresh) return std::string("off (") + fresh_option + ")";
    const std::string why = install();
    return why.empty() ? std::string(on) : "off (" + why + ")";
}

std::string init_runtime(Runtime& rt) {
    std::string err = load_onnxruntime(rt);
    if (!err.empty()) return err;
    if (!(err = check_api(rt)).empty()) return err;
    // The environment's own level lets everything through to ort_log; each session's level decides what it logs.
    rt.log.echo_all = rt.opt.verbose;
    err = status_text(rt, rt.api.CreateEnvWithCustomLogger(ort_log, &rt.log, ort::LOG_VERBOSE, "ort_dml_host", &rt.env));
    if (!err.empty()) return "OrtApi::CreateEnvWithCustomLogger: " + err;
    err = status_text(rt, rt.api.CreateCpuMemoryInfo(ort::OrtDeviceAllocator, ort::OrtMemTypeDefault, &rt.cpu_memory));
    if (!err.empty()) return "OrtApi::CreateCpuMemoryInfo: " + err;
    if (rt.dml()) {
        err = dmlh::create_dml_device(rt.device, rt.opt.device);
        if (!err.empty()) return err;
        // Only under Wine, where heaps and buffers are what cost (heap_pool.h, buffer_pool.h): on Windows the D3D12
        // runtime's device is not patched.
        const bool wine = !dmlh::wine_version().empty();
        ID3D12Device* device = rt.device.d3d.get();
        rt.extra.emplace_back("descriptor_heap_pool",
                              pool_state(wine, rt.opt.fresh_heaps, "--fresh-heaps",
                                         [&] { return install_heap_pool(device); },
                                         "shader-visible heaps handed out again once released (ID3D12Device::"
                                         "CreateDescriptorHeap hooked)"));
        rt.extra.emplace_back("buffer_pool",
                              pool_state(wine, rt.opt.fresh_buffers, "--fresh-buffers",
                                         [&] { return install_buffer_pool(device); },
                                         "committed buffers handed out again once released, to a request for the "
                                         "same buffer (ID3D12Device::CreateCommittedResource hooked)"));
    }
    rt.extra.emplace_back("onnxruntime_dll", rt.ort_path);
    if (!rt.ort_file_version.empty()) rt.extra.emplace_back("onnxruntime_file_version", rt.ort_file_version);
    rt.extra.emplace_back("ort_api", strf("OrtApi version %u, slots counted from onnxruntime %s's onnxruntime_c_api.h; "
                                          "checked at start-up", ort::kApiVersion, ort::kHeaderRelease));
    rt.extra.emplace_back("available_providers", rt.providers);
    rt.extra.emplace_back("cpu_ep_fallback", rt.dml() ? "disabled (session.disable_cpu_ep_fallback = 1)"
                                                      : "n/a (CPU provider)");
    const std::string threads = rt.opt.intra_op_threads == 0 ? "ONNX Runtime's default intra-op threads"
                                : rt.opt.intra_op_threads == 1 ? "1 intra-op thread"
                                                               : strf("%d intra-op threads", rt.opt.intra_op_threads);
    rt.extra.emplace_back("session_options", rt.dml() ? threads + ", ORT_SEQUENTIAL, memory pattern off, DML EP on "
                                                                  "the host's IDMLDevice + DIRECT queue (OrtDmlApi::"
                                                                  "SessionOptionsAppendExecutionProvider_DML1)"
                                                      : threads);
    for (const auto& kv : rt.opt.session_config) rt.extra.emplace_back("session_config." + kv.first, kv.second);
    for (auto& kv : rt.device.extra) rt.extra.push_back(kv);
    if (!rt.dml()) {
        std::string compiler = dmlh::compiler_name(), wine = dmlh::wine_version();
        if (!compiler.empty()) rt.extra.emplace_back("compiler", compiler);
        if (!wine.empty()) rt.extra.emplace_back("wine", wine);
    }
    return std::string();
}

std::string hello_reply(const Runtime& rt) {
    std::string ep = rt.dml() ? "DmlExecutionProvider" : "CPUExecutionProvider";
    std::string h = strf("{\"type\":\"hello\",\"protocol\":%d,\"name\":\"ort_dml_host\",\"version\":\"%s\","
                         "\"serves\":\"onnx-models\",", dmlh::kProtocolVersion, HOST_VERSION);
    h += "\"execution_provider\":" + dmlh::json_string(ep);
    h += ",\"onnxruntime\":" + dmlh::json_string(rt.ort_version);
    if (rt.dml()) {
        h += ",\"adapter\":" + dmlh::json_string(rt.device.adapter_name);
        h += ",\"driver_version\":" + dmlh::json_string(rt.device.driver_version);
        h += ",\"api\":" + dmlh::json_string("ONNX Runtime " + rt.ort_version + " " + ep + ", DirectML " +
                                            (rt.device.dml_version.empty() ? "(version unknown)" : rt.device.dml_version));
        h += ",\"directml\":" + dmlh::json_string(rt.device.dml_version);
        h += ",\"feature_level\":" + dmlh::json_string(dmlh::level_label(rt.device.feature_level));
        h += ",\"feature_level_source\":" + dmlh::json_string(rt.device.feature_level_source +
                                                              " on the device handed to the DML EP");
    } else {
        h += ",\"adapter\":\"CPU\",\"api\":" + dmlh::json_string("ONNX Runtime " + rt.ort_version + " " + ep);
    }
    h += ",\"extra\":{";
    for (size_t i = 0; i < rt.extra.size(); i++)
        h += (i ? "," : "") + dmlh::json_string(rt.extra[i].first) + ":" + dmlh::json_string(rt.extra[i].second);
    h += "}}";
    return h;
}
