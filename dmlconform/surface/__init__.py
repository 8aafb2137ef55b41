"""The API surface (contract §9): how a case's tensors lie in memory and how it reaches DirectML.

Plain data, shared by the suite loader, the protocol, the backends and the judge:

* `layout`: a tensor's `strides`, `total_bytes` and `offset` (DML_BUFFER_TENSOR_DESC and its binding), DirectML's
  rules for them, and where each logical element's bytes lie;
* `buffers`: the bytes each tensor's buffer holds before a dispatch (elements where they lie, canaries everywhere
  else) and what came back: the logical tensor, and the first byte outside the elements that changed;
* `paths`: `operator`, `graph` and `in-place`, which cases each applies to, and a case as run on a path.
"""

from dmlconform.surface.layout import MINIMUM_ALIGNMENT, TensorLayout
from dmlconform.surface.paths import ExecutionPath

__all__ = ["MINIMUM_ALIGNMENT", "ExecutionPath", "TensorLayout"]
