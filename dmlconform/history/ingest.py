"""Result documents into runs of the history.

A document (`dmlconform-result/v1`, plain or xz-compressed) is read bounded, checked by the results layer's reader,
and becomes a RunRecord: its identity (the SHA-256 of its canonical JSON, so that adding it twice, or its
compressed copy, adds nothing), its stack (backend on device, or `--meta stack=NAME`), its configuration (a digest
of what the document says went into it besides the code under test), its metadata (taken from the document, plus
the `--meta key=value` a CI job gives: build, branch, commit, job URL) and one row per case.

`add_records` writes runs in one transaction: a document that does not parse, or a database that fails halfway,
leaves the history as it was.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dmlconform.case_result import CaseResult, Status
from dmlconform.history import HistoryError
from dmlconform.history.database import Database, chunks, placeholders
from dmlconform.history.schema import STATUS_CODES
from dmlconform.results import ResultsError
from dmlconform.results import document as results_document
from dmlconform.results.document import from_document
from dmlconform.run_result import RunResult
from dmlconform.verdicts import effective_status, fingerprint

META_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
MAX_META_ENTRIES = 64
MAX_META_VALUE = 1024
#: BIGINT's largest: a ULP distance past it (float64's can reach 2^64) is stored as this.
MAX_STORED_ULP = (1 << 63) - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Metadata every run gets from its document, where the document has it.
DERIVED_KEYS = ("backend", "backend_version", "device", "feature_level", "target_level", "driver_version",
                "directml_version", "directml_sha256", "directml_origin", "program", "api", "vulkan_driver", "wine",
                "tool_version", "suite_fingerprint", "suite_cases", "tier", "expression", "adapter", "ep", "shard",
                "started")
#: The metadata that, with the settings and the expectation files, makes a run's configuration.
CONFIGURATION_KEYS = ("backend", "backend_version", "device", "feature_level", "target_level", "driver_version",
                      "directml_sha256", "program", "api", "vulkan_driver", "wine", "tool_version",
                      "suite_fingerprint")
#: The one derived name a CI job may give itself: the stack's name.
STACK_KEY = "stack"
CASE_COLUMNS = ("run_id", "case_id", "status", "outcome", "passed", "matched", "closeness", "max_ulp", "known_issue")


@dataclass(frozen=True)
class CaseRow:
    name: str
    op: str
    dtype: str
    status: Status
    #: What the case came to (the raw status behind EXPECTED_FAIL, FLAKE, NOT_REQUIRED, WAIVED...).
    outcome: Status
    #: 1 matched, 0 failed, None neither (see `passed_value`).
    passed: int | None
    matched: str | None
    closeness: float | None
    max_ulp: int | None
    #: The DirectML release's known issue the case fell under (EXPECTED_FAIL, UNEXPECTED_PASS, WAIVED): "ID (1.15.4)".
    known_issue: str | None = None


@dataclass(frozen=True)
class RunRecord:
    digest: str
    source: str
    stack: str
    configuration: str
    started: datetime
    meta: dict[str, str]
    summary: dict[str, int]
    fingerprint: dict[str, str]
    cases: tuple[CaseRow, ...]

    @property
    def passed(self) -> int:
        return sum(1 for case in self.cases if case.passed == 1)

    @property
    def failed(self) -> int:
        return sum(1 for case in self.cases if case.passed == 0)


@dataclass(frozen=True)
class Added:
    run_id: int
    digest: str
    stack: str
    source: str
    cases: int
    #: False where the history held the run already (nothing was written).
    new: bool


def passed_value(result: CaseResult) -> int | None:
    """1 where the case matched (PASS, INVALID_OK; UNEXPECTED_PASS and a matched NOT_REQUIRED by what they came
    to), 0 where it failed (FAIL, ERROR, CRASH, TIMEOUT, NOT_SUPPORTED; EXPECTED_FAIL, FLAKE and WAIVED by what they
    came to), None otherwise: skipped, not run, or above the claimed level and not matched (not a failure there)."""
    outcome = effective_status(result)
    if outcome.matched:
        return 1
    if outcome.failure and result.status is not Status.NOT_REQUIRED:
        return 0
    return None


def parse_meta(items: Iterable[str]) -> dict[str, str]:
    """`--meta key=value` entries: a key of letters, digits, `_.-` (a letter first), a value of one line."""
    meta: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not META_KEY.fullmatch(key):
            raise HistoryError(f"--meta {item[:80]}: give key=value, the key a letter then letters, digits or _.-")
        if not value.strip():  # `--meta build=$BUILD` with BUILD unset: a CI's mistake, not a value to keep
            raise HistoryError(f"--meta {key}=: the value is empty (an unset variable?); give {key} a value or "
                               "leave the entry out")
        if key in DERIVED_KEYS and key != STACK_KEY:
            raise HistoryError(f"--meta {key}: taken from the result document itself; give another key")
        if len(value) > MAX_META_VALUE or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise HistoryError(f"--meta {key}: the value must be one line of at most {MAX_META_VALUE} characters")
        meta[key] = value
    if len(meta) > MAX_META_ENTRIES:
        raise HistoryError(f"--meta: {len(meta)} keys; at most {MAX_META_ENTRIES}")
    return meta


def read_document_bytes(path: Path) -> bytes:
    """A result file's JSON bytes (results/document.py: xz or not, bounded), HistoryError for anything unreadable."""
    try:
        return results_document.read_document_bytes(path)
    except ResultsError as exc:
        raise HistoryError(str(exc)) from None


