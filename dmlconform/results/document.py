"""The JSON result document, format dmlconform-result/v1 (docs/reference/results.md), both ways.

Fields beyond the contract's are additions (v1 readers ignore them): per case `index`, `attempts`,
`baseline`, `expectation`, `moved`, `closeness`, `ulp_histogram`, `artifacts`, `waiver`, `output_sha256` (what
the backend returned, as dmlconform.output_digest defines it), `known_issue` (the DirectML release's known issue the
case fell under); at the top level `suite`, `shard`, `settings`, `expectations`, `interrupted`, `resumed`, `shards`,
`missing_shards`, `determinism`, `known_issues` (which list the run applied, or why none), `paths` (the execution
paths asked) and `path_summary` (per path its counts and feature-level verdicts); per case `path` and `stray_writes`;
per level `waived` and `known_issues`. Files written before an addition read back with its default (`closeness` None,
no histogram, no artifacts, no waiver, no digest, no known issue, the path the id names, no stray writes).

WAIVED (certification) is not one of the contract's v1 statuses: a waived case is written with the status it
came to (FAIL, CRASH, ...) and its `waiver` beside it, and read back as WAIVED. A v1 reader sees the failure,
which is what happened; the certification's verdict counts the waiver.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import AppliedKnownIssue, AppliedWaiver, CaseResult, MovedElement, Status
from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.feature_levels import FeatureLevel
from dmlconform.output_digest import DIGEST_PATTERN
from dmlconform.results import ResultsError
from dmlconform.run_result import ExpectationFile, KnownIssueRecord, RunResult, Shard, SuiteInfo, summary
from dmlconform.suite.shard import MAX_SHARDS
from dmlconform.surface.paths import PATH_NAMES, split_case_id
from dmlconform.ulp_histogram import UlpBucket
from dmlconform.verdicts import LevelVerdict, by_path, fingerprint, level_verdicts

FORMAT = "dmlconform-result/v1"
_BACKEND_KEYS = ("name", "version", "device", "feature_level", "feature_level_source")


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def written_status(result: CaseResult) -> tuple[Status, Status | None]:
    """The status and outcome a v1 document holds: a WAIVED case as what it came to (the waiver goes beside)."""
    if result.status is Status.WAIVED:
        return result.outcome or Status.FAIL, None
    return result.status, result.outcome


def case_json(result: CaseResult) -> dict[str, Any]:
    status, outcome = written_status(result)
    return {
        "id": result.id,
        "index": result.index,
        "op": result.op,
        "dtype": result.dtype,
        "rank": result.rank,
        "required_feature_level": result.required_level.label,
        "required": result.required,
        "status": status.value,
        "outcome": outcome.value if outcome else None,
        "matched": result.matched,
        "matched_all": list(result.matched_all),
        "behaviour": result.behaviour,
        "tolerance": result.tolerance.to_json() if result.tolerance else None,
        "max_ulp": result.max_ulp,
        "max_abs_error": _number(result.max_abs_error),
        "worst_index": list(result.worst_index) if result.worst_index is not None else None,
        "worst_elements": [
            {"index": list(e.index), "expected": e.expected, "actual": e.actual, "ulp": e.ulp, "allowed": e.allowed}
            for e in result.worst
        ],
        "message": result.message,
        "duration_s": round(result.duration_s, 6),
        "file": result.file,
        "tags": list(result.tags),
        "attempts": [s.value for s in result.attempts],
        "baseline": result.baseline.value if result.baseline else None,
        "expectation": result.expectation,
        "moved_count": result.moved_count,
        "moved": [{"output": m.output, "index": list(m.index), "values": list(m.values)} for m in result.moved],
        # JSON has no infinity: "inf" where an element allowed nothing is off; null where nothing was compared.
        "closeness": "inf" if result.closeness == math.inf else _number(result.closeness),
        "ulp_histogram": [{"ulps": b.label, "low": b.low, "high": b.high, "count": b.count}
                          for b in result.ulp_histogram],
        "artifacts": result.artifacts,
        "waiver": None if result.waiver is None else {"id": result.waiver.id, "reason": result.waiver.reason,
                                                      "granted_by": result.waiver.granted_by,
                                                      "date": result.waiver.date},
        "output_sha256": result.output_sha256,
        "known_issue": None if result.known_issue is None else known_issue_json(result.known_issue),
        "path": result.path,
        "stray_writes": list(result.stray_writes),
    }


def known_issue_json(issue: AppliedKnownIssue) -> dict[str, str]:
    return {"id": issue.id, "release": issue.release, "title": issue.title, "reference": issue.reference,
            "mode": issue.mode}


def known_issues_json(record: KnownIssueRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"mode": record.mode, "backend": record.backend, "release": record.release,
            "applied_release": record.applied_release, "source": record.source, "sha256": record.sha256,
            "issues": list(record.issues), "note": record.note}


def configuration(run: RunResult) -> dict[str, Any]:
    """What must agree between a journal and the run resuming it, and between shards being merged."""
    return {
        "tool_version": run.tool_version,
        "backend": run.backend.name,
        "target_feature_level": run.target_level.label,
        "suite": _suite_json(run.suite),
        "shard": _shard_json(run.shard),
        "settings": run.settings,
        # Paths differ between machines; the content is what must agree.
        "expectations": [{"kind": e.kind, "sha256": e.sha256} for e in run.expectations],
        # The known issues applied judge cases as expectations do (None where the backend loads no DirectML).
        "known_issues": None if run.known_issues is None else {
            "mode": run.known_issues.mode, "applied_release": run.known_issues.applied_release,
            "sha256": run.known_issues.sha256},
    }


def backend_json(info: BackendInfo) -> dict[str, Any]:
    return {"name": info.name, "version": info.version, "device": info.device,
            "feature_level": info.feature_level.label, "feature_level_source": info.feature_level_source,
            **info.extra}


def levels_json(verdicts: list[LevelVerdict]) -> dict[str, dict[str, Any]]:
    return {v.level.label: {"required": v.required, "matched": v.matched, "conformant": v.conformant,
                            "claimed": v.claimed, "known_failures": v.known_failures, "waived": v.waived,
                            "known_issues": v.known_issues, "operators": list(v.operators),
                            "untested": list(v.untested)}
            for v in verdicts}


def _written_summary(results: list[CaseResult]) -> dict[str, int]:
    return summary(replace(r, status=written_status(r)[0]) for r in results)


def paths_json(run: RunResult) -> dict[str, Any]:
    """Per execution path (contract §9): its cases' counts by status and its own feature-level verdicts."""
    return {name: {"cases": len(group), "summary": _written_summary(group),
                   "feature_levels": levels_json(level_verdicts(group, run.target_level))}
            for name, group in by_path(run.results, run.paths).items()}


