"""`generate:` specs: a suite tensor's deterministic generator, for every data type and small shapes.

Input: byte 0 picks the data type, byte 1 the rank (0-4), the next rank bytes the sizes (0-16 each), and the
rest is the YAML text of the spec (`{dist: normal, seed: 3, mean: 2}`). Contract: a one-line refusal, or an
array of exactly the declared type and shape, the same bits when generated again; memory within the bound of
the declared tensor whatever the spec says.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import yaml

from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.suite.tensors import Archives, TensorError, read_tensor
from dmlconform.suite.yaml_events import load_yaml
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch

TYPES = list(DataType)


def split(data: bytes) -> tuple[TensorDesc, bytes] | None:
    if len(data) < 2 or len(data) < 2 + data[1] % 5:
        return None
    rank = data[1] % 5
    shape = tuple(size % 17 for size in data[2:2 + rank])
    return TensorDesc(TYPES[data[0] % len(TYPES)], shape), data[2 + rank:]


def one_input(data: bytes) -> None:
    parts = split(data)
    if parts is None:
        return
    desc, text = parts
    try:
        spec = load_yaml(text.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, ValueError):
        return  # not a spec the suite loader would get this far with (tests of the YAML reader are elsewhere)
    folder = scratch()
    made = []
    with memory_bound(len(data)) as declared:
        declared.bytes = math.prod(desc.shape) * desc.dtype.numpy.itemsize
        for _ in range(2):
            try:
                made.append(read_tensor({"generate": spec}, desc, folder / "suite.yaml", Archives(folder)))
            except TensorError as exc:
                check_refusal(exc)
                made.append(None)
    first, second = made
    if (first is None) != (second is None):
        raise ContractBroken("the same spec was refused once and accepted once")
    if first is None or second is None:
        return
    if first.dtype != desc.dtype.numpy or first.shape != desc.shape:
        raise ContractBroken(f"generated {first.dtype}{first.shape} for {desc}")
    if first.tobytes() != second.tobytes():
        raise ContractBroken("the same spec generated different bits twice")


def seeds() -> Iterator[bytes]:
    specs = ["{dist: uniform, seed: 1}", "{dist: normal, seed: 7, mean: 2, std: 30}",
             "{dist: ints, seed: 3, low: -5, high: 100}", "{dist: ties, seed: 9, values: [1, 2, -0.0, nan]}",
             "{dist: iota, start: -3, step: 0.5}", "{dist: constant, value: '0x7e01'}",
             "{dist: uniform, seed: 18446744073709551616, low: -1e308, high: 1e308}",
             "{dist: ints, seed: 5, low: -9223372036854775808, high: 9223372036854775807}"]
    for number, spec in enumerate(specs):
        for dtype in range(0, len(TYPES), 3):
            yield bytes([(dtype + number) % len(TYPES), 2, 3, 5]) + spec.encode()
    yield bytes([0, 0]) + b"{dist: normal, seed: 0}"
    yield bytes([1, 4, 16, 16, 16, 16]) + b"{dist: normal, seed: 2}"
