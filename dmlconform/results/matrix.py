"""A DirectML version matrix: one run of a tier per onnxruntime-directml release, each compared with a reference run.

Plain data in and out, as diff.py: `run_matrix` is handed how to fetch a release and how to run it (the command
passes the run engine; tests pass fakes), so nothing here creates a backend. Releases whose DirectML.dll is
byte-identical (the same SHA-256) to one already run are not run again: their row points at that run. With
`same_code`, neither are those whose DLL differs from one already run only in its Authenticode signature and PE
checksum (`image_sha256`): onnxruntime-directml re-signs the same DirectML build for each of its releases (1.24.1
to 1.24.4 carry four files of DirectML 1.15.4.0 with four SHA-256s and one image), and a signature is never
executed. A release that cannot be fetched, or whose DLL does not run, is a row saying why, and the matrix goes on.

Against the reference (by default the newest release that ran), per case in both runs:
* status — what DirectML came to (the outcome behind NOT_REQUIRED, EXPECTED_FAIL, UNEXPECTED_PASS and FLAKE, as
  `diff` compares), so a release that reports a lower feature level is not a change of every case above it (its
  row shows the level);
* outputs — `output_sha256`: the bits of what DirectML returned, where both runs returned outputs; a case that
  returned outputs in one run only (refused or NOT_SUPPORTED in the other) is counted apart, since its status
  differs too. SKIPPED and NOT_RUN cases are not compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from dmlconform.case_result import CaseResult, Status
from dmlconform.directml.library import DIRECTML_DLL, FetchedRelease
from dmlconform.run_result import RunResult, summary

FORMAT = "dmlconform-directml-matrix/v1"
#: Statuses with a column of their own; the rest are counted as "other".
COUNTED = (Status.PASS, Status.FAIL, Status.EXPECTED_FAIL, Status.NOT_SUPPORTED, Status.INVALID_OK)
#: Case ids named per difference (the JSON has every one).
SHOWN_CASES = 5
_NOT_COMPARED = (Status.SKIPPED, Status.NOT_RUN)


class ReleaseUnusable(RuntimeError):
    """A release that could not be fetched or run; the message is one line saying why."""


class RowState(Enum):
    RAN = "ran"
    #: Its DirectML.dll is that of a release already run (byte-identical, or with `same_code` identical but for its
    #: signature): that run stands for it.
    SAME_DLL = "same-dll"
    NOT_FETCHED = "not-fetched"
    NOT_RUN = "not-run"

    @property
    def has_run(self) -> bool:
        return self in (RowState.RAN, RowState.SAME_DLL)


@dataclass
class Comparison:
    """Cases that differ from the reference release's run (ids in suite order)."""

    reference: str
    status_changed: list[str] = field(default_factory=list)
    #: Both runs returned outputs, and their bits differ.
    output_changed: list[str] = field(default_factory=list)
    #: One run returned outputs, the other none.
    outputs_in_one_run: list[str] = field(default_factory=list)
    #: Cases in one run only, or SKIPPED/NOT_RUN in either.
    not_compared: int = 0


@dataclass
class MatrixRow:
    package_version: str
    state: RowState
    directml_version: str | None = None
    dll_sha256: str | None = None
    #: The DLL's digest without its signature and checksum (image_sha256); None where it could not be read.
    image_sha256: str | None = None
    #: Why the release did not run (NOT_FETCHED, NOT_RUN), one line.
    problem: str = ""
    #: SAME_DLL: the release whose run this row shares, and whether the two files differ in their signature.
    same_dll_as: str | None = None
    resigned: bool = False
    #: RAN without `same_code`: an earlier release whose DLL is identical to this one's but for its signature.
    same_image_as: str | None = None
    #: The run's result file as the command wrote it (a SAME_DLL row: the shared one).
    result_file: str | None = None
    #: RAN: the result was one an earlier matrix kept (`--reuse`).
    reused: bool = False
    run: RunResult | None = field(default=None, repr=False)
    comparison: Comparison | None = None

    @property
    def feature_level(self) -> str | None:
        return None if self.run is None else self.run.backend.feature_level.label

    def counts(self) -> dict[str, int]:
        """Cases per column: the COUNTED statuses and "other"."""
        counts = {status.value: 0 for status in COUNTED} | {"other": 0}
        for result in self.run.results if self.run is not None else ():
            key = result.status.value if result.status in COUNTED else "other"
            counts[key] += 1
        return counts

    def note(self) -> str:
        """One line for the table's last column."""
        if self.state is RowState.SAME_DLL:
            return f"same DirectML.dll as {self.same_dll_as}" + (" but for its signature" if self.resigned else "")
        if self.problem:
            return self.problem
        if self.same_image_as is not None:
            return f"DirectML.dll identical to {self.same_image_as}'s but for its signature, run again"
        if self.comparison is None and self.run is not None:
            return "reference"
        return ""


