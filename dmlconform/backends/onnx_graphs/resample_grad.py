"""RESAMPLE_GRAD (v0) as standard ONNX: ResampleGrad1's graph (onnx_graphs/resample_grad1.py), per resampled axis
Transpose -> MatMul(W) -> Transpose back, with W from v0's coordinate rules (the reading a variant names, by default
DirectML's: offsets swapped, NEAREST_NEIGHBOR floor(x + 0.5), LINEAR taps clamped). As there, the weights come from the
reference's taps and the graph checks the summation; tests/backends/test_onnxruntime_backend.py checks the matrices
against ONNX Runtime's own Resize on an identity wherever Resize expresses the rule: `nearest` with nearest_mode
round_prefer_ceil is round half up, on half_pixel and asymmetric coordinates, and `linear`.
"""

from __future__ import annotations

from dmlconform.backends.onnx_graphs.resample_grad1 import build, path_for

__all__ = ["build", "path_for"]
