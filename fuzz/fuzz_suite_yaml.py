"""Suite files: YAML text through `load_suite` (the parser, tensor sources, description rules), then every case it
loads run on the reference and judged, as `dmlconform run` would.

Contract: a SuiteError of one line, or cases that run without an ERROR; memory within the bound of the tensors
the file declares (its tally), whether it loads or not. The file lies in a copy of the smoke tier, so that its
`file:` references to data/*.npz resolve as in the seeds.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import yaml

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import SuiteLimits, Tally
from dmlconform.suite.loader import load_suite
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch

#: Small limits, so that an input cannot declare more than the fuzzer's memory allows.
LIMITS = SuiteLimits(files=10, cases=200, bytes=16 << 20)
#: Cases this large are loaded but not run: the reference's time grows with them, not its robustness.
MAX_RUN_ELEMENTS = 1 << 14
SEED_CASES_PER_FILE = 40
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
FAST_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_tree: Path | None = None


def tree() -> Path:
    global _tree
    if _tree is None:
        _tree = scratch() / "suite_tree"
        shutil.copytree(bundled_suites() / "smoke", _tree)
    return _tree


def one_input(data: bytes) -> None:
    file = tree() / "fuzzed.yaml"
    file.write_bytes(data)
    tally = Tally(LIMITS)
    with memory_bound(len(data)) as declared:
        try:
            cases, _ = load_suite(file, tree(), None, LIMITS, tally)
        except SuiteError as exc:
            check_refusal(exc)
            cases = []
        finally:
            declared.bytes = tally.tensor_bytes
        backend = NumpyBackend()
        for case in cases:
            if max(math.prod(desc.shape) for desc in case.description.tensors.values()) > MAX_RUN_ELEMENTS:
                continue
            result = judge_outcome(case, backend.run(case), HIGHEST)
            case.forget_references()
            if result.status is Status.ERROR:
                raise ContractBroken(f"loaded case {case.full_id} came to ERROR on the reference: {result.message}")


def seeds() -> Iterator[bytes]:
    """Every bundled suite file as it is, and one-case suites of its first cases (small inputs fuzz fastest); the
    standard tier's data is not in the harness's tree, and its cases are of the smoke tier's kinds."""
    for path in sorted(bundled_suites().rglob("*.yaml")):
        if "standard" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        document = yaml.load(text, Loader=FAST_LOADER)
        if len(text) < 64 << 10:
            yield text.encode()
        for case in document["cases"][:SEED_CASES_PER_FILE]:
            one = {key: value for key, value in document.items() if key != "cases"} | {"cases": [case]}
            yield yaml.dump(one, Dumper=FAST_DUMPER, sort_keys=False, default_flow_style=None, width=200).encode()
