"""Reference kernels against PyTorch CPU autograd, measured in the same run.

    python benchmarks/bench_reference.py [--repeats 9]

Three workloads: MaxPoolingGrad on [8,64,112,112] (3x3, stride 2, pad 1) against torch max_pool2d
forward+backward; MaxPoolingGrad on [4,32,32,64,64] (3x3x3, stride 2, pad 1) against max_pool3d; ResampleGrad1
LINEAR x2 on [8,64,56,56] against interpolate(bilinear) forward+backward. Our time is the reference call
(outputs rounded from float64 sums; the accumulation data for the bound rule is computed later, only at
elements a comparison judges). Ours and the peer alternate, so that load from other processes hits both;
each figure is a median. Both run with their default threads (ours: one per core, `DMLCONFORM_THREADS`;
torch: its own), and again with one thread each. Target: ours/peer <= 1.0 with default threads.
Exit status 1 on a MISS.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from timing import paired_medians

from dmlconform.dtypes import DataType
from dmlconform.ops import MAX_POOLING_GRAD, RESAMPLE_GRAD1
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.ops.parallel import threads

TARGET = 1.0
F32 = DataType.FLOAT32


@dataclass
class Workload:
    name: str
    ours: Callable[[], object]
    peer: Callable[[], object]
    peer_name: str


def describe(op: object, params: dict, **shapes: tuple[int, ...]) -> Description:
    return Description(op, params, {name: TensorDesc(F32, shape) for name, shape in shapes.items()})  # type: ignore[arg-type]


def max_pooling(torch: object, dims: int) -> Workload:
    shape = (8, 64, 112, 112) if dims == 2 else (4, 32, 32, 64, 64)
    rng = np.random.default_rng(dims)
    x = rng.standard_normal(shape, dtype=np.float32)
    dy = rng.standard_normal(shape[:2] + tuple(n // 2 for n in shape[2:]), dtype=np.float32)
    params = {"Strides": (2,) * dims, "WindowSize": (3,) * dims, "StartPadding": (1,) * dims,
              "EndPadding": (1,) * dims, "Dilations": (1,) * dims}
    desc = describe(MAX_POOLING_GRAD, params, InputTensor=x.shape, InputGradientTensor=dy.shape,
                    OutputGradientTensor=x.shape)
    inputs = {"InputTensor": x, "InputGradientTensor": dy}
    xt, dyt = torch.from_numpy(x), torch.from_numpy(dy)  # type: ignore[attr-defined]
    pool = torch.nn.functional.max_pool2d if dims == 2 else torch.nn.functional.max_pool3d  # type: ignore[attr-defined]

    def peer() -> None:
        leaf = xt.clone().requires_grad_()
        pool(leaf, 3, 2, 1).backward(dyt)

    label = "x".join(["3"] * dims)
    return Workload(f"MaxPoolingGrad {list(shape)} {label} s2 p1", lambda: MAX_POOLING_GRAD.reference(desc, inputs),
                    peer, f"torch max_pool{dims}d fwd+bwd")


def resampling(torch: object) -> Workload:
    dy = np.random.default_rng(1).standard_normal((8, 64, 112, 112), dtype=np.float32)
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": (1.0, 1.0, 2.0, 2.0),
              "InputPixelOffsets": (0.5,) * 4, "OutputPixelOffsets": (-0.5,) * 4}
    desc = describe(RESAMPLE_GRAD1, params, InputGradientTensor=dy.shape, OutputGradientTensor=(8, 64, 56, 56))
    dyt = torch.from_numpy(dy)  # type: ignore[attr-defined]

    def peer() -> None:
        leaf = torch.zeros((8, 64, 56, 56), requires_grad=True)  # type: ignore[attr-defined]
        torch.nn.functional.interpolate(leaf, scale_factor=2, mode="bilinear",  # type: ignore[attr-defined]
                                        align_corners=False).backward(dyt)

    return Workload("ResampleGrad1 LINEAR x2 [8,64,56,56]",
                    lambda: RESAMPLE_GRAD1.reference(desc, {"InputGradientTensor": dy}), peer,
                    "torch interpolate fwd+bwd")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    repeats = parser.parse_args().repeats
    try:
        import torch
    except ImportError:
        print("torch is not installed: pip install torch (the peer)", file=sys.stderr)
        return 2
    workloads = [max_pooling(torch, 2), max_pooling(torch, 3), resampling(torch)]
    default_threads = torch.get_num_threads()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; medians of {repeats}; "
          f"threads: ours {threads()}, torch {default_threads}")
    print(f"{'work':44} {'threads':>7} {'ours (s)':>9} {'peer (s)':>9} {'ours/peer':>9}  peer")
    missed = False
    for workload in workloads:
        for single in (False, True):
            if single:
                os.environ["DMLCONFORM_THREADS"] = "1"
                torch.set_num_threads(1)
            ours, peer = paired_medians(workload.ours, workload.peer, repeats)
            os.environ.pop("DMLCONFORM_THREADS", None)
            torch.set_num_threads(default_threads)
            ratio = ours / peer
            verdict = "(one thread each)" if single else ("PASS" if ratio <= TARGET else "MISS")
            missed |= verdict == "MISS"
            print(f"{workload.name:44} {'1' if single else 'default':>7} {ours:9.3f} {peer:9.3f} {ratio:9.2f}  "
                  f"{workload.peer_name} {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
