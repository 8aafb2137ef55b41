"""Known-issue lists (`run --known-issues-file`, and a certification package's known-issues.json): `parse_known_issues`
as the command reads a user's file, then every step a run takes with it (the list of each release measured, the
note a run prints, the overlay on results of every status), and the package's canonical copy read back.

Input: a list's YAML text, or (first byte `{`) a package's known-issues.json.
Contract: a one-line KnownIssueError, or a list that every step applies without raising; memory within the bound of
the input's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.known_issues import (
    BACKENDS,
    KnownIssueChoice,
    KnownIssueError,
    Mode,
    canonical_bytes,
    parse_known_issues,
    parse_release_issues,
    shipped,
)
from dmlconform.results.expectations import Expectations
from fuzz.contract import check_refusal, memory_bound

#: Cases a list may name (the shipped list's among them), in every status, a removed device's message on each.
_IDS = (("slice_grad.invalid/window-size-zero", "SLICE_GRAD"), ("slice_grad.smoke/merged-axes-float32-r2-0",
        "SLICE_GRAD"), ("seed.broken/relu-grad-formula", "ACTIVATION_RELU_GRAD"), ("max_pooling_grad.x/y",
        "MAX_POOLING_GRAD"))
_RESULTS = [CaseResult(case_id, op, "FLOAT32", 4, HIGHEST, status, required=required,
                       message="DXGI_ERROR_DEVICE_REMOVED" if status is Status.CRASH else "")
            for case_id, op in _IDS for status in Status for required in (True, False)]


def results() -> list[CaseResult]:
    return _RESULTS


def one_input(data: bytes) -> None:
    with memory_bound(len(data)):
        try:
            if data.startswith(b"{"):
                issues = parse_release_issues(data, "known-issues.json")
                assert canonical_bytes(issues) == data
                applied = [issues]
            else:
                listing = parse_known_issues(data, "known.yaml")
                applied = [listing.for_release(release, backend) for backend in BACKENDS
                           for release in listing.measured.get(backend, ())]
                for release in [*listing.measured.get("directml", ()), "9.9.9"]:
                    info = BackendInfo("directml", "v", "d", HIGHEST, "", {"directml_dll_version": f"{release}.0"})
                    for mode in Mode:
                        KnownIssueChoice(mode, listing).resolve(info)
        except KnownIssueError as exc:
            check_refusal(exc)
            return
        for issues in applied:
            assert parse_release_issues(canonical_bytes(issues), "again") == issues
            for mode in (Mode.ON, Mode.STRICT):
                expectations = Expectations().with_known_issues(issues, mode)
                for result in results():
                    expectations.settle([replace(result), replace(result)])  # settle keeps the runs it is given


def seeds() -> Iterator[bytes]:
    from importlib import resources

    text = resources.files("dmlconform.known_issues").joinpath("directml.yaml").read_bytes()
    yield text
    listing = shipped()
    for backend in BACKENDS:
        for release in listing.measured.get(backend, ()):
            yield canonical_bytes(listing.for_release(release, backend))
    yield (b"format: dmlconform-known-issues/v1\ndate: 2026-11-27\nmeasured: {directml: [1.15.4]}\nissues:\n"
           b"  - {id: A, title: t, releases: [1.15.4], backends: [directml], cases: ['seed\\.broken/.*'],\n"
           b"     ops: [SLICE_GRAD], outcomes: [CRASH, FAIL], occurs: sometimes, message: 'x|y', evidence: [e],\n"
           b"     reference: r}\n")
