"""Certification packages (docs/certification.md): what `dmlconform certify` writes and `dmlconform verify` checks.

Beside results/, one layer above the runner: it reads and writes result documents, re-judges kept outputs with
the runner's judge, and never creates a backend. The files of a package:

  certification.json   the claim and how it was made (format dmlconform-certification/v1) and its verdict
  statement.txt        the conformance statement, in words
  results.json         the run (dmlconform-result/v1), every case, waivers beside the cases they cover
  results.xml          JUnit, rendered from results.json
  report.html          the HTML report, rendered from results.json
  console.log          what the command printed
  environment.json     tool, Python, packages, OS, the backend's handshake, the harness files' digests
  suite-manifest.json  every file of the suite tier run, with its SHA-256
  waivers.yaml         the waiver file given to certify (only with waivers)
  known-issues.json    the known issues of the loaded DirectML release that certify applied as DirectML's waivers
                       (only where a list applies; certification/known_issues.py)
  outputs/             what the backend returned for every case: <suite>/<case>/<output>.npy
  shards/<I>/          a merged package: each shard's certification.json, environment.json, console.log and
                       CHECKSUMS.sha256
  CHECKSUMS.sha256     SHA-256 of every other file (`sha256sum -c` reads it)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

FORMAT = "dmlconform-certification/v1"
CERTIFICATION = "certification.json"
STATEMENT = "statement.txt"
RESULTS = "results.json"
JUNIT = "results.xml"
HTML = "report.html"
CONSOLE = "console.log"
ENVIRONMENT = "environment.json"
MANIFEST = "suite-manifest.json"
WAIVERS = "waivers.yaml"
KNOWN_ISSUES = "known-issues.json"
OUTPUTS = "outputs"
SHARDS = "shards"
CHECKSUMS = "CHECKSUMS.sha256"
#: The tiers a certification may claim. A package of the smoke tier is a rehearsal (minutes, to try the whole
#: process on a device): verify checks it as any other, and its claim never holds.
CERTIFICATION_TIERS = ("standard", "full")
PACKAGE_TIERS = ("smoke", *CERTIFICATION_TIERS)


class CertificationError(ValueError):
    """Unusable certification input (a waiver file, a package to merge); one line naming the file, where in it
    and the field."""

    def __init__(self, file: object, message: str, where: str | None = None, field: str | None = None) -> None:
        parts = [str(file)]
        if where:
            parts.append(where)
        if field:
            parts.append(f"field {field}")
        parts.append(message)
        super().__init__(": ".join(parts))


class ProblemKind(Enum):
    """What a problem `verify` finds says about the package; the exit status follows the worst."""

    #: The package is not what certify wrote: a file changed, missing or added, or contents that contradict
    #: each other or this dmlconform's suite (exit 3).
    INVALID = "invalid"
    #: The package is intact but its spot-checked cases came out otherwise on the certifier's unit (exit 4).
    SPOT_CHECK = "spot-check"
    #: The package is intact and consistent, and shows the claim does not hold (exit 1).
    CLAIM = "claim"


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    #: The file (relative to the package) and the place in it: "results.json: case relu_grad.edge/x".
    where: str
    message: str

    def line(self) -> str:
        return f"{self.where}: {self.message}"
