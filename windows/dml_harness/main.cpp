// main.cpp - dml_harness.exe, a dmlconform native harness that runs each case on DirectML.
//
// It speaks the frame protocol of docs/native-harness.md on stdin/stdout and executes the eight
// gradient operators (ACTIVATION_RELU_GRAD, ELEMENT_WISE_CLIP_GRAD1, SLICE_GRAD, MAX_POOLING_GRAD,
// RESAMPLE_GRAD1, AVERAGE_POOLING_GRAD, RESAMPLE_GRAD, ELEMENT_WISE_CLIP_GRAD; operators.cpp's table) on the
// real DirectML.dll, which it loads at run time (LoadLibrary +
// DMLCreateDevice1). One D3D12 + DirectML device, one descriptor heap and one set of buffers (grown as cases
// need) serve every case; each case gets its own operator, initializer and binding tables, and one submission.
// It reads requests as they come and answers them in order, so the runner may send the next ones before a reply
// (the hello's "pipeline").
//
//   dml_harness.exe [--dml PATH] [--adapter N | --warp] [--debug-layer] [--disable-metacommands]
//                   [--fence-timeout-ms N] [--poison BYTE|none] [--timings FILE] [--heap-per-case]
//                   [--buffers-per-case] [--verbose]
//
// stdout carries frames only: at start-up the harness moves the real stdout to a private
// descriptor and points descriptor 1 (and the Win32 standard output handle) at stderr, so text that
// DirectML, the D3D12 runtime or Wine might print can never corrupt the stream. Logs go to stderr.
//
// The parts (after DxDispatch's Adapter/Device/Executor split): options, device (D3D12 + DirectML, once),
// operators (support tables, hello), descriptions (request -> DML_*_OPERATOR_DESC), executor (packed cases),
// recording (command lists, the shared descriptor heap, reused buffers), bound_case (requests with buffers:
// layouts, images, paths), dispatchables (compiled operator, compiled graph), bound_run (buffer images bound and
// read back), dispatch (the run both paths share: initializer, buffers, binding tables, submission, readback),
// timing (--timings) and replies. Build: ../README.md.
#include <cstdint>
#include <cstdio>
#include <string>

#include "bound_case.h"
#include "bound_run.h"
#include "descriptions.h"
#include "dispatchables.h"
#include "device.h"
#include "executor.h"
#include "harness.h"
#include "operators.h"
#include "options.h"
#include "protocol.h"
#include "replies.h"
#include "server.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::JValue;
using dmlh::level_label;
using dmlh::log_line;
using dmlh::strf;

// A run request with buffers (bound_case.h): decoded, its dispatchable compiled for its path, executed over its
// buffer images, answered with every image read back.
static void handle_bound_run(Harness& harness, const OpInfo& info, const dmlh::Frame& frame, const std::string& id) {
    BoundCase c;
    Reply bad;
    if (!read_bound_case(info, frame.header, frame.payload, c, bad)) {
        send_reply(harness.server, id, bad, nullptr);
        return;
    }
    Tensor* in_ptrs[2] = {&c.in[0], &c.in[1]};
    OpDesc d;
    harness.timer.op = info.name;
    const JValue* params = frame.header.get("params");
    if (!build_desc(info, params, in_ptrs, c.out, d, bad)) {
        send_reply(harness.server, id, bad, nullptr);
        return;
    }
    harness.timer.lap(kDecode);
    if (harness.dev.info_queue) harness.dev.info_queue->ClearStoredMessages();
    Reply r;
    {
        Com<IDMLCompiledOperator> compiled;  // released with the case's other objects as the block ends
        r = c.path == ExecPath::Graph ? compile_graph(harness, info, params, d, c, compiled)
                                      : compile_operator(harness, d, compiled);
        if (r.status == "ok") r = execute_bound(harness, info, compiled.get(), c);
    }
    release_case_buffers(harness);
    harness.timer.lap(kRelease);
    harness.timer.status = r.status;
    if (harness.dev.opt.verbose || r.status == "error")
        log_line("%s (%s path): %s%s%s", id.c_str(), path_name(c.path), r.status.c_str(),
                 r.message.empty() ? "" : ": ", r.message.c_str());
    send_reply(harness.server, id, r, nullptr);
}

