"""The selection fingerprint follows the cases' content, not where the suites lie."""

from __future__ import annotations

import shutil
from pathlib import Path

from dmlconform.cli import bundled_suites
from dmlconform.suite.fingerprint import selection_fingerprint, suite_file_hashes
from dmlconform.suite.loader import load_paths

SEED = bundled_suites() / "seed"


def test_same_cases_elsewhere_same_fingerprint_and_one_changed_value_changes_it(tmp_path: Path) -> None:
    here = load_paths([SEED])
    shutil.copytree(SEED, tmp_path / "copy")
    there = load_paths([tmp_path / "copy"])
    assert selection_fingerprint(here) == selection_fingerprint(there)
    assert suite_file_hashes(here) == suite_file_hashes(there)
    there[0].inputs[next(iter(there[0].inputs))].reshape(-1)[0] += 1
    assert selection_fingerprint(here) != selection_fingerprint(there)
    assert selection_fingerprint(here) != selection_fingerprint(here[1:])
    assert selection_fingerprint(here) != selection_fingerprint(list(reversed(here)))
