// ort_dml_host.cpp - runs ONNX models on ONNX Runtime's DirectML execution provider (or, as a control, its CPU
// one) for dmlconform's `onnxruntime` backend, which builds the models and sends them over the frame protocol of
// docs/native-harness.md (the "ONNX model host" messages of its section 9).
//
//   ort_dml_host.exe [--ep dml|cpu] [--onnxruntime PATH] [--dml PATH] [--adapter N | --warp] [--debug-layer]
//                    [--any-ort-version] [--verbose]
//
// onnxruntime.dll (from the onnxruntime-directml wheel, with onnxruntime_providers_shared.dll and DirectML.dll
// beside it) is loaded at run time; the part of its C API used is declared in ort_api.h. With --ep dml the host
// creates the D3D12 and DirectML devices itself (../dml_harness/d3d12_device.cpp, shared with the DirectML harness)
// and hands the IDMLDevice and its command queue to the EP (OrtDmlApi::SessionOptionsAppendExecutionProvider_DML1):
// ONNX Runtime's own adapter selection fails under Wine. Every session has CPU fallback disabled
// (session.disable_cpu_ep_fallback = 1), so a graph the EP does not take whole is refused at session creation; the
// host then creates it once more with verbose logging to report which nodes went to the CPU.
//
// One session is kept (the last model's): a DML EP session held ~3 GB of lavapipe's host-backed memory, so
// sessions are released as soon as another model comes. Each reply carries the process's working set so that the
// runner can restart the host when memory grows anyway.
//
// stdout carries frames only (protocol.h: claim_stdout_for_frames); logs go to stderr.
#include "d3d12_device.h"

#include <psapi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ort_api.h"
#include "protocol.h"
#include "server.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::JValue;
using dmlh::log_line;
using dmlh::strf;

#define HOST_VERSION "1.0"

static dmlh::Server g_server;  // replies: the real stdout (../dml_harness/server.h)
static bool g_verbose = false;

// ---------------------------------------------------------------------------------------------
// Options.
// ---------------------------------------------------------------------------------------------
struct Options {
    dmlh::DeviceOptions device;  // DirectML.dll, adapter, debug layer (--ep dml)
    std::string ep = "dml";
    std::string ort_path;  // empty: onnxruntime.dll next to the exe, then the DLL search path
    bool any_ort_version = false;
    std::vector<std::pair<std::string, std::string>> session_config;  // --session-config KEY=VALUE
};

static const char kUsage[] =
    "usage: ort_dml_host.exe [options]   (speaks docs/native-harness.md section 9 on stdin/stdout)\n"
    "  --ep dml|cpu            execution provider (default dml; cpu is the control)\n"
    "  --onnxruntime PATH      onnxruntime.dll to load (default: next to this exe, else the DLL search path)\n"
    "  --any-ort-version       run an onnxruntime.dll other than 1.24.x (its OrtApi table is still checked)\n"
    "  --session-config K=V    a session config entry for every session (repeatable), e.g.\n"
    "                          ep.dml.disable_graph_fusion=1\n"
    "  --verbose               ONNX Runtime's log and every request on stderr\n"
    "the device (--ep dml):\n";

static bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        const dmlh::OptionRead device = dmlh::read_device_option(argc, argv, i, o.device);
        if (device == dmlh::OptionRead::kBad) return false;
        if (device == dmlh::OptionRead::kTaken) continue;
        const std::string a = argv[i];
        const char* v = nullptr;
        if (a == "--ep") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.ep = v;
            if (o.ep != "dml" && o.ep != "cpu") {
                log_line("--ep %s: use dml or cpu", v);
                return false;
            }
        } else if (a == "--onnxruntime") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.ort_path = v;
        } else if (a == "--any-ort-version") {
            o.any_ort_version = true;
        } else if (a == "--session-config") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            const char* eq = strchr(v, '=');
            if (!eq || eq == v) {
                log_line("--session-config %s: use KEY=VALUE", v);
                return false;
            }
            o.session_config.emplace_back(std::string(v, eq), std::string(eq + 1));
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
// ONNX Runtime's log: kept while a session is created with verbose logging (where each node was placed), and
// written to stderr from WARNING up (everything with --verbose).
// ---------------------------------------------------------------------------------------------
// ONNX Runtime may log from its own threads. An SRW lock, not std::mutex: mingw-w64's win32 thread model has none.
struct LogCapture {
    SRWLOCK lock = SRWLOCK_INIT;
    bool active = false;
    std::string text;
};
static LogCapture g_log;

