// bound_run.h - a case with buffer images on the device: one buffer per image filled with exactly the image's bytes,
// each tensor bound at its BindingOffset with its TotalTensorSizeInBytes (an in-place output over its input's buffer,
// the graph's edges output over its image), and every buffer read back whole; its dispatchable (dispatchables.h)
// initialized and dispatched over them by dispatch.h's run.
#pragma once

#include "bound_case.h"
#include "executor.h"

// Reply ok carries every image as read back after the dispatch (Reply::images, in c.images' order, and their
// bytes in Reply::data).
Reply execute_bound(Harness& h, const OpInfo& info, IDMLCompiledOperator* compiled, BoundCase& c);
