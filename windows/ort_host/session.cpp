// session.cpp - the cached session, its options, and the node placement of a graph the EP refused (see
// session.h).
#include "session.h"

#include <cstring>

#include "host.h"
#include "timing.h"

void release_cached(Runtime& rt, CachedSession& cached) {
    if (cached.session) rt.api.ReleaseSession(cached.session);
    cached.session = nullptr;
    cached.model.clear();
    cached.model.shrink_to_fit();
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
    // One intra-op thread on every EP (--intra-op-threads): the tensors are small, the DML EP's work is the GPU's,
    // and ONNX Runtime's default, a pool of a thread per physical core, is made and torn down with every session.
    // Measured on lavapipe (2 cores, ReluGrad float32 sessions, median): 3.5 ms a session and 0.4 ms a run with
    // one thread; 6.7 and 1.0 ms with the default (2 threads here); 66 and 13 ms with 16 threads, as many as a
    // 16-core machine's default. On the CPU EP one thread also keeps the accumulation order fixed.
    if (rt.opt.intra_op_threads &&
        !(err = status_text(rt, rt.api.SetIntraOpNumThreads(so, rt.opt.intra_op_threads))).empty())
        return "SetIntraOpNumThreads: " + err;
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

bool device_lost(Runtime& rt, HRESULT* reason) {
    if (!rt.dml() || !rt.device.d3d) return false;
    *reason = rt.device.d3d->GetDeviceRemovedReason();
    return FAILED(*reason);
}

ort::Session* session_for(Host& host, const std::string& id, const uint8_t* model, size_t len, Failure& f) {
    Runtime& rt = host.rt;
    CachedSession& cached = host.cached;
    if (cached.session && cached.model.size() == len && memcmp(cached.model.data(), model, len) == 0)
        return cached.session;
    release_cached(rt, cached);
    ort::SessionOptions* so = nullptr;
    std::string err = session_options(rt, ort::LOG_ERROR, &so);
    ort::Session* session = nullptr;
    int code = ort::ORT_OK;
    g_host_timer.session_created = true;
    g_host_timer.gpu_mark(0);
    if (err.empty()) err = status_text(rt, rt.api.CreateSessionFromArray(rt.env, model, len, so, &session), &code);
    else code = ort::ORT_FAIL;
    g_host_timer.gpu_mark(1);
    if (so) rt.api.ReleaseSessionOptions(so);
    if (err.empty()) {
        cached.model.assign(model, model + len);
        cached.session = session;
        return session;
    }
    HRESULT reason;
    if (device_lost(rt, &reason)) device_lost_exit(host.server, id, "session creation: " + err, reason);
    f.stage = "session creation";
    f.ort_error = ort::error_code_name(code);
    f.message = err;
    if (rt.dml()) {
        // Once more, verbose and with CPU fallback allowed, for the node placement ONNX Runtime's message does not
        // name; that session is released at once and nothing runs on it.
        ort::SessionOptions* verbose = nullptr;
        if (session_options(rt, ort::LOG_VERBOSE, &verbose, true).empty()) {
            {
                LogLock hold(rt.log);
                rt.log.text.clear();
                rt.log.active = true;
            }
            ort::Session* again = nullptr;
            status_text(rt, rt.api.CreateSessionFromArray(rt.env, model, len, verbose, &again));
            if (again) rt.api.ReleaseSession(again);
            LogLock hold(rt.log);
            rt.log.active = false;
            f.placement = placement_lines(rt.log.text);
            rt.log.text.clear();
        }
        if (verbose) rt.api.ReleaseSessionOptions(verbose);
    }
    return nullptr;
}
