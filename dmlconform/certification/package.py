"""Writing a certification package (`dmlconform certify`), and merging shard packages into one (`--merge`).

The run's results are written first; every file derived from them (JUnit, HTML, the statement, the verdict) is
rendered from results.json as read back, which is what `verify` does too, so the two can be compared byte for
byte. The checksum list comes last.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dmlconform.atomic_file import write_atomically
from dmlconform.certification import (
    CERTIFICATION,
    CHECKSUMS,
    CONSOLE,
    ENVIRONMENT,
    FORMAT,
    HTML,
    JUNIT,
    KNOWN_ISSUES,
    MANIFEST,
    OUTPUTS,
    RESULTS,
    SHARDS,
    STATEMENT,
    WAIVERS,
    CertificationError,
)
from dmlconform.certification.checksums import check_checksums, file_sha256, write_checksums
from dmlconform.certification.environment import tool_record
from dmlconform.certification.known_issues import known_issue_use
from dmlconform.certification.statement import render_statement
from dmlconform.certification.verdict import certification_verdict
from dmlconform.certification.waivers import DeviceIdentity, WaiverFile, parse_waivers, waiver_use
from dmlconform.feature_levels import FeatureLevel
from dmlconform.known_issues import KnownIssueError, ReleaseIssues, canonical_bytes, parse_release_issues
from dmlconform.report.html import render_html
from dmlconform.report.json_report import write_json
from dmlconform.report.junit import junit_bytes
from dmlconform.results import ResultsError
from dmlconform.results.document import backend_json, known_issues_json, read_document
from dmlconform.results.merge import merge_results
from dmlconform.run_result import RunResult

MAX_JSON_BYTES = {CERTIFICATION: 16 << 20, ENVIRONMENT: 1 << 20, MANIFEST: 16 << 20, RESULTS: 256 << 20}
#: What a merged package keeps of each shard package, under shards/<index>/.
SHARD_FILES = (CERTIFICATION, ENVIRONMENT, CONSOLE, RESULTS, CHECKSUMS)


@dataclass(frozen=True)
class Claim:
    level: FeatureLevel
    tier: str
    #: Made on a suite root given with the testing option --suite-root, not on dmlconform's own suites.
    custom_suite: bool = False
    #: The execution paths every case ran on where it applies (`certify --path`; contract §9).
    paths: tuple[str, ...] = ("operator",)

    def to_json(self) -> dict[str, Any]:
        """certification.json's claim; `paths` only where other than the operator path alone (as packages were)."""
        return {"feature_level": self.level.label, "tier": self.tier,
                **({"paths": list(self.paths)} if self.paths != ("operator",) else {})}


@dataclass
class PackageParts:
    """Everything besides the run that goes into a package."""

    claim: Claim
    environment: dict[str, Any]
    manifest: dict[str, Any]
    console_log: str
    command: list[str]
    harness_files: dict[str, str]
    waivers: WaiverFile | None = None
    waivers_raw: bytes | None = None
    #: The DirectML release's known issues certify applied as DirectML's waivers (None: none applied).
    known_issues: ReleaseIssues | None = None
    #: A merged package: one record per shard package, and the folders to keep parts of.
    shards: list[dict[str, Any]] = field(default_factory=list)
    shard_folders: dict[int, Path] = field(default_factory=dict)


def certification_document(parts: PackageParts, run: RunResult) -> dict[str, Any]:
    claim = parts.claim
    verdict = certification_verdict(run, claim.level, claim.tier)
    device = DeviceIdentity.of(run.backend)
    manifest = parts.manifest
    return {
        "format": FORMAT,
        "claim": claim.to_json(),
        "tool": tool_record(),
        "device": backend_json(run.backend),
        "harness_files": parts.harness_files,
        "suite": {"tier": claim.tier, "custom_root": claim.custom_suite, "fingerprint": manifest["fingerprint"],
                  "cases": manifest["cases"], "files": len(manifest["files"])},
        "shard": None if run.shard is None else {"index": run.shard.index, "count": run.shard.count},
        "shards": parts.shards,
        "waivers": {"file": WAIVERS if parts.waivers is not None else None,
                    "sha256": parts.waivers.sha256 if parts.waivers is not None else None,
                    **waiver_use(run.results, parts.waivers, device).to_json()},
        "known_issues": known_issues_document(run, parts.known_issues),
        "verdict": verdict.to_json(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": parts.command,
    }


def known_issues_document(run: RunResult, issues: ReleaseIssues | None) -> dict[str, Any] | None:
    """certification.json's record of DirectML's known issues: the run's (which list, which release, why none), the
    file that holds the issues applied, and what each covered."""
    recorded = known_issues_json(run.known_issues)
    if recorded is None:
        return None
    return {**recorded, "file": KNOWN_ISSUES if issues is not None else None,
            **known_issue_use(run.results, issues)}


def json_text(document: object) -> str:
    return json.dumps(document, indent=1) + "\n"


def write_package(folder: Path, run: RunResult, parts: PackageParts) -> tuple[dict[str, Any], str]:
    """Write every file of the package into `folder` (outputs/ is already there); the certification document and
    the package digest. OSError propagates."""
    write_json(run, folder / RESULTS)
    written = read_document(folder / RESULTS)
    document = certification_document(parts, written)
    write_atomically(folder / CERTIFICATION, json_text(document))
    write_atomically(folder / ENVIRONMENT, json_text(parts.environment))
    write_atomically(folder / MANIFEST, json_text(parts.manifest))
    if parts.waivers_raw is not None:
        write_atomically(folder / WAIVERS, parts.waivers_raw)
    if parts.known_issues is not None:
        write_atomically(folder / KNOWN_ISSUES, canonical_bytes(parts.known_issues))
    write_atomically(folder / STATEMENT, render_statement(document, written))
    write_atomically(folder / JUNIT, junit_bytes(written))
    write_atomically(folder / HTML, render_html(written))
    write_atomically(folder / CONSOLE, parts.console_log)
    for index, shard_folder in sorted(parts.shard_folders.items()):
        for name in SHARD_FILES:
            target = folder / SHARDS / str(index) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shard_folder / name, target)
    return document, write_checksums(folder)


