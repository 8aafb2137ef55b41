"""A whole run: the backend, what was selected and how, and one result per case.

Plain data shared by the runner (which produces it), the results layer (journal, merge, expectations)
and the reporters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dmlconform import __version__
from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult
from dmlconform.feature_levels import FeatureLevel


@dataclass(frozen=True)
class Shard:
    """Part `index` (1-based) of `count` of a selection."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class SuiteInfo:
    """Which cases were selected: their number and a fingerprint of their ids and content."""

    fingerprint: str
    cases: int
    #: Suite name -> SHA-256 of its YAML file.
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExpectationFile:
    """A baseline, skip or flake list that the run used."""

    kind: str  # baseline | skip | flakes
    path: str
    sha256: str


@dataclass(frozen=True)
class KnownIssueRecord:
    """Which known issues of a DirectML release a run applied (dmlconform.known_issues), or why none."""

    #: on | off | strict (`--known-issues`).
    mode: str
    #: directml or onnxruntime-dml: what the DirectML release was loaded through.
    backend: str
    #: The release the backend loaded (None: its version could not be read).
    release: str | None
    #: The release whose issues were applied (None: none were), the list they came from and the digest of those
    #: issues (known_issues.ReleaseIssues.sha256).
    applied_release: str | None = None
    source: str | None = None
    sha256: str | None = None
    issues: tuple[str, ...] = ()
    #: One line: which list it used, or that it has none.
    note: str = ""


@dataclass
class RunResult:
    backend: BackendInfo
    target_level: FeatureLevel
    started: datetime
    duration_s: float
    results: list[CaseResult] = field(default_factory=list)
    tool_version: str = __version__
    suite: SuiteInfo | None = None
    shard: Shard | None = None
    #: Options that change what the results are (repeat, retries, -k, backend options), for merge and resume.
    settings: dict[str, Any] = field(default_factory=dict)
    expectations: list[ExpectationFile] = field(default_factory=list)
    #: The signal that stopped the run (SIGINT, SIGTERM), if one did.
    interrupted: str | None = None
    #: Cases taken from a journal instead of being run again.
    resumed: int = 0
    #: A merged result: the shards it was made of, and those that were missing.
    shards: list[dict[str, Any]] = field(default_factory=list)
    missing_shards: list[int] = field(default_factory=list)
    #: The DirectML release's known issues the run applied (None: the backend loads no DirectML).
    known_issues: KnownIssueRecord | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        """The execution paths the run asked for (`--path`; contract §9): the operator path alone unless the settings
        name others."""
        asked = self.settings.get("paths")
        return tuple(asked) if isinstance(asked, list) and asked else ("operator",)

    @property
    def passed(self) -> bool:
        return not self.interrupted and not self.missing_shards and all(r.acceptable for r in self.results)


def summary(results: Iterable[CaseResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status.value] = counts.get(result.status.value, 0) + 1
    return counts