def read_record(path: Path, meta: Mapping[str, str] | None = None) -> RunRecord:
    """The run a result file holds (`.json` or `.json.xz`)."""
    return record_from_text(read_document_bytes(path), str(path), meta)


def record_from_text(text: bytes | str, source: str, meta: Mapping[str, str] | None = None) -> RunRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HistoryError(f"{source}: is not JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:  # bad UTF-8, a number past Python's digit limit, nesting too deep
        raise HistoryError(f"{source}: is not JSON this tool reads ({str(exc).splitlines()[0]})") from None
    return record_from_document(data, source, meta)


def canonical_digest(data: object) -> str:
    """SHA-256 of the document's JSON with sorted keys and no spaces: the same for the file, its xz copy, and the
    document as `run --record` has it before writing."""
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (ValueError, RecursionError) as exc:
        raise HistoryError(f"cannot digest the document ({exc})") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def record_from_document(data: object, source: str, meta: Mapping[str, str] | None = None) -> RunRecord:
    try:
        run = from_document(data, source)
    except ResultsError as exc:
        raise HistoryError(str(exc)) from None
    digest = canonical_digest(data)
    seen: set[str] = set()
    for result in run.results:
        if result.id in seen:
            raise HistoryError(f"{source}: case {result.id}: listed twice in one run")
        seen.add(result.id)
    derived = document_meta(run)
    given = dict(meta or {})
    stack = given.get(STACK_KEY) or f"{run.backend.name} on {run.backend.device}"
    all_meta = {**derived, **given, STACK_KEY: stack}
    started = run.started if run.started.tzinfo is not None else run.started.replace(tzinfo=UTC)
    return RunRecord(
        digest=digest, source=source, stack=stack, configuration=configuration_digest(run, derived),
        started=started.astimezone(UTC), meta=all_meta, summary=_summary(run), fingerprint=fingerprint(run.results),
        cases=tuple(_case_row(result) for result in run.results))


def document_meta(run: RunResult) -> dict[str, str]:
    """The metadata a result document carries, by the names of DERIVED_KEYS."""
    extra = run.backend.extra
    settings = run.settings
    values: dict[str, Any] = {
        "backend": run.backend.name, "backend_version": run.backend.version, "device": run.backend.device,
        "feature_level": run.backend.feature_level.label, "target_level": run.target_level.label,
        "driver_version": extra.get("driver_version"),
        "directml_version": extra.get("directml_dll_version") or extra.get("directml"),
        "directml_sha256": extra.get("directml_dll_sha256"), "directml_origin": extra.get("directml_origin"),
        "program": extra.get("program"), "api": extra.get("api"), "vulkan_driver": extra.get("vulkan_driver"),
        "wine": extra.get("wine"), "tool_version": run.tool_version,
        "suite_fingerprint": run.suite.fingerprint if run.suite else None,
        # How many cases the whole selection holds (a shard holds part of them) and the -k expression: with the
        # tier, what tells the history that a stack's newer suite no longer holds a case (queries.selection).
        "suite_cases": run.suite.cases if run.suite else None,
        "tier": settings.get("tier"), "expression": settings.get("expression"), "adapter": settings.get("adapter"),
        "ep": settings.get("ep"),
        "shard": str(run.shard) if run.shard else None,
        "started": run.started.isoformat(timespec="seconds"),
    }
    return {key: str(value)[:MAX_META_VALUE] for key, value in values.items() if value not in (None, "")}


def configuration_digest(run: RunResult, derived: Mapping[str, str]) -> str:
    """What went into the run besides the code under test, as a digest: runs of one stack that share it had the
    same inputs, so a case whose status differs between them is flaky."""
    inputs = {"meta": {key: derived.get(key) for key in CONFIGURATION_KEYS}, "settings": run.settings,
              "expectations": [entry.sha256 for entry in run.expectations]}
    return canonical_digest(inputs)


def _summary(run: RunResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in run.results:
        counts[result.status.value] = counts.get(result.status.value, 0) + 1
    return counts


def _case_row(result: CaseResult) -> CaseRow:
    closeness = result.closeness
    if closeness is not None and math.isnan(closeness):
        closeness = None
    max_ulp = None if result.max_ulp is None else min(result.max_ulp, MAX_STORED_ULP)
    issue = result.known_issue
    return CaseRow(result.id, result.op, result.dtype, result.status, effective_status(result), passed_value(result),
                   result.matched, closeness, max_ulp, None if issue is None else f"{issue.id} ({issue.release})")


def started_us(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


# -- writing --------------------------------------------------------------------------------------------------------
def add_records(database: Database, records: Iterable[RunRecord]) -> list[Added]:
    """Every run in one transaction (records may be a generator that reads files as it goes: an error in any
    leaves the history as it was). A run the history holds already is left as it is."""
    added = []
    with database.write():
        for record in records:
            added.append(_add(database, record))
    return added


def _add(database: Database, record: RunRecord) -> Added:
    database.query("INSERT INTO stacks (name) VALUES (?) ON CONFLICT (name) DO NOTHING", (record.stack,))
    stack_id = database.query("SELECT id FROM stacks WHERE name = ?", (record.stack,))[0][0]
    rows = database.query(
        "INSERT INTO runs (digest, stack_id, configuration, started, started_us, added, source, cases, passed, failed,"
        " summary, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (digest) DO NOTHING RETURNING id",
        (record.digest, stack_id, record.configuration, record.started.isoformat(), started_us(record.started),
         datetime.now(UTC).isoformat(timespec="seconds"), record.source[:MAX_META_VALUE], len(record.cases),
         record.passed, record.failed, json.dumps(record.summary, sort_keys=True),
         json.dumps(record.fingerprint, sort_keys=True)))
    if not rows:
        run_id = database.query("SELECT id FROM runs WHERE digest = ?", (record.digest,))[0][0]
        return Added(run_id, record.digest, record.stack, record.source, len(record.cases), new=False)
    run_id = rows[0][0]
    case_ids = _case_ids(database, record.cases)
    database.copy_rows("case_results", CASE_COLUMNS, (
        (run_id, case_ids[case.name], STATUS_CODES[case.status], STATUS_CODES[case.outcome], case.passed,
         case.matched, case.closeness, case.max_ulp, case.known_issue) for case in record.cases))
    failures = [(run_id, case_ids[case.name]) for case in record.cases
                if case.passed == 0 or case.status is Status.FLAKE]
    if failures:
        database.executemany("INSERT INTO failures (run_id, case_id) VALUES (?, ?)", failures)
    database.executemany("INSERT INTO run_meta (run_id, key, value) VALUES (?, ?, ?)",
                         [(run_id, key, value) for key, value in sorted(record.meta.items())])
    return Added(run_id, record.digest, record.stack, record.source, len(record.cases), new=True)


def _case_ids(database: Database, cases: tuple[CaseRow, ...]) -> dict[str, int]:
    known = {name: case_id for case_id, name in database.query("SELECT id, name FROM cases")}
    # Sorted: two PostgreSQL writers adding the same new cases take their row locks in one order (no deadlock).
    missing = sorted({case.name: case for case in cases if case.name not in known}.values(), key=lambda c: c.name)
    if missing:
        database.executemany("INSERT INTO cases (name, op, dtype) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                             [(case.name, case.op, case.dtype) for case in missing])
        for chunk in chunks([case.name for case in missing]):
            known.update((name, case_id) for case_id, name in
                         database.query(f"SELECT id, name FROM cases WHERE name IN {placeholders(len(chunk))}", chunk))
    return known
