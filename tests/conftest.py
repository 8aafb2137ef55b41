"""Fixtures shared by the tests, and the tier that tier scans check (`--scan-tier`)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def _compiled_files_outside_the_tree() -> None:
    """With PYTHONDONTWRITEBYTECODE set (as on the shared development machine, to keep the tree free of __pycache__),
    every process compiles what it imports afresh: pytest's assertion rewriting of every test module in each xdist
    worker (about 5 s of CPU apiece) and dmlconform in each of the ~150 Python processes the tests start. The compiled
    files go to a folder outside the tree instead (PYTHONPYCACHEPREFIX, which this process, its xdist workers and
    every process they start inherit). Set before the imports below, so that they are cached too; a prefix the caller
    chose is kept."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = str(Path(tempfile.gettempdir()) / f"dmlconform-tests-pycache-{os.getuid()}")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


_compiled_files_outside_the_tree()

import pytest  # noqa: E402

from dmlconform.case import Case  # noqa: E402
from dmlconform.suite import SuiteError  # noqa: E402
from dmlconform.suite.loader import discover, load_paths, load_suite  # noqa: E402
from dmlconform.suite.tiers import Tier  # noqa: E402

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
    parser.addoption("--ep-pool-reports", metavar="POOLED,FRESH", type=lambda text: tuple(map(Path, text.split(","))),
                     help="two `dmlconform run --json` results of the standard tier through the DML EP's packaged host "
                          "(.ci/run's), the host's pools on and with --fresh-buffers: tests marked ep_pool_report "
                          "check them")
    parser.addoption("--doc-commands-bin", metavar="DIR", type=Path,
                     default=os.environ.get("DMLCONFORM_DOC_COMMANDS_BIN") or None,
                     help="the bin folder of a virtual environment with the wheel installed (.ci/run's): tests marked "
                          "docs_commands run the docs' commands from it (tests/docs; default: "
                          "$DMLCONFORM_DOC_COMMANDS_BIN)")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject.toml's addopts): a worker per core and one more. Many tests wait on what they start (Wine
    making a prefix, a harness's delay or hang, a worker pool's deadline) with their core idle; on the 2-core
    development machine a third worker took the test command from 149 s to 140 s (medians of four runs each).
    PYTEST_XDIST_AUTO_NUM_WORKERS, where set, is pytest-xdist's to read."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


#: Each marker that a later step of .ci/run selects, and the fixture that gives its tests their input there.
STEP_MARKERS = {"tier_scan": "scanned_cases", "directml_report": "directml_report",
                "ep_pool_report": "ep_pool_reports", "docs_commands": "doc_commands_bin"}

#: Test files whose tests pytest-xdist hands out one by one, not the whole file to one worker (`--dist loadfile`): each
#: test runs a doc's commands, independent of the others, and together they are most of a step of .ci/run.
SPREAD_FILES = ("tests/docs/test_doc_commands.py",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (pyproject.toml's addopts), except for SPREAD_FILES, whose tests go to workers one by one."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadSomeFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(SPREAD_FILES):
                return nodeid
            return super()._split_scope(nodeid)

    return SpreadSomeFiles(config, log)


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


@pytest.fixture(scope="session")
def doc_commands_bin(request: pytest.FixtureRequest) -> Path:
    """The bin folder of the wheel's virtual environment, for tests marked docs_commands (skips without one)."""
    folder = request.config.getoption("--doc-commands-bin")
    if folder is None:
        pytest.skip("no --doc-commands-bin (or $DMLCONFORM_DOC_COMMANDS_BIN): the docs' commands run in .ci/run")
    folder = Path(folder).resolve()
    if not (folder / "dmlconform").exists():
        raise pytest.UsageError(f"--doc-commands-bin {folder}: no dmlconform in it (the wheel's venv's bin folder)")
    return folder


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
