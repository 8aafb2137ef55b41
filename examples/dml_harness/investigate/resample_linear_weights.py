"""DirectML's RESAMPLE_GRAD1 LINEAR tap weights, read off one output at a time, against the coordinate the
contract writes and the slack the reference allows it (found: results/DECISIONS.md §7, seven full-tier cases).

For every distinct LINEAR axis of the full tier's float32 cases (dX extent, dY extent, scale, both offsets), one
rank-2 probe: axis 0 an identity (scale 1, offsets 0), axis 1 the axis probed, and dY the identity matrix, so row k
of dX holds exactly the weights DirectML gives output k's taps (one term per element: nothing is summed). From the
weight on the upper tap, t, DirectML's coordinate is floor(x) + t; the script compares it with the real value of
x = (o − OPO)/S − IPO (offsets as DirectML names them, `swapped`) in units of u·A, A = (|o| + |OPO|)/|S| + |IPO|:
the reference allows γ_7(u)·A (dmlconform/ops/_resample_coordinates.py), and 0 where every modelled order gives the
same float32 value and the real value is a float32 value.

It runs the DirectML harness this package carries (the `directml` backend: under Wine off Windows, on the Vulkan
driver `--adapter` names), as `dmlconform run --backend directml` does:

  python examples/dml_harness/investigate/resample_linear_weights.py                    # lavapipe
  python examples/dml_harness/investigate/resample_linear_weights.py --adapter nvidia   # results/*-h100.txt
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
from probe_device import add_device_arguments, directml_backend

from dmlconform.backends.base import Backend
from dmlconform.case import Case
from dmlconform.dtypes import DataType
from dmlconform.generation.tier_files import ensure_full_tier
from dmlconform.ops import _resample_coordinates as coordinates
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.suite.loader import discover, load_suite

OP = find_operator("RESAMPLE_GRAD1")
F32 = DataType.FLOAT32
U = F32.unit_roundoff


def full_tier_axes() -> list[tuple[int, int, float, float, float]]:
    """Distinct LINEAR axes of the full tier's float32 cases: (dX extent, dY extent, scale, IPO, OPO) as written."""
    axes = set()
    for file, root in discover([ensure_full_tier(print) / "resample_grad1.yaml"]):
        for case in load_suite(file, root)[0]:
            desc = case.description
            if case.expect_invalid or case.dtype is not F32 or desc.params["InterpolationMode"] != "LINEAR":
                continue
            p, dy = desc.params, desc.tensors["InputGradientTensor"].shape
            for a, n_in in enumerate(desc.output.shape):
                axes.add((n_in, dy[a], p["Scales"][a], p["InputPixelOffsets"][a], p["OutputPixelOffsets"][a]))
    return sorted(axes)


def probe_case(n_in: int, n_out: int, scale: float, ipo: float, opo: float, mode: str = "LINEAR",
               rounding: str = "INCREASING") -> Case:
    params = OP.parse_params({"InterpolationMode": mode, "RoundingDirection": rounding,
                              "Scales": [1.0, scale], "InputPixelOffsets": [0.0, ipo],
                              "OutputPixelOffsets": [0.0, opo]}, F32)
    desc = Description(OP, params, {"InputGradientTensor": TensorDesc(F32, (n_out, n_out)),
                                    "OutputGradientTensor": TensorDesc(F32, (n_out, n_in))})
    inputs = {"InputGradientTensor": np.eye(n_out, dtype=np.float32)}
    golden = OP.reference(desc, inputs, "swapped").outputs
    return Case("probe", f"{mode}-{rounding}-{n_in}-{n_out}-{scale}-{ipo}-{opo}", Path("probe"), desc, inputs, golden)


def deviations(rows: np.ndarray, n_in: int, scale: float, ipo: float, opo: float) -> list[tuple[int, float, float]]:
    """(o, DirectML's coordinate − the real one in units of u·A, the reference's allowance in the same units) for each
    output whose two taps land inside the axis (clamped taps merge and hide the coordinate)."""
    # DirectML names the forward's offsets after the gradient's tensors (`swapped`): x = (o − IPO)/S − OPO.
    opo, ipo = ipo, opo
    s, i32, o32 = (Fraction(float(np.float32(v))) for v in (scale, ipo, opo))
    n_out = rows.shape[0]
    allowed = coordinates.uncertainty(n_out, scale, ipo, opo)
    out = []
    for o in range(n_out):
        real = (o - o32) / s - i32
        low = int(np.floor(float(real)))
        if low < 0 or low + 1 > n_in - 1:
            continue
        t = Fraction(float(rows[o, low + 1]))
        a = (abs(o) + abs(o32)) / abs(s) + abs(i32)
        off = low + t - real
        if a == 0:  # x = 0 exactly, with nothing to round
            out.append((o, 0.0 if off == 0 else float("inf"), 0.0))
            continue
        unit = float(U * a)
        out.append((o, float(off) / unit, float(allowed[o]) / unit))
    return out