struct LogLock {
    LogLock() { AcquireSRWLockExclusive(&g_log.lock); }
    ~LogLock() { ReleaseSRWLockExclusive(&g_log.lock); }
    LogLock(const LogLock&) = delete;
    LogLock& operator=(const LogLock&) = delete;
};

static void ORT_API_CALL ort_log(void*, int severity, const char* category, const char*, const char*,
                                 const char* message) {
    if (!message) return;
    {
        LogLock hold;
        if (g_log.active && g_log.text.size() < (1u << 20)) {
            g_log.text += message;
            g_log.text += '\n';
        }
    }
    if (g_verbose || severity >= ort::LOG_WARNING)
        fprintf(stderr, "onnxruntime[%d %s]: %s\n", severity, category ? category : "", message);
}

// ---------------------------------------------------------------------------------------------
// The runtime: onnxruntime.dll, its API table checked, the environment and the device.
// ---------------------------------------------------------------------------------------------
struct Runtime {
    Options opt;
    HMODULE module = nullptr;
    std::string ort_path, ort_version, ort_file_version, providers;
    ort::Api api{};
    const ort::DmlApi* dml_api = nullptr;
    ort::Env* env = nullptr;
    ort::MemoryInfo* cpu_memory = nullptr;
    dmlh::DmlDevice device;  // --ep dml only
    std::vector<std::pair<std::string, std::string>> extra;

    bool dml() const { return opt.ep == "dml"; }
};