@dataclass
class Matrix:
    rows: list[MatrixRow]
    #: The release every row is compared with; None when no release ran (or the one asked for did not).
    reference: str | None
    #: How every release was run: tier, -k, adapter, jobs, baseline (path and sha256), ...
    settings: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    duration_s: float = 0.0

    @property
    def complete(self) -> bool:
        """Every release ran (whatever its cases came to)."""
        return all(row.state.has_run for row in self.rows)


#: Fetches one release (a cached one as it is); ReleaseUnusable when it cannot.
FetchRelease = Callable[[str], FetchedRelease]
@dataclass
class ReleaseRun:
    run: RunResult
    #: The result file, as matrix.json names it (relative to its folder).
    result_file: str
    #: Taken from a result an earlier matrix kept (`matrix --reuse`), not run now.
    reused: bool = False


#: Runs the tier on a release's DirectML.dll; ReleaseUnusable when the DLL does not run.
RunRelease = Callable[[FetchedRelease], ReleaseRun]


def run_matrix(versions: Sequence[str], fetch: FetchRelease, run: RunRelease,
               log: Callable[[str], None] = lambda line: None, same_code: bool = False) -> list[MatrixRow]:
    """A row per version, in the order given; each distinct DirectML.dll run once (with `same_code`: each distinct
    image, whatever its signature)."""
    rows: list[MatrixRow] = []
    by_dll: dict[str, MatrixRow] = {}
    by_image: dict[str, MatrixRow] = {}
    for version in versions:
        try:
            release = fetch(version)
        except ReleaseUnusable as exc:
            log(f"onnxruntime-directml {version}: not fetched: {exc}")
            rows.append(MatrixRow(version, RowState.NOT_FETCHED, problem=f"not fetched: {exc}"))
            continue
        digest, image = release.files[DIRECTML_DLL], image_sha256(release.directml_dll)
        row = MatrixRow(version, RowState.RAN, release.directml_version, digest, image)
        first = by_dll.get(digest) or (by_image.get(image) if same_code and image is not None else None)
        if first is not None:
            row.same_dll_as, row.resigned = first.package_version, first.dll_sha256 != digest
            how = "identical but for its signature to" if row.resigned else "byte-identical to"
            log(f"onnxruntime-directml {version}: DirectML.dll {release.directml_version} is {how} "
                f"{first.package_version}'s; not run again")
            if first.state.has_run:
                row.state, row.run, row.result_file = RowState.SAME_DLL, first.run, first.result_file
            else:
                row.state, row.problem = RowState.NOT_RUN, f"same DirectML.dll as {first.package_version}: " \
                                                           f"{first.problem}"
            rows.append(row)
            continue
        by_dll[digest] = row
        if image is not None:
            if image in by_image:
                row.same_image_as = by_image[image].package_version
            by_image.setdefault(image, row)
        try:
            done = run(release)
            row.run, row.result_file, row.reused = done.run, done.result_file, done.reused
        except ReleaseUnusable as exc:
            log(f"onnxruntime-directml {version}: did not run: {exc}")
            row.state, row.problem = RowState.NOT_RUN, f"did not run: {exc}"
        rows.append(row)
    return rows


def image_sha256(path: Path) -> str | None:
    """SHA-256 of a PE file without what signing changes, as Authenticode hashes it: all bytes but the optional
    header's CheckSum, the certificate table's data directory entry and the certificate table itself. None for a
    file that cannot be read or is not a PE file (the DLL's own SHA-256 still tells files apart)."""
    try:
        data = path.read_bytes()
        pe = _u32(data, 0x3C)
        if data[pe:pe + 4] != b"PE\0\0":
            return None
        optional = pe + 24
        directories = {0x10B: optional + 96, 0x20B: optional + 112}.get(_u16(data, optional))
        count_at = {0x10B: optional + 92, 0x20B: optional + 108}.get(_u16(data, optional))
        if directories is None or count_at is None or _u32(data, count_at) <= _SECURITY_DIRECTORY:
            return None
        checksum, security = optional + 64, directories + 8 * _SECURITY_DIRECTORY
        start, size = _u32(data, security), _u32(data, security + 4)
        if start + size > len(data) or (start and start < security + 8):
            return None
    except (OSError, IndexError):
        return None
    digest = hashlib.sha256()
    digest.update(data[:checksum])
    digest.update(data[checksum + 4:security])
    if start:
        digest.update(data[security + 8:start])
        digest.update(data[start + size:])
    else:
        digest.update(data[security + 8:])
    return digest.hexdigest()


