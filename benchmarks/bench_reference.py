"""Reference and comparator speed, as ratios against peers measured in the same run.

    python benchmarks/bench_reference.py [--repeats N]

Prints the median time of the NumPy reference for the issue's two large cases (MaxPoolingGrad on
[8,64,112,112], 3x3 stride 2 pad 1; ResampleGrad1 linear x2 on [8,64,56,56]) next to PyTorch's
forward+backward for the same work, and the comparator against numpy.testing.assert_array_max_ulp.
Machines here are noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.ops import MAX_POOLING_GRAD, RESAMPLE_GRAD1
from dmlconform.ops.base import Description, TensorDesc


def median_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first-touch page faults are not what we measure
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def max_pooling(repeats: int) -> tuple[float, float | None]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64, 112, 112)).astype(np.float32)
    dy = rng.standard_normal((8, 64, 56, 56)).astype(np.float32)
    params = {"Strides": (2, 2), "WindowSize": (3, 3), "StartPadding": (1, 1), "EndPadding": (1, 1),
              "Dilations": (1, 1)}
    f32 = DataType.FLOAT32
    desc = Description(MAX_POOLING_GRAD, params, {"InputTensor": TensorDesc(f32, x.shape),
                                                  "InputGradientTensor": TensorDesc(f32, dy.shape),
                                                  "OutputGradientTensor": TensorDesc(f32, x.shape)})
    ours = median_time(lambda: MAX_POOLING_GRAD.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}),
                       repeats)
    try:
        import torch
    except ImportError:
        return ours, None
    xt, dyt = torch.from_numpy(x), torch.from_numpy(dy)

    def peer() -> None:
        leaf = xt.clone().requires_grad_()
        torch.nn.functional.max_pool2d(leaf, 3, 2, 1).backward(dyt)

    return ours, median_time(peer, repeats)


def resampling(repeats: int) -> tuple[float, float | None]:
    dy = np.random.default_rng(1).standard_normal((8, 64, 112, 112)).astype(np.float32)
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": (1.0, 1.0, 2.0, 2.0),
              "InputPixelOffsets": (0.5,) * 4, "OutputPixelOffsets": (-0.5,) * 4}
    f32 = DataType.FLOAT32
    desc = Description(RESAMPLE_GRAD1, params, {"InputGradientTensor": TensorDesc(f32, dy.shape),
                                                "OutputGradientTensor": TensorDesc(f32, (8, 64, 56, 56))})
    ours = median_time(lambda: RESAMPLE_GRAD1.reference(desc, {"InputGradientTensor": dy}), repeats)
    try:
        import torch
    except ImportError:
        return ours, None
    dyt = torch.from_numpy(dy)

    def peer() -> None:
        leaf = torch.zeros((8, 64, 56, 56), requires_grad=True)
        torch.nn.functional.interpolate(leaf, scale_factor=2, mode="bilinear", align_corners=False).backward(dyt)

    return ours, median_time(peer, repeats)


def comparator(repeats: int) -> tuple[float, float]:
    rng = np.random.default_rng(2)
    a = rng.standard_normal(1 << 24).astype(np.float32)
    b = a.copy()
    nudge = rng.random(a.size) < 0.1
    b[nudge] = np.nextafter(a[nudge], np.float32(np.inf))
    rule = Tolerance.parse("ulp:1")
    ours = median_time(lambda: judge(a, b, DataType.FLOAT32, rule), repeats)
    peer = median_time(lambda: np.testing.assert_array_max_ulp(a, b, maxulp=1), repeats)
    return ours, peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    rows = [("MaxPoolingGrad [8,64,112,112] 3x3 s2 p1", *max_pooling(repeats), "torch max_pool2d fwd+bwd"),
            ("ResampleGrad1 linear x2 [8,64,56,56]", *resampling(repeats), "torch interpolate fwd+bwd"),
            ("comparator ulp:1, 16M fp32, 10% off by 1 ULP", *comparator(repeats), "assert_array_max_ulp")]
    print(f"{'work':48} {'ours (s)':>9} {'peer (s)':>9} {'ours/peer':>9}  peer")
    for name, ours, peer, peer_name in rows:
        ratio = f"{ours / peer:9.2f}" if peer else "      n/a"
        peer_text = f"{peer:9.3f}" if peer else "      n/a"
        print(f"{name:48} {ours:9.3f} {peer_text} {ratio}  {peer_name}")


if __name__ == "__main__":
    main()
