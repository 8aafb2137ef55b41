/* dml_smoke.c: smoke test of the real DirectML.dll under Wine (or on Windows).
 *
 Runs the project's five DirectML gradient operators on small FLOAT32 tensors through a D3D12 device:
 *   DML_OPERATOR_ACTIVATION_RELU_GRAD (129):    {1,1,1,8}  dX = X > 0 ? dY : 0
 *   DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 (154): {1,1,1,8}  dX = (X <= Min || X >= Max) ? 0 : dY, Min=-1, Max=2
 *   DML_OPERATOR_MAX_POOLING_GRAD (131):  X {1,1,4,4}, dY {1,1,2,2}, window 2x2 stride 2: dY to each argmax
 *   DML_OPERATOR_SLICE_GRAD (135):        dY {1,1,2,2} -> dX {1,1,4,4}, offsets {0,0,0,1}, sizes {1,1,4,3},
 *                                         strides {1,1,2,2}: dX[2i][1+2j] = dY[i][j], zero elsewhere
 *   DML_OPERATOR_RESAMPLE_GRAD1 (162):    dY {1,1,4,4} -> dX {1,1,2,2}, NEAREST, DECREASING (floor),
 *                                         scales {1,1,2,2}, pixel offsets 0: dX = sums of 2x2 blocks
 * Each: upload buffer -> default (UAV) buffers, shader-visible CBV/SRV/UAV heap, binding table,
 * operator initializer, dispatch, readback. Compares with the expected values bit for bit (NaN in X is
 * reported, not judged: it is a documented-behaviour question the conformance suite asks).
 * Then times the dispatch round trip (upload copy + dispatch + readback copy + fence wait + map).
 *
 * Build: x86_64-w64-mingw32-gcc -O1 -o dml_smoke.exe dml_smoke.c -ld3d12
 * mingw-w64 10 has no DirectML.h: the few structs, enum values, IIDs and vtable slots used are declared
 * here from DirectML's public header (IDMLDevice: 7 CheckFeatureSupport, 8 CreateOperator,
 * 9 CompileOperator, 10 CreateOperatorInitializer, 11 CreateCommandRecorder, 12 CreateBindingTable;
 * IDMLDispatchable 8 GetBindingProperties; IDMLBindingTable 8 BindInputs, 9 BindOutputs, 12 Reset;
 * IDMLCommandRecorder 8 RecordDispatch). mingw-w64 10's Get*DescriptorHandleForHeapStart macros have
 * the wrong ABI, so vtable slots 9 and 10 are called with a result pointer.
 * IDMLBindingTable 10 BindTemporaryResource and 11 BindPersistentResource are used when an operator
 * asks for them.
 * Exit status: 0 all checks passed, 1 a check failed, 2 an API call failed.
 */
#define COBJMACROS
#include <windows.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <initguid.h>
#include <d3d12.h>

DEFINE_GUID(IID_IDMLDevice_, 0x6dbd6437, 0x96fd, 0x423f, 0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f);
DEFINE_GUID(IID_IDMLOperator_, 0x26caae7a, 0x3081, 0x4633, 0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d);
DEFINE_GUID(IID_IDMLCompiledOperator_, 0x6b15e56a, 0xbf5c, 0x4902, 0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4);
DEFINE_GUID(IID_IDMLOperatorInitializer_, 0x427c1113, 0x435c, 0x469c, 0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13);
DEFINE_GUID(IID_IDMLBindingTable_, 0x29c687dc, 0xde74, 0x4e3b, 0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc);
DEFINE_GUID(IID_IDMLCommandRecorder_, 0xe6857a76, 0x2e3e, 0x4fdd, 0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53);

enum { DML_TENSOR_DATA_TYPE_FLOAT32 = 1, DML_TENSOR_TYPE_BUFFER = 1, DML_BINDING_TYPE_BUFFER = 1 };
enum { DML_OPERATOR_ACTIVATION_RELU_GRAD = 129, DML_OPERATOR_MAX_POOLING_GRAD = 131, DML_OPERATOR_SLICE_GRAD = 135,
       DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 = 154, DML_OPERATOR_RESAMPLE_GRAD1 = 162 };
