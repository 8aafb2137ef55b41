// directml_api.h - the part of DirectML's API the harness uses.
//
// With DMLH_USE_SDK_DIRECTML_H (the CMake/MSVC build sets it when it finds DirectML.h from the
// Microsoft.AI.DirectML NuGet package or the Windows SDK) this includes the real header. Otherwise
// (mingw-w64 10 has no DirectML.h) it declares the enums, structs, IIDs and interfaces below.
//
// Source of every declaration: microsoft/DirectX-Headers, include/directx/DirectML.h as of commit
// 9be295b3b81ce1d0ff2b44f18d0eb86ea54c5122 ("Update DirectML header to FL6.4 (package 1.16)"),
// DML_TARGET_VERSION 0x6400. Enum values were counted from that header's enum bodies with every
// `#if DML_TARGET_VERSION >= ...` block taken (the count is pinned by static_asserts in
// ../dml_harness/descriptions.cpp, which also run against the real header in the SDK build). Struct
// members are in the header's order with the header's types, so the layouts are the header's (also
// checked there).
#pragma once

#include <windows.h>
#include <d3d12.h>

#if defined(DMLH_USE_SDK_DIRECTML_H)

#ifndef DML_TARGET_VERSION_USE_LATEST
#define DML_TARGET_VERSION_USE_LATEST  // the redistributable's newest target, not the Windows SDK's NTDDI one
#endif
#include <DirectML.h>
#if DML_TARGET_VERSION < 0x5100
#error "DirectML.h targets a version below 0x5100: RESAMPLE_GRAD1 needs DML_TARGET_VERSION >= 0x5100 (use the Microsoft.AI.DirectML NuGet package's header)"
#endif
#define DMLH_HEADERS "DirectML.h (SDK/NuGet)"
#define DMLH_IID(name) __uuidof(name)
#if defined(__MINGW32__)
// g++ ignores DirectML.h's __declspec(uuid(...)); mingw-w64's __uuidof needs these (the header's IIDs).
__CRT_UUID_DECL(IDMLDevice, 0x6dbd6437, 0x96fd, 0x423f, 0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f)
__CRT_UUID_DECL(IDMLOperator, 0x26caae7a, 0x3081, 0x4633, 0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d)
__CRT_UUID_DECL(IDMLCompiledOperator, 0x6b15e56a, 0xbf5c, 0x4902, 0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4)
__CRT_UUID_DECL(IDMLOperatorInitializer, 0x427c1113, 0x435c, 0x469c, 0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13)
__CRT_UUID_DECL(IDMLBindingTable, 0x29c687dc, 0xde74, 0x4e3b, 0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc)
__CRT_UUID_DECL(IDMLCommandRecorder, 0xe6857a76, 0x2e3e, 0x4fdd, 0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53)
__CRT_UUID_DECL(IDMLDevice1, 0xa0884f9a, 0xd2be, 0x4355, 0xaa, 0x5d, 0x59, 0x01, 0x28, 0x1a, 0xd1, 0xd2)
#endif

#else  // own declarations for mingw-w64

#define DML_TARGET_VERSION 0x6400
#define DMLH_HEADERS "own declarations from DirectX-Headers DirectML.h @9be295b (DML_TARGET_VERSION 0x6400)"

static const UINT DML_TENSOR_DIMENSION_COUNT_MAX1 = 8;
static const UINT DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16;

enum DML_TENSOR_DATA_TYPE {
    DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
    DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
    DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
    DML_TENSOR_DATA_TYPE_UINT32 = 3,
    DML_TENSOR_DATA_TYPE_UINT16 = 4,
    DML_TENSOR_DATA_TYPE_UINT8 = 5,
    DML_TENSOR_DATA_TYPE_INT32 = 6,
    DML_TENSOR_DATA_TYPE_INT16 = 7,
    DML_TENSOR_DATA_TYPE_INT8 = 8,
    DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
    DML_TENSOR_DATA_TYPE_UINT64 = 10,
    DML_TENSOR_DATA_TYPE_INT64 = 11,
};

