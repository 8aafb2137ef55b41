"""Result statuses and the per-case result record that the runner produces and reporters render."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ulp_histogram import UlpBucket


class Status(Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INVALID_OK = "INVALID_OK"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    NOT_REQUIRED = "NOT_REQUIRED"
    ERROR = "ERROR"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"
    # CI overlay, applied from expectations (baseline, skips, flakes) and retries.
    EXPECTED_FAIL = "EXPECTED_FAIL"
    UNEXPECTED_PASS = "UNEXPECTED_PASS"
    FLAKE = "FLAKE"
    SKIPPED = "SKIPPED"
    #: The run stopped (interrupt, missing shard) before this case ran; `--resume` runs it.
    NOT_RUN = "NOT_RUN"
    #: Certification only: a required case that did not match, covered by a waiver granted for this device
    #: (`outcome` holds what it came to). A v1 result document writes it as that status with `waiver` beside it.
    WAIVED = "WAIVED"

    @property
    def matched(self) -> bool:
        """Counts as a match towards a feature-level verdict."""
        return self in (Status.PASS, Status.INVALID_OK)

    @property
    def acceptable(self) -> bool:
        """Does not make the run fail."""
        return self in (Status.PASS, Status.INVALID_OK, Status.NOT_REQUIRED, Status.EXPECTED_FAIL,
                        Status.FLAKE, Status.SKIPPED, Status.WAIVED)

    @property
    def failure(self) -> bool:
        """What the backend itself came to when it did not match: the statuses a baseline may list."""
        return self in FAILURES


#: Raw outcomes that a baseline can expect (deqp-runner's Fail, Crash, Timeout, plus ours).
FAILURES = (Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.NOT_SUPPORTED)


@dataclass(frozen=True)
class MovedElement:
    """An output element whose bits differed between repeats of one case (`--repeat`)."""

    output: str
    index: tuple[int, ...]
    #: The element's value in each repeat, as text with its bit pattern.
    values: tuple[str, ...]


@dataclass(frozen=True)
class AppliedWaiver:
    """The waiver that covers a case in a certification (dmlconform.certification.waivers has the whole one)."""

    id: str
    reason: str
    granted_by: str
    date: str


@dataclass(frozen=True)
class AppliedKnownIssue:
    """The known issue of a DirectML release a case fell under (dmlconform.known_issues has the whole one)."""

    id: str
    #: The DirectML release whose list it is in, e.g. 1.15.4.
    release: str
    title: str
    reference: str
    #: How the run applied it: on (a pass is UNEXPECTED_PASS but does not fail the run) or strict (it does).
    mode: str = "on"


@dataclass
class CaseResult:
    id: str
    op: str
    dtype: str
    rank: int
    required_level: FeatureLevel
    status: Status
    required: bool = True
    matched: str | None = None
    #: Every candidate the output matched (candidate cases only); several when candidates coincide.
    matched_all: tuple[str, ...] = ()
    tolerance: Tolerance | None = None
    max_ulp: int | None = None
    max_abs_error: float | None = None
    worst_index: tuple[int, ...] | None = None
    message: str = ""
    duration_s: float = 0.0
    worst: list[Element] = field(default_factory=list)
    tags: tuple[str, ...] = ()
    behaviour: str | None = None
    #: What the backend's result came to when `status` says something else: the outcome of a NOT_REQUIRED
    #: case, or the raw status behind EXPECTED_FAIL, UNEXPECTED_PASS and FLAKE.
    outcome: Status | None = None
    file: str = ""
    #: Position in the run's full selection (before sharding); merged shards are put back in this order.
    index: int = 0
    #: Raw status of every run of the case, in order: repeats, then retries.
    attempts: tuple[Status, ...] = ()
    #: The failure the baseline expects for this case, and the expectation line that applied (file:line).
    baseline: Status | None = None
    expectation: str | None = None
    #: Elements that were not bit-identical across repeats: the first few, and how many in all.
    moved: list[MovedElement] = field(default_factory=list)
    moved_count: int = 0
    #: The largest error/allowance ratio over the judged elements (0 bit-exact, 1 at the limit, inf where an
    #: element that must be exact is off); None where nothing was compared (or in results written before it).
    closeness: float | None = None
    #: ULP distances of every output element from the answer it was judged against; kept for cases that did
    #: not match, so that reports can draw them without the tensors.
    ulp_histogram: list[UlpBucket] = field(default_factory=list)
    #: Output name -> .npy file of what the backend returned (`run --artifacts`), as written in the result:
    #: relative to the folder of the JSON result, or absolute.
    artifacts: dict[str, str] = field(default_factory=dict)
    #: Certification: the waiver this case's failure is covered by (status WAIVED).
    waiver: AppliedWaiver | None = None
    #: The DirectML release's known issue the case falls under (EXPECTED_FAIL, UNEXPECTED_PASS, or WAIVED in a
    #: certification), or that it was expected to fall under and did not (a different failure).
    known_issue: AppliedKnownIssue | None = None
    #: SHA-256 of every output the backend returned, in the operator's output order (name, NumPy data type name,
    #: shape, then the C-order little-endian bytes: dmlconform.output_digest.output_sha256 defines it exactly); with
    #: repeats, the first run's. None where the backend returned no outputs (a refusal, a crash), or in results
    #: written before it. Equal digests are bit-identical outputs, so runs can be compared without the tensors.
    output_sha256: str | None = None
    #: How the case reached DirectML (contract §9): operator, graph or in-place; its id ends in `@graph` or
    #: `@in-place` on those paths.
    path: str = "operator"
    #: Bytes outside a tensor's elements that the dispatch changed (dmlconform.surface.buffers.StrayWrite as text):
    #: the first in each buffer where it happened. Any makes the case FAIL.
    stray_writes: tuple[str, ...] = ()
    #: What the backend returned, carried from the worker to the parent only while artifacts are being kept;
    #: never written to a result.
    actual_outputs: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def acceptable(self) -> bool:
        """Does not make the run fail: an acceptable status, or a DirectML known issue that did not reproduce where
        the run was not strict about it (it is still reported, as UNEXPECTED_PASS)."""
        if self.status is Status.UNEXPECTED_PASS and self.known_issue is not None:
            return self.known_issue.mode != "strict"
        return self.status.acceptable
