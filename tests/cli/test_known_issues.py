"""DirectML's known issues through the command line, end to end: `run` applies the loaded release's by default (the
Python harness stands in for a harness that drives DirectML 1.15.4: its handshake names it), the console, JSON and
JUnit say so, the device's own failures still fail, off and strict do what they say; `certify` waives them as
DirectML's with their provenance and `verify` re-derives them with its own list; bad input is one line, exit 2."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dmlconform.certification import CERTIFICATION, KNOWN_ISSUES
from dmlconform.cli import bundled_suites, main
from tests.certification.forgery import copy_package, reseal
from tests.cli.conftest import BROKEN, SEED, write_broken_suite

HARNESS = "python -m dmlconform.harness --backend numpy --api 'DirectML 1.15.4.0'"
#: A list of one's own for the release the harness names: the two broken goldens are "DirectML's".
LIST = """\
format: dmlconform-known-issues/v1
date: 2026-11-27
measured:
  directml: [1.15.4]
issues:
  - id: TEST-BROKEN-POOLING
    title: the pooling golden of seed.broken is wrong on purpose
    releases: [1.15.4]
    backends: [directml]
    cases: [seed.broken/max-pooling-grad-2x2]
    evidence: [tests]
    reference: tests/cli/test_known_issues.py
{more}"""
RELU = """\
  - id: TEST-BROKEN-RELU
    title: the ReluGrad golden of seed.broken is wrong on purpose
    releases: [1.15.4]
    backends: [directml]
    cases: [seed.broken/relu-grad-formula]
    evidence: [tests]
    reference: tests/cli/test_known_issues.py
"""
#: An issue whose case passes on the reference: it does not reproduce.
PASSING = """\
  - id: TEST-NOT-REPRODUCED
    title: a case that passes
    releases: [1.15.4]
    backends: [directml]
    cases: [seed/relu-grad-formula]
    evidence: [tests]
    reference: tests/cli/test_known_issues.py
