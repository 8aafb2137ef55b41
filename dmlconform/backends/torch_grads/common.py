"""What the PyTorch realisations share: moving tensors between NumPy and a torch device, and integer types.

Every tensor is computed in its own data type on the chosen device: FLOAT16 stays float16 on CUDA (no upcast),
so what comes back is what the device's kernels produce. PyTorch has the unsigned 16-, 32- and 64-bit types
but almost no kernels for them (no comparison, no `where`, no `index_put_`), so:
* data movement reinterprets them as the signed type of the same width (bits unchanged), and
* comparisons widen UINT16 to INT32 and UINT32 to INT64 (exact), and map UINT64 onto INT64 by flipping the
  sign bit, which keeps the order (0 -> -2^63, 2^64 - 1 -> 2^63 - 1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from dmlconform.dtypes import DataType

#: Same-width signed NumPy type for each unsigned type PyTorch cannot compute on.
SAME_WIDTH_SIGNED = {np.dtype(np.uint16): np.dtype(np.int16), np.dtype(np.uint32): np.dtype(np.int32),
                     np.dtype(np.uint64): np.dtype(np.int64)}

#: Where integer comparisons happen: a signed type that holds every value of the data type in order.
COMPARE_IN = {DataType.INT8: torch.int8, DataType.INT16: torch.int16, DataType.INT32: torch.int32,
              DataType.INT64: torch.int64, DataType.UINT8: torch.uint8, DataType.UINT16: torch.int32,
              DataType.UINT32: torch.int64, DataType.UINT64: torch.int64}

UINT64_SIGN = -(2**63)


class TorchUnsupported(Exception):
    """The case is valid, but PyTorch cannot express it on this device; the message says why."""


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """The array's bits on the device; unsigned 16/32/64-bit data as the signed type of the same width."""
    array = np.ascontiguousarray(array)
    signed = SAME_WIDTH_SIGNED.get(array.dtype)
    if signed is not None:
        array = array.view(signed)
    return torch.from_numpy(array).to(device)


def to_numpy(tensor: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    """Back to NumPy in the case's data type; reinterprets the same-width signed type of an unsigned one."""
    array = tensor.detach().cpu().contiguous().numpy()
    return array.view(dtype) if array.dtype != dtype else array


def ordered_integers(tensor: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Integer data (as `to_device` holds it) in a signed type in which `<`, `<=` keep the data type's order."""
    if dtype is DataType.UINT64:
        return tensor ^ UINT64_SIGN
    if dtype in (DataType.UINT16, DataType.UINT32):
        bits = tensor.to(COMPARE_IN[dtype])
        return bits & (2 ** (8 * tensor.element_size()) - 1)  # the signed view's negative values are the top half
    return tensor


def ordered_scalar(value: int, dtype: DataType, device: torch.device) -> torch.Tensor:
    """A bound in the same ordered type as `ordered_integers`."""
    if dtype is DataType.UINT64:
        return torch.tensor(int(value) + UINT64_SIGN, dtype=torch.int64, device=device)
    return torch.tensor(int(value), dtype=COMPARE_IN[dtype], device=device)



def gradient_of(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """PyTorch autograd: the gradient of `<forward(x), dy>` with respect to x."""
    leaf = x.detach().requires_grad_()
    forward(leaf).backward(dy)
    assert leaf.grad is not None
    return leaf.grad


def pass_where(keep: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """dY where `keep`, else 0: a select (never a multiply), on integer data held as `to_device` holds it."""
    return torch.where(keep, dy, torch.zeros((), dtype=dy.dtype, device=dy.device))
