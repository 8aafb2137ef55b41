"""Mutated suites never crash the loader: every refusal is a one-line SuiteError, and whatever loads runs
on the reference without an ERROR."""

import copy
import random
from pathlib import Path

import pytest
import yaml

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.cli import bundled_suites
from dmlconform.runner import run_cases
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths

ODD_VALUES = [None, "", "x", -1, 0, 1, 2**64, -(2**63), 1.5, float("nan"), [], [1], [[1]], {}, {"a": 1}, True,
              "0x7fff", "inf", [2**40, 2**40], [0], [-3], "FLOAT32", "NEAREST_NEIGHBOR", list(range(1, 10))]


def _places(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:4]):
            yield from _places(value, (*prefix, i))


@pytest.mark.slow
def test_mutated_suites_fail_cleanly(tmp_path: Path):
    # The hand-written suites: the generated ones keep their data in .npz files beside them, which a mutated copy
    # elsewhere cannot reach. (A generated tier's folder has the generator's MANIFEST.json: its files, most of the
    # YAML, are not parsed only to be dropped.)
    documents = [document for p in sorted(bundled_suites().rglob("*.yaml")) if not (p.parent / "MANIFEST.json").exists()
                 and "tier" not in (document := yaml.safe_load(p.read_text()))]
    rng = random.Random(2026)
    path = tmp_path / "mutated.yaml"
    refused = loaded = 0
    for _ in range(400):
        document = copy.deepcopy(rng.choice(documents))
        document["cases"] = [rng.choice(document["cases"])]
        for _ in range(rng.randint(1, 3)):
            place = rng.choice(list(_places(document))[1:])
            node = document
            for key in place[:-1]:
                node = node[key]
            if rng.random() < 0.15 and isinstance(node, dict):
                del node[place[-1]]
            else:
                node[place[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        path.write_text(yaml.safe_dump(document))
        try:
            cases = load_paths([path])
        except SuiteError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path))
            refused += 1
            continue
        loaded += 1
        for result in run_cases(cases, NumpyBackend()).results:
            assert result.status is not Status.ERROR, result.message
    assert refused > 100 and loaded > 10  # the mutations exercise both paths