enum { DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR = 0, DML_AXIS_DIRECTION_DECREASING = 1 };

typedef struct { UINT DataType, Flags, DimensionCount; const UINT *Sizes, *Strides; UINT64 TotalTensorSizeInBytes; UINT GuaranteedBaseOffsetAlignment; } DML_BUFFER_TENSOR_DESC;
typedef struct { UINT Type; const void *Desc; } DML_TENSOR_DESC;
typedef struct { UINT Type; const void *Desc; } DML_OPERATOR_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *InputGradientTensor, *OutputGradientTensor; } DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC;
typedef union { BYTE Bytes[8]; INT32 Int32; UINT64 UInt64; FLOAT Float32; DOUBLE Float64; } DML_SCALAR_UNION;
typedef struct { const DML_TENSOR_DESC *InputTensor, *InputGradientTensor, *OutputGradientTensor; UINT MinMaxDataType; DML_SCALAR_UNION Min, Max; } DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *InputGradientTensor, *OutputGradientTensor; UINT DimensionCount;
                 const UINT *Strides, *WindowSize, *StartPadding, *EndPadding, *Dilations; } DML_MAX_POOLING_GRAD_OPERATOR_DESC;
typedef struct { const DML_TENSOR_DESC *InputGradientTensor, *OutputGradientTensor; UINT DimensionCount;
                 const UINT *InputWindowOffsets, *InputWindowSizes; const INT *InputWindowStrides; } DML_SLICE_GRAD_OPERATOR_DESC;
typedef struct { const DML_TENSOR_DESC *InputGradientTensor, *OutputGradientTensor; UINT InterpolationMode, RoundingDirection,
                 DimensionCount; const FLOAT *Scales, *InputPixelOffsets, *OutputPixelOffsets; } DML_RESAMPLE_GRAD1_OPERATOR_DESC;
typedef struct { UINT RequiredDescriptorCount; UINT64 TemporaryResourceSize, PersistentResourceSize; } DML_BINDING_PROPERTIES;
typedef struct { void *Dispatchable; D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle; D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle; UINT SizeInDescriptors; } DML_BINDING_TABLE_DESC;
typedef struct { ID3D12Resource *Buffer; UINT64 Offset, SizeInBytes; } DML_BUFFER_BINDING;
typedef struct { UINT Type; const void *Desc; } DML_BINDING_DESC;

#define VT(o, i) (((void **)*(void ***)(o))[i])
typedef HRESULT(WINAPI *PFN_DMLCreateDevice)(ID3D12Device *, UINT, REFIID, void **);
#define CHK(x) do { HRESULT h_ = (x); if (FAILED(h_)) { fprintf(stderr, "FAILED %s hr=0x%08lx (line %d)\n", #x, h_, __LINE__); exit(2); } } while (0)

enum { MAXIN = 2, MAXEL = 64, BUFSZ = 256, SLICE = 16 };
static ID3D12Device *dev;
static void *dml;
static ID3D12CommandQueue *queue;
static ID3D12CommandAllocator *alloc;
static ID3D12GraphicsCommandList *list;
static ID3D12Fence *fence;
static UINT64 fence_value;
static HANDLE fence_event;
static ID3D12DescriptorHeap *heap;

static ID3D12Resource *buffer(D3D12_HEAP_TYPE type, UINT64 size, D3D12_RESOURCE_STATES state, D3D12_RESOURCE_FLAGS flags) {
  D3D12_HEAP_PROPERTIES hp = {type};
  D3D12_RESOURCE_DESC rd = {0};
  rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER; rd.Width = size; rd.Height = 1; rd.DepthOrArraySize = 1; rd.MipLevels = 1;
  rd.SampleDesc.Count = 1; rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR; rd.Flags = flags;
  ID3D12Resource *r;
  CHK(ID3D12Device_CreateCommittedResource(dev, &hp, D3D12_HEAP_FLAG_NONE, &rd, state, NULL, &IID_ID3D12Resource, (void **)&r));
  return r;
}

