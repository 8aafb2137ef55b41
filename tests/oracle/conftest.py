"""Shared fixtures of the oracle tests: the bundled cases, loaded once."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.case import Case
from dmlconform.suite.loader import load_paths

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bundled_cases() -> list[Case]:
    return load_paths([REPO / "test_vectors"])
