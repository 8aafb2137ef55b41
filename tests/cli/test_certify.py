"""`dmlconform certify` and `dmlconform verify`, end to end (issue 24): packages made on the reference (numpy) and
on the native protocol (the Python harness serving the reference) are accepted, and each tampering of the issue
is caught with a line naming the file, the case and the field.

Most tests use a small stand-in suite (the hidden --suite-root): the seed examples, ReluGrad's hand-written
suites and `seed.broken`, whose two wrong goldens fail on the reference and are waived for it. Tampering tests
re-derive every dependent file and reseal the checksum list (tests/certification/forgery.py), so that what
catches the edit is the check under test."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from dmlconform.certification import CERTIFICATION, RESULTS, STATEMENT, WAIVERS
from dmlconform.cli import bundled_suites, main
from tests.certification.forgery import (
    case_entry,
    copy_package,
    edit_certification,
    edit_results,
    forge,
    reseal,
)
from tests.cli.conftest import BROKEN, HARNESS, write_broken_suite

WAIVERS_TEXT = """\
format: dmlconform-waivers/v1
waivers:
  - id: TEST-W-1
    cases: ['seed\\.broken/.*']
    devices: [{adapter: "cpu (reference)"}]
    reason: the goldens of seed.broken are wrong on purpose
    granted_by: dmlconform tests
    date: 2025-06-01
