// descriptions.cpp - request decoding (see descriptions.h).
#include "descriptions.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>

using dmlh::JValue;
using dmlh::kTypeBytes;
using dmlh::kTypeCount;
using dmlh::strf;

// ---------------------------------------------------------------------------------------------
// The header facts the harness depends on, checked against whichever DirectML.h is in use.
// ---------------------------------------------------------------------------------------------
static_assert(DML_OPERATOR_ACTIVATION_RELU_GRAD == 129, "DML_OPERATOR_ACTIVATION_RELU_GRAD");
static_assert(DML_OPERATOR_AVERAGE_POOLING_GRAD == 130, "DML_OPERATOR_AVERAGE_POOLING_GRAD");
static_assert(DML_OPERATOR_MAX_POOLING_GRAD == 131, "DML_OPERATOR_MAX_POOLING_GRAD");
static_assert(DML_OPERATOR_RESAMPLE_GRAD == 134, "DML_OPERATOR_RESAMPLE_GRAD");
static_assert(DML_OPERATOR_SLICE_GRAD == 135, "DML_OPERATOR_SLICE_GRAD");
static_assert(DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD == 142, "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD");
static_assert(DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 == 154, "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1");
static_assert(DML_OPERATOR_RESAMPLE_GRAD1 == 162, "DML_OPERATOR_RESAMPLE_GRAD1");
static_assert(DML_TENSOR_DATA_TYPE_FLOAT32 == 1 && DML_TENSOR_DATA_TYPE_FLOAT16 == 2 &&
              DML_TENSOR_DATA_TYPE_INT8 == 8 && DML_TENSOR_DATA_TYPE_INT64 == 11, "DML_TENSOR_DATA_TYPE");
