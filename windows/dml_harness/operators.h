// operators.h - the operators the harness runs and the data types each support table of the seed pages admits,
// by feature level; what the hello reply announces.
#pragma once

#include <string>

#include "device.h"

#define DMLH_VERSION "1.1"

// The hello's "pipeline": how many requests the runner may have sent ahead of their replies (docs/native-harness.md,
// section 1). The harness reads each request when the previous one is answered, so more only wait in the pipe.
constexpr int kPipeline = 16;

struct OpInfo {
    const char* name;
    DML_OPERATOR_TYPE type;
    const char* inputs[2];  // tensor fields in struct order
    int input_count;
    struct Row { unsigned level; unsigned types; } rows[3];  // highest row at or below the device level wins
};

// The operator of that name (with or without DML_OPERATOR_), or null.
const OpInfo* find_op(const std::string& name);
// Bit t set: DML_TENSOR_DATA_TYPE t is in the table at the device's level and the device supports it.
unsigned supported_types(const Device& dev, const OpInfo& op);
// The data types ELEMENT_WISE_IDENTITY (the graph path's copies) supports at the device's level, as above.
unsigned identity_types(const Device& dev);
std::string hello_reply(const Device& dev);
