"""A small suite for the execution-path tests (contract §9): a ReluGrad case, a ClipGrad1 case, and a ClipGrad1 case
whose InputTensor is strided."""

from __future__ import annotations

from pathlib import Path

SUITE = """\
format: dmlconform/v1
suite: paths
cases:
  - id: relu
    op: ACTIVATION_RELU_GRAD
    inputs:
      InputTensor: {dtype: FLOAT32, shape: [4], data: [-1, 0, 1, 2]}
      InputGradientTensor: {dtype: FLOAT32, shape: [4], data: [10, 20, 30, 40]}
    outputs:
      OutputGradientTensor: {dtype: FLOAT32, shape: [4], data: [0, 0, 30, 40]}
  - id: clip
    op: ELEMENT_WISE_CLIP_GRAD1
    params: {Min: -1.0, Max: 2.0}
    inputs:
      InputTensor: {dtype: FLOAT32, shape: [6], data: [-2, -1, -0.5, 1.5, 2, 3]}
      InputGradientTensor: {dtype: FLOAT32, shape: [6], data: [10, 20, 30, 40, 50, 60]}
    outputs:
      OutputGradientTensor: {dtype: FLOAT32, shape: [6], data: [0, 0, 30, 40, 0, 0]}
  - id: clip-strided
    op: ELEMENT_WISE_CLIP_GRAD1
    params: {Min: -1.0, Max: 2.0}
    inputs:
      InputTensor: {dtype: FLOAT32, shape: [3], data: [-2, 0.5, 3], strides: [2]}
      InputGradientTensor: {dtype: FLOAT32, shape: [3], data: [10, 20, 30]}
    outputs:
      OutputGradientTensor: {dtype: FLOAT32, shape: [3], data: [0, 20, 0]}
"""


def write_suite(folder: Path, text: str = SUITE) -> Path:
    path = folder / "paths.yaml"
    path.write_text(text)
    return path
