"""Fixtures shared by the harness tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.case import Case
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import discover, load_suite

VECTORS = Path(__file__).resolve().parents[1] / "test_vectors"


@pytest.fixture
def bundled_cases() -> list[Case]:
    """Every case of the bundled suites, freshly loaded (tests may modify them).

    A suite file that another change left unloadable is skipped here: the loader's own tests own that.
    """
    cases: list[Case] = []
    for file, root in discover([VECTORS]):
        try:
            cases.extend(load_suite(file, root)[0])
        except SuiteError:
            continue
    assert cases, f"no loadable suites under {VECTORS}"
    return cases
