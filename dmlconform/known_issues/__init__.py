"""Known issues of DirectML releases: the cases a release is known to fail, shipped with the package.

A conformance run tests a device and its driver *through* a DirectML release; that release's own bugs are not the
driver's. `directml.yaml` beside this module lists them, one entry per bug, each with the releases that have it, the
backends it shows through, the cases it makes fail (ids or regular expressions matching whole ids), what those cases
come to, the kept results that show it on two or more stacks (the same failure byte for byte), and the reference to
the investigation. `run` and `certify` apply the list of the release they load (results/expectations.py and
certification/known_issues.py); `verify` re-derives with its own. docs/known-issues.md says what a known issue is
and is not.

Plain data and the file format only: this room knows nothing of runs, reports or packages.

```yaml
format: dmlconform-known-issues/v1
date: 2026-11-27                      # when the list was last revised
measured:                             # the releases measured, per backend: a release here with no issue has none
  directml: [1.9.0, 1.15.4]
  onnxruntime-dml: [1.15.4]
issues:
  - id: DML-SLICE-GRAD-WINDOW-SIZE-ZERO
    title: accepts a Slice window of size 0 (the Slice1 page asks for a non-empty window)
    releases: [1.9.0, 1.15.4]         # DirectML versions (the DLL's file version without its last part)
    backends: [directml]              # directml (the operators themselves), onnxruntime-dml (the DML EP's graphs)
    cases: [slice_grad.invalid/window-size-zero, 'slice_grad.standard/refuse-window-size-zero-axis[0-9]+']
    ops: [SLICE_GRAD]                 # optional: only cases of these operators
    paths: [operator, graph]          # optional: the execution paths it shows on (default [operator]: measured)
    outcomes: [FAIL]                  # what a covered case comes to (default FAIL)
    occurs: always                    # always: every covered case fails; sometimes: it may (order-dependent)
    message: DXGI_ERROR_DEVICE_REMOVED   # optional: a regular expression the failure's message must contain
    evidence: [examples/dml_harness/results/directml-1.15.4-lavapipe-standard.json, ...]
    reference: examples/dml_harness/results/DECISIONS.md §6
```
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import FAILURES, CaseResult, Status
from dmlconform.ops import OPERATORS
from dmlconform.run_result import KnownIssueRecord
from dmlconform.surface.paths import PATH_NAMES, split_case_id
from dmlconform.yaml_file import YamlFileError, iso_date, load_yaml_bytes

FORMAT = "dmlconform-known-issues/v1"
SHIPPED_NAME = "directml.yaml"
MAX_LIST_BYTES = 4 << 20
#: The backends a known issue can show through: the DirectML operators themselves (the `directml` backend's
#: harness), and onnxruntime-directml's DirectML EP running the `onnxruntime` backend's graphs.
BACKENDS = ("directml", "onnxruntime-dml")
_ISSUE_KEYS = ("id", "title", "releases", "backends", "cases", "ops", "paths", "outcomes", "occurs", "message",
               "evidence", "reference")
#: The execution paths (contract §9) an issue shows on when it names none: the operator path, where every issue so far
#: was measured.
DEFAULT_PATHS = ("operator",)
_ID = re.compile(r"[A-Z0-9][A-Z0-9._\-]{0,99}")
_RELEASE = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")
_STATUS_NAMES = {s.value: s for s in FAILURES}


class KnownIssueError(ValueError):
    """An unusable known-issue list or choice; one line naming the file, where in it and the field."""

    def __init__(self, file: object, message: str, where: str | None = None, field: str | None = None) -> None:
        parts = [str(file)] + ([where] if where else []) + ([f"field {field}"] if field else []) + [message]
        super().__init__(": ".join(parts).replace("\r", "\\r").replace("\n", "\\n"))


class Mode(Enum):
    """`--known-issues`: on (the default), off (they count as failures), strict (one that passes fails the run)."""

    ON = "on"
    OFF = "off"
    STRICT = "strict"


class Occurs(Enum):
    #: Every covered case fails, on every stack, every time: a covered case that passes is UNEXPECTED_PASS.
    ALWAYS = "always"
    #: A covered case may fail (which ones depends on the order cases meet the harness): a pass says nothing.
    SOMETIMES = "sometimes"


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    releases: tuple[str, ...]
    backends: tuple[str, ...]
    #: Case ids, or regular expressions that must match a whole id (an entry equal to an id is that id).
    cases: tuple[str, ...]
    #: Only cases of these operators (empty: any).
    ops: tuple[str, ...]
    outcomes: tuple[Status, ...]
    occurs: Occurs
    message: str | None
    evidence: tuple[str, ...]
    reference: str
    #: The execution paths it shows on: `cases` name the suites' ids, and a result's id on another path (`...@graph`)
    #: is matched by its suite id when its path is one of these.
    paths: tuple[str, ...] = DEFAULT_PATHS

    def covers(self, result: CaseResult) -> bool:
        if self.ops and result.op not in self.ops:
            return False
        case_id, path = split_case_id(result.id)
        if path.value not in self.paths:
            return False
        return any(entry == case_id or re.fullmatch(entry, case_id) for entry in self.cases)

    def explains(self, result: CaseResult, raw: Status) -> bool:
        """Whether the case's failure is this issue's: an outcome it lists, with its message where it names one."""
        return raw in self.outcomes and (self.message is None or re.search(self.message, result.message) is not None)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "releases": list(self.releases), "backends": list(self.backends),
                "cases": list(self.cases), "ops": list(self.ops), "outcomes": [s.value for s in self.outcomes],
                "occurs": self.occurs.value,
                "message": self.message, "evidence": list(self.evidence), "reference": self.reference,
                # Only where it is not the default: a release's canonical bytes (and their digest, which packages and
                # runs record) stay what they were before paths existed.
                **({"paths": list(self.paths)} if self.paths != DEFAULT_PATHS else {})}


@dataclass(frozen=True)
class KnownIssueList:
    #: Where it came from: "dmlconform X.Y.Z" for the shipped list, else the file's path.
    source: str
    date: str
    #: Per backend, the releases whose results the list was made from (sorted): one here with no issue has none.
    measured: dict[str, tuple[str, ...]]
    issues: tuple[KnownIssue, ...]

    def knows(self, release: str, backend: str) -> bool:
        return release in self.measured.get(backend, ())

    def by_id(self, issue_id: str) -> KnownIssue | None:
        return next((issue for issue in self.issues if issue.id == issue_id), None)

    def for_release(self, release: str, backend: str) -> ReleaseIssues:
        issues = tuple(i for i in self.issues if release in i.releases and backend in i.backends)
        return ReleaseIssues(release, backend, self.source, self.date, issues)


@dataclass(frozen=True)
class ReleaseIssues:
    """The known issues one run applies: those of one release, through one backend."""

    release: str
    backend: str
    source: str
    date: str
    issues: tuple[KnownIssue, ...]

    def by_id(self, issue_id: str) -> KnownIssue | None:
        return next((issue for issue in self.issues if issue.id == issue_id), None)

    @property
    def sha256(self) -> str:
        """A digest of exactly what is applied (not of the whole list): two dmlconform versions whose lists agree
        on this release agree here."""
        return hashlib.sha256(canonical_bytes(self)).hexdigest()

    def issue_for(self, result: CaseResult, raw: Status) -> KnownIssue | None:
        """The issue a case that came to `raw` falls under: the first covering it that explains the failure, else
        (for a pass, or another failure) the first `always` issue covering it."""
        covering = [i for i in self.issues if i.covers(result)]
        explaining = next((i for i in covering if i.explains(result, raw)), None)
        if explaining is not None:
            return explaining
        return next((i for i in covering if i.occurs is Occurs.ALWAYS), None)


def canonical_bytes(issues: ReleaseIssues) -> bytes:
    """The release's issues as a small self-contained list, the same bytes for the same issues (kept in a package)."""
    document = {"format": FORMAT, "date": issues.date, "release": issues.release, "backend": issues.backend,
                "source": issues.source, "issues": [issue.to_json() for issue in issues.issues]}
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def parse_release_issues(raw: bytes, name: str) -> ReleaseIssues:
    """A release's issues as `canonical_bytes` wrote them (a certification package's copy); KnownIssueError if they
    are not exactly that."""
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise KnownIssueError(name, f"is not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise KnownIssueError(name, f"is not a {FORMAT} release list", field="format")
    fields = {}
    for key in ("date", "release", "backend", "source"):
        value = document.get(key)
        if not isinstance(value, str) or not value:
            raise KnownIssueError(name, "missing", field=key)
        fields[key] = value
    entries = document.get("issues")
    if not isinstance(entries, list):
        raise KnownIssueError(name, "must be a list of known issues", field="issues")
    issues = tuple(_issue(name, entry, position) for position, entry in enumerate(entries))
    parsed = ReleaseIssues(fields["release"], fields["backend"], fields["source"], fields["date"], issues)
    if canonical_bytes(parsed) != raw:
        raise KnownIssueError(name, "is not in the canonical form dmlconform writes (changed after it was written?)")
    return parsed


def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def release_of(text: str) -> str | None:
    """'1.15.4.0', 'DirectML 1.15.4.0' -> '1.15.4'; None for anything without a version."""
    found = re.search(r"(?<![0-9.])([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})(?:\.[0-9]+)?(?![0-9.])", text or "")
    return found.group(1) if found else None


def loaded_release(info: BackendInfo) -> tuple[str, str | None] | None:
    """(backend, DirectML release) for a backend that loads a DirectML.dll, else None: the directml backend (its
    harness reads the DLL's file version), a native harness whose handshake names the DirectML it drives (api
    "DirectML 1.15.4.0": a vendor's own harness calls the same operators), and the onnxruntime backend on the DML
    EP."""
    if info.name == "directml":
        return "directml", release_of(info.extra.get("directml_dll_version", "") or info.extra.get("api", ""))
    if info.name == "native" and info.extra.get("api", "").startswith("DirectML "):
        return "directml", release_of(info.extra["api"])
    if info.name == "onnxruntime" and info.extra.get("provider") == "DmlExecutionProvider":
        return "onnxruntime-dml", release_of(info.extra.get("directml", ""))
    return None


@dataclass(frozen=True)
class Resolution:
    """What a run applies: the issues (None: none), and one line saying which list it used, or that it has none."""

    backend: str
    release: str | None
    issues: ReleaseIssues | None
    note: str
    mode: Mode = Mode.ON

    def record(self) -> KnownIssueRecord:
        """The run's record of it, as result documents keep it."""
        issues = self.issues
        return KnownIssueRecord(self.mode.value, self.backend, self.release, issues.release if issues else None,
                                issues.source if issues else None, issues.sha256 if issues else None,
                                tuple(i.id for i in issues.issues) if issues else (), self.note)


@dataclass(frozen=True)
class KnownIssueChoice:
    """What the command line asked for: `--known-issues`, `--known-issues-file`, `--known-issues-release`."""

    mode: Mode = Mode.ON
    #: None: the list this dmlconform ships.
    listing: KnownIssueList | None = None
    #: Apply this release's list whatever the backend loads (a DLL given by path, a private build).
    release: str | None = None

    def checked(self) -> KnownIssueChoice:
        """The choice with its list read, and a named release checked against it (KnownIssueError if unknown)."""
        listing = self.listing or shipped()
        if self.release is not None:
            release = release_of(self.release)
            if release is None or self.release.strip() != release:
                raise KnownIssueError("--known-issues-release", f"{self.release!r} is not a DirectML version "
                                                                "(MAJOR.MINOR.PATCH, e.g. 1.15.4)")
            if not any(listing.knows(release, backend) for backend in BACKENDS):
                raise KnownIssueError("--known-issues-release", f"{listing.source} has no known-issue list for "
                                                                f"DirectML {release}; it has {_measured_text(listing)}")
        return KnownIssueChoice(self.mode, listing, self.release)

    def resolve(self, info: BackendInfo) -> Resolution | None:
        """The issues for the release the backend loaded; None for a backend that loads no DirectML."""
        loaded = loaded_release(info)
        if loaded is None:
            return None
        backend, release = loaded
        listing = self.listing or shipped()
        if self.mode is Mode.OFF:
            return Resolution(backend, release, None, f"DirectML {release or '(version unknown)'}: known issues "
                                                      "not applied (--known-issues off): each counts as a failure",
                              self.mode)
        named = self.release is not None
        chosen = self.release if named else release
        if chosen is None:
            return Resolution(backend, None, None, f"the DirectML.dll's version is unknown, so no known-issue list "
                                                   f"applies ({listing.source} has {_measured_text(listing)}; "
                                                   "--known-issues-release V picks one)", self.mode)
        loaded_text = f"DirectML {release or '(version unknown)'}"
        how = f", as --known-issues-release says ({loaded_text} loaded)" if named and chosen != release else ""
        if not listing.knows(chosen, backend):
            return Resolution(backend, release, None, f"{loaded_text}: {listing.source} has no known-issue list for "
                                                      f"it through {backend} (it has {_measured_text(listing)}): "
                                                      "every failure counts; --known-issues-release V applies "
                                                      "another release's", self.mode)
        issues = listing.for_release(chosen, backend)
        count = len(issues.issues)
        return Resolution(backend, release, issues,
                          f"DirectML {chosen}: {count} known issue(s) through {backend} from {listing.source}'s list "
                          f"(sha256 {issues.sha256[:12]}){how}", self.mode)


def _measured_text(listing: KnownIssueList) -> str:
    parts = [f"{backend} {', '.join(releases)}" for backend, releases in sorted(listing.measured.items())]
    return "; ".join(parts) or "none"


# -- reading --------------------------------------------------------------------------------------------------
@cache
def shipped() -> KnownIssueList:
    """The list this dmlconform ships (read once: verify, certify and a run each ask for it)."""
    from dmlconform import __version__

    raw = resources.files(__package__).joinpath(SHIPPED_NAME).read_bytes()
    return parse_known_issues(raw, f"dmlconform {__version__}")


def load_known_issues(path: Path) -> KnownIssueList:
    """A list given by a user (`--known-issues-file`), bounded before it is read."""
    try:
        if path.stat().st_size > MAX_LIST_BYTES:
            raise KnownIssueError(path, f"is larger than {MAX_LIST_BYTES >> 20} MiB; not read")
        raw = path.read_bytes()
    except OSError as exc:
        raise KnownIssueError(path, f"cannot be read ({exc.strerror or exc})") from None
    return parse_known_issues(raw, str(path))


def parse_known_issues(raw: bytes, name: str) -> KnownIssueList:
    try:
        document = load_yaml_bytes(raw)
    except YamlFileError as exc:
        raise KnownIssueError(name, exc.message, exc.where) from None
    if not isinstance(document, dict):
        raise KnownIssueError(name, f"is not a mapping with format: {FORMAT}, date and issues: [...]")
    if document.get("format") != FORMAT:
        raise KnownIssueError(name, f"is {document.get('format')!r}, not {FORMAT!r}", field="format")
    unknown = sorted(str(k) for k in document if k not in ("format", "date", "measured", "issues"))
    if unknown:
        raise KnownIssueError(name, "is not a field of a known-issue list (format, date, measured, issues)",
                              field=unknown[0])
    date = iso_date(document.get("date"))
    if date is None:
        raise KnownIssueError(name, "missing or not a date (YYYY-MM-DD): when the list was last revised",
                              field="date")
    measured = _measured(name, document.get("measured"))
    entries = document.get("issues")
    if not isinstance(entries, list):
        raise KnownIssueError(name, "must be a list of known issues", field="issues")
    issues: list[KnownIssue] = []
    for position, entry in enumerate(entries):
        issue = _issue(name, entry, position)
        if any(i.id == issue.id for i in issues):
            raise KnownIssueError(name, f"{issue.id!r} is used by two issues", f"issues[{position}]", "id")
        for backend in issue.backends:
            for release in issue.releases:
                if release not in measured.get(backend, ()):
                    raise KnownIssueError(name, f"{release} through {backend} is not in measured: an issue is of "
                                                "a release whose results were taken", f"issue {issue.id}",
                                          "releases")
        issues.append(issue)
    return KnownIssueList(name, date, measured, tuple(issues))


def _measured(name: str, value: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict) or not value:
        raise KnownIssueError(name, f"must map backends ({', '.join(BACKENDS)}) to the releases measured",
                              field="measured")
    measured = {}
    for backend, releases in value.items():
        if backend not in BACKENDS:
            raise KnownIssueError(name, f"{backend!r} is not one of {', '.join(BACKENDS)}", field="measured")
        if not isinstance(releases, list) or not all(isinstance(r, str) and _RELEASE.fullmatch(r) for r in releases):
            raise KnownIssueError(name, "must be a list of DirectML versions (MAJOR.MINOR.PATCH)",
                                  field=f"measured.{backend}")
        measured[backend] = tuple(sorted(set(releases), key=release_key))
    return measured


def _issue(name: str, entry: object, position: int) -> KnownIssue:
    label = entry.get("id") if isinstance(entry, dict) and isinstance(entry.get("id"), str) else f"#{position + 1}"
    where = f"issue {label}"

    def fail(field: str, message: str) -> KnownIssueError:
        return KnownIssueError(name, message, where, field)

    if not isinstance(entry, dict):
        raise KnownIssueError(name, "is not a mapping", where)
    unknown = sorted(str(k) for k in entry if k not in _ISSUE_KEYS)
    if unknown:
        raise fail(unknown[0], f"is not a known-issue field ({', '.join(_ISSUE_KEYS)})")
    text: dict[str, str] = {}
    for key in ("id", "title", "reference"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise fail(key, "missing: a known issue names its id, its title and its reference")
        text[key] = " ".join(value.split())
    if not _ID.fullmatch(text["id"]):
        raise fail("id", f"{text['id']!r}: an id is capital letters, digits and . _ - (at most 100)")
    releases = _texts(fail, entry, "releases", "DirectML versions such as 1.15.4")
    for number, release in enumerate(releases):
        if not _RELEASE.fullmatch(release):
            raise fail(f"releases[{number}]", f"{release!r} is not a DirectML version (MAJOR.MINOR.PATCH)")
    backends = _texts(fail, entry, "backends", f"backends ({', '.join(BACKENDS)})")
    for number, backend in enumerate(backends):
        if backend not in BACKENDS:
            raise fail(f"backends[{number}]", f"{backend!r} is not one of {', '.join(BACKENDS)}")
    cases = _texts(fail, entry, "cases", "case ids or regular expressions")
    for number, case in enumerate(cases):
        try:
            re.compile(case)
        except (re.error, OverflowError, RecursionError) as exc:
            raise fail(f"cases[{number}]", f"{case!r} is not a regular expression ({exc})") from None
    ops = () if entry.get("ops") == [] else _texts(fail, entry, "ops", "DML_OPERATOR names", default=())
    known_ops = {op.name for op in OPERATORS.values()}
    for number, op in enumerate(ops):
        if op not in known_ops:
            raise fail(f"ops[{number}]", f"{op!r} is not an operator ({', '.join(sorted(known_ops))})")
    paths = _texts(fail, entry, "paths", f"execution paths ({', '.join(PATH_NAMES)})", default=DEFAULT_PATHS)
    for number, path in enumerate(paths):
        if path not in PATH_NAMES:
            raise fail(f"paths[{number}]", f"{path!r} is not an execution path ({', '.join(PATH_NAMES)})")
    if len(set(paths)) != len(paths):
        raise fail("paths", "names a path twice")
    paths = tuple(name for name in PATH_NAMES if name in paths)
    outcome_names = _texts(fail, entry, "outcomes", "statuses", default=("FAIL",))
    outcomes = []
    for number, outcome in enumerate(outcome_names):
        status = _STATUS_NAMES.get(outcome.upper())
        if status is None:
            raise fail(f"outcomes[{number}]", f"{outcome!r} is not a failure status "
                                              f"({', '.join(s.value for s in FAILURES)})")
        outcomes.append(status)
    occurs_text = entry.get("occurs", Occurs.ALWAYS.value)
    try:
        occurs = Occurs(occurs_text)
    except ValueError:
        raise fail("occurs", f"{occurs_text!r} is not always or sometimes") from None
    message = entry.get("message")
    if message is not None:
        if not isinstance(message, str) or not message:
            raise fail("message", "must be a regular expression")
        try:
            re.compile(message)
        except (re.error, OverflowError, RecursionError) as exc:
            raise fail("message", f"{message!r} is not a regular expression ({exc})") from None
    evidence = _texts(fail, entry, "evidence", "the kept results that show it")
    return KnownIssue(text["id"], text["title"], releases, backends, cases, ops, tuple(outcomes), occurs, message,
                      evidence, text["reference"], paths)


def _texts(fail: Any, entry: dict[str, Any], key: str, what: str,
           default: tuple[str, ...] | None = None) -> tuple[str, ...]:
    value = entry.get(key)
    if value is None and default is not None:
        return default
    if not isinstance(value, list) or not value or not all(isinstance(v, str | float | int) and not isinstance(
            v, bool) and str(v).strip() for v in value):
        raise fail(key, f"must be a non-empty list of {what}")
    return tuple(str(v).strip() for v in value)
