"""Fixtures of the Windows programs' tests (the DirectML harness, the ONNX Runtime host)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def wine_ready(request: pytest.FixtureRequest) -> None:
    """The module is skipped, naming what is missing, when its `_missing()` says the tools it needs are not there.
    Its programs run on the package's own Wine prefix and that prefix's display, as `dmlconform run` starts them."""
    missing = request.module._missing()
    if missing:
        pytest.skip(missing)