"""
#: A ReluGrad case that passes everywhere, and the broken pooling case that fails on every backend here.
PASSING = "seed/relu-grad-formula"
FAILING = "seed.broken/max-pooling-grad-2x2"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suites") / "root"
    for name in ("seed", "relu_grad"):
        shutil.copytree(bundled_suites() / name, root / name)
    write_broken_suite(root / "broken" / "broken.yaml")
    return root


@pytest.fixture(scope="module")
def waivers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("waivers") / "waivers.yaml"
    path.write_text(WAIVERS_TEXT)
    return path


def certify(suite_root: Path, output: Path, *args: object) -> Result:
    return invoke("certify", "--level", "6_4", "--suite-root", suite_root, "-o", output, *args)


def verify(package: Path, suite_root: Path, *args: object) -> Result:
    return invoke("verify", package, "--suite-root", suite_root, *args)


BACKENDS = {"numpy": ("--backend", "numpy"),
            # The harness crashes on one broken case: a waived CRASH, which keeps no outputs.
            "native": ("--backend", "native", "--harness", f"{HARNESS} --crash-on seed.broken/relu-grad-formula",
                       "--jobs", "2")}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def package(request: pytest.FixtureRequest, suite_root: Path, waivers: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp(f"package-{request.param}") / "pkg"
    done = certify(suite_root, output, *BACKENDS[request.param], "--waivers", waivers)
    assert done.exit_code == 0, done.output
    return output


@pytest.fixture(scope="module")
def numpy_package(suite_root: Path, waivers: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("package-numpy-only") / "pkg"
    done = certify(suite_root, output, *BACKENDS["numpy"], "--waivers", waivers)
    assert done.exit_code == 0, done.output
    return output


def problems(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if not line.startswith("dmlconform verify:")]


# -- a valid package --------------------------------------------------------------------------------------------
def test_a_certified_package_is_valid_and_says_what_was_waived(package: Path, suite_root: Path) -> None:
    done = verify(package, suite_root)
    assert done.exit_code == 0, done.output
    assert "VALID: conformant at 6_4" in done.output and "2 waived" in done.output
    document = json.loads((package / CERTIFICATION).read_text())
    assert document["verdict"]["certified"] is True and document["verdict"]["waived"] == 2
    assert document["waivers"]["applied"] == {"TEST-W-1": list(BROKEN)}
    statement = (package / STATEMENT).read_text()
    assert "Verdict:  HOLDS, with 2 waived case(s)" in statement
    assert all(f"  {case}: " in statement for case in BROKEN) and "granted by dmlconform tests" in statement
    # dmlconform-result/v1 readers see what the waived cases came to, the waiver beside it.
    cases = {c["id"]: c for c in json.loads((package / RESULTS).read_text())["cases"]}
    assert cases[FAILING]["status"] == "FAIL" and cases[FAILING]["waiver"]["id"] == "TEST-W-1"
    # Every case keeps its outputs but those the backend returned none for (refusals, the crash).
    assert all(c["artifacts"] for c in cases.values() if c["status"] in ("PASS", "FAIL"))
    if document["device"]["name"] == "native":
        assert cases["seed.broken/relu-grad-formula"]["status"] == "CRASH"
        assert document["device"]["harness"].startswith("python -m dmlconform.harness")
        assert len(document["harness_files"]) == 1 and all(len(d) == 64 for d in document["harness_files"].values())


def test_the_checksum_list_is_what_sha256sum_reads(numpy_package: Path) -> None:
    sha256sum = shutil.which("sha256sum")
    if sha256sum is None:
        pytest.skip("no sha256sum here")
    import subprocess

    done = subprocess.run([sha256sum, "--quiet", "-c", "CHECKSUMS.sha256"], cwd=numpy_package, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_verify_with_the_digest_submitted(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    digest = verify(numpy_package, suite_root).output.rsplit("package digest ", 1)[1].strip()
    assert verify(numpy_package, suite_root, "--digest", digest).exit_code == 0
    other = verify(numpy_package, suite_root, "--digest", "0" * 64)
    assert other.exit_code == 3 and "not the package digest given" in other.output


# -- each tampering of the issue ---------------------------------------------------------------------------------
def test_an_edited_status_is_caught(package: Path, suite_root: Path, tmp_path: Path) -> None:
    forged = copy_package(package, tmp_path)

    def claim_a_pass(document: dict) -> None:
        case = case_entry(document, FAILING)
        case.update(status="PASS", waiver=None, message="forged")

    edit_results(forged, claim_a_pass)
    forge(forged)
    done = verify(forged, suite_root)
    assert done.exit_code == 3, done.output
    assert (f"{forged}/results.json: case {FAILING}: field status: PASS in results.json, but its outputs in the "
            "package re-judge to FAIL") in done.output


def test_an_edit_without_a_new_checksum_list_is_caught_by_the_list(numpy_package: Path, suite_root: Path,
                                                                   tmp_path: Path) -> None:
    edited = copy_package(numpy_package, tmp_path)
    statement = edited / STATEMENT
    statement.write_text(statement.read_text().replace("HOLDS", "HOLDS!"))
    done = verify(edited, suite_root)
    assert done.exit_code == 3
    assert f"{edited}/statement.txt: changed: its SHA-256 is" in done.output
    assert f"{edited}/statement.txt: is not what results.json and certification.json render to" in done.output


def test_an_edited_output_is_caught(package: Path, suite_root: Path, tmp_path: Path) -> None:
    forged = copy_package(package, tmp_path)
    output = forged / "outputs" / "seed" / "relu-grad-formula" / "OutputGradientTensor.npy"
    array = np.load(output)
    array.flat[0] += 1
    np.save(output, array)
    forge(forged)
    done = verify(forged, suite_root)
    assert done.exit_code == 3, done.output
    assert f"case {PASSING}: field status: PASS in results.json, but its outputs in the package re-judge to FAIL" \
        in done.output
    # Without a new checksum list the list names the file too.
    plain = copy_package(package, tmp_path / "plain")
    np.save(plain / output.relative_to(forged), array)
    assert "OutputGradientTensor.npy: changed: its SHA-256 is" in verify(plain, suite_root).output


def test_outputs_left_out_or_swapped_in_are_caught(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    forged = copy_package(numpy_package, tmp_path)
    shutil.rmtree(forged / "outputs" / "seed" / "relu-grad-formula")
    edit_results(forged, lambda d: case_entry(d, PASSING).update(artifacts={}))
    (forged / "outputs" / "extra.npy").write_bytes((forged / "results.json").read_bytes()[:10])
    forge(forged)
    lines = problems(verify(forged, suite_root))
    assert any(f"case {PASSING}: field status: PASS in results.json, but with no outputs in the package" in line
               for line in lines), lines
    assert any(line.endswith("outputs/extra.npy: is not the output of any case in results.json") for line in lines)


def test_a_removed_case_is_caught(package: Path, suite_root: Path, tmp_path: Path) -> None:
    forged = copy_package(package, tmp_path)
    edit_results(forged, lambda d: d.update(cases=[c for c in d["cases"] if c["id"] != PASSING]))
    shutil.rmtree(forged / "outputs" / "seed" / "relu-grad-formula")
    forge(forged)
    done = verify(forged, suite_root)
    assert done.exit_code == 3
    assert (f"{forged}/results.json: case {PASSING}: missing: dmlconform 0.1.0's standard tier (stand-in "
            f"{suite_root}) has it and the package does not") in done.output


def test_a_changed_suite_file_is_caught(suite_root: Path, tmp_path: Path) -> None:
    # A suite file edited where no case sees it (its description), and a suite file removed (fewer cases, all pass).
    for edit in ("description", "removed"):
        changed_root = tmp_path / edit / "root"
        shutil.copytree(suite_root, changed_root)
        seed = changed_root / "seed" / "seed_examples.yaml"
        if edit == "description":
            seed.write_text(seed.read_text().replace("description:", "description: edited.", 1))
        else:
            (changed_root / "relu_grad" / "edge.yaml").unlink()
        package = tmp_path / edit / "pkg"
        made = certify(changed_root, package, "--backend", "numpy", "--waivers", _waivers(tmp_path / edit))
        assert made.exit_code == 0, made.output
        done = verify(package, suite_root)
        assert done.exit_code == 3, done.output
        if edit == "description":
            assert "suite-manifest.json: file test_vectors/seed/seed_examples.yaml: SHA-256" in done.output
        else:
            assert ("suite-manifest.json: file test_vectors/relu_grad/edge.yaml: is in dmlconform 0.1.0's standard "
                    "tier (stand-in") in done.output
            assert "results.json: case relu_grad.edge/signed-zero-x: missing" in done.output
            assert "results.json: field suite.fingerprint: is not the fingerprint of" in done.output


def _waivers(tmp_path: Path) -> Path:
    path = tmp_path / "waivers.yaml"
    path.write_text(WAIVERS_TEXT)
    return path


def test_a_baseline_sneaked_in_is_caught(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    forged = copy_package(numpy_package, tmp_path)

    def baselined(document: dict) -> None:
        document["expectations"] = [{"kind": "baseline", "path": "fails.csv", "sha256": "ab" * 32}]
        case = case_entry(document, FAILING)
        case.update(status="EXPECTED_FAIL", outcome="FAIL", baseline="FAIL", expectation="fails.csv:1", waiver=None)

    edit_results(forged, baselined)
    forge(forged)
    done = verify(forged, suite_root)
    assert done.exit_code == 3, done.output
    assert ("results.json: field expectations: a baseline list was used (fails.csv, sha256 abababababababab…); a "
            "certification runs without baselines, skips or flakes") in done.output
    assert (f"results.json: case {FAILING}: field status: EXPECTED_FAIL (baseline fails.csv:1): a baseline never "
            "counts in a certification") in done.output
    # And certify itself takes none of run's expectation options.
    for option in ("--baseline", "--skip", "--flakes", "-k", "--retries"):
        refused = CliRunner().invoke(main, ["certify", "--level", "6_4", "--backend", "numpy", "-o",
                                            str(tmp_path / "x"), option, "x"])
        assert refused.exit_code == 2 and "no such option" in refused.output


@pytest.mark.slow
def test_shards_merged_are_valid_and_a_missing_shard_is_caught(suite_root: Path, waivers: Path,
                                                              tmp_path: Path) -> None:
    shards = []
    for index in (1, 2, 3):
        shards.append(tmp_path / f"shard{index}")
        done = certify(suite_root, shards[-1], "--backend", "numpy", "--waivers", waivers, "--shard", f"{index}/3")
        assert done.exit_code == 0, done.output  # the failures of seed.broken are waived in whichever shard
    unwaived = certify(suite_root, tmp_path / "unwaived", "--backend", "numpy", "--shard", "1/1")
    assert unwaived.exit_code == 1  # a shard holding a failure nothing waives
    lone = verify(shards[0], suite_root)
    assert lone.exit_code == 3 and "results.json: field shard: this is shard 1/3 of a run" in lone.output

    whole = invoke("certify", "--merge", "-o", tmp_path / "merged", *shards)
    assert whole.exit_code == 0, whole.output
    accepted = verify(tmp_path / "merged", suite_root)
    assert accepted.exit_code == 0, accepted.output

    partial = invoke("certify", "--merge", "-o", tmp_path / "partial", shards[0], shards[2])
    assert partial.exit_code == 1 and "shard(s) 2 missing from the merge" in partial.output
    done = verify(tmp_path / "partial", suite_root)
    assert done.exit_code == 3
    # One line for the missing shard, first; not results.json's missing_shards again, nor a line per case of it.
    lines = problems(done)
    assert lines[0].startswith(f"{tmp_path / 'partial' / 'certification.json'}: field shards: shard 2/3 missing: its "
                               "cases are not in the package (") and lines[0].endswith("; the package is incomplete")
    assert "missing_shards" not in done.output and ": missing: dmlconform" not in done.output

    # A forger who drops a shard's record from a whole merge is caught by the cases it leaves out.
    forged = copy_package(tmp_path / "merged", tmp_path / "forged")
    shard_ids = {c["id"] for c in json.loads((shards[1] / RESULTS).read_text())["cases"]}
    edit_results(forged, lambda d: d.update(cases=[c for c in d["cases"] if c["id"] not in shard_ids],
                                            shards=[s for s in d["shards"] if s["index"] != 2]))
    edit_certification(forged, lambda d: d.update(shards=[s for s in d["shards"] if s["index"] != 2]))
    shutil.rmtree(forged / "shards" / "2")
    forge(forged)
    lines = problems(verify(forged, suite_root))
    assert f"field shards: shard 2/3 missing: its cases are not in the package ({len(shard_ids)} of" in "\n".join(lines)
    assert sum(": missing: dmlconform" in line for line in lines) == 0  # said by the shard's line, not case by case

    # A shard's checksum list naming a file outside the package is a problem, not a file read.
    outside = copy_package(tmp_path / "merged", tmp_path / "outside")
    listing = outside / "shards" / "1" / "CHECKSUMS.sha256"
    listing.write_text(listing.read_text() + "0" * 64 + "  ../../../../etc/passwd\n")
    digest = hashlib.sha256(listing.read_bytes()).hexdigest()
    edit_certification(outside, lambda d: d["shards"][0].update(checksums_sha256=digest))
    forge(outside)
    lines = problems(verify(outside, suite_root))
    assert any(line.endswith("shards/1/CHECKSUMS.sha256: line " + str(len(listing.read_text().splitlines()))
                             + ": is not '<sha256>  <path inside the package>'") for line in lines), lines


def test_merge_refuses_shards_of_different_runs(suite_root: Path, tmp_path: Path) -> None:
    certify(suite_root, tmp_path / "a", "--backend", "numpy", "--shard", "1/2")
    certify(suite_root, tmp_path / "b", "--backend", "numpy", "--variant", "swapped", "--shard", "2/2")
    refused = CliRunner().invoke(main, ["certify", "--merge", "-o", str(tmp_path / "m"), str(tmp_path / "a"),
                                        str(tmp_path / "b")])
    assert refused.exit_code == 2 and "field settings.variant" in refused.output
    whole = tmp_path / "whole"
    certify(suite_root, whole, "--backend", "numpy")
    not_a_shard = CliRunner().invoke(main, ["certify", "--merge", "-o", str(tmp_path / "n"), str(whole)])
    assert not_a_shard.exit_code == 2 and "is not a shard package" in not_a_shard.output


def test_a_waiver_for_another_device(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    # Granted for another device, certify does not apply it: the broken cases fail and the claim does not hold.
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(WAIVERS_TEXT.replace('adapter: "cpu (reference)"', 'adapter: "NVIDIA*", vendor_id: 0x10DE'))
    package = tmp_path / "pkg"
    made = certify(suite_root, package, "--backend", "numpy", "--waivers", elsewhere)
    assert made.exit_code == 1 and "DOES NOT HOLD" in made.output
    done = verify(package, suite_root)
    assert done.exit_code == 1, done.output
    assert f"results.json: case {FAILING}: FAIL, not waived" in done.output
    assert "VALID, but the claim does not hold" in done.output
    assert "for other devices: TEST-W-1" in (package / STATEMENT).read_text()

    # A package whose waiver file is edited to another device after the fact.
    forged = copy_package(numpy_package, tmp_path / "forged")
    (forged / WAIVERS).write_text(elsewhere.read_text())
    forge(forged)
    done = verify(forged, suite_root)
    assert done.exit_code == 3, done.output
    assert (f"results.json: case {FAILING}: WAIVED by TEST-W-1, which is granted for adapter NVIDIA*, vendor_id "
            "0x10DE, not for this package's device (backend numpy, adapter 'cpu (reference)'") in done.output


def test_waivers_are_checked_against_the_granted_list(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    granted = _waivers(tmp_path)
    assert verify(numpy_package, suite_root, "--waivers", granted).exit_code == 0
    granted.write_text(WAIVERS_TEXT.replace("wrong on purpose", "wrong"))
    done = verify(numpy_package, suite_root, "--waivers", granted)
    assert done.exit_code == 3 and "waivers.yaml: waiver TEST-W-1: field reason: differs from the granted list" \
        in done.output
    granted.write_text(WAIVERS_TEXT.replace("TEST-W-1", "TEST-W-2"))
    done = verify(numpy_package, suite_root, "--waivers", granted)
    assert "waivers.yaml: waiver TEST-W-1: is not in the granted list" in done.output


def test_a_claim_that_does_not_hold_is_exit_1_with_one_line_per_case(suite_root: Path, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    made = certify(suite_root, package, "--backend", "numpy")
    assert made.exit_code == 1
    done = verify(package, suite_root)
    assert done.exit_code == 1
    assert [line.split(": case ")[1].split(":")[0] for line in problems(done) if ": case " in line] == list(BROKEN)


# -- the spot-check -------------------------------------------------------------------------------------------------
def test_a_consistent_forgery_passes_verify_and_fails_the_spot_check(numpy_package: Path, suite_root: Path,
                                                                     tmp_path: Path) -> None:
    """The limit of verify: outputs replaced by the (wrong) golden, everything re-derived, is consistent. Running
    the case again on the certifier's unit is what catches it."""
    forged = copy_package(numpy_package, tmp_path)
    golden = np.array([[[[0, 0, 0], [0, 3, 0], [0, 4, 6]]]], dtype=np.float32)
    np.save(forged / "outputs" / "seed.broken" / "max-pooling-grad-2x2" / "OutputGradientTensor.npy", golden)

    def passing(document: dict) -> None:
        case = case_entry(document, FAILING)
        case.update(status="PASS", waiver=None, max_ulp=0, max_abs_error=0.0, worst_index=None, worst_elements=[],
                    closeness=0.0, ulp_histogram=[], message="max 0 ULP (rule exact)")

    edit_results(forged, passing)
    forge(forged)
    consistent = verify(forged, suite_root)
    assert consistent.exit_code == 0, consistent.output
    caught = verify(forged, suite_root, "--rerun", 1000, "--backend", "numpy")
    assert caught.exit_code == 4, caught.output
    assert f"results.json: case {FAILING}: spot-check: PASS in the package, FAIL on this unit" in caught.output
    honest = verify(numpy_package, suite_root, "--rerun", 5, "--seed", 3, "--backend", "numpy")
    assert honest.exit_code == 0, honest.output
    assert "spot-check: 5 case(s) again on numpy (--seed 3)" in honest.output
    assert "spot-check: 5/5 came out as in the package" in honest.output


