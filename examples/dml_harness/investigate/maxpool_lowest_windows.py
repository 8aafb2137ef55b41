"""Where DirectML's MaxPoolingGrad routes the gradient of a window that holds only −∞, −FLT_MAX and NaN.

Found in the full tier (results/DECISIONS.md §7). Every window of length 2 or 3 over {−∞, −FLT_MAX, −1, NaN} that holds
a −∞ or a NaN, along W and along H, with dilation 1 and 2, is pooled on its own (windows do not overlap; the filler
between them is never read), with dY = 1, 2, 3, … so that each window's pick can be read off the output. The script
prints the windows where DirectML's pick differs from the reference's, and checks the model: a running maximum that
starts at −FLT_MAX on the window's first tap and moves on a strict `>` (so −∞, −FLT_MAX and NaN never move it).

It runs the DirectML harness this package carries (the `directml` backend: under Wine off Windows, on the Vulkan
driver `--adapter` names), as `dmlconform run --backend directml` does:

  python examples/dml_harness/investigate/maxpool_lowest_windows.py                     # lavapipe
  python examples/dml_harness/investigate/maxpool_lowest_windows.py --adapter nvidia    # results/*-h100.txt
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
from probe_device import add_device_arguments, directml_backend

from dmlconform.backends.base import Backend
from dmlconform.case import Case
from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc

OP = find_operator("MAX_POOLING_GRAD")
F32 = DataType.FLOAT32
LOWEST = np.float32(-3.4028235e38)
VALUES = {"-inf": np.float32(-np.inf), "-max": LOWEST, "-1": np.float32(-1), "nan": np.float32(np.nan)}
FILLER = np.float32(5)


def model_pick(values: list[np.float32]) -> int:
    best, pick = LOWEST, 0
    for tap, value in enumerate(values):
        if value > best:
            best, pick = value, tap
    return pick


def probe(backend: Backend, axis: str, taps: int, dilation: int) -> tuple[int, int, int]:
    """(windows, where DirectML differs from the reference, where it differs from the model)."""
    windows = [w for w in itertools.product(VALUES, repeat=taps) if "-inf" in w or "nan" in w]
    extent = (taps - 1) * dilation + 1
    length = len(windows) * extent
    shape = (1, 1, 1, length) if axis == "W" else (1, 1, length, 1)
    along = (0, 1) if axis == "W" else (1, 0)  # per spatial axis (H, W): 1 where the window runs
    x = np.full(length, FILLER, np.float32)
    for w, window in enumerate(windows):
        for t, name in enumerate(window):
            x[w * extent + t * dilation] = VALUES[name]
    params = {"DimensionCount": 2, "Strides": [(1, extent)[a] for a in along],
              "WindowSize": [(1, taps)[a] for a in along], "StartPadding": [0, 0], "EndPadding": [0, 0],
              "Dilations": [(1, dilation)[a] for a in along]}
    dy_shape = (1, 1, 1, len(windows)) if axis == "W" else (1, 1, len(windows), 1)
    desc = Description(OP, OP.parse_params(params, F32), {"InputTensor": TensorDesc(F32, shape),
                                                          "InputGradientTensor": TensorDesc(F32, dy_shape),
                                                          "OutputGradientTensor": TensorDesc(F32, shape)})
    inputs = {"InputTensor": x.reshape(shape), "InputGradientTensor": np.arange(1, len(windows) + 1,
                                                                               dtype=np.float32).reshape(dy_shape)}
    golden = OP.reference(desc, inputs).outputs
    case = Case("probe", f"lowest-{axis}-{taps}-{dilation}", Path("probe"), desc, inputs, golden)
    outcome = backend.run(case)
    if not outcome.outputs:
        raise SystemExit(f"{case.full_id}: {outcome.kind.value} {outcome.message}")
    ours, theirs = golden["OutputGradientTensor"].reshape(-1), outcome.outputs["OutputGradientTensor"].reshape(-1)
    off_reference = off_model = 0
    for w, window in enumerate(windows):
        places = [w * extent + t * dilation for t in range(taps)]
        reference = next(t for t, p in enumerate(places) if ours[p] == w + 1)
        directml = next(t for t, p in enumerate(places) if theirs[p] == w + 1)
        model = model_pick([VALUES[name] for name in window])
        if directml != reference:
            off_reference += 1
            print(f"{axis} taps={taps} dilation={dilation} {window}: reference tap {reference}, DirectML tap "
                  f"{directml}, model tap {model}")
        off_model += directml != model
    return len(windows), off_reference, off_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_device_arguments(parser)
    backend = directml_backend(parser.parse_args())
    totals = [0, 0, 0]
    try:
        for axis in ("W", "H"):
            for taps, dilation in ((2, 1), (3, 1), (2, 2), (3, 2)):
                totals = [a + b for a, b in zip(totals, probe(backend, axis, taps, dilation), strict=True)]
    finally:
        backend.close()
    print(f"{totals[0]} windows: DirectML differs from the reference in {totals[1]}, from the model in {totals[2]}")
    return 0 if totals[2] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