static_assert(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT == 0 && DML_FEATURE_FEATURE_LEVELS == 1, "DML_FEATURE");
static_assert(DML_INTERPOLATION_MODE_LINEAR == 1 && DML_AXIS_DIRECTION_DECREASING == 1, "enums");
static_assert(sizeof(DML_SCALAR_UNION) == 8, "DML_SCALAR_UNION is 8 bytes");
static_assert(sizeof(BOOL) == 4 && sizeof(FLOAT) == 4, "BOOL and FLOAT are 32-bit");
#if defined(_WIN64)
static_assert(sizeof(DML_BUFFER_TENSOR_DESC) == 48, "DML_BUFFER_TENSOR_DESC layout");
static_assert(offsetof(DML_BUFFER_TENSOR_DESC, TotalTensorSizeInBytes) == 32, "DML_BUFFER_TENSOR_DESC layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, MinMaxDataType) == 24, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, Min) == 32, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, Max) == 40, "CLIP_GRAD1 layout");
static_assert(offsetof(DML_SLICE_GRAD_OPERATOR_DESC, InputWindowStrides) == 40, "SLICE_GRAD layout");
static_assert(offsetof(DML_MAX_POOLING_GRAD_OPERATOR_DESC, Dilations) == 64, "MAX_POOLING_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD1_OPERATOR_DESC, DimensionCount) == 24, "RESAMPLE_GRAD1 layout");
static_assert(offsetof(DML_RESAMPLE_GRAD1_OPERATOR_DESC, OutputPixelOffsets) == 48, "RESAMPLE_GRAD1 layout");
static_assert(offsetof(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC, DimensionCount) == 16, "AVERAGE_POOLING_GRAD layout");
static_assert(offsetof(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC, Strides) == 24, "AVERAGE_POOLING_GRAD layout");
static_assert(offsetof(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC, EndPadding) == 48, "AVERAGE_POOLING_GRAD layout");
static_assert(offsetof(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC, IncludePadding) == 56, "AVERAGE_POOLING_GRAD layout");
static_assert(sizeof(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC) == 64, "AVERAGE_POOLING_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD_OPERATOR_DESC, InterpolationMode) == 16, "RESAMPLE_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD_OPERATOR_DESC, DimensionCount) == 20, "RESAMPLE_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD_OPERATOR_DESC, Scales) == 24, "RESAMPLE_GRAD layout");
static_assert(offsetof(DML_RESAMPLE_GRAD_OPERATOR_DESC, OutputPixelOffsets) == 40, "RESAMPLE_GRAD layout");
static_assert(sizeof(DML_RESAMPLE_GRAD_OPERATOR_DESC) == 48, "RESAMPLE_GRAD layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD_OPERATOR_DESC, Min) == 24, "CLIP_GRAD layout");
static_assert(offsetof(DML_ELEMENT_WISE_CLIP_GRAD_OPERATOR_DESC, Max) == 28, "CLIP_GRAD layout");
static_assert(sizeof(DML_ELEMENT_WISE_CLIP_GRAD_OPERATOR_DESC) == 32, "CLIP_GRAD layout");
static_assert(sizeof(DML_BINDING_PROPERTIES) == 24, "DML_BINDING_PROPERTIES layout");
static_assert(sizeof(DML_BINDING_TABLE_DESC) == 32, "DML_BINDING_TABLE_DESC layout");
static_assert(sizeof(DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC) == 24, "ELEMENT_WISE_IDENTITY layout");
static_assert(sizeof(DML_INPUT_GRAPH_EDGE_DESC) == 24 && sizeof(DML_OUTPUT_GRAPH_EDGE_DESC) == 24 &&
              sizeof(DML_INTERMEDIATE_GRAPH_EDGE_DESC) == 24, "graph edge layouts");
static_assert(sizeof(DML_GRAPH_DESC) == 72 && offsetof(DML_GRAPH_DESC, IntermediateEdges) == 64, "DML_GRAPH_DESC layout");
static_assert(sizeof(DML_OPERATOR_GRAPH_NODE_DESC) == 16, "DML_OPERATOR_GRAPH_NODE_DESC layout");
#endif
static_assert(DML_OPERATOR_ELEMENT_WISE_IDENTITY == 1, "DML_OPERATOR_ELEMENT_WISE_IDENTITY");
static_assert(DML_GRAPH_EDGE_TYPE_INPUT == 1 && DML_GRAPH_EDGE_TYPE_OUTPUT == 2 &&
              DML_GRAPH_EDGE_TYPE_INTERMEDIATE == 3 && DML_GRAPH_NODE_TYPE_OPERATOR == 1, "graph enums");

// ---------------------------------------------------------------------------------------------
// Tensors and params.
// ---------------------------------------------------------------------------------------------
static const size_t kMaxWireDims = 32;  // longer arrays are refused, not misread

bool read_tensor(const JValue& entry, const std::vector<uint8_t>& payload, bool with_data, Tensor& t, Reply& bad) {
    const JValue* name = entry.get("name");
    const JValue* type = entry.get("DataType");
    const JValue* sizes = entry.get("Sizes");
    if (!name || !name->c_str()) {
        bad = Reply::make("error", "tensor entry without a string 'name'");
        return false;
    }
    t.name = name->str;
    if (!type || !type->is_int || type->inum < 1 || type->inum > kTypeCount) {
        bad = Reply::make("error", t.name + ": DataType must be a DML_TENSOR_DATA_TYPE value 1..11");
        return false;
    }
    t.dtype = int(type->inum);
    if (!sizes || sizes->type != JValue::Array || sizes->items.size() > kMaxWireDims) {
        bad = Reply::make("error", t.name + ": Sizes must be an array of at most 32 integers");
        return false;
    }
    uint64_t count = 1;
    bool saturated = false;
    for (const JValue& s : sizes->items) {
        if (!s.is_int || s.inum < 0) {
            bad = Reply::make("error", t.name + ": Sizes must hold non-negative integers");
            return false;
        }
        if (s.inum > 0xFFFFFFFFLL) {
            bad = Reply::make("refused", strf("harness validation: %s.Sizes holds %lld, which does not fit the UINT of "
                                              "DML_BUFFER_TENSOR_DESC::Sizes; not passed to DirectML",
                                              t.name.c_str(), s.inum));
            return false;
        }
        t.sizes.push_back(UINT(s.inum));
        uint64_t v = uint64_t(s.inum);
        if (v && count > UINT64_MAX / v) saturated = true;
        else count *= v;
    }
    uint64_t es = kTypeBytes[t.dtype];
    t.nbytes = (saturated || count > UINT64_MAX / es) ? UINT64_MAX : count * es;
    if (with_data) {
        const JValue* off = entry.get("offset");
        const JValue* nb = entry.get("nbytes");
        if (!off || !nb || !off->is_int || !nb->is_int || off->inum < 0 || nb->inum < 0) {
            bad = Reply::make("error", t.name + ": offset and nbytes must be non-negative integers");
            return false;
        }
        if (uint64_t(nb->inum) != t.nbytes) {
            bad = Reply::make("error", strf("%s: nbytes %lld disagrees with DataType x Sizes (%llu)", t.name.c_str(),
                                            nb->inum, (unsigned long long)t.nbytes));
            return false;
        }
        if (uint64_t(off->inum) > payload.size() || t.nbytes > payload.size() - uint64_t(off->inum)) {
            bad = Reply::make("error", t.name + ": tensor bytes lie outside the payload");
            return false;
        }
        t.data = payload.data() + off->inum;
    }
    // DML_BUFFER_TENSOR_DESC, packed (Strides NULL); TotalTensorSizeInBytes as DMLCalcBufferTensorSize
    // computes it for packed strides: element count x element size, rounded up to a multiple of 4.
    memset(&t.buffer, 0, sizeof t.buffer);
    t.buffer.DataType = DML_TENSOR_DATA_TYPE(t.dtype);
    t.buffer.Flags = DML_TENSOR_FLAG_NONE;
    t.buffer.DimensionCount = UINT(t.sizes.size());
    t.buffer.Sizes = t.sizes.empty() ? nullptr : t.sizes.data();
    t.buffer.Strides = nullptr;
    t.buffer.TotalTensorSizeInBytes = t.nbytes > UINT64_MAX - 3 ? UINT64_MAX : (t.nbytes + 3) & ~uint64_t(3);
    t.buffer.GuaranteedBaseOffsetAlignment = 0;
    t.desc.Type = DML_TENSOR_TYPE_BUFFER;
    t.desc.Desc = &t.buffer;
    return true;
}

void packed_copy(const Tensor& t, Tensor& packed) {
    packed.name = t.name;
    packed.dtype = t.dtype;
    packed.sizes = t.sizes;
    packed.data = nullptr;
    packed.nbytes = t.nbytes;
    packed.strides.clear();
    packed.binding_offset = 0;
    memset(&packed.buffer, 0, sizeof packed.buffer);
    packed.buffer.DataType = DML_TENSOR_DATA_TYPE(packed.dtype);
    packed.buffer.Flags = DML_TENSOR_FLAG_NONE;
    packed.buffer.DimensionCount = UINT(packed.sizes.size());
    packed.buffer.Sizes = packed.sizes.empty() ? nullptr : packed.sizes.data();
    packed.buffer.Strides = nullptr;
    packed.buffer.TotalTensorSizeInBytes =
        packed.nbytes > UINT64_MAX - 3 ? UINT64_MAX : (packed.nbytes + 3) & ~uint64_t(3);
    packed.desc.Type = DML_TENSOR_TYPE_BUFFER;
    packed.desc.Desc = &packed.buffer;
}

// Parameter decoding. Each returns false with `bad` filled: "error" for a malformed request,
// "refused" for a value DirectML's field cannot hold or an array whose length disagrees with
// DimensionCount (DirectML would read past the array).
struct Params {
    const JValue* obj;
    Reply bad;

    const JValue* field(const char* name) {
        const JValue* v = obj ? obj->get(name) : nullptr;
        if (!v) bad = Reply::make("error", strf("request lacks params.%s", name));
        return v;
    }

    bool uint_value(const char* name, UINT& out) {
        const JValue* v = field(name);
        if (!v) return false;
        if (!v->is_int) {
            bad = Reply::make("error", strf("params.%s must be an integer", name));
            return false;
        }
        if (v->inum < 0 || v->inum > 0xFFFFFFFFLL) {
            bad = Reply::make("refused", strf("harness validation: params.%s = %lld does not fit its UINT field; "
                                              "not passed to DirectML", name, v->inum));
            return false;
        }
        out = UINT(v->inum);
        return true;
    }

    const JValue* array(const char* name, UINT count) {
        const JValue* v = field(name);
        if (!v) return nullptr;
        if (v->type != JValue::Array) {
            bad = Reply::make("error", strf("params.%s must be an array", name));
            return nullptr;
        }
        if (v->items.size() != count) {
            bad = Reply::make("refused", strf("harness validation: DimensionCount is %u but params.%s has %u "
                                              "element(s); DirectML reads DimensionCount elements, so the description "
                                              "is not passed to it", count, name, unsigned(v->items.size())));
            return nullptr;
        }
        return v;
    }

    // An integer array of DimensionCount elements whose values must fit the field's element type.
    template <typename T>
    bool integers(const char* name, UINT count, std::vector<T>& out, long long lowest, long long highest,
                  const char* type_name) {
        const JValue* v = array(name, count);
        if (!v) return false;
        out.clear();
        for (const JValue& e : v->items) {
            if (!e.is_int) {
                bad = Reply::make("error", strf("params.%s must hold integers", name));
                return false;
            }
            if (e.inum < lowest || e.inum > highest) {
                bad = Reply::make("refused", strf("harness validation: params.%s holds %lld, which does not fit "
                                                  "its %s elements; not passed to DirectML", name, e.inum, type_name));
                return false;
            }
            out.push_back(T(e.inum));
        }
        out.push_back(0);  // never read by DirectML; keeps data() valid when count is 0
        return true;
    }

    bool uints(const char* name, UINT count, std::vector<UINT>& out) {
        return integers(name, count, out, 0, 0xFFFFFFFFLL, "UINT");
    }

    bool ints(const char* name, UINT count, std::vector<INT>& out) {
        return integers(name, count, out, INT32_MIN, INT32_MAX, "INT");
    }

    // A JSON number, or a string strtod reads whole ("nan", "inf", "-inf": what JSON cannot write).
    bool number(const char* name, const JValue& e, FLOAT& out) {
        double d;
        if (e.type == JValue::Number) {
            d = e.num;
        } else if (e.type == JValue::String) {
            char* end = nullptr;
            d = strtod(e.str.c_str(), &end);
            if (end == e.str.c_str() || *end) {
                bad = Reply::make("error", strf("params.%s: %s is not a number", name, e.str.c_str()));
                return false;
            }
        } else {
            bad = Reply::make("error", strf("params.%s must be a number or \"nan\", \"inf\", \"-inf\"", name));
            return false;
        }
        out = FLOAT(d);  // float32 values arrive exactly, so this conversion is exact
        return true;
    }

    bool floats(const char* name, UINT count, std::vector<FLOAT>& out) {
        const JValue* v = array(name, count);
        if (!v) return false;
        out.clear();
        for (const JValue& e : v->items) {
            FLOAT f;
            if (!number(name, e, f)) return false;
            out.push_back(f);
        }
        out.push_back(0);
        return true;
    }

    // One DML FLOAT field.
    bool float_value(const char* name, FLOAT& out) {
        const JValue* v = field(name);
        return v && number(name, *v, out);
    }

    // A DML BOOL (a 32-bit int): 0 or 1 on the wire; any other integer that fits is passed as it came.
    bool bool_value(const char* name, BOOL& out) {
        const JValue* v = field(name);
        if (!v) return false;
        if (!v->is_int) {
            bad = Reply::make("error", strf("params.%s must be an integer (a DML BOOL: 0 or 1)", name));
            return false;
        }
        if (v->inum < INT32_MIN || v->inum > INT32_MAX) {
            bad = Reply::make("refused", strf("harness validation: params.%s = %lld does not fit its BOOL field; "
                                              "not passed to DirectML", name, v->inum));
            return false;
        }
        out = BOOL(v->inum);
        return true;
    }

    bool scalar(const char* name, DML_SCALAR_UNION& out) {
        const JValue* v = field(name);
        if (!v) return false;
        char* end = nullptr;
        unsigned long long bits = v->c_str() ? strtoull(v->str.c_str(), &end, 16) : 0;
        if (!v->c_str() || end == v->str.c_str() || *end) {
            bad = Reply::make("error", strf("params.%s must be a hex string of the union's 8 bytes", name));
            return false;
        }
        uint64_t b = bits;
        static_assert(sizeof b == sizeof out, "union size");
        memcpy(&out, &b, sizeof out);  // little-endian: the value sits in the member of MinMaxDataType
        return true;
    }
};

// ---------------------------------------------------------------------------------------------
// One description per operator kind, from the request's params and the tensors in struct order.
// ---------------------------------------------------------------------------------------------
static bool relu_grad(Params&, Tensor* const* in, Tensor& out, OpDesc& d) {
    d.relu = {&in[0]->desc, &in[1]->desc, &out.desc};
    d.op.Desc = &d.relu;
    return true;
}

static bool clip_grad1(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT mmt = 0;
    if (!p.uint_value("MinMaxDataType", mmt) || !p.scalar("Min", d.clip.Min) || !p.scalar("Max", d.clip.Max))
        return false;
    d.clip.InputTensor = &in[0]->desc;
    d.clip.InputGradientTensor = &in[1]->desc;
    d.clip.OutputGradientTensor = &out.desc;
    d.clip.MinMaxDataType = DML_TENSOR_DATA_TYPE(mmt);
    d.op.Desc = &d.clip;
    return true;
}

static bool slice_grad(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT n = 0;
    if (!p.uint_value("DimensionCount", n) || !p.uints("InputWindowOffsets", n, d.u[0]) ||
        !p.uints("InputWindowSizes", n, d.u[1]) || !p.ints("InputWindowStrides", n, d.strides))
        return false;
    d.slice = {&in[0]->desc, &out.desc, n, d.u[0].data(), d.u[1].data(), d.strides.data()};
    d.op.Desc = &d.slice;
    return true;
}

static bool max_pooling_grad(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT n = 0;
    if (!p.uint_value("DimensionCount", n) || !p.uints("Strides", n, d.u[0]) || !p.uints("WindowSize", n, d.u[1]) ||
        !p.uints("StartPadding", n, d.u[2]) || !p.uints("EndPadding", n, d.u[3]) ||
        !p.uints("Dilations", n, d.u[4]))
        return false;
    d.pool = {&in[0]->desc, &in[1]->desc, &out.desc, n, d.u[0].data(), d.u[1].data(),
              d.u[2].data(), d.u[3].data(), d.u[4].data()};
    d.op.Desc = &d.pool;
    return true;
}

static bool resample_grad1(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT mode = 0, rounding = 0, n = 0;
    if (!p.uint_value("InterpolationMode", mode) || !p.uint_value("RoundingDirection", rounding) ||
        !p.uint_value("DimensionCount", n) || !p.floats("Scales", n, d.f[0]) ||
        !p.floats("InputPixelOffsets", n, d.f[1]) || !p.floats("OutputPixelOffsets", n, d.f[2]))
        return false;
    d.resample = {&in[0]->desc, &out.desc, DML_INTERPOLATION_MODE(mode), DML_AXIS_DIRECTION(rounding), n,
                  d.f[0].data(), d.f[1].data(), d.f[2].data()};
    d.op.Desc = &d.resample;
    return true;
}

static bool average_pooling_grad(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT n = 0;
    BOOL include = FALSE;
    if (!p.uint_value("DimensionCount", n) || !p.uints("Strides", n, d.u[0]) || !p.uints("WindowSize", n, d.u[1]) ||
        !p.uints("StartPadding", n, d.u[2]) || !p.uints("EndPadding", n, d.u[3]) ||
        !p.bool_value("IncludePadding", include))
        return false;
    d.average_pool = {&in[0]->desc, &out.desc, n, d.u[0].data(), d.u[1].data(), d.u[2].data(), d.u[3].data(),
                      include};
    d.op.Desc = &d.average_pool;
    return true;
}

static bool resample_grad(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    UINT mode = 0, n = 0;
    if (!p.uint_value("InterpolationMode", mode) || !p.uint_value("DimensionCount", n) ||
        !p.floats("Scales", n, d.f[0]) || !p.floats("InputPixelOffsets", n, d.f[1]) ||
        !p.floats("OutputPixelOffsets", n, d.f[2]))
        return false;
    d.resample0 = {&in[0]->desc, &out.desc, DML_INTERPOLATION_MODE(mode), n, d.f[0].data(), d.f[1].data(),
                   d.f[2].data()};
    d.op.Desc = &d.resample0;
    return true;
}

static bool clip_grad(Params& p, Tensor* const* in, Tensor& out, OpDesc& d) {
    FLOAT lo = 0, hi = 0;
    if (!p.float_value("Min", lo) || !p.float_value("Max", hi)) return false;
    d.clip0 = {&in[0]->desc, &in[1]->desc, &out.desc, lo, hi};
    d.op.Desc = &d.clip0;
    return true;
}

bool build_desc(const OpInfo& info, const JValue* params, Tensor* const* in, Tensor& out, OpDesc& d, Reply& bad) {
    Params p{params && params->type == JValue::Object ? params : nullptr, Reply()};
    memset(&d.relu, 0, sizeof d.relu);
    memset(&d.clip, 0, sizeof d.clip);
    memset(&d.slice, 0, sizeof d.slice);
    memset(&d.pool, 0, sizeof d.pool);
    memset(&d.resample, 0, sizeof d.resample);
    memset(&d.average_pool, 0, sizeof d.average_pool);
    memset(&d.resample0, 0, sizeof d.resample0);
    memset(&d.clip0, 0, sizeof d.clip0);
    d.op.Type = info.type;
    bool built;
    switch (info.type) {
    case DML_OPERATOR_ACTIVATION_RELU_GRAD: built = relu_grad(p, in, out, d); break;
    case DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1: built = clip_grad1(p, in, out, d); break;
    case DML_OPERATOR_SLICE_GRAD: built = slice_grad(p, in, out, d); break;
    case DML_OPERATOR_MAX_POOLING_GRAD: built = max_pooling_grad(p, in, out, d); break;
    case DML_OPERATOR_RESAMPLE_GRAD1: built = resample_grad1(p, in, out, d); break;
    case DML_OPERATOR_AVERAGE_POOLING_GRAD: built = average_pooling_grad(p, in, out, d); break;
    case DML_OPERATOR_RESAMPLE_GRAD: built = resample_grad(p, in, out, d); break;
    case DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD: built = clip_grad(p, in, out, d); break;
    default:
        p.bad = Reply::make("unsupported", strf("operator type %d is not implemented", int(info.type)));
        built = false;
    }
    if (!built) bad = p.bad;
    return built;
}