enum DML_TENSOR_TYPE { DML_TENSOR_TYPE_INVALID = 0, DML_TENSOR_TYPE_BUFFER = 1 };

enum DML_TENSOR_FLAGS { DML_TENSOR_FLAG_NONE = 0x0, DML_TENSOR_FLAG_OWNED_BY_DML = 0x1 };

struct DML_BUFFER_TENSOR_DESC {
    DML_TENSOR_DATA_TYPE DataType;
    DML_TENSOR_FLAGS Flags;
    UINT DimensionCount;
    const UINT* Sizes;
    const UINT* Strides;
    UINT64 TotalTensorSizeInBytes;
    UINT GuaranteedBaseOffsetAlignment;
};

struct DML_TENSOR_DESC {
    DML_TENSOR_TYPE Type;
    const void* Desc;
};

// Only the operators in scope, and the identity the graph path puts around them; their positions in the
// header's DML_OPERATOR_TYPE enum.
enum DML_OPERATOR_TYPE {
    DML_OPERATOR_INVALID = 0,
    DML_OPERATOR_ELEMENT_WISE_IDENTITY = 1,     // the enum's first operator
    DML_OPERATOR_ACTIVATION_RELU_GRAD = 129,    // #if DML_TARGET_VERSION >= 0x3000 block
    DML_OPERATOR_AVERAGE_POOLING_GRAD = 130,    // same block
    DML_OPERATOR_MAX_POOLING_GRAD = 131,        // same block
    DML_OPERATOR_RESAMPLE_GRAD = 134,           // same block
    DML_OPERATOR_SLICE_GRAD = 135,              // same block
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD = 142,  // #if DML_TARGET_VERSION >= 0x3100 block
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 = 154, // #if DML_TARGET_VERSION >= 0x5000 block
    DML_OPERATOR_RESAMPLE_GRAD1 = 162,          // #if DML_TARGET_VERSION >= 0x5100 block
};

enum DML_INTERPOLATION_MODE { DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR = 0, DML_INTERPOLATION_MODE_LINEAR = 1 };

enum DML_AXIS_DIRECTION { DML_AXIS_DIRECTION_INCREASING = 0, DML_AXIS_DIRECTION_DECREASING = 1 };

union DML_SCALAR_UNION {
    BYTE Bytes[8];
    INT8 Int8;
    UINT8 UInt8;
    INT16 Int16;
    UINT16 UInt16;
    INT32 Int32;
    UINT32 UInt32;
    INT64 Int64;
    UINT64 UInt64;
    FLOAT Float32;
    DOUBLE Float64;
};

struct DML_OPERATOR_DESC {
    DML_OPERATOR_TYPE Type;
    const void* Desc;
};

struct DML_SCALE_BIAS {
    FLOAT Scale;
    FLOAT Bias;
};

struct DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    const DML_SCALE_BIAS* ScaleBias;  // may be null
};

struct DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
};

struct DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    BOOL IncludePadding;
};

struct DML_MAX_POOLING_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    const UINT* Dilations;
};

struct DML_RESAMPLE_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    DML_INTERPOLATION_MODE InterpolationMode;
    UINT DimensionCount;
    const FLOAT* Scales;
    const FLOAT* InputPixelOffsets;
    const FLOAT* OutputPixelOffsets;
};

struct DML_SLICE_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    UINT DimensionCount;
    const UINT* InputWindowOffsets;
    const UINT* InputWindowSizes;
    const INT* InputWindowStrides;  // signed in the header (the docs print UINT)
};

struct DML_ELEMENT_WISE_CLIP_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    FLOAT Min;  // a FLOAT whatever the tensors' data type (CLIP_GRAD1 made it a union)
    FLOAT Max;
};

struct DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    DML_TENSOR_DATA_TYPE MinMaxDataType;
    DML_SCALAR_UNION Min;
    DML_SCALAR_UNION Max;
};