# -- reading (merge) ---------------------------------------------------------------------------------------------
def read_json_file(path: Path, limit: int) -> object:
    """A JSON file of at most `limit` bytes; CertificationError (one line) for anything else."""
    try:
        if path.stat().st_size > limit:
            raise CertificationError(path, f"is larger than {limit >> 20} MiB; not read")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CertificationError(path, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CertificationError(path, f"is not JSON ({exc.msg} at line {exc.lineno})") from None


@dataclass
class ShardPackage:
    folder: Path
    document: dict[str, Any]
    run: RunResult
    digest: str
    manifest: dict[str, Any]


def read_shard_package(folder: Path) -> ShardPackage:
    """A shard package to merge: intact (its checksum list holds), and a shard."""
    problems, _, digest = check_checksums(folder)
    if problems:
        raise CertificationError(folder, f"is not an intact package: {problems[0].line()}"
                                 + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""))
    assert digest is not None
    document = read_json_file(folder / CERTIFICATION, MAX_JSON_BYTES[CERTIFICATION])
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CertificationError(folder / CERTIFICATION, f"is not a {FORMAT} document", field="format")
    shard = document.get("shard")
    if not isinstance(shard, dict):
        raise CertificationError(folder / CERTIFICATION, "is not a shard package (certify --shard I/N makes them)",
                                 field="shard")
    manifest = read_json_file(folder / MANIFEST, MAX_JSON_BYTES[MANIFEST])
    if not isinstance(manifest, dict):
        raise CertificationError(folder / MANIFEST, "is not a JSON object")
    try:
        run = read_document(folder / RESULTS)
    except ResultsError as exc:
        raise CertificationError(folder, str(exc)) from None
    return ShardPackage(folder, document, run, digest, manifest)


def merge_shard_packages(shards: list[ShardPackage], output: Path) -> tuple[RunResult, WaiverFile | None, bytes | None]:
    """The merged run of shard packages of one certification run, their outputs copied into `output`; refuses
    packages of different claims, tools, suites or waivers (CertificationError) and of different runs
    (ResultsError from merge_results)."""
    first = shards[0]
    for shard in shards[1:]:
        for key in ("claim", "tool", "device", "suite", "harness_files"):
            if shard.document.get(key) != first.document.get(key):
                raise CertificationError(shard.folder / CERTIFICATION, f"differs from {first.folder}'s; only shards "
                                         "of one certification run can be merged", field=key)
        if shard.document.get("waivers", {}).get("sha256") != first.document.get("waivers", {}).get("sha256"):
            raise CertificationError(shard.folder / WAIVERS, f"differs from {first.folder}'s waivers",
                                     field="waivers.sha256")
        if shard.manifest != first.manifest:
            raise CertificationError(shard.folder / MANIFEST, f"differs from {first.folder}'s")
    merged = merge_results([(shard.folder / RESULTS, shard.run) for shard in shards])
    for shard in shards:
        source = shard.folder / OUTPUTS
        if source.is_dir():
            shutil.copytree(source, output / OUTPUTS, dirs_exist_ok=True)
    waivers = raw = None
    if (first.folder / WAIVERS).is_file():
        raw = (first.folder / WAIVERS).read_bytes()
        waivers = parse_waivers(raw, str(first.folder / WAIVERS))
    return merged, waivers, raw


def merged_known_issues(shards: list[ShardPackage]) -> ReleaseIssues | None:
    """The known issues the shard packages applied: the same for all of them (merge_results refuses shards whose
    configurations, the known issues' digest among them, differ)."""
    path = shards[0].folder / KNOWN_ISSUES
    if not path.is_file():
        return None
    try:
        return parse_release_issues(path.read_bytes(), str(path))
    except KnownIssueError as exc:
        raise CertificationError(path, str(exc).removeprefix(f"{path}: ")) from None


def shard_record(shard: ShardPackage) -> dict[str, Any]:
    assert shard.run.shard is not None
    return {"index": shard.run.shard.index, "count": shard.run.shard.count, "cases": len(shard.run.results),
            "checksums_sha256": file_sha256(shard.folder / CHECKSUMS)}