# -- usage -----------------------------------------------------------------------------------------------------------
def test_usage_errors_are_one_line_and_exit_2(numpy_package: Path, tmp_path: Path, suite_root: Path) -> None:
    not_a_package = CliRunner().invoke(main, ["verify", str(tmp_path)])
    assert not_a_package.exit_code == 2 and "not a certification package" in not_a_package.output
    bad_waivers = tmp_path / "bad.yaml"
    bad_waivers.write_text("format: dmlconform-waivers/v1\nwaivers:\n  - id: W\n    cases: [x]\n")
    refused = CliRunner().invoke(main, ["certify", "--level", "6_4", "--backend", "numpy", "-o", str(tmp_path / "p"),
                                        "--waivers", str(bad_waivers)])
    assert refused.exit_code == 2
    assert refused.output.strip().endswith("waiver W: field reason: missing: a waiver names its id, the reason and "
                                           "who granted it")
    assert not (tmp_path / "p").exists()
    occupied = CliRunner().invoke(main, ["certify", "--level", "6_4", "--backend", "numpy", "-o",
                                         str(numpy_package)])
    assert occupied.exit_code == 2 and "exists and is not an empty folder" in occupied.output
    no_level = CliRunner().invoke(main, ["certify", "--backend", "numpy", "-o", str(tmp_path / "q")])
    assert no_level.exit_code == 2 and "--level" in no_level.output
    lone_rerun = CliRunner().invoke(main, ["verify", str(numpy_package), "--rerun", "3"])
    assert lone_rerun.exit_code == 2 and "--rerun N and --backend go together" in lone_rerun.output


