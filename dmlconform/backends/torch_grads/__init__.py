"""Each DML gradient operator realised with PyTorch, independently of the NumPy reference in `dmlconform.ops`.

One module per operator; `common` holds what they share. Importing this package imports torch; the `torch`
backend imports it lazily. Description checks are not here: the backend refuses invalid descriptions with
the operator's own rules before anything reaches these modules (refusals are not the numeric oracle).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from dmlconform.backends.torch_grads import (
    average_pooling_grad,
    clip_grad,
    clip_grad1,
    max_pooling_grad,
    relu_grad,
    resample_grad,
    resample_grad1,
    slice_grad,
)
from dmlconform.backends.torch_grads.common import TorchUnsupported, to_device, to_numpy
from dmlconform.ops.base import Description

__all__ = ["REALISATIONS", "TorchUnsupported", "realise"]

Realisation = Callable[[Description, dict[str, torch.Tensor]], torch.Tensor]

REALISATIONS: dict[str, Realisation] = {
    "ACTIVATION_RELU_GRAD": relu_grad.realise,
    "ELEMENT_WISE_CLIP_GRAD1": clip_grad1.realise,
    "ELEMENT_WISE_CLIP_GRAD": clip_grad.realise,
    "SLICE_GRAD": slice_grad.realise,
    "MAX_POOLING_GRAD": max_pooling_grad.realise,
}


def realise(desc: Description, inputs: dict[str, np.ndarray], device: torch.device, variant: str | None = None
            ) -> np.ndarray:
    """The operator's output for these inputs, computed on `device` in the data type; TorchUnsupported if the
    case cannot be expressed."""
    on_device = {name: to_device(array, device) for name, array in inputs.items()}
    name = desc.op.name
    # A variant another operator names (ResampleGrad v0's `half-up` for ResampleGrad1, say) is its default, as on the
    # numpy backend.
    own = variant if variant in desc.op.variants else None
    if name == "RESAMPLE_GRAD1":
        result = resample_grad1.realise(desc, on_device, own)
    elif name == "RESAMPLE_GRAD":
        result = resample_grad.realise(desc, on_device, own)
    elif name == "AVERAGE_POOLING_GRAD":
        result = average_pooling_grad.realise(desc, on_device, own)
    elif name in REALISATIONS:
        result = REALISATIONS[name](desc, on_device)
    else:
        raise TorchUnsupported(f"no PyTorch realisation of {name}")
    return to_numpy(result, desc.output.dtype.numpy)
