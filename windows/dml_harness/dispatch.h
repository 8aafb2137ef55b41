// dispatch.h - one dispatchable run on the device, the sequence both request kinds share (after DxDispatch's
// Executor: the compiled object and what to bind in, a reply out). Its initializer made, the descriptor heap
// (recording.h), the temporary and persistent resources, the case's buffers and the upload and readback buffers made
// or reused, the upload buffer laid out and written, both binding tables, the initializer and the dispatch recorded
// (barriers, GPU timestamps) into one command list, submitted and waited for, the buffers to read read back.
// What differs stays with each path: which buffers, how they are filled and where tensors are bound in them (packed
// cases: executor.cpp; cases with buffer images: bound_run.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "executor.h"

// One buffer of the run, on the DEFAULT heap for unordered access (a reused CaseBuffer, made or grown to `size`).
// Before any work it holds, up to its 256-byte boundary: zeros, `fill` over its first `size` bytes when >= 0, then
// `data_bytes` of `data` at its start. After the dispatch its first `read_bytes` go into the reply when `read_back`.
struct RunBuffer {
    CaseBuffer* buffer = nullptr;
    const std::string* name = nullptr;  // for the failure of its CreateCommittedResource
    UINT64 size = 0;
    const uint8_t* data = nullptr;
    UINT64 data_bytes = 0;
    int fill = -1;
    bool read_back = false;
    UINT64 read_bytes = 0;
};

// A tensor bound in one of the run's buffers: DML_BUFFER_BINDING{buffer, offset, size}.
struct RunBinding {
    int buffer = -1;  // index into Run::buffers
    UINT64 offset = 0, size = 0;
};

struct Run {
    IDMLCompiledOperator* compiled = nullptr;
    std::string label;                // the verbose log's name for the case
    const char* object = "";          // what `compiled` is, in failures: "compiled operator", "compiled graph"
    const char* dispatch = "";        // the submission, in failures: "operator dispatch", "compiled graph dispatch"
    const char* first_list = "";      // the command list's reset, in failures
    bool initializer_apart = false;   // the initializer submitted and waited for on its own (the old way)
    RunBuffer buffers[kMaxImages];
    int buffer_count = 0;
    RunBinding inputs[2], outputs[2];
    int input_count = 0, output_count = 0;
};

// Initializes and dispatches `run.compiled` over its buffers. Reply ok carries, in Reply::data, the read-back bytes
// of each buffer marked read_back, one after another in the order of run.buffers. On a failure the reused buffers
// are dropped (the states recorded for them may not have been reached).
Reply execute_run(Harness& h, const Run& run);