"""


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    root = tmp_path / "suites"
    write_broken_suite(root / "broken.yaml")
    shutil.copy(SEED, root / "seed.yaml")
    return root


def known_list(tmp_path: Path, *more: str) -> Path:
    path = tmp_path / "known.yaml"
    path.write_text(LIST.format(more="".join(more)))
    return path


def run(suites: Path, tmp_path: Path, *args: object) -> tuple[Result, dict]:
    done = invoke("run", suites, "--backend", "native", "--harness", HARNESS, "--json", tmp_path / "r.json",
                  "--junit", tmp_path / "r.xml", *args)
    document = json.loads((tmp_path / "r.json").read_text()) if (tmp_path / "r.json").is_file() else {}
    return done, document


@pytest.mark.slow
def test_run_applies_the_releases_known_issues_and_the_devices_own_failures_still_fail(suites: Path, tmp_path: Path):
    only_pooling = known_list(tmp_path)
    done, document = run(suites, tmp_path, "--known-issues-file", only_pooling)
    assert done.exit_code == 1, done.output  # the ReluGrad golden is no known issue: the device's failure
    statuses = {c["id"]: (c["status"], c["known_issue"]) for c in document["cases"]}
    assert statuses[BROKEN[1]][0] == "EXPECTED_FAIL" and statuses[BROKEN[1]][1]["id"] == "TEST-BROKEN-POOLING"
    assert statuses[BROKEN[0]] == ("FAIL", None)
    both = known_list(tmp_path, RELU)
    database = tmp_path / "history.sqlite"
    done, document = run(suites, tmp_path, "--known-issues-file", both, "--html", tmp_path / "r.html", "--record",
                         "--db", database)
    assert done.exit_code == 0, done.output
    html = (tmp_path / "r.html").read_text()
    assert "2 case(s) hit DirectML's known issues, not the device's" in html and "TEST-BROKEN-RELU" in html
    timeline = invoke("history", "timeline", BROKEN[0], "--db", database)
    assert "DirectML known issue TEST-BROKEN-RELU (1.15.4)" in " ".join(timeline.output.split()), timeline.output
    assert "2 case(s) hit DirectML 1.15.4's known issues, not this device's: TEST-BROKEN-RELU ×1, " \
           "TEST-BROKEN-POOLING ×1" in " ".join(done.output.split())
    assert "the device: yes" in done.output
    record = document["known_issues"]
    assert (record["mode"], record["release"], record["source"]) == ("on", "1.15.4", str(both))
    assert record["issues"] == ["TEST-BROKEN-POOLING", "TEST-BROKEN-RELU"] and len(record["sha256"]) == 64
    assert document["feature_levels"]["6_4"]["known_issues"] == 2 and document["summary"]["EXPECTED_FAIL"] == 2
    skipped = ET.parse(tmp_path / "r.xml").getroot().findall(".//testcase[@name='seed.broken/relu-grad-formula']/"
                                                             "skipped")
    assert skipped and "DirectML 1.15.4's known issue TEST-BROKEN-RELU" in skipped[0].get("message", "")
    shown = invoke("show", BROKEN[0], "--result", tmp_path / "r.json")
    assert shown.exit_code == 0 and "DirectML 1.15.4's known issue TEST-BROKEN-RELU: the ReluGrad golden" in \
        " ".join(shown.output.split()), shown.output
    off, document = run(suites, tmp_path, "--known-issues-file", both, "--known-issues", "off")
    assert off.exit_code == 1 and document["summary"]["FAIL"] == 2 and "--known-issues off" in off.output


@pytest.mark.slow
def test_a_known_issue_that_passes_is_reported_and_fails_only_a_strict_run(suites: Path, tmp_path: Path):
    listing = known_list(tmp_path, RELU, PASSING)
    done, document = run(suites, tmp_path, "--known-issues-file", listing)
    assert done.exit_code == 0, done.output
    assert "1 UNEXPECTED_PASS: known issues that did not reproduce" in " ".join(done.output.split())
    assert {c["id"]: c["status"] for c in document["cases"]}["seed/relu-grad-formula"] == "UNEXPECTED_PASS"
    strict, _ = run(suites, tmp_path, "--known-issues-file", listing, "--known-issues", "strict")
    assert strict.exit_code == 1 and "fails the run (--known-issues strict)" in " ".join(strict.output.split())


@pytest.mark.slow
def test_the_shipped_list_and_a_release_it_does_not_know(tmp_path: Path):
    seed = bundled_suites() / "seed"
    done = invoke("run", seed, "--backend", "native", "--harness", HARNESS, "--json", tmp_path / "r.json")
    assert done.exit_code == 0, done.output
    assert "known issues: DirectML 1.15.4: 8 known issue(s) through directml from dmlconform" in done.output
    newer = HARNESS.replace("1.15.4.0", "1.99.0.0")
    done = invoke("run", seed, "--backend", "native", "--harness", newer, "--json", tmp_path / "r.json")
    assert done.exit_code == 0, done.output
    assert "DirectML 1.99.0: dmlconform" in done.output and "has no known-issue list for it" in done.output
    named = invoke("run", seed, "--backend", "native", "--harness", newer, "--known-issues-release", "1.15.4")
    assert "DirectML 1.15.4: 8 known issue(s)" in named.output and "(DirectML 1.99.0 loaded)" in named.output


@pytest.mark.parametrize("args,message", [
    (("--known-issues-release", "9.9.9"), "dmlconform: error: --known-issues-release: dmlconform"),
    (("--known-issues-release", "latest"), "'latest' is not a DirectML version"),
    (("--known-issues-file", "{bad}"), "known.yaml: issue TEST-BROKEN-POOLING: field releases[0]: 'one' is not"),
    (("--known-issues-file", "{absent}"), "absent.yaml: cannot be read"),
])
def test_bad_known_issue_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, str], message: str):
    bad = known_list(tmp_path)
    bad.write_text(bad.read_text().replace("releases: [1.15.4]", "releases: [one]"))
    value = args[1].format(bad=bad, absent=tmp_path / "absent.yaml")
    done = invoke("run", SEED, "--known-issues", "on", args[0], value)
    assert done.exit_code == 2 and message in done.output and len(done.output.strip().splitlines()) == 1, done.output


@pytest.mark.slow
def test_certify_waives_them_as_directmls_and_verify_re_derives_them(suites: Path, tmp_path: Path):
    listing = known_list(tmp_path, RELU)
    package = tmp_path / "pkg"
    done = invoke("certify", "--level", "6_4", "--suite-root", suites, "--backend", "native", "--harness", HARNESS,
                  "--known-issues-file", listing, "-o", package)
    assert done.exit_code == 0, done.output
    statement = (package / "statement.txt").read_text()
    assert "Verdict:  HOLDS, with 2 waived case(s) (2 of them DirectML 1.15.4's own known issues" in statement
    record = json.loads((package / CERTIFICATION).read_text())["known_issues"]
    assert record["file"] == KNOWN_ISSUES and record["applied"] == {"TEST-BROKEN-POOLING": [BROKEN[1]],
                                                                    "TEST-BROKEN-RELU": [BROKEN[0]]}
    assert json.loads((package / CERTIFICATION).read_text())["waivers"]["applied"] == {}
    verified = invoke("verify", package, "--suite-root", suites, "--known-issues-file", listing)
    assert verified.exit_code == 0, verified.output
    # This dmlconform's own list has no such issues: the claim rests on waivers it does not grant.
    own = invoke("verify", package, "--suite-root", suites)
    assert own.exit_code == 1, own.output
    assert (f"results.json: case {BROKEN[0]}: waived as DirectML 1.15.4's known issue TEST-BROKEN-RELU, which "
            "dmlconform") in own.output
    assert "known issues: issue TEST-BROKEN-RELU: in the package's list" in own.output
    # A known issue changed after the fact, everything else resealed: the package is not what certify wrote.
    forged = copy_package(package, tmp_path / "forged")
    path = forged / KNOWN_ISSUES
    path.write_text(path.read_text().replace("seed.broken/relu-grad-formula", "seed.broken/.*"))
    reseal(forged)
    tampered = invoke("verify", forged, "--suite-root", suites, "--known-issues-file", listing)
    assert tampered.exit_code == 3 and "field known_issues.sha256: is not the digest of known-issues.json" in \
        tampered.output
    off = tmp_path / "pkg-off"
    done = invoke("certify", "--level", "6_4", "--suite-root", suites, "--backend", "native", "--harness", HARNESS,
                  "--known-issues-file", listing, "--known-issues", "off", "-o", off)
    assert done.exit_code == 1 and "2 of 12 required case(s) neither matched nor waived" in done.output
    noted = invoke("verify", off, "--suite-root", suites, "--known-issues-file", listing)
    assert noted.exit_code == 1 and "the package applied no known issues" in noted.output


@pytest.mark.slow
def test_shard_packages_merge_with_the_known_issues_they_applied(suites: Path, tmp_path: Path):
    listing = known_list(tmp_path, RELU)
    shards = []
    for index in (1, 2):
        shards.append(tmp_path / f"shard{index}")
        done = invoke("certify", "--level", "6_4", "--suite-root", suites, "--backend", "native", "--harness", HARNESS,
                      "--known-issues-file", listing, "--shard", f"{index}/2", "-o", shards[-1])
        assert done.exit_code == 0, done.output
    merged = invoke("certify", "--merge", "-o", tmp_path / "merged", *shards)
    assert merged.exit_code == 0, merged.output
    record = json.loads((tmp_path / "merged" / CERTIFICATION).read_text())["known_issues"]
    assert record["file"] == KNOWN_ISSUES and sorted(record["applied"]) == ["TEST-BROKEN-POOLING", "TEST-BROKEN-RELU"]
    verified = invoke("verify", tmp_path / "merged", "--suite-root", suites, "--known-issues-file", listing)
    assert verified.exit_code == 0, verified.output
    other = tmp_path / "other"
    done = invoke("certify", "--level", "6_4", "--suite-root", suites, "--backend", "native", "--harness", HARNESS,
                  "--known-issues-file", known_list(tmp_path), "--shard", "2/2", "-o", other)
    mixed = invoke("certify", "--merge", "-o", tmp_path / "mixed", shards[0], other)
    assert mixed.exit_code == 2 and "field known_issues.sha256" in mixed.output, mixed.output