// One run request: decoded, executed, answered.
static void handle_run(Harness& harness, const dmlh::Frame& frame, const std::string& id) {
    auto answer = [&](const Reply& r) { send_reply(harness.server, id, r, nullptr); };
    const JValue& h = frame.header;
    const JValue* op_name = h.get("op");
    if (!op_name || !op_name->c_str()) {
        answer(Reply::make("error", "run request without a string 'op'"));
        return;
    }
    const OpInfo* info = find_op(op_name->str);
    if (!info) {
        answer(Reply::make("unsupported", "this harness does not implement " + op_name->str));
        return;
    }
    if (h.get("buffers")) {
        handle_bound_run(harness, *info, frame, id);
        return;
    }
    const JValue* inputs = h.get("inputs");
    const JValue* outputs = h.get("outputs");
    if (!inputs || inputs->type != JValue::Array || !outputs || outputs->type != JValue::Array) {
        answer(Reply::make("error", "run request needs 'inputs' and 'outputs' arrays"));
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
            answer(Reply::make("error", strf("request lacks input %s of %s", info->inputs[i], info->name)));
            return;
        }
        if (!read_tensor(*e, frame.payload, true, in[i], bad)) {
            answer(bad);
            return;
        }
    }
    const JValue* e = find(outputs, "OutputGradientTensor");
    if (!e) {
        answer(Reply::make("error", strf("request lacks output OutputGradientTensor of %s", info->name)));
        return;
    }
    if (!read_tensor(*e, frame.payload, false, out, bad)) {
        answer(bad);
        return;
    }
    OpDesc d;
    harness.timer.op = info->name;
    if (!build_desc(*info, h.get("params"), in_ptrs, out, d, bad)) {
        answer(bad);
        return;
    }
    if (out.nbytes > (uint64_t(1) << 36)) {  // the reply could not carry it; DirectML may still refuse first
        Com<IDMLOperator> op;
        HRESULT hr = harness.dev.dml->CreateOperator(&d.op, DMLH_IID(IDMLOperator), op.put());
        answer(FAILED(hr) ? Reply::make("refused", "IDMLDevice::CreateOperator: " + hr_text(hr))
                          : Reply::make("unsupported", "the output exceeds the protocol's 2^36-byte payload"));
        return;
    }
    harness.timer.lap(kDecode);
    Reply r = execute(harness, *info, d, in_ptrs, out);  // the case's own objects are released as it returns
    release_case_buffers(harness);
    harness.timer.lap(kRelease);
    harness.timer.status = r.status;
    if (harness.dev.opt.verbose || r.status == "error")
        log_line("%s: %s%s%s", id.c_str(), r.status.c_str(), r.message.empty() ? "" : ": ", r.message.c_str());
    send_reply(harness.server, id, r, &out);
}

// ---------------------------------------------------------------------------------------------
// main: stdout becomes frames-only (protocol.h), the device comes up, then the request loop.
// ---------------------------------------------------------------------------------------------
int main(int argc, char** argv) {
    Harness harness;
    dmlh::Server& server = harness.server;
    Device& dev = harness.dev;
    server.frames = dmlh::claim_stdout_for_frames();
    if (!parse_options(argc, argv, dev.opt)) return 2;
    std::string init_error = init_device(dev);
    if (!dev.opt.timings_path.empty()) harness.timer.open(dev.opt.timings_path, init_error, dev.startup_marks);
    if (init_error.empty())
        log_line("%s, DirectML %s (%s), feature level %s", dev.adapter_name.c_str(), dev.dml_version.c_str(),
             dev.dml_path.c_str(), level_label(dev.feature_level).c_str());
    else
        log_line("cannot start: %s", init_error.c_str());

    server.program = "dml_harness";
    server.request_type = "run";
    server.init_error = init_error;
    server.hello = [&harness] {
        harness.server.send(hello_reply(harness.dev));
        make_heap_early(harness);
    };
    server.serve = [&harness](const std::string& id, dmlh::Frame& frame) {
        harness.case_id = id;
        harness.timer.begin_request();
        handle_run(harness, frame, id);
        harness.timer.end_request(id);
    };
    server.reply_error = [&harness](const std::string& id, const std::string& message) {
        send_reply(harness.server, id, Reply::make("error", message), nullptr);
    };
    return server.run(stdin);
}