// The text of an OrtStatus (released), "" for success.
static std::string status_text(Runtime& rt, ort::Status* st, int* code = nullptr) {
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

static std::string init_runtime(Runtime& rt) {
    std::string err = load_onnxruntime(rt);
    if (!err.empty()) return err;
    if (!(err = check_api(rt)).empty()) return err;
    // The environment's own level lets everything through to ort_log; each session's level decides what it logs.
    err = status_text(rt, rt.api.CreateEnvWithCustomLogger(ort_log, nullptr, ort::LOG_VERBOSE, "ort_dml_host", &rt.env));
    if (!err.empty()) return "OrtApi::CreateEnvWithCustomLogger: " + err;
    err = status_text(rt, rt.api.CreateCpuMemoryInfo(ort::OrtDeviceAllocator, ort::OrtMemTypeDefault, &rt.cpu_memory));
    if (!err.empty()) return "OrtApi::CreateCpuMemoryInfo: " + err;
    if (rt.dml()) {
        err = dmlh::create_dml_device(rt.device, rt.opt.device);
        if (!err.empty()) return err;
    }
    rt.extra.emplace_back("onnxruntime_dll", rt.ort_path);
    if (!rt.ort_file_version.empty()) rt.extra.emplace_back("onnxruntime_file_version", rt.ort_file_version);
    rt.extra.emplace_back("ort_api", strf("OrtApi version %u, slots counted from onnxruntime %s's onnxruntime_c_api.h; "
                                          "checked at start-up", ort::kApiVersion, ort::kHeaderRelease));
    rt.extra.emplace_back("available_providers", rt.providers);
    rt.extra.emplace_back("cpu_ep_fallback", rt.dml() ? "disabled (session.disable_cpu_ep_fallback = 1)"
                                                      : "n/a (CPU provider)");
    rt.extra.emplace_back("session_options", rt.dml() ? "ORT_SEQUENTIAL, memory pattern off, DML EP on the host's "
                                                        "IDMLDevice + DIRECT queue (OrtDmlApi::"
                                                        "SessionOptionsAppendExecutionProvider_DML1)"
                                                      : "1 intra-op thread");
    for (const auto& kv : rt.opt.session_config) rt.extra.emplace_back("session_config." + kv.first, kv.second);
    for (auto& kv : rt.device.extra) rt.extra.push_back(kv);
    if (!rt.dml()) {
        std::string compiler = dmlh::compiler_name(), wine = dmlh::wine_version();
        if (!compiler.empty()) rt.extra.emplace_back("compiler", compiler);
        if (!wine.empty()) rt.extra.emplace_back("wine", wine);
    }
    return std::string();
}

static std::string hello_reply(const Runtime& rt) {
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

// ---------------------------------------------------------------------------------------------
// Replies.
// ---------------------------------------------------------------------------------------------
static std::string memory_fields() {
    PROCESS_MEMORY_COUNTERS pmc;
    memset(&pmc, 0, sizeof pmc);
    pmc.cb = sizeof pmc;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) return std::string();
    return strf(",\"working_set_bytes\":%llu,\"peak_working_set_bytes\":%llu",
                (unsigned long long)pmc.WorkingSetSize, (unsigned long long)pmc.PeakWorkingSetSize);
}

struct Failure {
    std::string status = "error";  // error, unsupported, device_removed
    std::string stage;             // request, session creation, run, output
    std::string ort_error;         // Fail, NotImplemented, EPFail, ... (ort_api.h error_code_name)
    std::string message;
    std::string placement;         // ONNX Runtime's node placement log, where it was asked for
    std::string hresult;           // device_removed only
};

static void send_failure(const std::string& id, const Failure& f) {
    std::string h = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":" + dmlh::json_string(f.status) +
                    ",\"message\":" + dmlh::json_string(f.message);
    if (!f.stage.empty()) h += ",\"stage\":" + dmlh::json_string(f.stage);
    if (!f.ort_error.empty()) h += ",\"ort_error\":" + dmlh::json_string(f.ort_error);
    if (!f.placement.empty()) h += ",\"placement\":" + dmlh::json_string(f.placement);
    if (!f.hresult.empty()) h += ",\"hresult\":" + dmlh::json_string(f.hresult);
    h += memory_fields() + "}";
    g_server.send(h);
}

static Failure request_error(const std::string& message) {
    Failure f;
    f.stage = "request";
    f.message = message;
    return f;
}

// ---------------------------------------------------------------------------------------------
// Tensors: DML_TENSOR_DATA_TYPE on the wire (docs/native-harness.md section 2), ONNX element types in ORT.
// ---------------------------------------------------------------------------------------------
static int onnx_type(int dml_type) {
    static const int map[12] = {ort::ONNX_UNDEFINED, ort::ONNX_FLOAT,  ort::ONNX_FLOAT16, ort::ONNX_UINT32,
                                ort::ONNX_UINT16,    ort::ONNX_UINT8,  ort::ONNX_INT32,   ort::ONNX_INT16,
                                ort::ONNX_INT8,      ort::ONNX_DOUBLE, ort::ONNX_UINT64,  ort::ONNX_INT64};
    return dml_type >= 1 && dml_type <= dmlh::kTypeCount ? map[dml_type] : ort::ONNX_UNDEFINED;
}

struct WireTensor {
    std::string name;
    int dtype = 0;  // DML_TENSOR_DATA_TYPE
    std::vector<int64_t> sizes;
    uint64_t nbytes = 0;
    uint8_t* data = nullptr;  // inputs: into the request's payload
};

static const size_t kMaxRank = 32;

static bool read_tensor(const JValue& entry, std::vector<uint8_t>& payload, bool with_data, WireTensor& t,
                        std::string& why) {
    const JValue* name = entry.get("name");
    const JValue* type = entry.get("DataType");
    const JValue* sizes = entry.get("Sizes");
    if (!name || !name->c_str()) {
        why = "tensor entry without a string 'name'";
        return false;
    }
    t.name = name->str;
    if (!type || !type->is_int || type->inum < 1 || type->inum > dmlh::kTypeCount) {
        why = t.name + ": DataType must be a DML_TENSOR_DATA_TYPE value 1..11";
        return false;
    }
    t.dtype = int(type->inum);
    if (!sizes || sizes->type != JValue::Array || sizes->items.size() > kMaxRank) {
        why = t.name + ": Sizes must be an array of at most 32 integers";
        return false;
    }
    uint64_t count = 1;
    for (const JValue& s : sizes->items) {
        if (!s.is_int || s.inum < 0 || s.inum > (1LL << 40)) {
            why = t.name + ": Sizes must hold integers 0..2^40";
            return false;
        }
        t.sizes.push_back(s.inum);
        uint64_t v = uint64_t(s.inum);
        if (v && count > (uint64_t(1) << 40) / v) {
            why = t.name + ": more than 2^40 elements";
            return false;
        }
        count *= v;
    }
    t.nbytes = count * dmlh::kTypeBytes[t.dtype];
    if (!with_data) return true;
    const JValue* off = entry.get("offset");
    const JValue* nb = entry.get("nbytes");
    if (!off || !nb || !off->is_int || !nb->is_int || off->inum < 0 || nb->inum < 0) {
        why = t.name + ": offset and nbytes must be non-negative integers";
        return false;
    }
    if (uint64_t(nb->inum) != t.nbytes) {
        why = strf("%s: nbytes %lld disagrees with DataType x Sizes (%llu)", t.name.c_str(), nb->inum,
                   (unsigned long long)t.nbytes);
        return false;
    }
    if (uint64_t(off->inum) > payload.size() || t.nbytes > payload.size() - uint64_t(off->inum)) {
        why = t.name + ": tensor bytes lie outside the payload";
        return false;
    }
    t.data = payload.data() + off->inum;
    return true;
}

// ---------------------------------------------------------------------------------------------
// Sessions.
// ---------------------------------------------------------------------------------------------
struct CachedSession {
    std::vector<uint8_t> model;  // the bytes it was created from
    ort::Session* session = nullptr;
};
static CachedSession g_cached;

static void release_cached(Runtime& rt) {
    if (g_cached.session) rt.api.ReleaseSession(g_cached.session);
    g_cached.session = nullptr;
    g_cached.model.clear();
    g_cached.model.shrink_to_fit();
}

// Options for one session; "" or the failing call. `diagnose`: CPU fallback allowed, for the placement log of a
// graph the EP refused (ONNX Runtime stops before logging the placement when fallback is disabled).
static std::string session_options(Runtime& rt, int log_level, ort::SessionOptions** out, bool diagnose = false) {
    ort::SessionOptions* so = nullptr;
    std::string err = status_text(rt, rt.api.CreateSessionOptions(&so));
    if (!err.empty()) return "CreateSessionOptions: " + err;
    *out = so;
    if (!(err = status_text(rt, rt.api.SetSessionLogSeverityLevel(so, log_level))).empty())
        return "SetSessionLogSeverityLevel: " + err;
    for (const auto& kv : rt.opt.session_config)
        if (!(err = status_text(rt, rt.api.AddSessionConfigEntry(so, kv.first.c_str(), kv.second.c_str()))).empty())
            return "AddSessionConfigEntry(" + kv.first + "): " + err;
    if (rt.dml()) {
        // The DML EP supports neither memory patterns nor parallel execution (its documentation).
        if (!(err = status_text(rt, rt.api.SetSessionExecutionMode(so, ort::ORT_SEQUENTIAL))).empty())
            return "SetSessionExecutionMode: " + err;
        if (!(err = status_text(rt, rt.api.DisableMemPattern(so))).empty()) return "DisableMemPattern: " + err;
        if (!diagnose && !(err = status_text(rt, rt.api.AddSessionConfigEntry(so, ort::kDisableCpuEpFallback, "1"))).empty())
            return "AddSessionConfigEntry(session.disable_cpu_ep_fallback): " + err;
        if (!(err = status_text(rt, rt.dml_api->SessionOptionsAppendExecutionProvider_DML1(so, rt.device.dml.get(),
                                                                                          rt.device.queue.get())))
                 .empty())
            return "OrtDmlApi::SessionOptionsAppendExecutionProvider_DML1: " + err;
    } else {
        // Small tensors: one thread keeps session creation cheap and the accumulation order fixed (as the
        // in-process backend does on the CPU EP).
        if (!(err = status_text(rt, rt.api.SetIntraOpNumThreads(so, 1))).empty()) return "SetIntraOpNumThreads: " + err;
    }
    return std::string();
}

// The node placement part of a verbose session log ("Node(s) placed on [...]" with the nodes listed under it).
static std::string placement_lines(const std::string& log) {
    std::string out;
    size_t at = 0;
    while ((at = log.find("placed on [", at)) != std::string::npos) {
        size_t begin = log.rfind('\n', at);
        begin = begin == std::string::npos ? 0 : begin + 1;
        // The message runs until a line that is not indented (the next log message).
        size_t end = log.find('\n', at);
        while (end != std::string::npos && end + 1 < log.size() && (log[end + 1] == ' ' || log[end + 1] == '\t'))
            end = log.find('\n', end + 1);
        if (end == std::string::npos) end = log.size();
        if (!out.empty()) out += '\n';
        out += log.substr(begin, end - begin);
        at = end;
    }
    return out.size() > 4000 ? out.substr(0, 4000) + "..." : out;
}

static bool device_lost(Runtime& rt, HRESULT* reason) {
    if (!rt.dml() || !rt.device.d3d) return false;
    *reason = rt.device.d3d->GetDeviceRemovedReason();
    return FAILED(*reason);
}

// A lost device: reply, flush and leave at once (as the DirectML harness does; nothing is released first).
[[noreturn]] static void device_lost_exit(const std::string& id, const std::string& what, HRESULT reason) {
    Failure f;
    f.status = "device_removed";
    f.stage = what;
    f.message = what + "; ID3D12Device::GetDeviceRemovedReason: " + hr_text(reason);
    f.hresult = strf("0x%08lX", (unsigned long)reason);
    send_failure(id, f);
    fflush(g_server.frames);
    log_line("%s: device removed (%s); exiting so that the runner starts a fresh host", id.c_str(), f.message.c_str());
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 3);
    _exit(3);
}

