"""Graph builders: each DML gradient operator realised as a graph of standard ONNX operators.

One module per operator; `common` holds what they share. `build_graph` picks the builder by the
description's operator and raises GraphUnsupported where the realisation cannot express a valid case.
Importing this package imports `onnx` (not onnxruntime); the backend imports it lazily.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dmlconform.backends.onnx_graphs import clip_grad1, max_pooling_grad, relu_grad, resample_grad1, slice_grad
from dmlconform.backends.onnx_graphs.common import IR_VERSION, OPSET, Graph, GraphUnsupported
from dmlconform.ops.base import Description

BUILDERS: dict[str, Callable[[Description], Graph]] = {
    "ACTIVATION_RELU_GRAD": relu_grad.build,
    "ELEMENT_WISE_CLIP_GRAD1": clip_grad1.build,
    "SLICE_GRAD": slice_grad.build,
    "MAX_POOLING_GRAD": max_pooling_grad.build,
}

#: Operators whose graph depends on a reading of undocumented behaviour (a reference variant) and on the data
#: (a path, chosen per case by DATA_PATHS).
VARIANT_BUILDERS: dict[str, Callable[[Description, str | None, str], Graph]] = {
    "RESAMPLE_GRAD1": resample_grad1.build,
}
DATA_PATHS: dict[str, Callable[[dict[str, np.ndarray]], str]] = {
    "RESAMPLE_GRAD1": resample_grad1.path_for,
}

IMPLEMENTED = frozenset(BUILDERS) | frozenset(VARIANT_BUILDERS)

__all__ = ["IMPLEMENTED", "IR_VERSION", "OPSET", "Graph", "GraphUnsupported", "build_graph", "data_path"]


def data_path(desc: Description, inputs: dict[str, np.ndarray]) -> str:
    """Which realisation the case's data needs ('' where the operator has one only); part of the cache key."""
    chooser = DATA_PATHS.get(desc.op.name)
    return chooser(inputs) if chooser is not None else ""


def build_graph(desc: Description, variant: str | None = None, path: str = "") -> Graph:
    name = desc.op.name
    if name in VARIANT_BUILDERS:
        return VARIANT_BUILDERS[name](desc, variant if variant in desc.op.variants else None, path or "dense")
    if name not in BUILDERS:
        raise GraphUnsupported(f"no ONNX graph for {name}")
    return BUILDERS[name](desc)
