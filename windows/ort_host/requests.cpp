// requests.cpp - one run_model request (see requests.h).
#include "requests.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "host.h"
#include "ort_api.h"
#include "replies.h"
#include "runtime.h"
#include "session.h"
#include "timing.h"

using dmlh::JValue;
using dmlh::log_line;
using dmlh::strf;

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

void handle_run_model(Host& host, dmlh::Frame& frame, const std::string& id) {
    Runtime& rt = host.rt;
    auto fail = [&](const Failure& f) {
        g_host_timer.status = f.status;
        send_failure(host.server, id, f);
    };
    const JValue& h = frame.header;
    const JValue* model = h.get("model");
    const JValue* inputs = h.get("inputs");
    const JValue* outputs = h.get("outputs");
    if (!model || model->type != JValue::Object || !inputs || inputs->type != JValue::Array || !outputs ||
        outputs->type != JValue::Array || outputs->items.empty())
        return fail(request_error("run_model needs a 'model' object and 'inputs' and 'outputs' arrays"));
    const JValue* moff = model->get("offset");
    const JValue* mlen = model->get("nbytes");
    if (!moff || !mlen || !moff->is_int || !mlen->is_int || moff->inum < 0 || mlen->inum <= 0 ||
        uint64_t(moff->inum) > frame.payload.size() || uint64_t(mlen->inum) > frame.payload.size() - uint64_t(moff->inum))
        return fail(request_error("model: offset and nbytes must point at the model's bytes in the payload"));

    std::vector<WireTensor> in(inputs->items.size()), out(outputs->items.size());
    std::string why;
    for (size_t i = 0; i < in.size(); i++)
        if (!read_tensor(inputs->items[i], frame.payload, true, in[i], why)) return fail(request_error(why));
    for (size_t i = 0; i < out.size(); i++)
        if (!read_tensor(outputs->items[i], frame.payload, false, out[i], why)) return fail(request_error(why));
    g_host_timer.lap(kHostDecode);

    Failure f;
    ort::Session* session = session_for(host, id, frame.payload.data() + moff->inum, size_t(mlen->inum), f);
    g_host_timer.lap(kHostSession);
    if (!session) {
        if (rt.opt.verbose) log_line("%s: %s: %s", id.c_str(), f.stage.c_str(), f.message.c_str());
        return fail(f);
    }

    Values in_values(rt), out_values(rt);
    std::vector<const char*> in_names, out_names;
    for (WireTensor& t : in) {
        ort::Value* v = nullptr;
        std::string err = status_text(rt, rt.api.CreateTensorWithDataAsOrtValue(
                                              rt.cpu_memory, t.data, size_t(t.nbytes), t.sizes.data(), t.sizes.size(),
                                              onnx_type(t.dtype), &v));
        if (!err.empty()) return fail(request_error("input " + t.name + ": CreateTensorWithDataAsOrtValue: " + err));
        in_values.items.push_back(v);
        in_names.push_back(t.name.c_str());
    }
    for (WireTensor& t : out) out_names.push_back(t.name.c_str());
    out_values.items.assign(out.size(), nullptr);
    g_host_timer.lap(kHostInputs);
    g_host_timer.gpu_mark(2);
    int code = ort::ORT_OK;
    std::string err = status_text(rt, rt.api.Run(session, nullptr, in_names.data(), in_values.items.data(), in.size(),
                                                 out_names.data(), out.size(), out_values.items.data()), &code);
    g_host_timer.gpu_mark(3);
    g_host_timer.lap(kHostRun);
    if (!err.empty()) {
        HRESULT reason;
        if (device_lost(rt, &reason)) device_lost_exit(host.server, id, "run: " + err, reason);
        f.stage = "run";
        f.ort_error = ort::error_code_name(code);
        f.message = err;
        return fail(f);
    }

    // Outputs: the requested DataType and Sizes, or an error that says what came back instead.
    std::string header = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":\"ok\",\"outputs\":[";
    std::vector<uint8_t> payload;
    for (size_t i = 0; i < out.size(); i++) {
        ort::TensorTypeAndShapeInfo* info = nullptr;
        if (!(err = status_text(rt, rt.api.GetTensorTypeAndShape(out_values.items[i], &info))).empty())
            return fail(request_error(out[i].name + ": GetTensorTypeAndShape: " + err));
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
        if (!err.empty()) return fail(request_error(out[i].name + ": reading its type and shape: " + err));
        if (type != onnx_type(out[i].dtype) || dims != out[i].sizes) {
            Failure bad;
            bad.stage = "output";
            bad.message = strf("%s: ONNX Runtime returned element type %d with %zu dimension(s), the request asked for "
                               "ONNX type %d (DataType %d) and %zu", out[i].name.c_str(), type, rank,
                               onnx_type(out[i].dtype), out[i].dtype, out[i].sizes.size());
            return fail(bad);
        }
        void* data = nullptr;
        if (!(err = status_text(rt, rt.api.GetTensorMutableData(out_values.items[i], &data))).empty())
            return fail(request_error(out[i].name + ": GetTensorMutableData: " + err));
        size_t offset = (payload.size() + 15) / 16 * 16;
        payload.resize(offset + size_t(out[i].nbytes));
        if (out[i].nbytes) memcpy(payload.data() + offset, data, size_t(out[i].nbytes));
        header += strf("%s{\"name\":%s,\"DataType\":%d,\"Sizes\":[", i ? "," : "", dmlh::json_string(out[i].name).c_str(),
                       out[i].dtype);
        for (size_t d = 0; d < dims.size(); d++) header += strf("%s%lld", d ? "," : "", (long long)dims[d]);
        header += strf("],\"offset\":%zu,\"nbytes\":%llu}", offset, (unsigned long long)out[i].nbytes);
    }
    header += "]" + memory_fields() + "}";
    if (rt.opt.verbose) log_line("%s: ok", id.c_str());
    g_host_timer.status = "ok";
    g_host_timer.lap(kHostOutputs);
    host.server.send(header, payload.data(), payload.size());
}
