// main.cpp - ort_dml_host.exe, which runs ONNX models on ONNX Runtime's DirectML execution provider (or, as a
// control, its CPU one) for dmlconform's `onnxruntime` backend, which builds the models and sends them over the
// frame protocol of docs/native-harness.md (the "ONNX model host" messages of its section 9).
//
//   ort_dml_host.exe [--ep dml|cpu] [--onnxruntime PATH] [--dml PATH] [--adapter N | --warp] [--debug-layer]
//                    [--any-ort-version] [--session-config K=V] [--timings FILE] [--intra-op-threads N]
//                    [--fresh-heaps] [--fresh-buffers] [--verbose]
//
// onnxruntime.dll (from the onnxruntime-directml wheel, with onnxruntime_providers_shared.dll and DirectML.dll
// beside it) is loaded at run time; the part of its C API used is declared in ort_api.h. With --ep dml the host
// creates the D3D12 and DirectML devices itself (../common/d3d12_device.cpp, shared with the DirectML harness)
// and hands the IDMLDevice and its command queue to the EP (OrtDmlApi::SessionOptionsAppendExecutionProvider_DML1):
// ONNX Runtime's own adapter selection fails under Wine. Every session has CPU fallback disabled
// (session.disable_cpu_ep_fallback = 1), so a graph the EP does not take whole is refused at session creation; the
// host then creates it once more with verbose logging to report which nodes went to the CPU.
//
// One session is kept (the last model's): a DML EP session held ~3 GB of lavapipe's host-backed memory, so
// sessions are released as soon as another model comes. Each reply carries the process's working set so that the
// runner can restart the host when memory grows anyway. Under Wine the shader-visible descriptor heaps sessions
// release are handed to the next sessions (heap_pool.h): making them was nearly all of a session's cost on lavapipe;
// so are the committed buffers they release (buffer_pool.h): on NVIDIA's driver each allocation, free, map and unmap
// takes a lock every process on the GPU shares.
// Sessions get one intra-op thread (no thread pool) on every EP: ONNX Runtime's default pool, a thread per physical
// core made and torn down with each session, costs more than the rest of the session with many cores (session.cpp).
//
// stdout carries frames only (protocol.h: claim_stdout_for_frames); logs go to stderr.
//
// The parts: options, runtime (onnxruntime.dll, its checked API table, the environment, its log), session (the
// cached session and its options), requests (run_model) and replies.
#include <cstdio>
#include <string>

#include "host.h"
#include "options.h"
#include "protocol.h"
#include "replies.h"
#include "requests.h"
#include "runtime.h"
#include "server.h"
#include "session.h"
#include "timing.h"

using dmlh::log_line;

// ---------------------------------------------------------------------------------------------
// main: stdout becomes frames-only, ONNX Runtime and the device come up, then the request loop.
// ---------------------------------------------------------------------------------------------
int main(int argc, char** argv) {
    dmlh::g_log_prefix = "ort-dml-host: ";
    Host host;
    dmlh::Server& server = host.server;
    Runtime& rt = host.rt;
    server.frames = dmlh::claim_stdout_for_frames();
    if (!parse_options(argc, argv, rt.opt)) return 2;
    std::string init_error = init_runtime(rt);
    if (init_error.empty())
        log_line("onnxruntime %s (%s), %s%s", rt.ort_version.c_str(), rt.ort_path.c_str(),
                 rt.dml() ? "DmlExecutionProvider on " : "CPUExecutionProvider",
                 rt.dml() ? (rt.device.adapter_name + ", DirectML " + rt.device.dml_version).c_str() : "");
    else
        log_line("cannot start: %s", init_error.c_str());
    if (!rt.opt.timings_path.empty())
        g_host_timer.open(rt.opt.timings_path, init_error, rt.dml() && init_error.empty() ? &rt.device : nullptr);

    server.program = "ort_dml_host";
    server.request_type = "run_model";
    server.init_error = init_error;
    server.hello = [&host] { host.server.send(hello_reply(host.rt)); };
    server.serve = [&host](const std::string& id, dmlh::Frame& frame) {
        g_host_timer.begin_request();
        handle_run_model(host, frame, id);
        g_host_timer.end_request(id);
    };
    server.reply_error = [&host](const std::string& id, const std::string& message) {
        send_failure(host.server, id, request_error(message));
    };
    server.other = [&host](const std::string& type, const std::string& id) {
        if (type != "run") return false;
        send_failure(host.server, id, request_error("this host runs ONNX models (run_model), not DirectML operator "
                                                    "descriptions (run): use the DirectML harness for those"));
        return true;
    };
    const int status = server.run(stdin);
    if (status == 0) release_cached(rt, host.cached);
    return status;
}