#: IMAGE_DIRECTORY_ENTRY_SECURITY: its "address" is a file offset.
_SECURITY_DIRECTORY = 4


def _u16(data: bytes, offset: int) -> int:
    if offset < 0 or offset + 2 > len(data):
        raise IndexError(offset)
    return int.from_bytes(data[offset:offset + 2], "little")


def _u32(data: bytes, offset: int) -> int:
    if offset < 0 or offset + 4 > len(data):
        raise IndexError(offset)
    return int.from_bytes(data[offset:offset + 4], "little")


def compare_rows(rows: list[MatrixRow], reference: str | None = None) -> str | None:
    """Compare every row that ran with the reference (default: the first row that ran, which is the newest when
    rows are newest first); the reference used, or None when it did not run."""
    chosen = next((row for row in rows if row.state.has_run and (reference is None or
                                                                 row.package_version == reference)), None)
    if chosen is None or chosen.run is None:
        return None
    for row in rows:
        if row.run is not None and row is not chosen:
            row.comparison = compare_runs(chosen.run, row.run, chosen.package_version)
    return chosen.package_version


def compare_runs(reference: RunResult, other: RunResult, reference_name: str) -> Comparison:
    comparison = Comparison(reference_name)
    theirs = {result.id: result for result in reference.results}
    compared = 0
    for result in other.results:
        base = theirs.get(result.id)
        if base is None or _raw(base) in _NOT_COMPARED or _raw(result) in _NOT_COMPARED:
            continue
        compared += 1
        if _raw(base) is not _raw(result):
            comparison.status_changed.append(result.id)
        if base.output_sha256 is None and result.output_sha256 is None:
            continue
        if base.output_sha256 is None or result.output_sha256 is None:
            comparison.outputs_in_one_run.append(result.id)
        elif base.output_sha256 != result.output_sha256:
            comparison.output_changed.append(result.id)
    comparison.not_compared = len(theirs.keys() | {result.id for result in other.results}) - compared
    return comparison


def _raw(result: CaseResult) -> Status:
    """What the backend came to, before the level (NOT_REQUIRED) and the CI overlay."""
    return result.outcome if result.outcome is not None else result.status


def matrix_document(matrix: Matrix) -> dict[str, Any]:
    """matrix.json: the settings, the reference, and a row per release (newest first) with every differing id (a
    row that shares another's run: the counts only)."""
    return {
        "format": FORMAT,
        "started": matrix.started,
        "duration_s": round(matrix.duration_s, 3),
        "settings": matrix.settings,
        "reference": matrix.reference,
        "complete": matrix.complete,
        "releases": [_row_json(row) for row in matrix.rows],
    }


def _row_json(row: MatrixRow) -> dict[str, Any]:
    run = row.run
    comparison = row.comparison
    return {
        "package_version": row.package_version,
        "state": row.state.value,
        "directml_version": row.directml_version,
        "directml_dll_sha256": row.dll_sha256,
        "directml_image_sha256": row.image_sha256,
        "same_dll_as": row.same_dll_as,
        "same_dll_but_signature": row.resigned if row.same_dll_as else None,
        "same_image_as": row.same_image_as,
        "problem": row.problem or None,
        "result_file": row.result_file,
        "reused": row.reused,
        "feature_level": row.feature_level,
        "feature_level_source": None if run is None else run.backend.feature_level_source,
        "device": None if run is None else run.backend.device,
        "cases": None if run is None else len(run.results),
        "duration_s": None if run is None or row.state is RowState.SAME_DLL else round(run.duration_s, 3),
        "counts": None if run is None else row.counts(),
        "summary": None if run is None else dict(sorted(summary(run.results).items())),
        "against_reference": None if comparison is None else _comparison_json(comparison, row),
    }


def _comparison_json(comparison: Comparison, row: MatrixRow) -> dict[str, Any]:
    """The counts, and the case ids where the row has a run of its own (a shared run's are on its own row)."""
    listed = row.state is not RowState.SAME_DLL
    return {
        "reference": comparison.reference,
        "status_changed": len(comparison.status_changed),
        "status_changed_cases": comparison.status_changed if listed else None,
        "output_changed": len(comparison.output_changed),
        "output_changed_cases": comparison.output_changed if listed else None,
        "outputs_in_one_run": len(comparison.outputs_in_one_run),
        "outputs_in_one_run_cases": comparison.outputs_in_one_run if listed else None,
        "not_compared": comparison.not_compared,
    }
