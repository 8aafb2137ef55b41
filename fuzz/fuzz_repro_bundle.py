"""Repro bundles (`dmlconform repro --out DIR`): what a driver team receives and runs with `dmlconform run
DIR/suite.yaml`, its suite and .npy tensors read as that command reads them, the case run on the reference.

Input: byte 0 picks one file of a bundle written for a bundled case (suite.yaml, or one of its inputs/, expected/
or actual/ .npy files), the rest replaces that file. Contract: a one-line SuiteError, or a case that runs on the
reference without an ERROR; memory within the bound of the tensors the bundle declares.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import SuiteLimits, Tally
from dmlconform.suite.loader import load_suite
from dmlconform.triage.bundle import SUITE, write_bundle
from dmlconform.triage.inspection import inspect_case
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch

CASE_ID = "resample_grad1.edge/denormal-sum-f32"
LIMITS = SuiteLimits(files=10, cases=10, bytes=16 << 20)
_bundle: tuple[Path, list[Path], dict[Path, bytes]] | None = None


def bundle() -> tuple[Path, list[Path], dict[Path, bytes]]:
    """The bundle's folder, its files a fuzzed input may replace, and their original contents."""
    global _bundle
    if _bundle is None:
        from dmlconform.suite.loader import load_paths

        case = next(c for c in load_paths([bundled_suites() / "resample_grad1"]) if c.full_id == CASE_ID)
        actual = dict(NumpyBackend().run(case).outputs)
        folder = scratch() / "bundle"
        write_bundle(folder, case, actual, inspect_case(case, actual), ["--backend", "numpy"], None, None, "fuzz",
                     HIGHEST)
        files = [folder / SUITE, *sorted(folder.rglob("*.npy"))]
        _bundle = (folder, files, {path: path.read_bytes() for path in files})
    return _bundle


def one_input(data: bytes) -> None:
    if not data:
        return
    folder, files, originals = bundle()
    target = files[data[0] % len(files)]
    target.write_bytes(data[1:])
    tally = Tally(LIMITS)
    try:
        with memory_bound(len(data)) as declared:
            try:
                cases, _ = load_suite(folder / SUITE, folder, None, LIMITS, tally)
            except SuiteError as exc:
                check_refusal(exc)
                cases = []
            finally:
                declared.bytes = tally.tensor_bytes
            for case in cases:
                if max(math.prod(d.shape) for d in case.description.tensors.values()) > 1 << 14:
                    continue
                result = judge_outcome(case, NumpyBackend().run(case), HIGHEST)
                case.forget_references()
                if result.status is Status.ERROR:
                    raise ContractBroken(f"the bundle's case came to ERROR on the reference: {result.message}")
    finally:
        target.write_bytes(originals[target])


def seeds() -> Iterator[bytes]:
    _, files, originals = bundle()
    for number, path in enumerate(files):
        yield bytes([number]) + originals[path]
