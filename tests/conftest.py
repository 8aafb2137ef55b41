"""Fixtures shared by the tests, and the tier that tier scans check (`--scan-tier`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.case import Case
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import discover, load_paths, load_suite
from dmlconform.suite.tiers import Tier

VECTORS = Path(__file__).resolve().parents[1] / "test_vectors"
SCAN_TIERS = (Tier.SMOKE.value, Tier.STANDARD.value)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--scan-tier", choices=SCAN_TIERS, default=Tier.SMOKE.value,
                     help="the tier whose every case the tests marked tier_scan check (default: smoke; .ci/run runs "
                          "them on the standard tier too)")
    parser.addoption("--directml-report", metavar="FILE", type=Path,
                     help="a `dmlconform run --json` result of the smoke tier on the real DirectML (.ci/run's "
                          "`dmlconform run --backend directml --adapter lavapipe --tier smoke --json FILE`, from the "
                          "installed wheel): tests marked directml_report check it")


#: Each marker that a later step of .ci/run selects, and the fixture that gives its tests their input there.
STEP_MARKERS = {"tier_scan": "scanned_cases", "directml_report": "directml_report"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that takes one of those fixtures carries its marker (or the step of .ci/run that selects by the marker
    would never run it), and a test with the marker takes the fixture."""
    for item in items:
        for marker, fixture in STEP_MARKERS.items():
            if (fixture in getattr(item, "fixturenames", ())) != (item.get_closest_marker(marker) is not None):
                raise pytest.UsageError(f"{item.nodeid}: a test marked {marker} takes the {fixture} fixture, and a "
                                        "test that takes it is marked so")


@pytest.fixture(scope="session")
def scanned_cases(request: pytest.FixtureRequest) -> list[Case]:
    """Every case of the tier given by --scan-tier (smoke unless told), for tests marked tier_scan."""
    return load_paths([VECTORS], Tier(request.config.getoption("--scan-tier")))


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
