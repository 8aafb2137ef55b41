"""Checking a certification package (`dmlconform verify`): one Problem per thing that is not as certify wrote it,
or that shows the claim does not hold.

What it proves, and what it cannot, is in docs/certification.md: the files are the ones the checksum list names;
the suite run is the one this dmlconform ships, whole, with no selection, skip, baseline or flake list; every
case's status, candidate and largest ULP distance follow from the outputs kept in the package, judged again here
with the same comparator; the shards are complete and disjoint; every waiver applied is in the package's waiver
file, names the case and is granted for the device the handshake names. It cannot prove that the outputs came
from that device: a spot-check re-run on the certifier's own unit (`verify --rerun N`) does that for a sample.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlconform import __version__
from dmlconform.backends.base import Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import CaseResult, Status
from dmlconform.certification import (
    CERTIFICATION,
    CHECKSUMS,
    ENVIRONMENT,
    FORMAT,
    HTML,
    JUNIT,
    KNOWN_ISSUES,
    MANIFEST,
    OUTPUTS,
    PACKAGE_TIERS,
    RESULTS,
    SHARDS,
    STATEMENT,
    WAIVERS,
    CertificationError,
    Problem,
    ProblemKind,
)
from dmlconform.certification.checksums import check_checksums, file_sha256, parse_checksums
from dmlconform.certification.environment import ENVIRONMENT_FORMAT, tool_record
from dmlconform.certification.known_issues import rederived
from dmlconform.certification.manifest import MANIFEST_FORMAT, manifest_differences
from dmlconform.certification.package import MAX_JSON_BYTES, known_issues_document, read_json_file
from dmlconform.certification.statement import render_statement
from dmlconform.certification.verdict import CertificationVerdict, certification_verdict
from dmlconform.certification.waivers import DeviceIdentity, WaiverFile, parse_waivers, waiver_use
from dmlconform.feature_levels import FeatureLevel
from dmlconform.known_issues import MAX_LIST_BYTES, KnownIssueError, KnownIssueList, parse_release_issues, shipped
from dmlconform.report.html import render_html
from dmlconform.report.junit import junit_bytes
from dmlconform.results import ResultsError
from dmlconform.results.artifacts import artifact_folder, npy_from_bytes
from dmlconform.results.document import (
    backend_json,
    case_json,
    dotted,
    first_difference,
    from_document,
    to_document,
    value_at,
)
from dmlconform.run_result import RunResult
from dmlconform.runner import default_retries
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite.fingerprint import selection_fingerprint
from dmlconform.suite.shard import MAX_SHARDS, shard_assignment, shard_positions
from dmlconform.surface.buffers import images_before, write_elements
from dmlconform.surface.paths import EDGES_SUFFIX, PATH_NAMES
from dmlconform.verdicts import effective_status

#: Room for a .npy header beside the data an output can hold.
NPY_HEADER_BYTES = 64 << 10
#: An output's name; on the graph path also its copy between identity nodes (`...@edges`).
_OUTPUT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}(?:@edges)?")
#: Raw statuses that say the backend returned no outputs, and what it did instead.
_WITHOUT_OUTPUTS = {Status.INVALID_OK: OutcomeKind.REFUSED, Status.PASS: OutcomeKind.REFUSED,
                    Status.FAIL: OutcomeKind.REFUSED, Status.NOT_SUPPORTED: OutcomeKind.NOT_SUPPORTED,
                    Status.ERROR: OutcomeKind.ERROR, Status.CRASH: OutcomeKind.CRASH,
                    Status.TIMEOUT: OutcomeKind.TIMEOUT}


@dataclass
class OpenedPackage:
    """The package after the first look: its checksums checked and its claim read (when it could be)."""

    folder: Path
    problems: list[Problem]
    #: Files whose SHA-256 matched the checksum list.
    intact: set[str]
    digest: str | None
    document: dict[str, Any] | None
    level: FeatureLevel | None = None
    tier: str | None = None
    custom_suite: bool = False
    #: The execution paths the claim was made on (claim.paths; the operator path alone where it names none).
    paths: tuple[str, ...] = ("operator",)


@dataclass
class Shipped:
    """What this dmlconform holds for the claimed tier: the cases and the suite files' digests."""

    cases: list[Case]
    manifest: dict[str, str]
    #: How messages name it: "dmlconform 0.1.0's standard tier".
    name: str
    #: The known-issue list to re-derive a package's with (None: the one this dmlconform ships).
    known_issues: KnownIssueList | None = None