static void transition(ID3D12Resource *r, D3D12_RESOURCE_STATES a, D3D12_RESOURCE_STATES b) {
  D3D12_RESOURCE_BARRIER rb = {0};
  rb.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION; rb.Transition.pResource = r;
  rb.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES; rb.Transition.StateBefore = a; rb.Transition.StateAfter = b;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &rb);
}

static void uav_barrier(void) {
  D3D12_RESOURCE_BARRIER rb = {0};
  rb.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV; rb.UAV.pResource = NULL;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &rb);
}

static void submit_and_wait(void) {
  CHK(ID3D12GraphicsCommandList_Close(list));
  ID3D12CommandList *lists[] = {(ID3D12CommandList *)list};
  ID3D12CommandQueue_ExecuteCommandLists(queue, 1, lists);
  CHK(ID3D12CommandQueue_Signal(queue, fence, ++fence_value));
  CHK(ID3D12Fence_SetEventOnCompletion(fence, fence_value, fence_event));
  if (WaitForSingleObject(fence_event, 60000) != WAIT_OBJECT_0) { fprintf(stderr, "GPU wait timed out\n"); exit(2); }
  CHK(ID3D12CommandAllocator_Reset(alloc));
  CHK(ID3D12GraphicsCommandList_Reset(list, alloc, NULL));
}

typedef struct {
  void *compiled, *table;
  ID3D12Resource *in[MAXIN], *out, *upload, *readback, *temp, *persist;
  UINT n_in, in_el[MAXIN], out_el;
} Op;

#define DISP(o, slot, T) ((T)VT(o, slot))
typedef HRESULT(STDMETHODCALLTYPE *PFN_BTReset)(void *, const DML_BINDING_TABLE_DESC *);
typedef void(STDMETHODCALLTYPE *PFN_BindN)(void *, UINT, const DML_BINDING_DESC *);
typedef void(STDMETHODCALLTYPE *PFN_Bind1)(void *, const DML_BINDING_DESC *);
typedef void(STDMETHODCALLTYPE *PFN_Record)(void *, void *, void *, void *);

static void bind_buffer(DML_BUFFER_BINDING *bb, DML_BINDING_DESC *bd, ID3D12Resource *r, UINT64 size) {
  bb->Buffer = r; bb->Offset = 0; bb->SizeInBytes = size;
  bd->Type = DML_BINDING_TYPE_BUFFER; bd->Desc = bb;
}

static void *recorder(void) {
  void *rec;
  CHK(((HRESULT(STDMETHODCALLTYPE *)(void *, REFIID, void **))VT(dml, 11))(dml, &IID_IDMLCommandRecorder_, &rec));
  return rec;
}

/* Create, compile and initialise an operator with n_in buffer inputs (in_el[i] floats each) and one
 * buffer output (out_el floats). Each operator gets its own SLICE-descriptor part [slot*SLICE, ...) of the
 * shared heap: binding tables over the same descriptors would overwrite each other. Temporary and
 * persistent resources are created and bound when the operator asks for them. */
