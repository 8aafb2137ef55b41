"""Issue 9's "Done when", end to end on real runs: diff names a regression and a drift towards the threshold
and exits 1; a repro bundle replays to the same status through `dmlconform run`; show explains a case."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import main
from tests.triage.runs import NEW_HARNESS, REGRESSED, DriverUpdate, driver_update, invoke

pytestmark = pytest.mark.slow  # every test reads one module fixture: two real runs of a simulated driver


@pytest.fixture(scope="module")
def update(tmp_path_factory) -> DriverUpdate:
    return driver_update(tmp_path_factory.mktemp("update"))


def _closest_drift(update: DriverUpdate) -> dict:
    document = json.loads(invoke("diff", str(update.old), str(update.new), "--json", "-").output)
    return max(document["drift"], key=lambda d: d["new"]["closeness"])


def test_diff_names_the_regression_and_the_drift_and_exits_1(update: DriverUpdate) -> None:
    outcome = invoke("diff", str(update.old), str(update.new))
    assert outcome.exit_code == 1
    assert REGRESSED in outcome.output and "PASS → FAIL" in outcome.output and "REGRESSED" in outcome.output
    joined = re.sub(r"\s*\n\s+", "", outcome.output)  # ids folded over two lines, joined again
    drifted = _closest_drift(update)
    assert re.search(rf"▲ closer\s+PASS\s+bound.*{re.escape(drifted['id'])}", joined)


def test_diff_json_for_machines(update: DriverUpdate, tmp_path: Path) -> None:
    outcome = invoke("diff", str(update.old), str(update.new), "--json", str(tmp_path / "d.json"))
    assert outcome.exit_code == 1
    document = json.loads((tmp_path / "d.json").read_text())
    assert document["regressed"] and [c["id"] for c in document["changes"]] == [REGRESSED]
    assert document["changes"][0]["change"] == "regression" and document["changes"][0]["new"]["closeness"] == "inf"
    drifted = _closest_drift(update)
    assert drifted["closer"] and drifted["status"] == "PASS"
    assert drifted["old"]["closeness"] == 0 and 0 < drifted["new"]["closeness"] <= 1
    assert document["summary"]["regression"] == 1 and document["summary"]["closer"] >= 1


def test_diff_of_a_run_with_itself_exits_0_and_bad_input_exits_2(update: DriverUpdate, tmp_path: Path) -> None:
    assert invoke("diff", str(update.old), str(update.old)).exit_code == 0
    (tmp_path / "bad.json").write_text('{"format": "junit"}')
    refused = CliRunner().invoke(main, ["diff", str(update.old), str(tmp_path / "bad.json")])
    assert refused.exit_code == 2 and "bad.json: field format" in refused.output and "Traceback" not in refused.output


def _replay(command: list[str]) -> tuple[int, dict]:
    assert command[0] == "dmlconform"
    outcome = invoke(*command[1:])
    json_path = Path(command[command.index("--json") + 1])
    return outcome.exit_code, json.loads(json_path.read_text())["cases"][0]


@pytest.mark.parametrize("which", ["regressed", "drifted"])
def test_a_repro_bundle_replays_to_the_same_status_through_run(update: DriverUpdate, tmp_path: Path,
                                                               which: str) -> None:
    case_id = REGRESSED if which == "regressed" else _closest_drift(update)["id"]
    recorded = update.case("new", case_id)
    made = invoke("repro", case_id, "--result", str(update.new), "--out", str(tmp_path / "bundle"))
    assert made.exit_code == 0, made.output
    bundle = tmp_path / "bundle"
    for name in ("suite.yaml", "dxdispatch.json", "README.md", "reproduce.sh", "result.json",
                 "inputs", "expected", "actual"):
        assert (bundle / name).exists(), name
    command = json.loads((bundle / "result.json").read_text())["command"]
    assert shlex.join(command) in (bundle / "README.md").read_text()
    assert NEW_HARNESS in command and "--feature-level" in command
    code, replayed = _replay(command)
    assert replayed["id"] == case_id and replayed["status"] == recorded["status"]
    assert (replayed["max_ulp"], replayed["worst_index"], replayed["closeness"]) == \
        (recorded["max_ulp"], recorded["worst_index"], recorded["closeness"])
    assert code == (1 if recorded["status"] == "FAIL" else 0)


def test_show_explains_a_failing_case_from_its_artifacts(update: DriverUpdate) -> None:
    outcome = invoke("show", REGRESSED, "--result", str(update.new))
    assert outcome.exit_code == 0, outcome.output
    text = outcome.output
    for words in ("DML_OPERATOR_ACTIVATION_RELU_GRAD with DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC",
                  "artifacts recorded in", "now: FAIL", "ULP distance of all", "2^30–2^31−1",
                  "(0x40c00000)", "exact: every element must have the expected bits", "InputGradientTensor"):
        assert words in text, words


def test_show_reruns_a_case_the_run_kept_no_artifacts_of_and_lists_its_terms(update: DriverUpdate) -> None:
    drifted = _closest_drift(update)
    outcome = invoke("show", drifted["id"], "--result", str(update.new), "--top", "2")
    assert outcome.exit_code == 0, outcome.output
    assert "re-run now on native" in outcome.output and "now: PASS" in outcome.output
    assert "term(s) from" in outcome.output and "dY[" in outcome.output and "γ_K·M" in outcome.output
    without = invoke("show", drifted["id"], "--result", str(update.new), "--no-rerun")
    assert "not available" in without.output and "term(s) from" not in without.output


def test_show_and_repro_refuse_unknown_cases_and_results_in_one_line(update: DriverUpdate, tmp_path: Path) -> None:
    for args in (["show", "relu_grad.edge/no-such-case"],
                 ["show", "relu_grad.edge/no-such-case", "--result", str(update.new)],
                 ["repro", REGRESSED, "--result", str(tmp_path / "missing.json"), "--out", str(tmp_path / "b")]):
        outcome = CliRunner().invoke(main, args)
        assert outcome.exit_code == 2, args
        assert "Traceback" not in outcome.output and len(outcome.output.strip().splitlines()) == 1, outcome.output
    assert "not in this result" in CliRunner().invoke(main, ["show", "x/y", "--result", str(update.new)]).output


def test_report_writes_html_and_prints_the_console_report_with_the_diff(update: DriverUpdate, tmp_path: Path) -> None:
    outcome = invoke("report", str(update.new), str(update.old))
    assert outcome.exit_code == 0 and "conformant at 3_0" in outcome.output and "REGRESSED" in outcome.output
    written = invoke("report", str(update.new), str(update.old), "--html", str(tmp_path / "r.html"))
    assert written.exit_code == 0 and REGRESSED in (tmp_path / "r.html").read_text()
    assert (update.new.parent / "run.html").exists()  # run --html


def test_report_and_run_refuse_unusable_input_in_one_line(update: DriverUpdate, tmp_path: Path) -> None:
    (tmp_path / "torn.json").write_text('{"format": "dmlconform-result/v1", "cases": [')
    for args in (["report", str(tmp_path / "torn.json")], ["report", str(update.new), str(tmp_path / "none.json")],
                 ["run", "-k", "seed", "--artifacts-all"]):
        outcome = CliRunner().invoke(main, args)
        assert outcome.exit_code == 2, (args, outcome.output)
        assert "Traceback" not in outcome.output and len(outcome.output.strip().splitlines()) == 1, outcome.output


def test_show_takes_the_result_file_first_as_the_readme_writes_it(update: DriverUpdate, tmp_path: Path) -> None:
    """README's `dmlconform show new.json CASE_ID` is `show CASE_ID --result new.json`; anything else with two
    arguments is one line (exit 2)."""
    readme = invoke("show", str(update.new), REGRESSED)
    assert readme.exit_code == 0, readme.output
    assert readme.output == invoke("show", REGRESSED, "--result", str(update.new)).output
    for args, says in ((["show", REGRESSED, str(update.new)], "give CASE_ID, or a result file that is there"),
                       (["show", str(tmp_path / "gone.json"), REGRESSED], "give CASE_ID, or a result file"),
                       (["show", str(update.new), REGRESSED, "--result", str(update.new)], "give the result once")):
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code == 2 and refused.output.startswith("dmlconform show: ") and says in refused.output
        assert refused.output.count("\n") == 1
