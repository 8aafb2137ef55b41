// ort_api.h - the part of ONNX Runtime's C API the host uses, declared here from the public headers (nothing of
// ONNX Runtime is vendored; onnxruntime.dll is loaded at run time).
//
// Source of every declaration: microsoft/onnxruntime at release 1.24.4,
//   include/onnxruntime/core/session/onnxruntime_c_api.h  (#define ORT_API_VERSION 24), and
//   include/onnxruntime/core/providers/dml/dml_provider_factory.h  (struct OrtDmlApi).
// OrtApi is a table of function pointers that ONNX Runtime only ever appends to; a function's slot is its position
// in `struct OrtApi`, counted from the header's member list (ORT_API2_STATUS, ORT_CLASS_RELEASE and the plain
// function-pointer members alike). The slots below were counted in the 1.24 header; slots 0-100 also agree with
// other projects' trims of the 1.22 header. What the host checks at start-up (runtime.cpp, check_api):
// GetVersionString says 1.24.x, GetApi(24) answers, CreateStatus/GetErrorCode/GetErrorMessage/ReleaseStatus
// (slots 0, 1, 2, 93) give back what was put in, GetAvailableProviders/ReleaseAvailableProviders (125, 126) list
// the execution providers, and GetExecutionProviderApi (195) hands out the DML API. A DLL whose table differs
// fails these checks with a message instead of crashing in a later call.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(_WIN32)
#define ORT_API_CALL __stdcall
#else
#define ORT_API_CALL
#endif

struct IDMLDevice;
struct ID3D12CommandQueue;

namespace ort {

constexpr uint32_t kApiVersion = 24;  // ORT_API_VERSION of onnxruntime 1.24
constexpr const char* kHeaderRelease = "1.24";

// enum OrtErrorCode
enum ErrorCode : int {
    ORT_OK = 0, ORT_FAIL, ORT_INVALID_ARGUMENT, ORT_NO_SUCHFILE, ORT_NO_MODEL, ORT_ENGINE_ERROR, ORT_RUNTIME_EXCEPTION,
    ORT_INVALID_PROTOBUF, ORT_MODEL_LOADED, ORT_NOT_IMPLEMENTED, ORT_INVALID_GRAPH, ORT_EP_FAIL,
    ORT_MODEL_LOAD_CANCELED, ORT_MODEL_REQUIRES_COMPILATION, ORT_NOT_FOUND,
};

// The names onnxruntime's Python binding gives these codes as exception classes (Fail, NotImplemented, EPFail,
// ...): the backend classifies a failure by that name whether it came from Python or from this host.
inline const char* error_code_name(int code) {
    static const char* const names[] = {"OK", "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError",
                                        "RuntimeException", "InvalidProtobuf", "ModelLoaded", "NotImplemented",
                                        "InvalidGraph", "EPFail", "ModelLoadCanceled", "ModelRequiresCompilation",
                                        "NotFound"};
    return code >= 0 && code < int(sizeof names / sizeof names[0]) ? names[code] : "UnknownError";
}

// enum ONNXTensorElementDataType (the values this host exchanges)
enum ElementType : int {
    ONNX_UNDEFINED = 0, ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5,
    ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11,
    ONNX_UINT32 = 12, ONNX_UINT64 = 13,
};

enum LoggingLevel : int { LOG_VERBOSE = 0, LOG_INFO = 1, LOG_WARNING = 2, LOG_ERROR = 3, LOG_FATAL = 4 };
enum ExecutionMode : int { ORT_SEQUENTIAL = 0, ORT_PARALLEL = 1 };
enum AllocatorType : int { OrtDeviceAllocator = 0, OrtArenaAllocator = 1 };
enum MemType : int { OrtMemTypeDefault = 0 };

struct Status;
struct Env;
struct Session;
struct SessionOptions;
struct Value;
struct MemoryInfo;
struct RunOptions;
struct TensorTypeAndShapeInfo;

typedef void(ORT_API_CALL* LoggingFunction)(void* param, int severity, const char* category, const char* logid,
                                            const char* code_location, const char* message);

// struct OrtApiBase
struct ApiBase {
    const void* const*(ORT_API_CALL* GetApi)(uint32_t version);
    const char*(ORT_API_CALL* GetVersionString)();
};
typedef const ApiBase*(ORT_API_CALL* GetApiBaseFn)();  // the DLL export OrtGetApiBase

// The OrtApi members used, each with its slot.
struct Api {
    Status*(ORT_API_CALL* CreateStatus)(int code, const char* msg);                                   // 0
    int(ORT_API_CALL* GetErrorCode)(const Status* status);                                            // 1
    const char*(ORT_API_CALL* GetErrorMessage)(const Status* status);                                 // 2
    Status*(ORT_API_CALL* CreateEnvWithCustomLogger)(LoggingFunction logging_function, void* logger_param,
                                                     int log_severity_level, const char* logid, Env** out);  // 4
    Status*(ORT_API_CALL* CreateSessionFromArray)(const Env* env, const void* model_data, size_t model_data_length,
                                                  const SessionOptions* options, Session** out);     // 8
    Status*(ORT_API_CALL* Run)(Session* session, const RunOptions* run_options, const char* const* input_names,
                               const Value* const* inputs, size_t input_len, const char* const* output_names,
                               size_t output_names_len, Value** outputs);                             // 9
    Status*(ORT_API_CALL* CreateSessionOptions)(SessionOptions** options);                            // 10
    Status*(ORT_API_CALL* SetSessionExecutionMode)(SessionOptions* options, int execution_mode);      // 13
    Status*(ORT_API_CALL* DisableMemPattern)(SessionOptions* options);                                 // 17
    Status*(ORT_API_CALL* SetSessionLogSeverityLevel)(SessionOptions* options, int level);            // 22
    Status*(ORT_API_CALL* SetIntraOpNumThreads)(SessionOptions* options, int intra_op_num_threads);   // 24
    Status*(ORT_API_CALL* CreateTensorWithDataAsOrtValue)(const MemoryInfo* info, void* p_data, size_t p_data_len,
                                                          const int64_t* shape, size_t shape_len, int type,
                                                          Value** out);                               // 49
    Status*(ORT_API_CALL* GetTensorMutableData)(Value* value, void** out);                            // 51
    Status*(ORT_API_CALL* GetTensorElementType)(const TensorTypeAndShapeInfo* info, int* out);         // 60
    Status*(ORT_API_CALL* GetDimensionsCount)(const TensorTypeAndShapeInfo* info, size_t* out);        // 61
    Status*(ORT_API_CALL* GetDimensions)(const TensorTypeAndShapeInfo* info, int64_t* dim_values,
                                         size_t dim_values_length);                                   // 62
    Status*(ORT_API_CALL* GetTensorTypeAndShape)(const Value* value, TensorTypeAndShapeInfo** out);   // 65
    Status*(ORT_API_CALL* CreateCpuMemoryInfo)(int type, int mem_type, MemoryInfo** out);             // 69
    void(ORT_API_CALL* ReleaseEnv)(Env* input);                                                       // 92
    void(ORT_API_CALL* ReleaseStatus)(Status* input);                                                 // 93
    void(ORT_API_CALL* ReleaseMemoryInfo)(MemoryInfo* input);                                         // 94
    void(ORT_API_CALL* ReleaseSession)(Session* input);                                               // 95
    void(ORT_API_CALL* ReleaseValue)(Value* input);                                                   // 96
    void(ORT_API_CALL* ReleaseTensorTypeAndShapeInfo)(TensorTypeAndShapeInfo* input);                  // 99
    void(ORT_API_CALL* ReleaseSessionOptions)(SessionOptions* input);                                 // 100
    Status*(ORT_API_CALL* GetAvailableProviders)(char*** out_ptr, int* provider_length);              // 125
    Status*(ORT_API_CALL* ReleaseAvailableProviders)(char** ptr, int providers_length);               // 126
    Status*(ORT_API_CALL* AddSessionConfigEntry)(SessionOptions* options, const char* config_key,
                                                 const char* config_value);                           // 130
    Status*(ORT_API_CALL* GetExecutionProviderApi)(const char* provider_name, uint32_t version,
                                                   const void** provider_api);                        // 195

