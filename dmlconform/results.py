"""Result statuses and the per-case result record that reporters render."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.feature_levels import FeatureLevel


class Status(Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INVALID_OK = "INVALID_OK"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    NOT_REQUIRED = "NOT_REQUIRED"
    ERROR = "ERROR"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"
    # CI overlay, applied from an expectations baseline.
    EXPECTED_FAIL = "EXPECTED_FAIL"
    UNEXPECTED_PASS = "UNEXPECTED_PASS"
    FLAKE = "FLAKE"
    SKIPPED = "SKIPPED"

    @property
    def matched(self) -> bool:
        """Counts as a match towards a feature-level verdict."""
        return self in (Status.PASS, Status.INVALID_OK)

    @property
    def acceptable(self) -> bool:
        """Does not make the run fail."""
        return self in (Status.PASS, Status.INVALID_OK, Status.NOT_REQUIRED, Status.EXPECTED_FAIL,
                        Status.FLAKE, Status.SKIPPED)


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
    #: What the case would have been had it been required (for NOT_REQUIRED).
    outcome: Status | None = None
    file: str = ""