def to_document(run: RunResult) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "tool_version": run.tool_version,
        "backend": backend_json(run.backend),
        "target_feature_level": run.target_level.label,
        "started": run.started.isoformat(),
        "duration_s": round(run.duration_s, 6),
        "summary": _written_summary(run.results),
        "feature_levels": levels_json(level_verdicts(run.results, run.target_level)),
        "paths": list(run.paths),
        "path_summary": paths_json(run),
        "behaviour_fingerprint": fingerprint(run.results),
        "suite": _suite_json(run.suite),
        "shard": _shard_json(run.shard),
        "settings": run.settings,
        "expectations": [{"kind": e.kind, "path": e.path, "sha256": e.sha256} for e in run.expectations],
        "interrupted": run.interrupted,
        "resumed": run.resumed,
        "shards": run.shards,
        "missing_shards": run.missing_shards,
        "determinism": {"repeat": run.settings.get("repeat", 1),
                        "nondeterministic": [r.id for r in run.results if r.moved_count]},
        "known_issues": known_issues_json(run.known_issues),
        "cases": [case_json(r) for r in run.results],
    }


def _suite_json(suite: SuiteInfo | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {"fingerprint": suite.fingerprint, "cases": suite.cases, "files": suite.files}


def _shard_json(shard: Shard | None) -> dict[str, int] | None:
    return None if shard is None else {"index": shard.index, "count": shard.count}


# -- reading ---------------------------------------------------------------------------------------------
#: Status by value, and feature levels and rules by their text as written: each case of a document names a few of
#: each, and parsing them again for every case was a fifth of reading a document.
_STATUSES = {status.value: status for status in Status}
_LEVELS: dict[str, FeatureLevel] = {}


@functools.lru_cache(maxsize=256)
def _rule(text: str) -> Tolerance:
    return Tolerance.parse(text)


class _Reader:
    """Typed access to one JSON object that names the file, the place and the field in every complaint."""

    def __init__(self, file: object, data: object, where: str | None = None, prefix: str = "") -> None:
        self.file, self.where, self.prefix = file, where, prefix
        if not isinstance(data, dict):
            raise ResultsError(file, "is not a JSON object", where, prefix.rstrip(".") or None)
        self.data: dict[str, Any] = data

    def fail(self, key: str, message: str) -> ResultsError:
        return ResultsError(self.file, message, self.where, self.prefix + key)

    def get(self, key: str, kind: type | tuple[type, ...], optional: bool = False, default: Any = None) -> Any:
        value = self.data.get(key)  # absent or null alike
        if value is None:
            if optional:
                return default
            raise self.fail(key, "missing")
        if not isinstance(value, kind) or (value.__class__ is bool and bool not in _as_tuple(kind)):
            names = "/".join(k.__name__ for k in _as_tuple(kind))
            raise self.fail(key, f"is {type(value).__name__} {json.dumps(value)[:40]}, expected {names}")
        return value

    def count(self, key: str, optional: bool = False, default: int | None = None) -> int | None:
        """An int that counts or indexes something, so never below 0."""
        value = self.get(key, int, optional, default)
        if value is not None and value < 0:
            raise self.fail(key, f"is {value}, expected 0 or more")
        return value

    def items(self, key: str, kind: type, optional: bool = False) -> tuple[Any, ...] | None:
        """A list whose every item is `kind` (bool is not an int here; ints are indices, 0 or more), as a tuple."""
        values = self.get(key, list, optional)
        if values is None:
            return None
        for position, value in enumerate(values):
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise self.fail(f"{key}[{position}]", f"is {type(value).__name__} {json.dumps(value)[:40]}, "
                                                      f"expected {kind.__name__}")
            if kind is int and value < 0:
                raise self.fail(f"{key}[{position}]", f"is {value}, expected an index (0 or more)")
        return tuple(values)

    def status(self, key: str, optional: bool = False) -> Status | None:
        text = self.get(key, str, optional)
        if text is None:
            return None
        status = _STATUSES.get(text)
        if status is None:
            raise self.fail(key, f"unknown status {text!r}")
        return status

    def level(self, key: str) -> FeatureLevel:
        text = self.get(key, str)
        level = _LEVELS.get(text)
        if level is None:
            try:
                level = _LEVELS[text] = FeatureLevel.parse(text)
            except ValueError as exc:
                raise self.fail(key, str(exc)) from None
        return level


    def child(self, key: str, optional: bool = False) -> _Reader | None:
        value = self.get(key, dict, optional)
        return None if value is None else _Reader(self.file, value, self.where, f"{self.prefix}{key}.")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


#: More JSON than this is not a result document (the full tier's is under 20 MiB): refused before it is read whole.
MAX_DOCUMENT_BYTES = 512 << 20
XZ_MAGIC = b"\xfd7zXZ\x00"


def read_document_bytes(path: Path) -> bytes:
    """A result file's JSON bytes, decompressed when it is xz (the kept whole tiers are `.json.xz`), bounded before
    anything is allocated; ResultsError (one line) for anything unreadable."""
    import lzma

    try:
        with path.open("rb") as file:
            raw = file.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise ResultsError(path, f"cannot be read ({exc.strerror or exc})") from None
    if raw.startswith(XZ_MAGIC) and len(raw) <= MAX_DOCUMENT_BYTES:
        decompressor = lzma.LZMADecompressor()
        try:
            raw = decompressor.decompress(raw, max_length=MAX_DOCUMENT_BYTES + 1)
        except lzma.LZMAError as exc:
            raise ResultsError(path, f"is not a readable xz file ({exc})") from None
        if len(raw) <= MAX_DOCUMENT_BYTES and not decompressor.eof:
            raise ResultsError(path, "the xz stream ends early (a truncated file)")
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ResultsError(path, f"larger than {MAX_DOCUMENT_BYTES >> 20} MiB of JSON: not a result document")
    return raw


def read_document(path: Path) -> RunResult:
    """A result file (`.json`, or `.json.xz`) back as a RunResult; ResultsError (one line) for anything unreadable."""
    raw = read_document_bytes(path)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResultsError(path, f"is not JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:  # a number past Python's digit limit; arrays nested too deep
        raise ResultsError(path, f"is not JSON this tool reads ({str(exc).splitlines()[0]})") from None
    return from_document(data, path)


def from_document(data: object, path: object) -> RunResult:
    top = _Reader(path, data)
    if top.data.get("format") != FORMAT:
        raise top.fail("format", f"is {top.data.get('format')!r}, not {FORMAT!r}")
    backend = top.child("backend")
    assert backend is not None
    extra = {k: str(v) for k, v in backend.data.items() if k not in _BACKEND_KEYS}
    info = BackendInfo(backend.get("name", str), backend.get("version", str), backend.get("device", str),
                       backend.level("feature_level"), backend.get("feature_level_source", str, True, ""), extra)
    try:
        started = datetime.fromisoformat(top.get("started", str))
    except ValueError:
        raise top.fail("started", "is not an ISO 8601 time") from None
    cases = top.get("cases", list)
    results = [case_from_json(case, path, position) for position, case in enumerate(cases)]
    run = RunResult(info, top.level("target_feature_level"), started, float(top.get("duration_s", (int, float))),
                    results, tool_version=top.get("tool_version", str))
    suite = top.child("suite", optional=True)
    if suite is not None:
        run.suite = SuiteInfo(suite.get("fingerprint", str), suite.count("cases"),
                              suite.get("files", dict, True, {}))
    shard = top.child("shard", optional=True)
    if shard is not None:
        run.shard = Shard(shard.get("index", int), shard.get("count", int))
        if not 1 <= run.shard.index <= run.shard.count <= MAX_SHARDS:
            raise shard.fail("index", f"shard {run.shard.index}/{run.shard.count} is not I/N with 1 <= I <= N <= "
                                      f"{MAX_SHARDS}")
    run.settings = top.get("settings", dict, True, {})
    paths = top.items("paths", str, True)
    if paths is not None:
        unknown = [name for name in paths if name not in PATH_NAMES]
        if unknown or not paths:
            raise top.fail("paths", f"is {list(paths)}, expected paths of {', '.join(PATH_NAMES)}")
        if paths != ("operator",):
            run.settings.setdefault("paths", list(paths))
    for position, entry in enumerate(top.get("expectations", list, True, [])):
        item = _Reader(path, entry, None, f"expectations[{position}].")
        run.expectations.append(ExpectationFile(item.get("kind", str), item.get("path", str), item.get("sha256", str)))
    run.interrupted = top.get("interrupted", str, True)
    run.resumed = top.count("resumed", True, 0)
    run.shards = top.get("shards", list, True, [])
    for position, entry in enumerate(run.shards):
        _Reader(path, entry, None, f"shards[{position}].")  # each an object: the file, count, cases of a shard
    run.missing_shards = top.get("missing_shards", list, True, [])
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in run.missing_shards):
        raise top.fail("missing_shards", "must be a list of shard numbers")
    record = top.child("known_issues", optional=True)
    if record is not None:
        run.known_issues = KnownIssueRecord(
            record.get("mode", str), record.get("backend", str), record.get("release", str, True),
            record.get("applied_release", str, True), record.get("source", str, True),
            record.get("sha256", str, True), record.items("issues", str, True) or (), record.get("note", str, True, ""))
    return run


def case_from_json(data: object, path: object, position: int, line: int | None = None) -> CaseResult:
    label = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else f"#{position + 1}"
    where = f"case {label}" if line is None else f"line {line}: case {label}"
    case = _Reader(path, data, where)
    status = case.status("status")
    assert status is not None
    tolerance = None
    rule = case.child("tolerance", optional=True)
    if rule is not None:
        try:
            tolerance = _rule(rule.get("rule", str))
        except ValueError as exc:
            raise rule.fail("rule", str(exc)) from None
    worst = []
    for number, element in enumerate(case.get("worst_elements", list, True, [])):
        item = _Reader(path, element, where, f"worst_elements[{number}].")
        worst.append(Element(item.items("index", int), item.get("expected", str), item.get("actual", str),
                             item.count("ulp", True), item.get("allowed", str, True, "")))
    moved = []
    for number, element in enumerate(case.get("moved", list, True, [])):
        item = _Reader(path, element, where, f"moved[{number}].")
        moved.append(MovedElement(item.get("output", str), item.items("index", int), item.items("values", str)))
    histogram = []
    for number, bucket in enumerate(case.get("ulp_histogram", list, True, [])):
        item = _Reader(path, bucket, where, f"ulp_histogram[{number}].")
        low, high = item.count("low", True), item.count("high", True)
        if (low is None) != (high is None) or (low is not None and low > high):
            raise item.fail("high", f"is {high} with low {low}: a bucket is low <= high, or both null (NaN/inf)")
        histogram.append(UlpBucket(low, high, item.count("count")))
    artifacts = case.get("artifacts", dict, True, {})
    for name, file in artifacts.items():
        if not isinstance(file, str):
            raise case.fail(f"artifacts.{name}", f"is {type(file).__name__}, expected a path")
    attempts = []
    for value in case.get("attempts", list, True, []):
        try:
            attempts.append(Status(value))
        except ValueError:
            raise case.fail("attempts", f"unknown status {value!r}") from None
    outcome = case.status("outcome", optional=True)
    waiver = None
    entry = case.child("waiver", optional=True)
    if entry is not None:
        if not status.failure:
            raise case.fail("waiver", f"covers a case whose status is {status.value}; a waiver covers only a failure")
        waiver = AppliedWaiver(entry.get("id", str), entry.get("reason", str), entry.get("granted_by", str),
                               entry.get("date", str))
        status, outcome = Status.WAIVED, status
    known_issue = None
    entry = case.child("known_issue", optional=True)
    if entry is not None:
        mode = entry.get("mode", str, True, "on")
        if mode not in ("on", "strict"):
            raise entry.fail("mode", f"is {mode!r}, not on or strict")
        known_issue = AppliedKnownIssue(entry.get("id", str), entry.get("release", str), entry.get("title", str),
                                        entry.get("reference", str), mode)
    return CaseResult(
        case.get("id", str), case.get("op", str), case.get("dtype", str), case.count("rank"),
        case.level("required_feature_level"), status, required=case.get("required", bool, True, True),
        matched=case.get("matched", str, True), matched_all=case.items("matched_all", str, True) or (),
        tolerance=tolerance, max_ulp=case.count("max_ulp", True),
        max_abs_error=case.get("max_abs_error", (int, float), True),
        worst_index=case.items("worst_index", int, True),
        message=case.get("message", str, True, ""), duration_s=float(case.get("duration_s", (int, float), True, 0.0)),
        worst=worst, tags=case.items("tags", str, True) or (), behaviour=case.get("behaviour", str, True),
        outcome=outcome, file=case.get("file", str, True, ""),
        index=case.count("index", True, position), attempts=tuple(attempts),
        baseline=case.status("baseline", optional=True), expectation=case.get("expectation", str, True),
        moved=moved, moved_count=case.count("moved_count", True, 0),
        closeness=_closeness(case), ulp_histogram=histogram, artifacts=dict(artifacts), waiver=waiver,
        output_sha256=_output_sha256(case), known_issue=known_issue, path=_path(case),
        stray_writes=case.items("stray_writes", str, True) or ())


def _path(case: _Reader) -> str:
    """The case's execution path: as written, else (a document written before paths) the one its id names."""
    value = case.get("path", str, True)
    if value is None:
        return split_case_id(case.get("id", str))[1].value
    if value not in PATH_NAMES:
        raise case.fail("path", f"is {value!r}, expected one of {', '.join(PATH_NAMES)}")
    return value


def _closeness(case: _Reader) -> float | None:
    value = case.get("closeness", (int, float, str), True)
    if value == "inf":
        return math.inf
    if isinstance(value, str):
        raise case.fail("closeness", f"is {value!r}, expected a number or \"inf\"")
    return None if value is None else float(value)


def _output_sha256(case: _Reader) -> str | None:
    value = case.get("output_sha256", str, True)
    if value is not None and not DIGEST_PATTERN.fullmatch(value):
        raise case.fail("output_sha256", f"is {value[:80]!r}, expected 64 lowercase hex digits")
    return value


#: Where two JSON values differ: keys and list positions from the top (empty: the values themselves).
JsonPath = tuple[str | int, ...]


def dotted(path: JsonPath) -> str:
    """A path as a field name for messages: a.b[2].c."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def value_at(data: object, path: JsonPath) -> object:
    """The value at a path that first_difference returned (None where there is none), for messages."""
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


def first_difference(ours: object, theirs: object) -> JsonPath | None:
    """The path of the first field where two JSON values differ, or None when they are equal. Iterative: a value
    nested as deep as json.loads allows must not run out of stack here."""
    pending: list[tuple[JsonPath, object, object]] = [((), ours, theirs)]
    while pending:
        path, a, b = pending.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            keys = list(a) + [k for k in b if k not in a]
            pending.extend(((*path, key), a.get(key), b.get(key)) for key in reversed(keys))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            pending.extend(((*path, position), a[position], b[position]) for position in reversed(range(len(a))))
        elif a != b:
            return path
    return None