    // Fills every member from the table GetApi returned.
    void resolve(const void* const* t) {
        take(CreateStatus, t[0]);
        take(GetErrorCode, t[1]);
        take(GetErrorMessage, t[2]);
        take(CreateEnvWithCustomLogger, t[4]);
        take(CreateSessionFromArray, t[8]);
        take(Run, t[9]);
        take(CreateSessionOptions, t[10]);
        take(SetSessionExecutionMode, t[13]);
        take(DisableMemPattern, t[17]);
        take(SetSessionLogSeverityLevel, t[22]);
        take(SetIntraOpNumThreads, t[24]);
        take(CreateTensorWithDataAsOrtValue, t[49]);
        take(GetTensorMutableData, t[51]);
        take(GetTensorElementType, t[60]);
        take(GetDimensionsCount, t[61]);
        take(GetDimensions, t[62]);
        take(GetTensorTypeAndShape, t[65]);
        take(CreateCpuMemoryInfo, t[69]);
        take(ReleaseEnv, t[92]);
        take(ReleaseStatus, t[93]);
        take(ReleaseMemoryInfo, t[94]);
        take(ReleaseSession, t[95]);
        take(ReleaseValue, t[96]);
        take(ReleaseTensorTypeAndShapeInfo, t[99]);
        take(ReleaseSessionOptions, t[100]);
        take(GetAvailableProviders, t[125]);
        take(ReleaseAvailableProviders, t[126]);
        take(AddSessionConfigEntry, t[130]);
        take(GetExecutionProviderApi, t[195]);
    }

  private:
    template <class F>
    static void take(F& member, const void* slot) {
        member = reinterpret_cast<F>(const_cast<void*>(slot));
    }
};

// struct OrtDmlApi (dml_provider_factory.h): the member used, with its slot.
struct DmlApi {
    Status*(ORT_API_CALL* SessionOptionsAppendExecutionProvider_DML)(SessionOptions* options, int device_id);  // 0
    Status*(ORT_API_CALL* SessionOptionsAppendExecutionProvider_DML1)(SessionOptions* options, IDMLDevice* dml_device,
                                                                      ID3D12CommandQueue* cmd_queue);         // 1
};

// Session config key (onnxruntime_session_options_config_keys.h): with "1", a session whose graph has a node
// only the CPU EP would take fails at creation instead of running that node on the CPU.
constexpr const char* kDisableCpuEpFallback = "session.disable_cpu_ep_fallback";

}  // namespace ort