static void op_create(Op *op, const DML_OPERATOR_DESC *desc, UINT n_in, const UINT *in_el, UINT out_el, UINT slot) {
  void *dop, *init;
  memset(op, 0, sizeof *op);
  op->n_in = n_in; op->out_el = out_el;
  for (UINT i = 0; i < n_in; i++) op->in_el[i] = in_el[i];
  CHK(((HRESULT(STDMETHODCALLTYPE *)(void *, const DML_OPERATOR_DESC *, REFIID, void **))VT(dml, 8))(dml, desc, &IID_IDMLOperator_, &dop));
  CHK(((HRESULT(STDMETHODCALLTYPE *)(void *, void *, UINT, REFIID, void **))VT(dml, 9))(dml, dop, 0, &IID_IDMLCompiledOperator_, &op->compiled));
  CHK(((HRESULT(STDMETHODCALLTYPE *)(void *, UINT, void **, REFIID, void **))VT(dml, 10))(dml, 1, &op->compiled, &IID_IDMLOperatorInitializer_, &init));
  DML_BINDING_PROPERTIES ip, ep;
  ((void(STDMETHODCALLTYPE *)(void *, DML_BINDING_PROPERTIES *))VT(init, 8))(init, &ip);
  ((void(STDMETHODCALLTYPE *)(void *, DML_BINDING_PROPERTIES *))VT(op->compiled, 8))(op->compiled, &ep);
  if (ip.RequiredDescriptorCount > SLICE || ep.RequiredDescriptorCount > SLICE) {
    fprintf(stderr, "operator needs more than %d descriptors\n", SLICE);
    exit(2);
  }
  printf("[op %u] binding properties: initializer %u descriptors, temp %llu B; execute %u descriptors, temp %llu B, persistent %llu B\n",
         slot, ip.RequiredDescriptorCount, (unsigned long long)ip.TemporaryResourceSize, ep.RequiredDescriptorCount,
         (unsigned long long)ep.TemporaryResourceSize, (unsigned long long)ep.PersistentResourceSize);
  UINT64 temp = ip.TemporaryResourceSize > ep.TemporaryResourceSize ? ip.TemporaryResourceSize : ep.TemporaryResourceSize;
  if (temp) op->temp = buffer(D3D12_HEAP_TYPE_DEFAULT, temp, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS);
  if (ep.PersistentResourceSize)
    op->persist = buffer(D3D12_HEAP_TYPE_DEFAULT, ep.PersistentResourceSize, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS);
  D3D12_CPU_DESCRIPTOR_HANDLE cpu; D3D12_GPU_DESCRIPTOR_HANDLE gpu;
  ((void(STDMETHODCALLTYPE *)(void *, D3D12_CPU_DESCRIPTOR_HANDLE *))VT(heap, 9))(heap, &cpu);
  ((void(STDMETHODCALLTYPE *)(void *, D3D12_GPU_DESCRIPTOR_HANDLE *))VT(heap, 10))(heap, &gpu);
  UINT inc = ID3D12Device_GetDescriptorHandleIncrementSize(dev, D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
  cpu.ptr += (SIZE_T)slot * SLICE * inc;
  gpu.ptr += (UINT64)slot * SLICE * inc;
  DML_BINDING_TABLE_DESC btd = {init, cpu, gpu, SLICE};
  CHK(((HRESULT(STDMETHODCALLTYPE *)(void *, const DML_BINDING_TABLE_DESC *, REFIID, void **))VT(dml, 12))(dml, &btd, &IID_IDMLBindingTable_, &op->table));
  DML_BUFFER_BINDING tb, pb;
  DML_BINDING_DESC td, pd;
  if (op->temp && ip.TemporaryResourceSize) { bind_buffer(&tb, &td, op->temp, ip.TemporaryResourceSize); DISP(op->table, 10, PFN_Bind1)(op->table, &td); }
  if (op->persist) { bind_buffer(&pb, &pd, op->persist, ep.PersistentResourceSize); DISP(op->table, 9, PFN_BindN)(op->table, 1, &pd); }
  void *rec = recorder();
  ID3D12GraphicsCommandList_SetDescriptorHeaps(list, 1, &heap);
  DISP(rec, 8, PFN_Record)(rec, list, init, op->table);
  submit_and_wait();
  /* Re-point the binding table at the compiled operator and bind the buffers once. */
  btd.Dispatchable = op->compiled;
  CHK(DISP(op->table, 12, PFN_BTReset)(op->table, &btd));
  DML_BUFFER_BINDING bb[MAXIN + 1];
  DML_BINDING_DESC bd[MAXIN + 1];
  for (UINT i = 0; i <= n_in; i++) {
    ID3D12Resource *r = buffer(D3D12_HEAP_TYPE_DEFAULT, BUFSZ, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS);
    if (i < n_in) op->in[i] = r; else op->out = r;
    bind_buffer(&bb[i], &bd[i], r, (i < n_in ? in_el[i] : out_el) * sizeof(float));
  }
  DISP(op->table, 8, PFN_BindN)(op->table, n_in, bd);
  DISP(op->table, 9, PFN_BindN)(op->table, 1, &bd[n_in]);
  if (op->temp && ep.TemporaryResourceSize) { bind_buffer(&tb, &td, op->temp, ep.TemporaryResourceSize); DISP(op->table, 10, PFN_Bind1)(op->table, &td); }
  if (op->persist) DISP(op->table, 11, PFN_Bind1)(op->table, &pd);
  op->upload = buffer(D3D12_HEAP_TYPE_UPLOAD, BUFSZ * (MAXIN + 1), D3D12_RESOURCE_STATE_GENERIC_READ, D3D12_RESOURCE_FLAG_NONE);
  void *p;
  CHK(ID3D12Resource_Map(op->upload, 0, NULL, &p));
  memset((char *)p + MAXIN * BUFSZ, 0xA5, BUFSZ);
  ID3D12Resource_Unmap(op->upload, 0, NULL);
  op->readback = buffer(D3D12_HEAP_TYPE_READBACK, BUFSZ, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_FLAG_NONE);
  IUnknown_Release((IUnknown *)rec);
  IUnknown_Release((IUnknown *)init);
  IUnknown_Release((IUnknown *)dop);
}

/* One round trip: upload inputs, dispatch, read the output back. */
static void op_run(Op *op, const float *const *inputs, float *out) {
  void *p;
  CHK(ID3D12Resource_Map(op->upload, 0, NULL, &p));
  for (UINT i = 0; i < op->n_in; i++) memcpy((char *)p + i * BUFSZ, inputs[i], op->in_el[i] * sizeof(float));
  ID3D12Resource_Unmap(op->upload, 0, NULL);
  for (UINT i = 0; i < op->n_in; i++) {
    transition(op->in[i], D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_DEST);
    ID3D12GraphicsCommandList_CopyBufferRegion(list, op->in[i], 0, op->upload, i * BUFSZ, op->in_el[i] * sizeof(float));
    transition(op->in[i], D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  }
  /* Poison the output buffer first (0xA5A5A5A5 from the upload heap's last slice), so that a dispatch
   * that does not run reads back as poison, not as zeros or a previous result. */
  transition(op->out, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_DEST);
  ID3D12GraphicsCommandList_CopyBufferRegion(list, op->out, 0, op->upload, MAXIN * BUFSZ, op->out_el * sizeof(float));
  transition(op->out, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  void *rec = recorder();
  ID3D12GraphicsCommandList_SetDescriptorHeaps(list, 1, &heap);
  DISP(rec, 8, PFN_Record)(rec, list, op->compiled, op->table);
  uav_barrier();
  transition(op->out, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
  ID3D12GraphicsCommandList_CopyBufferRegion(list, op->readback, 0, op->out, 0, op->out_el * sizeof(float));
  transition(op->out, D3D12_RESOURCE_STATE_COPY_SOURCE, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  submit_and_wait();
  IUnknown_Release((IUnknown *)rec);
  D3D12_RANGE r = {0, op->out_el * sizeof(float)};
  CHK(ID3D12Resource_Map(op->readback, 0, &r, &p));
  memcpy(out, p, op->out_el * sizeof(float));
  ID3D12Resource_Unmap(op->readback, 0, NULL);
}

static unsigned bits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }

/* Elementwise operators: compare bit for bit; where X is NaN either candidate is accepted and the one
 * DirectML chose is printed. */
static int check_elementwise(const char *name, UINT n, const float *x, const float *dy, const float *got, const float *want,
                             const float *want_nan) {
  int bad = 0;
  printf("%s\n", name);
  for (UINT i = 0; i < n; i++) {
    int is_nan = isnan(x[i]);
    int ok = is_nan ? (bits(got[i]) == bits(want[i]) || bits(got[i]) == bits(want_nan[i])) : bits(got[i]) == bits(want[i]);
    if (!ok) bad = 1;
    printf("  x=%-6g dy=%-3g -> dx=%-6g (0x%08x) %s\n", x[i], dy[i], got[i], bits(got[i]), ok ? "ok" : "MISMATCH");
    if (!ok) printf("    want %g (0x%08x)\n", want[i], bits(want[i]));
    if (is_nan) printf("    (X is NaN: DirectML gives %s)\n", bits(got[i]) == bits(dy[i]) ? "dY" : "0");
  }
  return bad;
}

/* Other operators: the output grid, compared bit for bit (all expected values are exact small sums). */
static int check_grid(const char *name, UINT rows, UINT cols, const float *got, const float *want) {
  int bad = 0;
  printf("%s\n", name);
  for (UINT r = 0; r < rows; r++) {
    printf("  ");
    for (UINT c = 0; c < cols; c++) {
      UINT i = r * cols + c;
      int ok = bits(got[i]) == bits(want[i]);
      if (!ok) bad = 1;
      printf("%6g%s", got[i], ok ? " " : "!");
    }
    printf("\n");
  }
  if (bad) {
    printf("  MISMATCH (marked !), want:\n");
    for (UINT r = 0; r < rows; r++) {
      printf("  ");
      for (UINT c = 0; c < cols; c++) printf("%6g ", want[r * cols + c]);
      printf("\n");
    }
  }
  return bad;
}

static void tensor(DML_BUFFER_TENSOR_DESC *b, DML_TENSOR_DESC *t, const UINT *sizes) {
  memset(b, 0, sizeof *b);
  b->DataType = DML_TENSOR_DATA_TYPE_FLOAT32; b->DimensionCount = 4; b->Sizes = sizes;
  b->TotalTensorSizeInBytes = (UINT64)sizes[0] * sizes[1] * sizes[2] * sizes[3] * sizeof(float);
  t->Type = DML_TENSOR_TYPE_BUFFER; t->Desc = b;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 20;
  LARGE_INTEGER f, t0, t1;
  QueryPerformanceFrequency(&f);
  QueryPerformanceCounter(&t0);
  CHK(D3D12CreateDevice(NULL, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)&dev));
  HMODULE m = LoadLibraryA("DirectML.dll");
  if (!m) { fprintf(stderr, "LoadLibrary DirectML.dll failed: %lu\n", GetLastError()); return 2; }
  PFN_DMLCreateDevice create = (PFN_DMLCreateDevice)GetProcAddress(m, "DMLCreateDevice");
  CHK(create(dev, 0, &IID_IDMLDevice_, &dml));
  D3D12_COMMAND_QUEUE_DESC qd = {D3D12_COMMAND_LIST_TYPE_DIRECT};
  CHK(ID3D12Device_CreateCommandQueue(dev, &qd, &IID_ID3D12CommandQueue, (void **)&queue));
  CHK(ID3D12Device_CreateCommandAllocator(dev, D3D12_COMMAND_LIST_TYPE_DIRECT, &IID_ID3D12CommandAllocator, (void **)&alloc));
  CHK(ID3D12Device_CreateCommandList(dev, 0, D3D12_COMMAND_LIST_TYPE_DIRECT, alloc, NULL, &IID_ID3D12GraphicsCommandList, (void **)&list));
  CHK(ID3D12Device_CreateFence(dev, 0, D3D12_FENCE_FLAG_NONE, &IID_ID3D12Fence, (void **)&fence));
  fence_event = CreateEventA(NULL, FALSE, FALSE, NULL);
  D3D12_DESCRIPTOR_HEAP_DESC hd = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, 8 * SLICE, D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};
  CHK(ID3D12Device_CreateDescriptorHeap(dev, &hd, &IID_ID3D12DescriptorHeap, (void **)&heap));
  QueryPerformanceCounter(&t1);
  double t_setup = (double)(t1.QuadPart - t0.QuadPart) / f.QuadPart;

  enum { N = 8 };
  static const UINT s8[4] = {1, 1, 1, N}, s44[4] = {1, 1, 4, 4}, s22[4] = {1, 1, 2, 2};
  DML_BUFFER_TENSOR_DESC b8, b44, b22;
  DML_TENSOR_DESC t8, t44, t22;
  tensor(&b8, &t8, s8); tensor(&b44, &t44, s44); tensor(&b22, &t22, s22);
  const UINT el8[2] = {N, N};
  float inf = HUGE_VALF, nan = nanf("");
  float x[N] = {-2.f, -0.f, 0.f, 0.5f, 3.f, inf, nan, -inf};
  float dy[N] = {1, 2, 3, 4, 5, 6, 7, 8};
  float got[MAXEL], want[MAXEL], want_nan[MAXEL];
  int bad = 0;

  /* ReluGrad */
  DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC rg = {&t8, &t8, &t8};
  DML_OPERATOR_DESC od = {DML_OPERATOR_ACTIVATION_RELU_GRAD, &rg};
  Op relu, clip, pool, slice, resample;
  QueryPerformanceCounter(&t0);
  op_create(&relu, &od, 2, el8, N, 0);
  QueryPerformanceCounter(&t1);
  double t_create_relu = (double)(t1.QuadPart - t0.QuadPart) / f.QuadPart;
  const float *inputs[2] = {x, dy};
  QueryPerformanceCounter(&t0);
  op_run(&relu, inputs, got);
  QueryPerformanceCounter(&t1);
  double t_first = (double)(t1.QuadPart - t0.QuadPart) / f.QuadPart;
  for (int i = 0; i < N; i++) { want[i] = x[i] > 0 ? dy[i] : 0.f; want_nan[i] = dy[i]; }
  bad |= check_elementwise("ACTIVATION_RELU_GRAD (129), FLOAT32 {1,1,1,8}: want X > 0 ? dY : 0", N, x, dy, got, want, want_nan);

  /* ClipGrad1, Min=-1, Max=2: zero where X <= Min or X >= Max */
  float x2[N] = {-2.f, -1.f, -0.5f, 0.f, 1.999f, 2.f, nan, inf};
  const float *inputs2[2] = {x2, dy};
  DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC cg = {&t8, &t8, &t8, DML_TENSOR_DATA_TYPE_FLOAT32};
  cg.Min.Float32 = -1.f; cg.Max.Float32 = 2.f;
  DML_OPERATOR_DESC od2 = {DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1, &cg};
  op_create(&clip, &od2, 2, el8, N, 1);
  op_run(&clip, inputs2, got);
  for (int i = 0; i < N; i++) { want[i] = (x2[i] <= -1.f || x2[i] >= 2.f) ? 0.f : dy[i]; want_nan[i] = 0.f; }
  bad |= check_elementwise("ELEMENT_WISE_CLIP_GRAD1 (154), FLOAT32 {1,1,1,8}, Min=-1 Max=2: want (X <= Min || X >= Max) ? 0 : dY",
                           N, x2, dy, got, want, want_nan);

  /* MaxPoolingGrad: X 4x4, windows 2x2 stride 2; dY 2x2 goes to each window's argmax. */
  float px[16] = {1, 5, 2, 0,   3, 4, 9, 1,   0, 0, 6, 7,   8, 2, 7, 8};
  float pdy[4] = {10, 20, 30, 40};
  static const UINT two[2] = {2, 2}, zero2[2] = {0, 0}, one2[2] = {1, 1};
  DML_MAX_POOLING_GRAD_OPERATOR_DESC mp = {&t44, &t22, &t44, 2, two, two, zero2, zero2, one2};
  DML_OPERATOR_DESC od3 = {DML_OPERATOR_MAX_POOLING_GRAD, &mp};
  const UINT elp[2] = {16, 4};
  op_create(&pool, &od3, 2, elp, 16, 2);
  const float *inputs3[2] = {px, pdy};
  op_run(&pool, inputs3, got);
  memset(want, 0, sizeof want);
  want[1] = 10;  /* window (0,0): max 5 at (0,1) */
  want[6] = 20;  /* window (0,1): max 9 at (1,2) */
  want[12] = 30; /* window (1,0): max 8 at (3,0) */
  want[15] = 40; /* window (1,1): 6,7,7,8 -> max 8 at (3,3) */
  bad |= check_grid("MAX_POOLING_GRAD (131), X {1,1,4,4}, dY {1,1,2,2}, window 2x2 stride 2: dX", 4, 4, got, want);

  /* SliceGrad: dY 2x2 -> dX 4x4 at rows 0,2 and columns 1,3. */
  static const UINT soff[4] = {0, 0, 0, 1}, ssz[4] = {1, 1, 4, 3};
  static const INT sstr[4] = {1, 1, 2, 2};
  DML_SLICE_GRAD_OPERATOR_DESC sg = {&t22, &t44, 4, soff, ssz, sstr};
  DML_OPERATOR_DESC od4 = {DML_OPERATOR_SLICE_GRAD, &sg};
  const UINT els[1] = {4};
  op_create(&slice, &od4, 1, els, 16, 3);
  float sdy[4] = {1.5f, -2.f, 3.25f, 4.f};
  const float *inputs4[1] = {sdy};
  op_run(&slice, inputs4, got);
  memset(want, 0, sizeof want);
  want[1] = 1.5f; want[3] = -2.f; want[9] = 3.25f; want[11] = 4.f;
  bad |= check_grid("SLICE_GRAD (135), dY {1,1,2,2} -> dX {1,1,4,4}, offsets {0,0,0,1} sizes {1,1,4,3} strides {1,1,2,2}: dX",
                    4, 4, got, want);

  /* ResampleGrad1: NEAREST, floor, scale 2, offsets 0: source row/col of output o is floor(o/2). */
  static const FLOAT rsc[4] = {1, 1, 2, 2}, rzero[4] = {0, 0, 0, 0};
  DML_RESAMPLE_GRAD1_OPERATOR_DESC rsg = {&t44, &t22, DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR, DML_AXIS_DIRECTION_DECREASING,
                                          4, rsc, rzero, rzero};
  DML_OPERATOR_DESC od5 = {DML_OPERATOR_RESAMPLE_GRAD1, &rsg};
  const UINT elr[1] = {16};
  op_create(&resample, &od5, 1, elr, 4, 4);
  float rdy[16];
  for (int i = 0; i < 16; i++) rdy[i] = (float)(i + 1);
  const float *inputs5[1] = {rdy};
  op_run(&resample, inputs5, got);
  want[0] = 1 + 2 + 5 + 6; want[1] = 3 + 4 + 7 + 8; want[2] = 9 + 10 + 13 + 14; want[3] = 11 + 12 + 15 + 16;
  bad |= check_grid("RESAMPLE_GRAD1 (162), dY {1,1,4,4} = 1..16 -> dX {1,1,2,2}, NEAREST floor, scales {1,1,2,2}: 2x2 block sums",
                    2, 2, got, want);

  /* Second ReluGrad round with other data: the output must follow the new inputs. */
  float x3[N] = {1, -1, 2, -2, 3, -3, 4, -4}, dy3[N] = {-1, -2, -3, -4, -5, -6, -7, -8};
  const float *inputs6[2] = {x3, dy3};
  op_run(&relu, inputs6, got);
  for (int i = 0; i < N; i++) { want[i] = x3[i] > 0 ? dy3[i] : 0.f; want_nan[i] = want[i]; }
  bad |= check_elementwise("ACTIVATION_RELU_GRAD again, new data", N, x3, dy3, got, want, want_nan);

  /* Timing of the round trip with a compiled operator. */
  QueryPerformanceCounter(&t0);
  for (int i = 0; i < iters; i++) op_run(&relu, inputs6, got);
  QueryPerformanceCounter(&t1);
  double t_round = iters ? (double)(t1.QuadPart - t0.QuadPart) / f.QuadPart / iters : 0;
  printf("timing: D3D12 device + DML device %.3f s; ReluGrad create+compile+init %.1f ms; first round trip %.1f ms; "
         "round trip (upload, dispatch, readback) %.2f ms mean over %d\n",
         t_setup, t_create_relu * 1e3, t_first * 1e3, t_round * 1e3, iters);
  printf("device removed reason: 0x%08lx\n", ID3D12Device_GetDeviceRemovedReason(dev));
  printf("%s\n", bad ? "SMOKE FAILED" : "SMOKE PASSED");
  fflush(stdout);
  return bad;
}
