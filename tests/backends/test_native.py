"""The native backend against the Python harness: same statuses as in-process, and survival of every fault."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions, OutcomeKind
from dmlconform.backends.native import NativeBackend, describe_exit, harness_argv
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.cli import main
from dmlconform.runner import run_cases
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import discover, load_suite

VECTORS = Path(__file__).resolve().parents[2] / "test_vectors"
SEED = VECTORS / "seed" / "seed_examples.yaml"
HARNESS = "python -m dmlconform.harness --backend numpy"


def load(paths: list[Path]) -> list[Case]:
    # A suite file another change left unloadable is skipped: the loader's own tests own that.
    cases: list[Case] = []
    for file, root in discover(paths):
        try:
            cases.extend(load_suite(file, root)[0])
        except SuiteError:
            continue
    assert cases
    return cases


def statuses(cases: list[Case], harness: str, timeout_s: float = 30.0) -> dict[str, tuple[Status, str]]:
    backend = NativeBackend(harness, timeout_s)
    try:
        result = run_cases(cases, backend)
    finally:
        backend.close()
    assert len(result.results) == len(cases)  # every case gets exactly one result
    return {r.id: (r.status, r.message) for r in result.results}


def reference_statuses(cases: list[Case]) -> dict[str, Status]:
    result = run_cases(cases, create_backend("numpy", BackendOptions()))
    return {r.id: r.status for r in result.results}


@pytest.mark.slow
@pytest.mark.tier_scan
def test_python_harness_gives_the_same_status_as_in_process_numpy(scanned_cases: list[Case]) -> None:
    """Every case of the scanned tier (smoke in the test command, standard in .ci/run's scan step)."""
    native = statuses(scanned_cases, HARNESS)
    assert {k: v[0] for k, v in native.items()} == reference_statuses(scanned_cases)


def test_handshake_fills_backend_info() -> None:
    backend = NativeBackend(HARNESS, 30)
    try:
        info = backend.info()
    finally:
        backend.close()
    assert info.name == "native" and info.feature_level.label == "6_4"
    assert info.device == "cpu (reference)" and "dmlconform.harness" in info.version
    assert info.extra["harness"] == HARNESS and "SLICE_GRAD" in info.extra["operators"]
    assert not backend.harness.running  # closed


@pytest.mark.slow
def test_injected_crash_hang_and_garbage_hit_exactly_their_cases() -> None:
    cases = load([SEED])
    ids = [c.full_id for c in cases]
    crash, hang, garbage = ids[0], ids[2], ids[4]
    harness = (f"{HARNESS} --crash-on '^{crash}$' --hang-on '^{hang}$' --garbage-on '^{garbage}$'")
    got = statuses(cases, harness, timeout_s=2.0)
    expected = reference_statuses(cases)
    assert got[crash][0] is Status.CRASH and "exit code 86" in got[crash][1]
    assert "injected crash" in got[crash][1]  # the last stderr lines come along
    assert got[hang][0] is Status.TIMEOUT and "2 s" in got[hang][1]
    assert got[garbage][0] is Status.ERROR and "nbytes" in got[garbage][1]
    for case_id in set(ids) - {crash, hang, garbage}:
        assert got[case_id][0] is expected[case_id], f"{case_id}: {got[case_id]}"


@pytest.mark.slow
def test_crash_by_signal_names_the_signal() -> None:
    cases = load([SEED])[:2]
    got = statuses(cases, f"{HARNESS} --crash-on '^{cases[0].full_id}$' --crash-mode abort")
    assert got[cases[0].full_id][0] is Status.CRASH
    if sys.platform != "win32":
        assert "SIGABRT" in got[cases[0].full_id][1]
    assert got[cases[1].full_id][0] is Status.PASS


@pytest.mark.parametrize(("mode", "words"), [
    ("size", "nbytes"), ("bytes", "magic"), ("json", "not UTF-8 JSON"), ("dtype", "DataType FLOAT64"),
    ("shape", "Sizes"), ("id", "reply is for case"), ("kind", "unknown reply status"),
    ("truncate", "closed its stdout mid-reply"),
])
@pytest.mark.slow
def test_each_kind_of_garbage_is_an_error_and_the_next_case_still_runs(mode: str, words: str) -> None:
    cases = [c for c in load([SEED]) if not c.expect_invalid][:2]
    first, second = cases[0].full_id, cases[1].full_id
    got = statuses(cases, f"{HARNESS} --garbage-on '^{first}$' --garbage-mode {mode}", timeout_s=5.0)
    assert got[first][0] is Status.ERROR and words in got[first][1], got[first]
    assert got[second][0] is Status.PASS, got[second]


@pytest.mark.slow
def test_removed_device_is_a_crash_with_the_reason_and_the_harness_restarts() -> None:
    cases = load([SEED])[:3]
    got = statuses(cases, f"{HARNESS} --device-removed-on '^{cases[1].full_id}$'")
    status, message = got[cases[1].full_id]
    assert status is Status.CRASH and "DXGI_ERROR_DEVICE_HUNG" in message and "0x887A0006" in message
    assert got[cases[2].full_id][0] is Status.PASS


@pytest.mark.slow
def test_invalid_cases_reach_the_harness_even_for_undeclared_operators() -> None:
    case = next(c for c in load([VECTORS / "clip_grad1"]) if c.expect_invalid)  # the first of the bundled suites
    backend = NativeBackend(HARNESS, 30)
    backend.hello.operators = {}  # declares nothing: valid cases are declined without a round trip
    try:
        assert backend.run(case).kind is OutcomeKind.REFUSED
        valid = next(c for c in load([SEED]) if not c.expect_invalid)
        outcome = backend.run(valid)
        assert outcome.kind is OutcomeKind.NOT_SUPPORTED and "handshake" in outcome.message
    finally:
        backend.close()


def test_a_harness_flooding_stderr_does_not_block() -> None:
    flood = ("import sys, runpy; sys.stderr.write('x' * 4_000_000 + '\\n'); sys.argv = ['h', '--backend', 'numpy']; "
             "runpy.run_module('dmlconform.harness', run_name='__main__')")
    backend = NativeBackend(f'python -c "{flood}"', 20)
    try:
        assert backend.run(load([SEED])[0]).kind is OutcomeKind.OUTPUTS
    finally:
        backend.close()


@pytest.mark.parametrize(("command", "words"), [
    ("python -c 'import sys; sys.stderr.write(\"no adapter found\\n\"); sys.exit(3)'",
     "ended before the handshake: exit code 3; last stderr: no adapter found"),
    ("dmlconform-no-such-harness-xyz", "cannot start harness"),
    ("python -c 'print(\"hello there, I am text\")'", "magic"),
    ("python -m dmlconform.harness --backend no-such-backend", "cannot create backend 'no-such-backend'"),
    ("", "--harness is empty"),
])
def test_a_harness_that_cannot_start_is_a_one_line_error(command: str, words: str) -> None:
    with pytest.raises(RuntimeError) as info:
        create_backend("native", BackendOptions(harness=command or " ", timeout_s=5))
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_cli_exits_2_with_one_line_when_the_harness_cannot_start() -> None:
    result = CliRunner().invoke(main, ["run", str(SEED), "--backend", "native", "--harness", "nonexistent-xyz"])
    assert result.exit_code == 2
    assert "cannot start harness" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_cli_native_run_matches_numpy() -> None:
    args = ["run", str(SEED), "--backend", "native", "--harness", HARNESS]
    assert CliRunner().invoke(main, args).exit_code == 0


def test_harness_argv_splits_without_a_shell_and_resolves_python() -> None:
    assert harness_argv("python -m x --flag 'a b'") == [sys.executable, "-m", "x", "--flag", "a b"]
    assert harness_argv("./h --feature-level 5_1") == ["./h", "--feature-level", "5_1"]
    assert harness_argv("echo $HOME; rm -rf /") == ["echo", "$HOME;", "rm", "-rf", "/"]


def test_exit_descriptions() -> None:
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(0xC0000005) == "exit code 0xC0000005"
    if sys.platform != "win32":
        assert describe_exit(-11) == "killed by SIGSEGV (11)"


def test_layouts_and_paths_run_through_the_python_harness_and_are_declined_where_a_hello_does_not_offer_them() -> None:
    import dataclasses

    from dmlconform.feature_levels import HIGHEST
    from dmlconform.runner import run_case
    from tests.test_harness_protocol import _clip_case

    backend = NativeBackend(HARNESS, 30)
    try:
        for path in ("operator", "graph", "in-place"):
            result = run_case(_clip_case(path), backend, HIGHEST)
            assert result.status is Status.PASS and result.path == path and not result.stray_writes, result.message
        backend.hello = dataclasses.replace(backend.hello, layouts=False, paths=frozenset({"operator"}))
        result = run_case(_clip_case("graph"), backend, HIGHEST)
        assert result.status is Status.NOT_SUPPORTED and "offers no memory layouts" in result.message
    finally:
        backend.close()
