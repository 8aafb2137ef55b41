// bound_run.cpp - a case with buffer images on the device (see bound_run.h); the run itself is dispatch.cpp's.
#include "bound_run.h"

#include <string>

#include "dispatch.h"
#include "harness.h"

using dmlh::strf;

Reply execute_bound(Harness& h, const OpInfo& info, IDMLCompiledOperator* compiled, BoundCase& c) {
    const int n = int(c.images.size());
    if (n > kMaxImages) return Reply::make("error", "too many buffer images in one request");
    const bool graph = c.path == ExecPath::Graph;
    Run run;
    run.compiled = compiled;
    run.label = strf("%s (%s path)", info.name, path_name(c.path));
    run.object = graph ? "compiled graph" : "compiled operator";
    run.dispatch = graph ? "compiled graph dispatch" : "operator dispatch";
    run.first_list = "dispatch";
    // One buffer per image, filled with exactly its bytes and read back whole.
    for (int k = 0; k < n; k++) {
        RunBuffer& b = run.buffers[k];
        b.buffer = &h.buffers.image[k];
        b.name = &c.images[k].name;
        b.size = c.images[k].nbytes;
        b.data = c.images[k].data;
        b.data_bytes = c.images[k].nbytes;
        b.read_back = true;
        b.read_bytes = c.images[k].nbytes;
    }
    run.buffer_count = n;
    // The operator's inputs (the graph's, in the same order), then its output (the graph's first) and, on the graph
    // path, the edges copy (the graph's second output), bound like the output over its own image; in place, the
    // output's image is its input's.
    run.input_count = info.input_count;
    for (int i = 0; i < info.input_count; i++)
        run.inputs[i] = {c.in_image[i], c.in[i].binding_offset, c.in[i].buffer.TotalTensorSizeInBytes};
    run.outputs[run.output_count++] = {c.out_image, c.out.binding_offset, c.out.buffer.TotalTensorSizeInBytes};
    if (c.edges_image >= 0)
        run.outputs[run.output_count++] = {c.edges_image, c.out.binding_offset, c.out.buffer.TotalTensorSizeInBytes};

    Reply ok = execute_run(h, run);
    if (ok.status != "ok") return ok;
    // Every image, as read back, one after another (each a multiple of 16 bytes: 16-byte aligned in the payload).
    UINT64 offset = 0;
    for (int k = 0; k < n; k++) {
        ok.images.push_back({c.images[k].name, offset, c.images[k].nbytes});
        offset += c.images[k].nbytes;
    }
    ok.with_images = true;
    return ok;
}