@dataclass
class Verification:
    problems: list[Problem] = field(default_factory=list)
    run: RunResult | None = None
    verdict: CertificationVerdict | None = None
    #: The outputs of the cases asked for (case id -> output name -> array), as read and judged, for a spot-check.
    outputs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: Differences that are not problems: this dmlconform's known-issue list against the package's.
    notes: list[str] = field(default_factory=list)
    #: The cases whose recorded stray writes (contract §9) were taken as recorded: the bytes around a kept output are
    #: not in the package, so a write outside a tensor cannot be re-derived; it can only fail a case.
    stray_writes: list[str] = field(default_factory=list)

    def worst(self) -> ProblemKind | None:
        kinds = {p.kind for p in self.problems}
        return next((k for k in (ProblemKind.INVALID, ProblemKind.SPOT_CHECK, ProblemKind.CLAIM) if k in kinds), None)


def looks_like_package(folder: Path) -> bool:
    return folder.is_dir() and ((folder / CHECKSUMS).exists() or (folder / CERTIFICATION).exists())


def open_package(folder: Path) -> OpenedPackage:
    problems, intact, digest = check_checksums(folder)
    opened = OpenedPackage(folder, problems, intact, digest, None)
    document = _read_json(folder, CERTIFICATION, problems)
    if not isinstance(document, dict):
        return opened
    if document.get("format") != FORMAT:
        problems.append(_invalid(CERTIFICATION, f"field format: is {document.get('format')!r}, not {FORMAT!r}"))
        return opened
    opened.document = document
    claim = document.get("claim")
    suite = document.get("suite")
    if not isinstance(claim, dict) or not isinstance(suite, dict):
        problems.append(_invalid(CERTIFICATION, "field claim or suite: missing; the claim cannot be read"))
        return opened
    try:
        opened.level = FeatureLevel.parse(claim.get("feature_level"))
    except ValueError as exc:
        problems.append(_invalid(CERTIFICATION, f"field claim.feature_level: {exc}"))
    tier = claim.get("tier")
    if tier not in PACKAGE_TIERS:
        problems.append(_invalid(CERTIFICATION, f"field claim.tier: {tier!r} is not a tier a package can hold "
                                                f"({', '.join(PACKAGE_TIERS)})"))
    else:
        opened.tier = tier
    opened.custom_suite = suite.get("custom_root") is True
    paths = claim.get("paths", ["operator"])
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p in PATH_NAMES for p in paths) \
            or list(paths) != [name for name in PATH_NAMES if name in paths]:
        problems.append(_invalid(CERTIFICATION, f"field claim.paths: {paths!r} is not a list of execution paths "
                                                f"({', '.join(PATH_NAMES)}) in that order"))
    else:
        opened.paths = tuple(paths)
    return opened


def verify_package(opened: OpenedPackage, shipped: Shipped, granted: WaiverFile | None = None,
                   digest: str | None = None, keep_outputs: frozenset[str] = frozenset()) -> Verification:
    """Every check after the first look. `shipped` is this dmlconform's suite for the claimed tier; the outputs of
    the cases in `keep_outputs` stay in the verification (for a spot-check)."""
    check = _Check(opened, shipped, keep_outputs)
    check.run_all(granted, digest)
    return check.verification


def _invalid(where: str, message: str) -> Problem:
    return Problem(ProblemKind.INVALID, where, message)


def _read_json(folder: Path, name: str, problems: list[Problem]) -> object:
    """A JSON file of the package (bounded by its kind's limit); None, with the problem noted, if unusable."""
    path = folder / name
    if not path.is_file():
        if not any(p.where == name for p in problems):
            problems.append(_invalid(name, "missing"))
        return None
    try:
        return read_json_file(path, MAX_JSON_BYTES[name.rsplit("/", 1)[-1]])
    except CertificationError as exc:
        problems.append(_invalid(name, str(exc).removeprefix(f"{path}: ")))
        return None


def _missing_shards(records: object) -> tuple[list[int], int]:
    """The shard numbers of 1..N that certification.json's `shards` does not list, and N; ([], 0) when it lists no
    shards or is unreadable there (check_shards says so)."""
    if not isinstance(records, list) or not records or not isinstance(records[0], dict):
        return [], 0
    count = records[0].get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_SHARDS:
        return [], 0
    listed = {r.get("index") for r in records if isinstance(r, dict)}
    return [index for index in range(1, count + 1) if index not in listed], count