def test_a_damaged_package_is_exit_3_never_a_traceback(numpy_package: Path, suite_root: Path, tmp_path: Path) -> None:
    for damage in ("results", "certification", "output"):
        damaged = copy_package(numpy_package, tmp_path / damage)
        if damage == "results":
            (damaged / RESULTS).write_text("{not json")
        elif damage == "certification":
            (damaged / CERTIFICATION).write_text(json.dumps({"format": "dmlconform-certification/v1"}))
        else:
            target = damaged / "outputs" / "seed" / "relu-grad-formula" / "OutputGradientTensor.npy"
            target.write_bytes(b"\x93NUMPY garbage")
        reseal(damaged)
        done = verify(damaged, suite_root)
        assert done.exit_code == 3, (damage, done.output)
        assert "Traceback" not in done.output


# -- the real thing -----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.tier_scan
def test_the_scanned_tier_certifies_the_reference_end_to_end(tmp_path: Path, scanned_cases: list,
                                                            request: pytest.FixtureRequest) -> None:
    """Issue 24's first "Done when" on the committed standard tier, as a vendor and a certifier run it: a tier scan, so
    the standard tier in .ci/run's scan step; the smoke tier in the test command, where the same run makes a valid
    rehearsal package whose claim does not hold, since smoke certifies nothing."""
    tier = request.config.getoption("--scan-tier")
    package = tmp_path / "numpy-6_4"
    made = invoke("certify", "--level", "6_4", "--backend", "numpy", "--jobs", "2", "--tier", tier, "-o", package)
    done = invoke("verify", package)
    cases = len(scanned_cases)
    if tier == "smoke":
        rehearsal = "the smoke tier is a rehearsal; a certification runs the standard or the full tier"
        assert made.exit_code == 1 and rehearsal in made.output, made.output[-2000:]
        assert done.exit_code == 1, done.output[-2000:]
        assert f"VALID, but the claim does not hold: not conformant at 6_4 on cpu (reference): {rehearsal}" \
            in done.output
    else:
        assert made.exit_code == 0, made.output[-2000:]
        assert done.exit_code == 0, done.output[-2000:]
        assert f"VALID: conformant at 6_4 on cpu (reference) (standard tier, {cases} cases re-judged" in done.output
    document = json.loads((package / CERTIFICATION).read_text())
    assert document["suite"]["cases"] == cases and document["verdict"]["matched"] == cases
    assert document["verdict"]["not_matched"] == [] and document["verdict"]["certified"] == (tier != "smoke")


