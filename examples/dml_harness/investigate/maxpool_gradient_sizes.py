"""Which InputGradientTensor sizes does DirectML's MAX_POOLING_GRAD accept?

For a few pooling set-ups it sends the same description with gradient widths from 1 to the pooled
size + 2 and prints DirectML's answer for each (ok / refused), next to the pooled size
(in + start + end - ((window - 1) * dilation + 1)) // stride + 1.

It speaks the frame protocol (docs/native-harness.md) to the DirectML harness this package carries, started as
`dmlconform run --backend directml` starts it (under Wine off Windows: the package's prefix and its X display, the
Vulkan driver `--adapter` names), or to a harness command of one's own (`--harness "CMD ARGS"`):

  python examples/dml_harness/investigate/maxpool_gradient_sizes.py [--adapter lavapipe|nvidia|N]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

import numpy as np
from probe_device import add_device_arguments

from dmlconform import harness_protocol as protocol
from dmlconform.directml.start import Device, StartError, harness_start
from dmlconform.directml.wine import WineUnavailable

SETUPS = [  # (input width, window, stride, dilation, start pad, end pad)
    (4, 2, 1, 1, 0, 0), (5, 2, 1, 2, 0, 0), (7, 3, 2, 1, 1, 1), (2, 1, 2, 1, 0, 0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_device_arguments(parser)
    parser.add_argument("--harness", metavar="'CMD ARGS'", help="a harness command of one's own instead")
    args = parser.parse_args()
    probe(*harness(args))


def harness(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The harness's argv and environment."""
    if args.harness:
        return shlex.split(args.harness), dict(os.environ)
    try:
        start = harness_start(args.directml, args.directml_version, Device.parse(args.adapter),
                              lambda line: print(line, file=sys.stderr))
    except (StartError, WineUnavailable) as exc:  # one line naming what is missing and its fix
        raise SystemExit(f"the DirectML harness cannot start: {exc}") from None
    # Under Wine: the prefix, its X display, the Vulkan driver (as `dmlconform run --backend directml` starts it).
    return list(start.launch.argv), {**os.environ, **start.launch.environment}


def probe(argv: list[str], environment: dict[str, str]) -> None:
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=environment)
    assert process.stdin is not None and process.stdout is not None

    def exchange(header: dict, payload: bytes = b"") -> dict:
        process.stdin.write(protocol.encode_frame(header, payload))
        process.stdin.flush()
        return protocol.read_frame(process.stdout.read).header

    exchange({"type": "hello", "protocol": 1})
    for width, window, stride, dilation, start, end in SETUPS:
        pooled = (width + start + end - ((window - 1) * dilation + 1)) // stride + 1
        answers = []
        for w in range(1, pooled + 3):
            x = np.arange(width, dtype=np.float32).reshape(1, 1, 1, width)
            dy = np.ones((1, 1, 1, w), np.float32)
            entries, payload = protocol.pack_tensors([("InputTensor", x), ("InputGradientTensor", dy)])
            reply = exchange({"type": "run", "id": f"probe/{w}", "op": "MAX_POOLING_GRAD",
                              "params": {"DimensionCount": 2, "Strides": [1, stride], "WindowSize": [1, window],
                                         "StartPadding": [0, start], "EndPadding": [0, end],
                                         "Dilations": [1, dilation]},
                              "inputs": entries,
                              "outputs": [{"name": "OutputGradientTensor", "DataType": 1, "Sizes": [1, 1, 1, width]}]},
                             payload)
            answers.append(f"{w}:{reply['status']}")
        print(f"width {width}, window {window}, stride {stride}, dilation {dilation}, padding {start}+{end}: "
              f"pooled {pooled}; gradient width " + " ".join(answers))
    process.stdin.close()
    process.wait(timeout=60)


if __name__ == "__main__":
    main()