// The cached session for these model bytes, created if needed; nullptr with `f` filled when it cannot be.
static ort::Session* session_for(Runtime& rt, const std::string& id, const uint8_t* model, size_t len, Failure& f) {
    if (g_cached.session && g_cached.model.size() == len && memcmp(g_cached.model.data(), model, len) == 0)
        return g_cached.session;
    release_cached(rt);
    ort::SessionOptions* so = nullptr;
    std::string err = session_options(rt, ort::LOG_ERROR, &so);
    ort::Session* session = nullptr;
    int code = ort::ORT_OK;
    if (err.empty()) err = status_text(rt, rt.api.CreateSessionFromArray(rt.env, model, len, so, &session), &code);
    else code = ort::ORT_FAIL;
    if (so) rt.api.ReleaseSessionOptions(so);
    if (err.empty()) {
        g_cached.model.assign(model, model + len);
        g_cached.session = session;
        return session;
    }
    HRESULT reason;
    if (device_lost(rt, &reason)) device_lost_exit(id, "session creation: " + err, reason);
    f.stage = "session creation";
    f.ort_error = ort::error_code_name(code);
    f.message = err;
    if (rt.dml()) {
        // Once more, verbose and with CPU fallback allowed, for the node placement ONNX Runtime's message does not
        // name; that session is released at once and nothing runs on it.
        ort::SessionOptions* verbose = nullptr;
        if (session_options(rt, ort::LOG_VERBOSE, &verbose, true).empty()) {
            {
                LogLock hold;
                g_log.text.clear();
                g_log.active = true;
            }
            ort::Session* again = nullptr;
            status_text(rt, rt.api.CreateSessionFromArray(rt.env, model, len, verbose, &again));
            if (again) rt.api.ReleaseSession(again);
            LogLock hold;
            g_log.active = false;
            f.placement = placement_lines(g_log.text);
            g_log.text.clear();
        }
        if (verbose) rt.api.ReleaseSessionOptions(verbose);
    }
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// One request.
// ---------------------------------------------------------------------------------------------
struct Values {
    Runtime& rt;
    std::vector<ort::Value*> items;
    explicit Values(Runtime& r) : rt(r) {}
    ~Values() {
        for (ort::Value* v : items)
            if (v) rt.api.ReleaseValue(v);
    }
};

static void handle_run_model(Runtime& rt, dmlh::Frame& frame, const std::string& id) {
    const JValue& h = frame.header;
    const JValue* model = h.get("model");
    const JValue* inputs = h.get("inputs");
    const JValue* outputs = h.get("outputs");
    if (!model || model->type != JValue::Object || !inputs || inputs->type != JValue::Array || !outputs ||
        outputs->type != JValue::Array || outputs->items.empty())
        return send_failure(id, request_error("run_model needs a 'model' object and 'inputs' and 'outputs' arrays"));
    const JValue* moff = model->get("offset");
    const JValue* mlen = model->get("nbytes");
    if (!moff || !mlen || !moff->is_int || !mlen->is_int || moff->inum < 0 || mlen->inum <= 0 ||
        uint64_t(moff->inum) > frame.payload.size() || uint64_t(mlen->inum) > frame.payload.size() - uint64_t(moff->inum))
        return send_failure(id, request_error("model: offset and nbytes must point at the model's bytes in the payload"));

    std::vector<WireTensor> in(inputs->items.size()), out(outputs->items.size());
    std::string why;
    for (size_t i = 0; i < in.size(); i++)
        if (!read_tensor(inputs->items[i], frame.payload, true, in[i], why)) return send_failure(id, request_error(why));
    for (size_t i = 0; i < out.size(); i++)
        if (!read_tensor(outputs->items[i], frame.payload, false, out[i], why)) return send_failure(id, request_error(why));

    Failure f;
    ort::Session* session = session_for(rt, id, frame.payload.data() + moff->inum, size_t(mlen->inum), f);
    if (!session) {
        if (g_verbose) log_line("%s: %s: %s", id.c_str(), f.stage.c_str(), f.message.c_str());
        return send_failure(id, f);
    }

    Values in_values(rt), out_values(rt);
    std::vector<const char*> in_names, out_names;
    for (WireTensor& t : in) {
        ort::Value* v = nullptr;
        std::string err = status_text(rt, rt.api.CreateTensorWithDataAsOrtValue(
                                              rt.cpu_memory, t.data, size_t(t.nbytes), t.sizes.data(), t.sizes.size(),
                                              onnx_type(t.dtype), &v));
        if (!err.empty()) return send_failure(id, request_error("input " + t.name + ": CreateTensorWithDataAsOrtValue: " + err));
        in_values.items.push_back(v);
        in_names.push_back(t.name.c_str());
    }
    for (WireTensor& t : out) out_names.push_back(t.name.c_str());
    out_values.items.assign(out.size(), nullptr);
    int code = ort::ORT_OK;
    std::string err = status_text(rt, rt.api.Run(session, nullptr, in_names.data(), in_values.items.data(), in.size(),
                                                 out_names.data(), out.size(), out_values.items.data()), &code);
    if (!err.empty()) {
        HRESULT reason;
        if (device_lost(rt, &reason)) device_lost_exit(id, "run: " + err, reason);
        f.stage = "run";
        f.ort_error = ort::error_code_name(code);
        f.message = err;
        return send_failure(id, f);
    }

    // Outputs: the requested DataType and Sizes, or an error that says what came back instead.
    std::string header = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":\"ok\",\"outputs\":[";
    std::vector<uint8_t> payload;
    for (size_t i = 0; i < out.size(); i++) {
        ort::TensorTypeAndShapeInfo* info = nullptr;
        if (!(err = status_text(rt, rt.api.GetTensorTypeAndShape(out_values.items[i], &info))).empty())
            return send_failure(id, request_error(out[i].name + ": GetTensorTypeAndShape: " + err));
        int type = 0;
        size_t rank = 0;
        std::vector<int64_t> dims;
        err = status_text(rt, rt.api.GetTensorElementType(info, &type));
        if (err.empty()) err = status_text(rt, rt.api.GetDimensionsCount(info, &rank));
        if (err.empty()) {
            dims.resize(rank);
            err = status_text(rt, rt.api.GetDimensions(info, dims.data(), rank));
        }
        rt.api.ReleaseTensorTypeAndShapeInfo(info);
        if (!err.empty()) return send_failure(id, request_error(out[i].name + ": reading its type and shape: " + err));
        if (type != onnx_type(out[i].dtype) || dims != out[i].sizes) {
            Failure bad;
            bad.stage = "output";
            bad.message = strf("%s: ONNX Runtime returned element type %d with %zu dimension(s), the request asked for "
                               "ONNX type %d (DataType %d) and %zu", out[i].name.c_str(), type, rank,
                               onnx_type(out[i].dtype), out[i].dtype, out[i].sizes.size());
            return send_failure(id, bad);
        }
        void* data = nullptr;
        if (!(err = status_text(rt, rt.api.GetTensorMutableData(out_values.items[i], &data))).empty())
            return send_failure(id, request_error(out[i].name + ": GetTensorMutableData: " + err));
        size_t offset = (payload.size() + 15) / 16 * 16;
        payload.resize(offset + size_t(out[i].nbytes));
        if (out[i].nbytes) memcpy(payload.data() + offset, data, size_t(out[i].nbytes));
        header += strf("%s{\"name\":%s,\"DataType\":%d,\"Sizes\":[", i ? "," : "", dmlh::json_string(out[i].name).c_str(),
                       out[i].dtype);
        for (size_t d = 0; d < dims.size(); d++) header += strf("%s%lld", d ? "," : "", (long long)dims[d]);
        header += strf("],\"offset\":%zu,\"nbytes\":%llu}", offset, (unsigned long long)out[i].nbytes);
    }
    header += "]" + memory_fields() + "}";
    if (g_verbose) log_line("%s: ok", id.c_str());
    g_server.send(header, payload.data(), payload.size());
}

// ---------------------------------------------------------------------------------------------
// main: stdout becomes frames-only, ONNX Runtime and the device come up, then the request loop.
// ---------------------------------------------------------------------------------------------
int main(int argc, char** argv) {
    dmlh::g_log_prefix = "ort-dml-host: ";
    g_server.frames = dmlh::claim_stdout_for_frames();
    Runtime rt;
    if (!parse_options(argc, argv, rt.opt)) return 2;
    std::string init_error = init_runtime(rt);
    if (init_error.empty())
        log_line("onnxruntime %s (%s), %s%s", rt.ort_version.c_str(), rt.ort_path.c_str(),
                 rt.dml() ? "DmlExecutionProvider on " : "CPUExecutionProvider",
                 rt.dml() ? (rt.device.adapter_name + ", DirectML " + rt.device.dml_version).c_str() : "");
    else
        log_line("cannot start: %s", init_error.c_str());

    g_server.program = "ort_dml_host";
    g_server.request_type = "run_model";
    g_server.init_error = init_error;
    g_server.hello = [&rt] { g_server.send(hello_reply(rt)); };
    g_server.serve = [&rt](const std::string& id, dmlh::Frame& frame) { handle_run_model(rt, frame, id); };
    g_server.reply_error = [](const std::string& id, const std::string& message) {
        send_failure(id, request_error(message));
    };
    g_server.other = [](const std::string& type, const std::string& id) {
        if (type != "run") return false;
        send_failure(id, request_error("this host runs ONNX models (run_model), not DirectML operator descriptions "
                                       "(run): use the DirectML harness for those"));
        return true;
    };
    const int status = g_server.run(stdin);
    if (status == 0) release_cached(rt);
    return status;
}
