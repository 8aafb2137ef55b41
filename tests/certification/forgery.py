"""Tampering with a certification package the way a careful forger would: edit a file, then re-derive everything
that depends on it (the verdict and waiver summary in certification.json, the statement, JUnit, HTML) and
rewrite the checksum list, so that what catches the edit is the check under test, not a stale digest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dmlconform.certification import CERTIFICATION, HTML, JUNIT, RESULTS, STATEMENT, WAIVERS
from dmlconform.certification.checksums import write_checksums
from dmlconform.certification.statement import render_statement
from dmlconform.certification.verdict import certification_verdict
from dmlconform.certification.waivers import DeviceIdentity, parse_waivers, waiver_use
from dmlconform.feature_levels import FeatureLevel
from dmlconform.report.html import render_html
from dmlconform.report.json_report import dumps
from dmlconform.report.junit import junit_bytes
from dmlconform.results.document import read_document, to_document


def copy_package(package: Path, folder: Path) -> Path:
    target = folder / package.name
    shutil.copytree(package, target)
    return target


def edit_results(package: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit results.json, then write it as the tool would from the edited cases (its summary and verdicts too)."""
    document = json.loads((package / RESULTS).read_text())
    edit(document)
    (package / RESULTS).write_text(dumps(document))
    rebuilt = to_document(read_document(package / RESULTS))
    document.update({key: rebuilt[key] for key in ("summary", "feature_levels", "behaviour_fingerprint")})
    (package / RESULTS).write_text(dumps(document))


def case_entry(document: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(case for case in document["cases"] if case["id"] == case_id)


def edit_certification(package: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads((package / CERTIFICATION).read_text())
    edit(document)
    (package / CERTIFICATION).write_text(json.dumps(document, indent=1) + "\n")


def forge(package: Path) -> None:
    """Re-derive every dependent file from results.json (and waivers.yaml), then reseal."""
    run = read_document(package / RESULTS)
    document = json.loads((package / CERTIFICATION).read_text())
    level = FeatureLevel.parse(document["claim"]["feature_level"])
    document["verdict"] = certification_verdict(run, level, document["claim"]["tier"]).to_json()
    waivers = None
    if (package / WAIVERS).is_file():
        waivers = parse_waivers((package / WAIVERS).read_bytes(), WAIVERS)
        document["waivers"]["sha256"] = waivers.sha256
    document["waivers"].update(waiver_use(run.results, waivers, DeviceIdentity.of(run.backend)).to_json())
    (package / CERTIFICATION).write_text(json.dumps(document, indent=1) + "\n")
    (package / STATEMENT).write_bytes(render_statement(document, run).encode())
    (package / JUNIT).write_bytes(junit_bytes(run))
    (package / HTML).write_bytes(render_html(run).encode())
    reseal(package)


def reseal(package: Path) -> None:
    write_checksums(package)
