"""Which coordinate arithmetic does DirectML's RESAMPLE_GRAD1 LINEAR follow? (float32 cases)

Runs every float32 LINEAR case of the bundled resample_grad1 suites through the DirectML harness and
compares DirectML's output with the adjoint computed from several ways of evaluating the documented
source coordinate x = (o - OutputPixelOffset) / Scale - InputPixelOffset in float32:

  divide      the documented order, one division (dmlconform's reference)
  reciprocal  (o - OPO) * (1/Scale) - IPO, with 1/Scale rounded to float32 first
  fma-recip   fma(o - OPO, 1/Scale, -IPO): one rounding after the multiply-add
  exact       in float64 (no float32 rounding of x at all)

For each it prints the largest ULP distance to DirectML's output per case (weights and sums in
float64, rounded once to float32, as the reference does; the offsets convention is the one the
case's expected output or matching candidate uses).

It runs the DirectML harness this package carries (the `directml` backend: under Wine off Windows, on the Vulkan
driver `--adapter` names), as `dmlconform run --backend directml` does:

  python examples/dml_harness/investigate/resample_linear.py [--adapter lavapipe|nvidia|N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from probe_device import add_device_arguments, directml_backend

import dmlconform.ops.resample_grad1 as rg
from dmlconform.suite.loader import discover, load_suite

ROOT = Path(__file__).resolve().parents[3]


def coordinates(kind: str):
    f32 = np.float32

    def compute(n_out: int, scale: float, ipo: float, opo: float) -> np.ndarray:
        o = np.arange(n_out, dtype=np.float32)
        if kind == "divide":
            return ((o - f32(opo)) / f32(scale) - f32(ipo)).astype(np.float32)
        recip = f32(1) / f32(scale)
        if kind == "reciprocal":
            return ((o - f32(opo)) * recip - f32(ipo)).astype(np.float32)
        if kind == "fma-recip":  # exact product and sum in float64, one rounding to float32
            return ((o - f32(opo)).astype(np.float64) * np.float64(recip) - np.float64(f32(ipo))).astype(np.float32)
        if kind == "exact":
            return (np.arange(n_out) - np.float64(f32(opo))) / np.float64(f32(scale)) - np.float64(f32(ipo))
        raise ValueError(kind)

    return compute


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return int(np.abs(ia - ib).max()) if a.size else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_device_arguments(parser)
    args = parser.parse_args()
    cases = []
    for file, root in discover([ROOT / "test_vectors" / "resample_grad1"]):
        cases += [c for c in load_suite(file, root)[0]
                  if not c.expect_invalid and c.dtype.name == "FLOAT32"
                  and c.description.params["InterpolationMode"] == "LINEAR"]
    backend = directml_backend(args)
    kinds = ("divide", "reciprocal", "fma-recip", "exact")
    print(f"{'case':62} " + " ".join(f"{k:>10}" for k in kinds))
    worst = dict.fromkeys(kinds, 0)
    original = rg.source_coordinates
    try:
        for case in cases:
            outcome = backend.run(case)
            dml = outcome.outputs.get("OutputGradientTensor")
            if dml is None:
                print(f"{case.full_id:62} {outcome.kind.value}: {outcome.message}")
                continue
            variant = "swapped" if case.candidates and "swapped" in case.candidates else None
            row = []
            for kind in kinds:
                rg.source_coordinates = coordinates(kind)
                ref = rg.RESAMPLE_GRAD1.reference(case.description, case.inputs, variant)
                d = ulps(ref.outputs["OutputGradientTensor"], dml)
                worst[kind] = max(worst[kind], d)
                row.append(f"{d:>10}")
            rg.source_coordinates = original
            print(f"{case.full_id:62} " + " ".join(row))
    finally:
        rg.source_coordinates = original
        backend.close()
    print(f"{'worst':62} " + " ".join(f"{worst[k]:>10}" for k in kinds))


if __name__ == "__main__":
    main()