@pytest.mark.slow
def test_fields_of_the_wrong_kind_are_problems_never_a_traceback(numpy_package: Path, suite_root: Path,
                                                                 tmp_path: Path) -> None:
    from dmlconform.certification.manifest import suite_files
    from dmlconform.certification.verify import Shipped, open_package, verify_package
    from dmlconform.cli.common import load_cases, suite_roots

    shipped = Shipped(load_cases((suite_root,), None, "standard"), suite_files(suite_roots("standard", suite_root)),
                      "the stand-in")
    document = json.loads((numpy_package / CERTIFICATION).read_text())
    manifest = json.loads((numpy_package / "suite-manifest.json").read_text())
    targets = [(CERTIFICATION, document, key) for key in document] + [
        ("suite-manifest.json", manifest, key) for key in manifest] + [
        ("suite-manifest.json", manifest["files"], next(iter(manifest["files"])))]
    damaged = copy_package(numpy_package, tmp_path)
    for name, container, key in targets:
        for value in (None, 7, {"x": 1}):
            if value == container[key]:
                continue
            original = container[key]
            container[key] = value
            (damaged / name).write_text(json.dumps(document if name == CERTIFICATION else manifest))
            container[key] = original
            reseal(damaged)
            opened = open_package(damaged)
            if opened.document is None or opened.level is None or opened.tier is None:
                assert opened.problems, (name, key, value)
                continue
            verification = verify_package(opened, shipped)
            assert verification.problems or (name, key) in {(CERTIFICATION, "created"), (CERTIFICATION, "command")}, (
                name, key, value)
