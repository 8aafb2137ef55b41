// executor.cpp - one packed case on the device (see executor.h); the run itself is dispatch.cpp's.
#include "executor.h"

#include <initializer_list>

#include "dispatch.h"
#include "dispatchables.h"
#include "harness.h"
#include "recording.h"

using dmlh::Com;

void make_heap_early(Harness& h) {
    if (h.dev.opt.heap_per_case) return;
    const LONGLONG began = qpc_now();
    ID3D12DescriptorHeap* heap = nullptr;
    case_descriptor_heap(h.dev, h.heap, 64, heap);
    h.timer.startup_heap(began);
}

// Buffers larger than this are not kept for the next case: a rare large case would otherwise hold its memory (host
// memory, on lavapipe) for the rest of the run, several times over.
static const UINT64 kKeptBufferBytes = UINT64(64) << 20;

void release_case_buffers(Harness& h) {
    if (h.dev.opt.buffers_per_case) {
        forget_buffers(h.buffers);
        return;
    }
    CaseBuffers& bufs = h.buffers;
    for (CaseBuffer* b : {&bufs.in[0], &bufs.in[1], &bufs.out, &bufs.temp, &bufs.persistent, &bufs.upload,
                          &bufs.readback})
        if (b->capacity > kKeptBufferBytes) {
            b->resource.reset();
            b->capacity = 0;
        }
    for (CaseBuffer& b : bufs.image)
        if (b.capacity > kKeptBufferBytes) {
            b.resource.reset();
            b.capacity = 0;
        }
}

Reply execute(Harness& h, const OpInfo& info, OpDesc& d, Tensor* const* in, Tensor& out) {
    Device& dev = h.dev;
    if (dev.info_queue) dev.info_queue->ClearStoredMessages();
    Com<IDMLCompiledOperator> compiled;
    Reply made = compile_operator(h, d, compiled);
    if (made.status != "ok") return made;
    // One buffer per input, filled with its bytes, and the output's, filled with the poison (or zeros); each bound
    // whole at offset 0 (two submissions with --buffers-per-case, as before).
    CaseBuffers& bufs = h.buffers;
    Run run;
    run.compiled = compiled.get();
    run.label = info.name;
    run.object = "compiled operator";
    run.dispatch = "operator dispatch";
    run.first_list = dev.opt.buffers_per_case ? "operator initializer" : "operator dispatch";
    run.initializer_apart = dev.opt.buffers_per_case;
    const int n_in = info.input_count;
    for (int i = 0; i < n_in; i++) {
        RunBuffer& b = run.buffers[i];
        b.buffer = &bufs.in[i];
        b.name = &in[i]->name;
        b.size = in[i]->buffer.TotalTensorSizeInBytes;
        b.data = in[i]->data;
        b.data_bytes = in[i]->nbytes;
        run.inputs[i] = {i, 0, b.size};
    }
    RunBuffer& o = run.buffers[n_in];
    o.buffer = &bufs.out;
    o.name = &out.name;
    o.size = out.buffer.TotalTensorSizeInBytes;
    o.fill = dev.opt.poison;
    o.read_back = true;
    o.read_bytes = out.nbytes;
    run.outputs[0] = {n_in, 0, o.size};
    run.buffer_count = n_in + 1;
    run.input_count = n_in;
    run.output_count = 1;
    return execute_run(h, run);
}