struct DML_RESAMPLE_GRAD1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    DML_INTERPOLATION_MODE InterpolationMode;
    DML_AXIS_DIRECTION RoundingDirection;
    UINT DimensionCount;
    const FLOAT* Scales;
    const FLOAT* InputPixelOffsets;
    const FLOAT* OutputPixelOffsets;
};

enum DML_FEATURE_LEVEL {
    DML_FEATURE_LEVEL_1_0 = 0x1000,
    DML_FEATURE_LEVEL_2_0 = 0x2000,
    DML_FEATURE_LEVEL_2_1 = 0x2100,
    DML_FEATURE_LEVEL_3_0 = 0x3000,
    DML_FEATURE_LEVEL_3_1 = 0x3100,
    DML_FEATURE_LEVEL_4_0 = 0x4000,
    DML_FEATURE_LEVEL_4_1 = 0x4100,
    DML_FEATURE_LEVEL_5_0 = 0x5000,
    DML_FEATURE_LEVEL_5_1 = 0x5100,
    DML_FEATURE_LEVEL_5_2 = 0x5200,
    DML_FEATURE_LEVEL_6_0 = 0x6000,
    DML_FEATURE_LEVEL_6_1 = 0x6100,
    DML_FEATURE_LEVEL_6_2 = 0x6200,
    DML_FEATURE_LEVEL_6_3 = 0x6300,
    DML_FEATURE_LEVEL_6_4 = 0x6400,
};

enum DML_FEATURE { DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT = 0, DML_FEATURE_FEATURE_LEVELS = 1 };

struct DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT { DML_TENSOR_DATA_TYPE DataType; };
struct DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT { BOOL IsSupported; };
struct DML_FEATURE_QUERY_FEATURE_LEVELS {
    UINT RequestedFeatureLevelCount;
    const DML_FEATURE_LEVEL* RequestedFeatureLevels;
};
struct DML_FEATURE_DATA_FEATURE_LEVELS { DML_FEATURE_LEVEL MaxSupportedFeatureLevel; };

struct IDMLDispatchable;
struct IDMLCompiledOperator;
struct IDMLPageable;
struct IDMLOperator;

struct DML_BINDING_TABLE_DESC {
    IDMLDispatchable* Dispatchable;
    D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle;
    D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle;
    UINT SizeInDescriptors;
};

enum DML_EXECUTION_FLAGS {
    DML_EXECUTION_FLAG_NONE = 0,
    DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION = 0x1,
    DML_EXECUTION_FLAG_DISABLE_META_COMMANDS = 0x2,
    DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE = 0x4,
};

enum DML_CREATE_DEVICE_FLAGS { DML_CREATE_DEVICE_FLAG_NONE = 0, DML_CREATE_DEVICE_FLAG_DEBUG = 0x1 };

struct DML_BINDING_PROPERTIES {
    UINT RequiredDescriptorCount;
    UINT64 TemporaryResourceSize;
    UINT64 PersistentResourceSize;
};

enum DML_BINDING_TYPE { DML_BINDING_TYPE_NONE = 0, DML_BINDING_TYPE_BUFFER = 1, DML_BINDING_TYPE_BUFFER_ARRAY = 2 };

struct DML_BINDING_DESC {
    DML_BINDING_TYPE Type;
    const void* Desc;
};

struct DML_BUFFER_BINDING {
    ID3D12Resource* Buffer;
    UINT64 Offset;
    UINT64 SizeInBytes;
};