class _Check:
    def __init__(self, opened: OpenedPackage, shipped: Shipped, keep_outputs: frozenset[str]) -> None:
        self.opened, self.shipped, self.keep_outputs = opened, shipped, keep_outputs
        self.folder = opened.folder
        self.verification = Verification(opened.problems)
        assert opened.document is not None and opened.level is not None
        self.document: dict[str, Any] = opened.document
        self.level: FeatureLevel = opened.level
        self.fingerprint = selection_fingerprint(shipped.cases)
        #: The shards certification.json leaves out of 1..N, and N (0 when it lists none or is unreadable there).
        self.missing_shards, self.shard_count = _missing_shards(self.document.get("shards"))
        self._shards: list[int] | None = None

    def fail(self, where: str, message: str) -> None:
        self.verification.problems.append(_invalid(where, message))

    def read_json(self, name: str) -> object:
        return _read_json(self.folder, name, self.verification.problems)

    # -- the whole ------------------------------------------------------------------------------------------
    def run_all(self, granted: WaiverFile | None, digest: str | None) -> None:
        if digest is not None and self.opened.digest != digest.lower():
            self.fail(CHECKSUMS, f"its SHA-256 is {self.opened.digest}, not the package digest given ({digest})")
        self.check_tool()
        self.check_manifest()
        raw = self.read_json(RESULTS)
        if not isinstance(raw, dict):
            return
        try:
            run = from_document(raw, RESULTS)
        except ResultsError as exc:
            self.fail(RESULTS, str(exc).removeprefix(f"{RESULTS}: "))
            return
        self.verification.run = run
        self.check_environment(run)
        self.check_missing_shards()
        self.check_run(run, raw)
        self.check_cases(run)
        waivers = self.check_waivers(run, granted)
        self.check_known_issues(run)
        self.check_shards(run)
        self.check_derived(run, raw, waivers)
        assert self.opened.tier is not None
        verdict = certification_verdict(run, self.level, self.opened.tier)
        self.verification.verdict = verdict
        recorded = self.document.get("verdict")
        if recorded != verdict.to_json():
            difference = dotted(first_difference(recorded, verdict.to_json()) or ()) or "verdict"
            self.fail(CERTIFICATION, f"field verdict.{difference}: is not what results.json gives "
                                     f"(certified: {verdict.certified})")
        if self.verification.worst() is None or self.verification.worst() is ProblemKind.CLAIM:
            self.claim_problems(run, verdict)

    def claim_problems(self, run: RunResult, verdict: CertificationVerdict) -> None:
        by_id = {r.id: r for r in run.results}
        for reason in verdict.reasons:
            self.verification.problems.append(Problem(ProblemKind.CLAIM, CERTIFICATION, f"claim: {reason}"))
        for case_id in verdict.not_matched:
            result = by_id[case_id]
            message = " ".join(result.message.split())[:200]
            self.verification.problems.append(Problem(ProblemKind.CLAIM, f"{RESULTS}: case {case_id}",
                                                      f"{effective_status(result).value}, not waived: {message}"))

    # -- tool, environment, suite ---------------------------------------------------------------------------
    def check_tool(self) -> None:
        recorded, ours = self.document.get("tool"), tool_record()
        if recorded != ours:
            version = recorded.get("version") if isinstance(recorded, dict) else None
            source = recorded.get("source_sha256") if isinstance(recorded, dict) else None
            self.fail(CERTIFICATION, f"field tool: made by dmlconform {version} (source sha256 {str(source)[:16]}…), "
                                     f"this is dmlconform {ours['version']} (source sha256 "
                                     f"{ours['source_sha256'][:16]}…): a package is verified by the release that "
                                     "made it, unmodified")

    def check_manifest(self) -> None:
        manifest = self.read_json(MANIFEST)
        if not isinstance(manifest, dict):
            return
        if manifest.get("format") != MANIFEST_FORMAT:
            self.fail(MANIFEST, f"field format: is {manifest.get('format')!r}, not {MANIFEST_FORMAT!r}")
        files = manifest.get("files")
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            self.fail(MANIFEST, "field files: missing, or not a mapping of file to SHA-256")
            return
        if manifest.get("tier") != self.opened.tier:
            self.fail(MANIFEST, f"field tier: is {manifest.get('tier')!r}, the claim says {self.opened.tier!r}")
        for name, difference in manifest_differences(files, self.shipped.manifest, self.shipped.name):
            self.fail(f"{MANIFEST}: file {name}", difference)
        fingerprint = self.fingerprint
        for key, ours in (("fingerprint", fingerprint), ("cases", len(self.shipped.cases))):
            if manifest.get(key) != ours:
                self.fail(MANIFEST, f"field {key}: is {manifest.get(key)!r}, {self.shipped.name} gives {ours!r}")
        suite = self.document.get("suite", {})
        for key, ours in (("fingerprint", fingerprint), ("cases", len(self.shipped.cases)), ("files", len(files)),
                          ("tier", self.opened.tier)):
            if suite.get(key) != ours:
                self.fail(CERTIFICATION, f"field suite.{key}: is {suite.get(key)!r}, not {ours!r}")

    def check_environment(self, run: RunResult) -> None:
        environment = self.read_json(ENVIRONMENT)
        backend = backend_json(run.backend)
        if self.document.get("device") != backend:
            field_name = dotted(first_difference(self.document.get("device"), backend) or ())
            self.fail(CERTIFICATION, f"field device.{field_name}: is not the backend results.json names")
        if not isinstance(environment, dict):
            return
        if environment.get("format") != ENVIRONMENT_FORMAT:
            self.fail(ENVIRONMENT, f"field format: is {environment.get('format')!r}, not {ENVIRONMENT_FORMAT!r}")
        if environment.get("backend") != backend:
            field_name = dotted(first_difference(environment.get("backend"), backend) or ())
            self.fail(ENVIRONMENT, f"field backend.{field_name}: is not the backend results.json names")
        for key in ("tool", "harness_files"):
            if environment.get(key) != self.document.get(key):
                self.fail(ENVIRONMENT, f"field {key}: is not what certification.json names")

    # -- the run --------------------------------------------------------------------------------------------
    def check_run(self, run: RunResult, raw: dict[str, Any]) -> None:
        where = RESULTS
        if run.tool_version != __version__:
            self.fail(where, f"field tool_version: is {run.tool_version!r}, this is dmlconform {__version__}")
        if run.target_level != self.level:
            self.fail(where, f"field target_feature_level: is {run.target_level}, the claim is {self.level}")
        settings = run.settings
        expected = {"expression": None, "tier": self.opened.tier, "repeat": 1,
                    "retries": default_retries(run.backend.name)}
        for key, value in expected.items():
            if settings.get(key) != value:
                why = {"expression": "a certification runs every case (no -k)",
                       "retries": "a certification retries as CI does"}.get(key, "fixed in a certification")
                self.fail(where, f"field settings.{key}: is {settings.get(key)!r}, not {value!r}: {why}")
        for file in run.expectations:
            self.fail(where, f"field expectations: a {file.kind} list was used ({file.path}, sha256 "
                             f"{file.sha256[:16]}…); a certification runs without baselines, skips or flakes")
        if run.interrupted:
            self.fail(where, f"field interrupted: the run was stopped by {run.interrupted}; incomplete")
        if run.shard is not None:
            self.fail(where, f"field shard: this is shard {run.shard} of a run; a certification merges every "
                             "shard (dmlconform certify --merge)")
        for index in run.missing_shards:
            count = run.shards[0]["count"] if run.shards else "?"
            if not self.shard_count:
                self.fail(where, f"field missing_shards: shard {index}/{count} missing: its cases are not in the "
                                 "package")
            elif index not in self.missing_shards:  # the same shard missing is said once, by certification.json's
                self.fail(where, f"field missing_shards: says shard {index}/{count} is missing; certification.json "
                                 "lists it")
        if run.suite is None or run.suite.fingerprint != self.fingerprint:
            self.fail(where, f"field suite.fingerprint: is not the fingerprint of {self.shipped.name}")
        if run.suite is not None and run.suite.cases != len(self.shipped.cases):
            self.fail(where, f"field suite.cases: is {run.suite.cases}, {self.shipped.name} has "
                             f"{len(self.shipped.cases)}")
        rebuilt = to_document(run)
        for key in ("summary", "feature_levels", "behaviour_fingerprint"):
            if raw.get(key) != rebuilt[key]:
                path = (key, *(first_difference(raw.get(key), rebuilt[key]) or ()))
                self.fail(where, f"field {dotted(path)}: says {json.dumps(value_at(raw, path))}, the cases give "
                                 f"{json.dumps(value_at(rebuilt, path))}")

    def check_cases(self, run: RunResult) -> None:
        positions = {case.full_id: position for position, case in enumerate(self.shipped.cases)}
        seen: dict[str, int] = {}
        referenced: set[str] = set()
        # Positions are worth a line each only where the run selected the shipped cases (else that is the news).
        same_selection = run.suite is not None and run.suite.fingerprint == self.fingerprint
        for number, result in enumerate(run.results):
            where = f"{RESULTS}: case {result.id}"
            if result.id in seen:
                self.fail(where, f"is in the package twice (entries {seen[result.id] + 1} and {number + 1})")
                continue
            seen[result.id] = number
            position = positions.get(result.id)
            if position is None:
                self.fail(where, f"is not a case of {self.shipped.name}")
                continue
            if result.index != position and same_selection:
                self.fail(where, f"field index: is {result.index}, the case is number {position} of the selection")
            self.check_case(self.shipped.cases[position], result, where, referenced)
        # The cases of a missing shard are said once, in the shard's own line (check_missing_shards), not one by one.
        shards = self._shard_of_cases()
        in_missing_shards = {case.full_id for case, shard in zip(self.shipped.cases, shards, strict=True)
                             if shard in self.missing_shards}
        missing = [case.full_id for case in self.shipped.cases
                   if case.full_id not in seen and case.full_id not in in_missing_shards]
        for case_id in missing:
            self.fail(f"{RESULTS}: case {case_id}", f"missing: {self.shipped.name} has it and the package does not")
        order = [positions[r.id] for r in run.results if r.id in positions]
        if order != sorted(order):
            self.fail(RESULTS, "field cases: not in selection order")
        for relative in sorted(self._files_under(OUTPUTS)):
            if relative not in referenced:
                self.fail(relative, "is not the output of any case in results.json")

    def _files_under(self, name: str) -> set[str]:
        root = self.folder / name
        if not root.is_dir():
            return set()
        return {p.relative_to(self.folder).as_posix() for p in root.rglob("*") if p.is_file()}

    def check_case(self, case: Case, result: CaseResult, where: str, referenced: set[str]) -> None:
        status = result.status
        if status in (Status.SKIPPED, Status.NOT_RUN):
            self.fail(where, f"field status: {status.value}: every case of a certification runs")
            return
        if status in (Status.EXPECTED_FAIL, Status.UNEXPECTED_PASS) or result.baseline is not None:
            self.fail(where, f"field status: {status.value} (baseline {result.expectation or '?'}): a baseline "
                             "never counts in a certification")
        if result.expectation is not None and status is not Status.FLAKE:
            self.fail(where, f"field expectation: {result.expectation}: a certification runs without expectations")
        outputs = self.read_outputs(case, result, where, referenced)
        if outputs is None:
            return
        # Stray writes are taken as recorded (the bytes around the kept outputs are not in the package): the judge
        # fails the case re-judged on its values, as it did when it read the buffers back; worse, never better.
        if result.stray_writes and (not outputs or not case.uses_buffers):
            self.fail(where, "field stray_writes: recorded on a case " + (
                "that kept no outputs" if not outputs else "run without whole buffers (no layout, the operator "
                "path)") + ": a stray write is only seen in a buffer read back")
            return
        fresh = judge_outcome(case, self.outcome(result, outputs, case), self.level, result.stray_writes)
        case.forget_references()
        recorded, again = effective_status(result), effective_status(fresh)
        source = ("its outputs in the package" if outputs else
                  "with no outputs in the package (the backend returned none)")
        if recorded is not again:
            shown = status.value + (f" ({recorded.value})" if recorded is not status else "")
            self.fail(where, f"field status: {shown} in results.json, but {source} re-judge to {again.value}: "
                             f"{' '.join(fresh.message.split())[:200]}")
            return
        for name in ("required", "matched", "max_ulp"):
            if getattr(result, name) != getattr(fresh, name):
                self.fail(where, f"field {name}: is {getattr(result, name)!r} in results.json, but {source} "
                                 f"re-judge to {getattr(fresh, name)!r}")
        self.check_overlay(result, fresh, where)
        if result.stray_writes:
            self.verification.stray_writes.append(result.id)
        if outputs and result.id in self.keep_outputs:
            self.verification.outputs[result.id] = outputs

    def check_overlay(self, result: CaseResult, fresh: CaseResult, where: str) -> None:
        """The status beyond what the backend came to: NOT_REQUIRED above the level, FLAKE when its runs
        disagreed, WAIVED with a waiver; nothing else."""
        raw = effective_status(fresh)
        status = result.status
        if not fresh.required:
            allowed = {Status.NOT_REQUIRED}
        elif raw.matched:
            allowed = {raw}
        else:
            allowed = {raw, Status.FLAKE, Status.WAIVED}
        if status not in allowed:
            if status not in (Status.EXPECTED_FAIL, Status.UNEXPECTED_PASS):  # named above already
                self.fail(where, f"field status: is {status.value}, but a case that came to {raw.value} is "
                                 f"{' or '.join(sorted(s.value for s in allowed))}")
            return
        if status is Status.FLAKE and not any(s.matched for s in result.attempts):
            self.fail(where, f"field status: FLAKE, but no run of it matched (attempts: "
                             f"{', '.join(s.value for s in result.attempts) or 'none'})")
        if status is Status.WAIVED and result.waiver is None:
            self.fail(where, "field waiver: missing on a WAIVED case")
        if status is not Status.WAIVED and result.waiver is not None:
            self.fail(where, f"field waiver: {result.waiver.id} on a case that is not WAIVED")

    def read_outputs(self, case: Case, result: CaseResult, where: str,
                     referenced: set[str]) -> dict[str, np.ndarray] | None:
        """The outputs kept for the case ({} when the backend returned none); None if they cannot be trusted."""
        outputs: dict[str, np.ndarray] = {}
        folder = artifact_folder(Path(OUTPUTS), result.id)
        limit = NPY_HEADER_BYTES + max((_nbytes(case, name) for name in case.description.tensors), default=0)
        for name, recorded in sorted(result.artifacts.items()):
            expected = (folder / f"{name}.npy").as_posix()
            if not _OUTPUT_NAME.fullmatch(name) or recorded != expected:
                self.fail(where, f"field artifacts.{name}: is {recorded!r}; a package keeps outputs at "
                                 f"{OUTPUTS}/<suite>/<case>/<output>.npy")
                return None
            referenced.add(expected)
            path = self.folder / expected
            if expected not in self.opened.intact and not path.is_file():
                self.fail(where, f"field artifacts.{name}: {expected} is missing")
                return None
            size_limit = NPY_HEADER_BYTES + _nbytes(case, name) if name in case.description.tensors else limit
            try:
                if path.stat().st_size > size_limit:
                    self.fail(expected, f"is larger than output {name} of case {result.id} can be; not read")
                    return None
                outputs[name] = npy_from_bytes(path.read_bytes())
            except (OSError, ValueError, EOFError) as exc:
                self.fail(expected, f"is not a readable .npy file ({exc})")
                return None
        return outputs

    @staticmethod
    def outcome(result: CaseResult, outputs: dict[str, np.ndarray], case: Case | None = None) -> Outcome:
        """What the backend did, as the package records it: its outputs, or (none kept) what its status says. A case
        run with whole buffers (a layout, the graph or in-place path) gets them back with each kept output written
        where its layout puts it; the bytes around them are not kept, so a recorded stray write is not re-derived."""
        if outputs and case is not None and case.uses_buffers:
            binding = case.binding
            images = {name: bytearray(image) for name, image in
                      images_before(case.description, binding, case.inputs).items()}
            for image, buffer in binding.output_buffers().items():
                if image not in outputs:
                    return Outcome.ran(outputs)  # judged as it is: the missing output is an ERROR
                base = image.removesuffix(EDGES_SUFFIX)
                layout = case.description.layout(buffer.removesuffix(EDGES_SUFFIX))
                write_elements(case.description.tensors[base], layout, images[buffer], outputs[image])
            return Outcome.ran_buffers({name: bytes(image) for name, image in images.items()})
        if outputs:
            return Outcome.ran(outputs)
        raw = effective_status(result)
        kind = _WITHOUT_OUTPUTS.get(raw, OutcomeKind.ERROR)
        message = result.message
        if result.status is Status.WAIVED and message.startswith("waived ("):
            message = message.split(": ", 2)[-1]
        return Outcome(kind, message=message)

    # -- DirectML's known issues -----------------------------------------------------------------------------
    def check_known_issues(self, run: RunResult) -> None:
        """The known issues applied are the package's known-issues.json, as certification.json records them; then
        re-derived with this dmlconform's own list for the release (certification/known_issues.py)."""
        recorded = self.document.get("known_issues")
        path = self.folder / KNOWN_ISSUES
        issues = None
        if isinstance(recorded, dict) and recorded.get("file") is not None:
            if recorded.get("file") != KNOWN_ISSUES or not path.is_file():
                self.fail(KNOWN_ISSUES, "missing: certification.json names it")
            else:
                try:
                    raw = path.read_bytes() if path.stat().st_size <= MAX_LIST_BYTES else b""
                    issues = parse_release_issues(raw, KNOWN_ISSUES)
                except (OSError, KnownIssueError) as exc:
                    self.fail(KNOWN_ISSUES, str(exc).removeprefix(f"{KNOWN_ISSUES}: "))
                if issues is not None and recorded.get("sha256") != issues.sha256:
                    self.fail(CERTIFICATION, f"field known_issues.sha256: is not the digest of {KNOWN_ISSUES}")
        elif path.is_file():
            self.fail(KNOWN_ISSUES, "is in the package, but certification.json names no known-issue file")
        expected = known_issues_document(run, issues)
        if recorded != expected:
            difference = dotted(first_difference(recorded, expected) or ()) or "known_issues"
            self.fail(CERTIFICATION, f"field {difference}: is not what {RESULTS} and {KNOWN_ISSUES} give")
        for result in run.results:
            applied = result.known_issue
            if applied is None:
                continue
            where = f"{RESULTS}: case {result.id}"
            issue = issues.by_id(applied.id) if issues is not None else None
            raw = effective_status(result)
            if result.status is not Status.WAIVED or result.waiver is None or result.waiver.id != applied.id:
                self.fail(where, f"field known_issue: {applied.id} on a case not WAIVED by it")
            elif issue is None:
                self.fail(where, f"WAIVED as known issue {applied.id}, which {KNOWN_ISSUES} does not hold")
            elif not issue.covers(result) or not issue.explains(result, raw):
                self.fail(where, f"known issue {applied.id} in {KNOWN_ISSUES} does not cover this case's {raw.value}")
            elif (applied.title, applied.reference, applied.release) != (issue.title, issue.reference, issues.release):
                self.fail(where, f"field known_issue: is not issue {applied.id} of {KNOWN_ISSUES}")
        release = recorded.get("release") if isinstance(recorded, dict) else None
        backend = recorded.get("backend") if isinstance(recorded, dict) else None
        if issues is not None:
            release, backend = issues.release, issues.backend
        if not isinstance(release, str) or not isinstance(backend, str):
            return
        problems, notes = rederived(release, backend, issues, self.shipped.known_issues or shipped(), run.results)
        self.verification.notes += notes
        for case_id, message in problems:
            self.verification.problems.append(Problem(ProblemKind.CLAIM, f"{RESULTS}: case {case_id}", message))

    # -- waivers --------------------------------------------------------------------------------------------
    def check_waivers(self, run: RunResult, granted: WaiverFile | None) -> WaiverFile | None:
        recorded = self.document.get("waivers")
        if not isinstance(recorded, dict):
            self.fail(CERTIFICATION, "field waivers: missing")
            return None
        path = self.folder / WAIVERS
        waivers = None
        if path.is_file():
            if recorded.get("file") != WAIVERS:
                self.fail(WAIVERS, "is in the package, but certification.json names no waiver file")
            try:
                raw = path.read_bytes() if path.stat().st_size <= 1 << 20 else b""
                waivers = parse_waivers(raw, WAIVERS)
            except (OSError, CertificationError) as exc:
                self.fail(WAIVERS, str(exc).removeprefix(f"{WAIVERS}: "))
            if waivers is not None and recorded.get("sha256") != waivers.sha256:
                self.fail(CERTIFICATION, "field waivers.sha256: is not the SHA-256 of waivers.yaml")
        elif recorded.get("file") is not None:
            self.fail(WAIVERS, "missing: certification.json names it")
        device = DeviceIdentity.of(run.backend)
        for result in run.results:
            applied = result.waiver
            if applied is None or result.known_issue is not None:  # DirectML's own: check_known_issues
                continue
            where = f"{RESULTS}: case {result.id}"
            waiver = waivers.by_id(applied.id) if waivers is not None else None
            if waiver is None:
                self.fail(where, f"WAIVED by {applied.id}, which the package's waiver file does not hold")
                continue
            if waiver.applied() != applied:
                difference = next(k for k in ("reason", "granted_by", "date")
                                  if getattr(waiver, k) != getattr(applied, k))
                self.fail(where, f"field waiver.{difference}: is not waiver {applied.id}'s in {WAIVERS}")
            if not waiver.covers(result.id):
                self.fail(where, f"WAIVED by {applied.id}, which does not name this case")
            if not waiver.applies_to(device):
                self.fail(where, f"WAIVED by {applied.id}, which is granted for "
                                 f"{'; '.join(d.describe() for d in waiver.devices)}, not for this package's device "
                                 f"({device.describe()})")
        use = waiver_use(run.results, waivers, device).to_json()
        for key, value in use.items():
            if recorded.get(key) != value:
                self.fail(CERTIFICATION, f"field waivers.{key}: is not what results.json and waivers.yaml give")
        if granted is not None and waivers is not None:
            for waiver_id in use["applied"]:
                ours, theirs = waivers.by_id(waiver_id), granted.by_id(waiver_id)
                if theirs is None:
                    self.fail(f"{WAIVERS}: waiver {waiver_id}", f"is not in the granted list {granted.path}")
                elif ours is not None and ours.to_json() != theirs.to_json():
                    difference = dotted(first_difference(ours.to_json(), theirs.to_json()) or ())
                    self.fail(f"{WAIVERS}: waiver {waiver_id}", f"field {difference}: differs from the granted list "
                                                                f"{granted.path}")
        return waivers

    # -- shards ---------------------------------------------------------------------------------------------
    def _shard_of_cases(self) -> list[int]:
        """The shard of each shipped case (`--shard I/N` of certification.json's N); zeros without shards."""
        if self._shards is None:
            self._shards = shard_assignment(self.shipped.cases, self.shard_count) if self.missing_shards else \
                [0] * len(self.shipped.cases)
        return self._shards

    def check_missing_shards(self) -> None:
        """One line per shard a merged package lacks, before anything else about the run: its cases are then
        missing too, and are not listed one by one."""
        shards = self._shard_of_cases()
        for index in self.missing_shards:
            cases = shards.count(index)
            self.fail(CERTIFICATION, f"field shards: shard {index}/{self.shard_count} missing: its cases are not in "
                                     f"the package ({cases} of {len(self.shipped.cases)}); the package is incomplete")

    def check_shards(self, run: RunResult) -> None:
        records = self.document.get("shards")
        if not isinstance(records, list):
            self.fail(CERTIFICATION, f"field shards: is {json.dumps(records)[:40]}, not a list")
            return
        if not records:
            if run.shards or (self.folder / SHARDS).exists():
                self.fail(CERTIFICATION, "field shards: empty, but results.json says the run was merged from shards")
            return
        count = records[0].get("count") if isinstance(records[0], dict) else None
        if not isinstance(count, int) or count < 1:
            self.fail(CERTIFICATION, "field shards[0].count: not a shard count")
            return
        indexes = [r.get("index") for r in records if isinstance(r, dict)]  # a missing one: check_missing_shards
        if sorted(indexes) != sorted(set(i for i in indexes if isinstance(i, int))) or len(indexes) != len(records):
            self.fail(CERTIFICATION, "field shards: a shard is listed twice")
        by_id = {r.id: r for r in run.results}
        for record in records:
            index = record.get("index") if isinstance(record, dict) else None
            if not isinstance(index, int) or not 1 <= index <= count or record.get("count") != count:
                self.fail(CERTIFICATION, f"field shards: {record!r} is not shard I of {count}")
                continue
            self.check_shard(index, count, record, by_id)

    def check_shard(self, index: int, count: int, record: dict[str, Any], by_id: dict[str, CaseResult]) -> None:
        base = f"{SHARDS}/{index}"
        listing = self.folder / base / CHECKSUMS
        try:
            raw = listing.read_bytes() if listing.stat().st_size <= 64 << 20 else b""
        except OSError:
            self.fail(f"{base}/{CHECKSUMS}", "missing: a merged package keeps each shard's checksum list")
            return
        if hashlib.sha256(raw).hexdigest() != record.get("checksums_sha256"):
            self.fail(f"{base}/{CHECKSUMS}", f"is not the checksum list of shard {index} that certification.json "
                                             "names")
        listed, problems = parse_checksums(raw, f"{base}/{CHECKSUMS}")
        self.verification.problems += problems
        for relative, digest in listed.items():
            own = self.folder / base / relative
            if relative.startswith(f"{OUTPUTS}/"):
                own = self.folder / relative  # outputs are merged into the package's outputs/
            elif not own.is_file():
                continue  # a shard file a merged package does not keep (its report, JUnit, statement)
            try:
                same = own.is_file() and not own.is_symlink() and file_sha256(own) == digest
            except OSError:
                same = False
            if not same:
                self.fail(own.relative_to(self.folder).as_posix(), f"is not shard {index}'s file as its checksum "
                                                                   "list names it")
        raw_shard = self.read_json(f"{base}/{RESULTS}")
        if not isinstance(raw_shard, dict):
            self.fail(f"{base}/{RESULTS}", "missing or unreadable: a merged package keeps each shard's results")
            return
        try:
            shard_run = from_document(raw_shard, f"{base}/{RESULTS}")
        except ResultsError as exc:
            self.fail(f"{base}/{RESULTS}", str(exc))
            return
        if shard_run.shard is None or (shard_run.shard.index, shard_run.shard.count) != (index, count):
            self.fail(f"{base}/{RESULTS}", f"field shard: is {shard_run.shard}, not {index}/{count}")
        own_ids = [self.shipped.cases[p].full_id for p in shard_positions(self.shipped.cases, index, count)]
        ids = [r.id for r in shard_run.results]
        if sorted(ids) != sorted(own_ids):
            self.fail(f"{base}/{RESULTS}", f"field cases: shard {index}/{count} of {self.shipped.name} is "
                                           f"{len(own_ids)} cases, this one holds {len(ids)} others or more")
        if record.get("cases") != len(ids):
            self.fail(CERTIFICATION, f"field shards: shard {index} holds {len(ids)} cases, not {record.get('cases')}")
        for result in shard_run.results:
            merged = by_id.get(result.id)
            if merged is None or case_json(merged) != case_json(result):
                self.fail(f"{RESULTS}: case {result.id}", f"is not what shard {index}/{count} recorded for it")

    # -- derived files --------------------------------------------------------------------------------------
    def check_derived(self, run: RunResult, raw: dict[str, Any], waivers: WaiverFile | None) -> None:
        renders = ((STATEMENT, lambda: render_statement(self.document, run).encode()),
                   (JUNIT, lambda: junit_bytes(run)), (HTML, lambda: render_html(run).encode()))
        for name, render in renders:
            path = self.folder / name
            try:
                ours = render()
            except (KeyError, TypeError, AttributeError) as exc:
                self.fail(CERTIFICATION, f"cannot render {name} from it ({type(exc).__name__}: {exc})")
                continue
            try:
                theirs = path.read_bytes() if path.stat().st_size <= len(ours) + (1 << 20) else b""
            except OSError:
                if not any(p.where == name for p in self.verification.problems):
                    self.fail(name, "missing")
                continue
            if theirs != ours:
                line = _first_differing_line(theirs, ours)
                self.fail(name, f"is not what {RESULTS} and {CERTIFICATION} render to (line {line} differs)")


def _nbytes(case: Case, name: str) -> int:
    tensor = case.description.tensors[name]
    return int(np.prod(tensor.shape, dtype=np.int64)) * tensor.dtype.numpy.itemsize


def _first_differing_line(a: bytes, b: bytes) -> int:
    for number, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return number
    return min(len(a.splitlines()), len(b.splitlines())) + 1
