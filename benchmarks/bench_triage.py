"""What triage costs, as ratios against peers measured in the same run.

    python benchmarks/bench_triage.py [--repeats N]

* closeness: the comparator as it is, against the comparator before closeness was added (the file at the
  commit this branch started from, loaded from git), on 16M fp32 elements with 10 % off by 1 ULP;
* the ULP histogram a failing case carries, against judging the same tensors;
* `diff` of two results of the bundled suites (every tier committed), against reading the two result files;
* `show`'s list of terms for a summing case (the reference run on halves, quarters, ... of the gradient), against one
  reference run, and against one reference run per gradient element (how the terms were found before).
Machines here are noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from timing import paired_medians  # this folder is on sys.path when run as a script

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.cli import bundled_suites
from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.report.json_report import write_json
from dmlconform.results.diff import diff_runs
from dmlconform.results.document import read_document
from dmlconform.runner import run_cases
from dmlconform.suite.loader import load_paths
from dmlconform.triage.inspection import GRADIENT, PROBE_LIMIT, inspect_case
from dmlconform.ulp_histogram import ulp_histogram

#: The commit this branch started from: its comparator has no closeness.
BASE = "dce9e0c"
REPO = Path(__file__).resolve().parents[1]


def _base_comparator():
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{BASE}:dmlconform/compare/comparator.py"],
                            capture_output=True, text=True, check=True).stdout
    folder = Path(tempfile.mkdtemp())
    (folder / "base_comparator.py").write_text(source)
    spec = importlib.util.spec_from_file_location("base_comparator", folder / "base_comparator.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_comparator"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _nudged() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    a = rng.standard_normal(1 << 24).astype(np.float32)
    b = a.copy()
    nudge = rng.random(a.size) < 0.1
    b[nudge] = np.nextafter(a[nudge], np.float32(np.inf))
    return a, b


def closeness(repeats: int) -> tuple[float, float]:
    a, b = _nudged()
    base = _base_comparator()
    rule = Tolerance.parse("ulp:1")
    return paired_medians(lambda: judge(a, b, DataType.FLOAT32, rule), lambda: base.judge(a, b, DataType.FLOAT32, rule),
                        repeats)


def histogram(repeats: int) -> tuple[float, float]:
    a, b = _nudged()
    rule = Tolerance.exact()  # failing: the case that carries a histogram
    return paired_medians(lambda: ulp_histogram(a, b), lambda: judge(a, b, DataType.FLOAT32, rule), repeats)


def diffing(repeats: int) -> tuple[float, float]:
    cases = load_paths([bundled_suites()])
    folder = Path(tempfile.mkdtemp())
    write_json(run_cases(cases, NumpyBackend()), folder / "old.json")
    write_json(run_cases(cases, NumpyBackend("swapped")), folder / "new.json")
    old, new = read_document(folder / "old.json"), read_document(folder / "new.json")
    return paired_medians(lambda: diff_runs(old, new),
                          lambda: (read_document(folder / "old.json"), read_document(folder / "new.json")), repeats)


def _one_run_per_gradient_element(case) -> None:
    """The weights of every gradient element at every output element, as `show` found them before halving."""
    gradient = case.inputs[GRADIENT]
    unit = np.zeros_like(gradient)
    with np.errstate(all="ignore"):
        for flat in range(gradient.size):
            unit.flat[flat] = 1
            reference = case.op.reference(case.description, {**case.inputs, GRADIENT: unit.copy()})
            _ = reference.accumulation["OutputGradientTensor"].value
            unit.flat[flat] = 0


def terms(repeats: int) -> tuple[float, float, float, float, str]:
    cases = load_paths([bundled_suites()])
    summing = [c for c in cases if c.op.name == "RESAMPLE_GRAD1" and c.expected is not None
               and c.inputs["InputGradientTensor"].size <= PROBE_LIMIT]
    case = max(summing, key=lambda c: c.inputs["InputGradientTensor"].size)
    actual = {k: v.copy() for k, v in case.expected.items()}
    flat = actual["OutputGradientTensor"].reshape(-1)
    flat[np.argmax(np.abs(flat))] *= np.float32(1.5)  # one wrong element, to be explained
    label = f"{case.full_id} (dY {case.inputs['InputGradientTensor'].size} elements)"
    ours, peer = paired_medians(lambda: inspect_case(case, actual, top=1),
                                lambda: case.op.reference(case.description, case.inputs), repeats)
    again, before = paired_medians(lambda: inspect_case(case, actual, top=1),
                                   lambda: _one_run_per_gradient_element(case), max(1, repeats // 3))
    return ours, peer, again, before, label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    term_ours, term_peer, term_again, term_before, term_case = terms(repeats)
    rows = [("comparator with closeness, 16M fp32", *closeness(repeats), "comparator before closeness"),
            ("ULP histogram of a failing 16M fp32 output", *histogram(repeats), "judging it"),
            ("diff of two results of the bundled suites", *diffing(repeats), "reading the two files"),
            ("show: the terms of one element", term_ours, term_peer, "one reference run"),
            ("show: the terms of one element", term_again, term_before, "a reference run per dY element")]
    print(f"{'work':44} {'ours (s)':>9} {'peer (s)':>9} {'ours/peer':>9}  peer")
    for name, ours, peer, peer_name in rows:
        print(f"{name:44} {ours:9.4f} {peer:9.4f} {ours / peer:9.2f}  {peer_name}")
    print(f"(terms measured on {term_case})")


if __name__ == "__main__":
    sys.exit(main())