// Interfaces: methods in the header's order, so the vtable slots are the header's
// (IUnknown 0-2, IDMLObject 3-6, IDMLDevice 7-16, IDMLDeviceChild 7, IDMLDispatchable 8,
// IDMLOperatorInitializer 9, IDMLBindingTable 8-12, IDMLCommandRecorder 8).
struct IDMLObject : public IUnknown {
    virtual HRESULT STDMETHODCALLTYPE GetPrivateData(REFGUID guid, UINT* dataSize, void* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetPrivateData(REFGUID guid, UINT dataSize, const void* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetPrivateDataInterface(REFGUID guid, IUnknown* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetName(PCWSTR name) = 0;
};

struct IDMLDevice : public IDMLObject {
    virtual HRESULT STDMETHODCALLTYPE CheckFeatureSupport(DML_FEATURE feature, UINT featureQueryDataSize,
                                                          const void* featureQueryData, UINT featureSupportDataSize,
                                                          void* featureSupportData) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateOperator(const DML_OPERATOR_DESC* desc, REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CompileOperator(IDMLOperator* op, DML_EXECUTION_FLAGS flags, REFIID riid,
                                                      void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateOperatorInitializer(UINT operatorCount,
                                                                IDMLCompiledOperator* const* operators, REFIID riid,
                                                                void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateCommandRecorder(REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateBindingTable(const DML_BINDING_TABLE_DESC* desc, REFIID riid,
                                                         void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE Evict(UINT count, IDMLPageable* const* ppObjects) = 0;
    virtual HRESULT STDMETHODCALLTYPE MakeResident(UINT count, IDMLPageable* const* ppObjects) = 0;
    virtual HRESULT STDMETHODCALLTYPE GetDeviceRemovedReason() = 0;
    virtual HRESULT STDMETHODCALLTYPE GetParentDevice(REFIID riid, void** ppv) = 0;
};

struct IDMLDeviceChild : public IDMLObject {
    virtual HRESULT STDMETHODCALLTYPE GetDevice(REFIID riid, void** ppv) = 0;
};

struct IDMLPageable : public IDMLDeviceChild {};

struct IDMLOperator : public IDMLDeviceChild {};

struct IDMLDispatchable : public IDMLPageable {
    // The header declares `DML_BINDING_PROPERTIES GetBindingProperties()`. An aggregate returned by a
    // member function travels through a hidden pointer after `this` in MSVC's ABI, which g++ does
    // not follow, so it is declared here with the pointer explicit and never called by name: the
    // harness calls slot 8 through binding_properties() in both builds.
    virtual DML_BINDING_PROPERTIES* STDMETHODCALLTYPE GetBindingProperties_(DML_BINDING_PROPERTIES* result) = 0;
};

struct IDMLCompiledOperator : public IDMLDispatchable {};

struct IDMLOperatorInitializer : public IDMLDispatchable {
    virtual HRESULT STDMETHODCALLTYPE Reset(UINT operatorCount, IDMLCompiledOperator* const* operators) = 0;
};

struct IDMLBindingTable : public IDMLDeviceChild {
    virtual void STDMETHODCALLTYPE BindInputs(UINT bindingCount, const DML_BINDING_DESC* bindings) = 0;
    virtual void STDMETHODCALLTYPE BindOutputs(UINT bindingCount, const DML_BINDING_DESC* bindings) = 0;
    virtual void STDMETHODCALLTYPE BindTemporaryResource(const DML_BINDING_DESC* binding) = 0;
    virtual void STDMETHODCALLTYPE BindPersistentResource(const DML_BINDING_DESC* binding) = 0;
    virtual HRESULT STDMETHODCALLTYPE Reset(const DML_BINDING_TABLE_DESC* desc) = 0;
};

struct IDMLCommandRecorder : public IDMLDeviceChild {
    virtual void STDMETHODCALLTYPE RecordDispatch(ID3D12CommandList* commandList, IDMLDispatchable* dispatchable,
                                                  IDMLBindingTable* bindings) = 0;
};

// The graph (DML_TARGET_VERSION >= 0x2100 block at the header's end).
enum DML_GRAPH_EDGE_TYPE {
    DML_GRAPH_EDGE_TYPE_INVALID = 0,
    DML_GRAPH_EDGE_TYPE_INPUT = 1,
    DML_GRAPH_EDGE_TYPE_OUTPUT = 2,
    DML_GRAPH_EDGE_TYPE_INTERMEDIATE = 3,
};

struct DML_GRAPH_EDGE_DESC {
    DML_GRAPH_EDGE_TYPE Type;
    const void* Desc;
};

struct DML_INPUT_GRAPH_EDGE_DESC {
    UINT GraphInputIndex;
    UINT ToNodeIndex;
    UINT ToNodeInputIndex;
    const char* Name;
};

struct DML_OUTPUT_GRAPH_EDGE_DESC {
    UINT FromNodeIndex;
    UINT FromNodeOutputIndex;
    UINT GraphOutputIndex;
    const char* Name;
};

struct DML_INTERMEDIATE_GRAPH_EDGE_DESC {
    UINT FromNodeIndex;
    UINT FromNodeOutputIndex;
    UINT ToNodeIndex;
    UINT ToNodeInputIndex;
    const char* Name;
};

enum DML_GRAPH_NODE_TYPE { DML_GRAPH_NODE_TYPE_INVALID = 0, DML_GRAPH_NODE_TYPE_OPERATOR = 1 };

struct DML_GRAPH_NODE_DESC {
    DML_GRAPH_NODE_TYPE Type;
    const void* Desc;
};

struct DML_OPERATOR_GRAPH_NODE_DESC {
    IDMLOperator* Operator;
    const char* Name;
};

struct DML_GRAPH_DESC {
    UINT InputCount;
    UINT OutputCount;
    UINT NodeCount;
    const DML_GRAPH_NODE_DESC* Nodes;
    UINT InputEdgeCount;
    const DML_GRAPH_EDGE_DESC* InputEdges;
    UINT OutputEdgeCount;
    const DML_GRAPH_EDGE_DESC* OutputEdges;
    UINT IntermediateEdgeCount;
    const DML_GRAPH_EDGE_DESC* IntermediateEdges;
};

// IDMLDevice's slots 7-16, then CompileGraph at 17.
struct IDMLDevice1 : public IDMLDevice {
    virtual HRESULT STDMETHODCALLTYPE CompileGraph(const DML_GRAPH_DESC* desc, DML_EXECUTION_FLAGS flags,
                                                   REFIID riid, void** ppv) = 0;
};

// IIDs: the DML_DECLARE_INTERFACE("...") strings of the header.
static const GUID DMLH_IID_IDMLDevice = {0x6dbd6437, 0x96fd, 0x423f, {0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f}};
static const GUID DMLH_IID_IDMLOperator = {0x26caae7a, 0x3081, 0x4633, {0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d}};
static const GUID DMLH_IID_IDMLCompiledOperator = {0x6b15e56a, 0xbf5c, 0x4902, {0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4}};
static const GUID DMLH_IID_IDMLOperatorInitializer = {0x427c1113, 0x435c, 0x469c, {0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13}};
static const GUID DMLH_IID_IDMLBindingTable = {0x29c687dc, 0xde74, 0x4e3b, {0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc}};
static const GUID DMLH_IID_IDMLDevice1 = {0xa0884f9a, 0xd2be, 0x4355, {0xaa, 0x5d, 0x59, 0x01, 0x28, 0x1a, 0xd1, 0xd2}};
static const GUID DMLH_IID_IDMLCommandRecorder = {0xe6857a76, 0x2e3e, 0x4fdd, {0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53}};
#define DMLH_IID(name) DMLH_IID_##name

#endif  // DMLH_USE_SDK_DIRECTML_H

// DMLCreateDevice / DMLCreateDevice1, loaded with GetProcAddress (the harness never links DirectML).
typedef HRESULT(WINAPI* PFN_DMLCreateDevice)(ID3D12Device* d3d12Device, DML_CREATE_DEVICE_FLAGS flags, REFIID riid,
                                             void** ppv);
typedef HRESULT(WINAPI* PFN_DMLCreateDevice1)(ID3D12Device* d3d12Device, DML_CREATE_DEVICE_FLAGS flags,
                                              DML_FEATURE_LEVEL minimumFeatureLevel, REFIID riid, void** ppv);
