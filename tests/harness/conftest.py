"""Fixtures of the Windows programs' tests (the DirectML harness, the ONNX Runtime host)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.wine_tools import x_display


@pytest.fixture(scope="module")
def display(request: pytest.FixtureRequest) -> Iterator[str]:
    """The X display every program of the module runs on; the module is skipped, naming what is missing, when its
    `_missing()` says the tools it needs are not there."""
    missing = request.module._missing()
    if missing:
        pytest.skip(missing)
    with x_display() as name:
        yield name
