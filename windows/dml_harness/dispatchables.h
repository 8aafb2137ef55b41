// dispatchables.h - what a case dispatches, one kind per path (after DxDispatch's Dispatchable per kind): the
// operator compiled alone (IDMLDevice::CreateOperator + CompileOperator: the operator and in-place paths) or as
// nodes of a compiled graph (IDMLDevice1::CompileGraph: the graph path). Either is an IDMLCompiledOperator,
// initialized and dispatched alike (dispatch.cpp, for executor.cpp and bound_run.cpp).
#pragma once

#include "bound_case.h"
#include "descriptions.h"
#include "operators.h"
#include "replies.h"

struct Harness;

// The operator of `d` compiled. Reply ok, or refused (E_INVALIDARG from either call, with the debug layer's text), or
// the failure of another HRESULT.
Reply compile_operator(Harness& h, OpDesc& d, dmlh::Com<IDMLCompiledOperator>& compiled);

// The graph path's graph compiled: the operator of `a` (the case's layouts) between the graph's inputs and its
// first output, and a packed copy of it fed through ELEMENT_WISE_IDENTITY nodes from the same inputs and writing
// through one to the second output (the edges image, the output's layout). Graph inputs are the operator's inputs
// in struct order; outputs: {the output, its edges copy}. Unsupported when ELEMENT_WISE_IDENTITY does not take a
// tensor's data type at the device's feature level.
Reply compile_graph(Harness& h, const OpInfo& info, const dmlh::JValue* params, OpDesc& a, BoundCase& c,
                    dmlh::Com<IDMLCompiledOperator>& compiled);
