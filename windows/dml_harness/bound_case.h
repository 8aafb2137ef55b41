// bound_case.h - a run request with buffers (docs/native-harness.md, "Buffers, graphs and in-place execution"):
// each tensor's layout (Strides, TotalTensorSizeInBytes, BindingOffset) and the image of its whole buffer, an output
// bound over an input in place, the graph path's edge copies; decoded and checked field by field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "descriptions.h"
#include "operators.h"
#include "protocol.h"
#include "replies.h"

// How the case reaches DirectML.
enum class ExecPath { Operator, Graph, InPlace };
const char* path_name(ExecPath p);

// One buffer's bytes before the dispatch (a slice of the request's payload) and its name in the reply.
struct BufferImage {
    std::string name;
    const uint8_t* data = nullptr;
    uint64_t nbytes = 0;  // the buffer's size: a multiple of 16, at least BindingOffset + TotalTensorSizeInBytes
};

// The case: its tensors (descs with the request's layouts; Tensor::binding_offset), which image each is bound
// into, and the images in reply order (inputs, the outputs with a buffer of their own, the edge copies).
// Points into itself and into the request's payload: not copied.
struct BoundCase {
    ExecPath path = ExecPath::Operator;
    Tensor in[2], out;
    int in_image[2] = {-1, -1};
    int out_image = -1;    // in place: the aliased input's image
    int out_alias = -1;    // in place: the input index the output aliases
    int edges_image = -1;  // graph: the output's copy between identity nodes, bound like the output
    std::vector<BufferImage> images;

    BoundCase() = default;
    BoundCase(const BoundCase&) = delete;
    BoundCase& operator=(const BoundCase&) = delete;
};

// Reads the request (its "buffers" is true) into c; on a malformed field fills `bad` with an error naming it.
bool read_bound_case(const OpInfo& info, const dmlh::JValue& request, const std::vector<uint8_t>& payload,
                     BoundCase& c, Reply& bad);