def nearest_surprises(backend: Backend, axis: tuple[int, int, float, float, float]) -> Counter[str]:
    """NEAREST_NEIGHBOR on the same axis, both rounding directions: at coordinates the reference holds exact and
    whole (where a coordinate one ULP off would change the pick), how often DirectML picks another input."""
    n_in, n_out, scale, ipo, opo = axis
    exact = coordinates.uncertainty(n_out, scale, opo, ipo) == 0  # swapped, as above
    x = coordinates.evaluation_orders(n_out, scale, opo, ipo)[0].astype(np.float64)
    kind = "power-of-two scale" if coordinates.inverts_exactly(scale) else "other scale"
    found: Counter[str] = Counter()
    for rounding in ("DECREASING", "INCREASING"):
        case = probe_case(*axis, mode="NEAREST_NEIGHBOR", rounding=rounding)
        outcome = backend.run(case)
        if not outcome.outputs:
            print(f"{case.id}: {outcome.kind.value} {outcome.message}")
            continue
        picks = outcome.outputs["OutputGradientTensor"].reshape(n_out, n_in).argmax(axis=1)
        golden = case.expected["OutputGradientTensor"].reshape(n_out, n_in).argmax(axis=1)
        # Whole and inside the axis: where the pick is x itself, with a neighbour on either side to stray to.
        at = exact & np.isfinite(x) & (x == np.round(x)) & (x >= 1) & (x <= n_in - 2)
        found[f"{kind}, same"] += int((picks[at] == golden[at]).sum())
        found[f"{kind}, other"] += int((picks[at] != golden[at]).sum())
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_device_arguments(parser)
    args = parser.parse_args()
    axes = full_tier_axes()  # before the harness starts: the full tier is generated on first use
    backend = directml_backend(args)
    beyond = 0
    exact_kept: Counter[str] = Counter()  # coordinates the reference holds exact: how many DirectML gave exactly
    histogram: Counter[int] = Counter()
    worst = []
    nearest: Counter[str] = Counter()
    try:
        for axis in axes:
            case = probe_case(*axis)
            outcome = backend.run(case)
            if not outcome.outputs:
                print(f"{case.id}: {outcome.kind.value} {outcome.message}")
                continue
            nearest += nearest_surprises(backend, axis)
            rows = outcome.outputs["OutputGradientTensor"].reshape(axis[1], axis[0])
            for o, off, allowed in deviations(rows, axis[0], *axis[2:]):
                histogram[int(np.ceil(abs(off)))] += 1
                if allowed == 0:
                    kind = "power-of-two scale" if coordinates.inverts_exactly(axis[2]) else "other scale"
                    exact_kept[f"{kind}, exact"] += off == 0
                    exact_kept[f"{kind}, off"] += off != 0
                if abs(off) > allowed:
                    beyond += 1
                    worst.append((abs(off), axis, o, off, allowed))
    finally:
        backend.close()
    print(f"{len(axes)} axes, {sum(histogram.values())} coordinates; |DirectML − real| in u·A, rounded up: "
          + ", ".join(f"≤{k}: {n}" for k, n in sorted(histogram.items())))
    print("coordinates the reference holds exact, as DirectML gave them: "
          + ", ".join(f"{k}: {n}" for k, n in sorted(exact_kept.items())))
    print("NEAREST_NEIGHBOR at whole coordinates the reference holds exact, DirectML's pick against the reference's: "
          + ", ".join(f"{k}: {n}" for k, n in sorted(nearest.items())))
    print(f"{beyond} coordinates beyond the reference's allowance; the worst:")
    for _, axis, o, off, allowed in sorted(worst, reverse=True)[:25]:
        print(f"  axis (dX {axis[0]}, dY {axis[1]}, S {axis[2]}, IPO {axis[3]}, OPO {axis[4]}) o={o}: "
              f"{off:+.2f} u·A, allowed {allowed:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
