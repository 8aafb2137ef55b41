"""The bundled cases, loaded once for the triage tests."""

from __future__ import annotations

import pytest

from dmlconform.case import Case
from dmlconform.cli import bundled_suites
from dmlconform.suite.loader import load_paths


@pytest.fixture(scope="session")
def bundled() -> list[Case]:
    return load_paths([bundled_suites()])
