// operators.cpp - the operator table and the hello reply (see operators.h).
#include "operators.h"

#include <initializer_list>

#include "protocol.h"

using dmlh::kTypeCount;
using dmlh::kTypeNames;
using dmlh::level_label;
using dmlh::strf;

static unsigned type_mask(std::initializer_list<int> types) {
    unsigned m = 0;
    for (int t : types) m |= 1u << t;
    return m;
}

enum : int { F32 = 1, F16 = 2, U32 = 3, U16 = 4, U8 = 5, I32 = 6, I16 = 7, I8 = 8, F64 = 9, U64 = 10, I64 = 11 };

static const OpInfo kOps[] = {
    {"ACTIVATION_RELU_GRAD", DML_OPERATOR_ACTIVATION_RELU_GRAD, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x3000, type_mask({F32, F16})}, {0x5100, type_mask({F32, F16, I32, I16, I8})}, {0, 0}}},
    {"ELEMENT_WISE_CLIP_GRAD1", DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x5000, type_mask({F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}, {0, 0}}},
    {"SLICE_GRAD", DML_OPERATOR_SLICE_GRAD, {"InputGradientTensor", nullptr}, 1,
     {{0x3000, type_mask({F32, F16, I32, I16, I8, U32, U16, U8})},
      {0x4100, type_mask({F64, F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}}},
    {"MAX_POOLING_GRAD", DML_OPERATOR_MAX_POOLING_GRAD, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x3000, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
    {"RESAMPLE_GRAD1", DML_OPERATOR_RESAMPLE_GRAD1, {"InputGradientTensor", nullptr}, 1,
     {{0x5100, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
    {"AVERAGE_POOLING_GRAD", DML_OPERATOR_AVERAGE_POOLING_GRAD, {"InputGradientTensor", nullptr}, 1,
     {{0x3000, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
    // The page's 5_1 table widens the ranks (1 to 4), not the data types.
    {"RESAMPLE_GRAD", DML_OPERATOR_RESAMPLE_GRAD, {"InputGradientTensor", nullptr}, 1,
     {{0x3000, type_mask({F32, F16})}, {0, 0}, {0, 0}}},
    {"ELEMENT_WISE_CLIP_GRAD", DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD, {"InputTensor", "InputGradientTensor"}, 2,
     {{0x3100, type_mask({F32, F16, I32, I16, I8, U32, U16, U8})},
      {0x5000, type_mask({F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}}},
};

// DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC's support table from 3_0 (the gradient operators' lowest level).
static const OpInfo kIdentity = {
    "ELEMENT_WISE_IDENTITY", DML_OPERATOR_ELEMENT_WISE_IDENTITY, {"InputTensor", nullptr}, 1,
    {{0x3000, type_mask({F32, F16, I32, I16, I8, U32, U16, U8})},
     {0x4100, type_mask({F64, F32, F16, I64, I32, I16, I8, U64, U32, U16, U8})}, {0, 0}}};

unsigned identity_types(const Device& dev) { return supported_types(dev, kIdentity); }

const OpInfo* find_op(const std::string& name) {
    std::string n = name.compare(0, 13, "DML_OPERATOR_") == 0 ? name.substr(13) : name;
    for (const OpInfo& op : kOps)
        if (n == op.name) return &op;
    return nullptr;
}

unsigned supported_types(const Device& dev, const OpInfo& op) {
    unsigned table = 0;
    for (const auto& row : op.rows)
        if (row.level && row.level <= dev.feature_level) table = row.types;
    unsigned device = 0;
    for (int t = 1; t <= kTypeCount; t++)
        if (dev.type_supported[t]) device |= 1u << t;
    return table & device;
}

std::string hello_reply(const Device& dev) {
    std::string h = strf("{\"type\":\"hello\",\"protocol\":%d,\"name\":\"dml_harness\",\"version\":\"%s\",",
                         dmlh::kProtocolVersion, DMLH_VERSION);
    h += "\"adapter\":" + dmlh::json_string(dev.adapter_name);
    h += ",\"driver_version\":" + dmlh::json_string(dev.driver_version);
    h += ",\"api\":" + dmlh::json_string("DirectML " + (dev.dml_version.empty() ? std::string("(version unknown)")
                                                                                 : dev.dml_version));
    h += ",\"feature_level\":" + dmlh::json_string(level_label(dev.feature_level));
    h += ",\"feature_level_source\":" + dmlh::json_string(dev.feature_level_source);
    // Requests are read one after another from stdin whatever is outstanding: any number may wait there.
    h += strf(",\"pipeline\":%d", kPipeline);
    // Requests with buffers (docs/native-harness.md, section 10): layouts, and the three paths.
    h += ",\"surface\":{\"layouts\":true,\"paths\":[\"operator\",\"graph\",\"in-place\"]}";
    h += ",\"operators\":{";
    bool first_op = true;
    for (const OpInfo& op : kOps) {
        unsigned types = supported_types(dev, op);
        if (!types) continue;  // introduced above the device's level: omitted, so valid cases are NOT_SUPPORTED
        h += std::string(first_op ? "" : ",") + "\"" + op.name + "\":[";
        bool first = true;
        for (int t = 1; t <= kTypeCount; t++)
            if (types & (1u << t)) {
                h += std::string(first ? "" : ",") + "\"" + kTypeNames[t] + "\"";
                first = false;
            }
        h += "]";
        first_op = false;
    }
    h += "},\"extra\":{";
    for (size_t i = 0; i < dev.extra.size(); i++)
        h += (i ? "," : "") + dmlh::json_string(dev.extra[i].first) + ":" + dmlh::json_string(dev.extra[i].second);
    h += "}}";
    return h;
}
