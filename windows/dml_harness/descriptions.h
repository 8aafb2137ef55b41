// descriptions.h - request decoding: the wire's tensors into DML_BUFFER_TENSOR_DESCs and a request's params into
// the operator's DML_*_OPERATOR_DESC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operators.h"
#include "protocol.h"
#include "replies.h"

// Points into itself (desc -> buffer -> sizes): not copied.
struct Tensor {
    std::string name;
    int dtype = 0;
    std::vector<UINT> sizes;
    const uint8_t* data = nullptr;  // inputs
    uint64_t nbytes = 0;            // product(Sizes) x element size (saturated)
    std::vector<UINT> strides;      // the request's Strides (bound_case.h); empty: packed, buffer.Strides null
    uint64_t binding_offset = 0;    // DML_BUFFER_BINDING::Offset (bound_case.h); 0 for packed cases
    DML_BUFFER_TENSOR_DESC buffer;
    DML_TENSOR_DESC desc;
};

// Reads a tensor entry into t; on a problem fills `bad` (status + message) and returns false.
bool read_tensor(const dmlh::JValue& entry, const std::vector<uint8_t>& payload, bool with_data, Tensor& t,
                 Reply& bad);

// `packed` as `t` would be sent today: same name, DataType and Sizes, packed (Strides null, TotalTensorSizeInBytes as
// DMLCalcBufferTensorSize), bound at offset 0: the graph path's intermediate edges.
void packed_copy(const Tensor& t, Tensor& packed);

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
    DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC average_pool;
    DML_RESAMPLE_GRAD_OPERATOR_DESC resample0;
    DML_ELEMENT_WISE_CLIP_GRAD_OPERATOR_DESC clip0;
    DML_OPERATOR_DESC op;
};

// Fills d from the request's params (null or not an object: none) and the operator's tensors; on a problem fills
// `bad` and returns false.
bool build_desc(const OpInfo& info, const dmlh::JValue* params, Tensor* const* in, Tensor& out, OpDesc& d,
                Reply& bad);
