"""`dmlconform history` and `run --record` end to end: the commands a CI owner runs, their plain-text and JSON
answers, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import lzma
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import main
from tests.cli.conftest import SEED
from tests.history import scenario, suite_change

IDS = scenario.case_ids()


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env={"CI": "true", **(env or {})}).invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def ci_files(tmp_path: Path) -> list[tuple[Path, dict[str, str]]]:
    """The synthetic CI runs as result files, with the --meta each job gives."""
    files = []
    for document, meta in scenario.runs():
        path = tmp_path / "results" / f"{document['backend']['device']}-{meta['build']}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(document))
        files.append((path, meta))
    return files


def add_all(db: str, files: list[tuple[Path, dict[str, str]]]) -> None:
    for path, meta in files:
        meta_args = [f"--meta={key}={value}" for key, value in meta.items()]
        outcome = invoke("history", "add", "--db", db, str(path), *meta_args)
        assert outcome.exit_code == 0, outcome.output


@pytest.mark.slow
def test_the_ci_owners_three_commands(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    db = str(tmp_path / "history.sqlite")
    add_all(db, ci_files)
    first = invoke("history", "first-failure", "--all", "--db", db)
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    regressed = next(line for line in lines if line.startswith(IDS["REGRESSED"]))
    assert "build=6" in regressed and "build=7" in regressed and "commit=c006" in regressed
    assert "3 case(s) failing now on 2 stack(s)" in first.output and "─" not in first.output  # plain text in CI
    flaky = invoke("history", "--db", db, "flaky")  # --db before the subcommand works too
    assert flaky.exit_code == 0
    assert [line.split()[0] for line in flaky.output.splitlines()[2:4]] == [IDS["FLAKY"], IDS["FLAKE_STATUS"]]
    assert "PFPPFPPPPP" in flaky.output and "2 flaky case(s) over 20 run(s) of 2 stack(s)" in flaky.output


@pytest.mark.slow
def test_every_answer_as_json(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    db = str(tmp_path / "history.sqlite")
    add_all(db, ci_files)
    env = {"DMLCONFORM_DB": db}  # the environment names the database
    answers = {}
    for args in (["runs", "--last", "3"], ["timeline", IDS["FLAKY"]], ["first-failure", "--all"], ["flaky"],
                 ["drift"], ["compare", "--by", "driver_version"], ["first-failure", IDS["DRIVER"]]):
        outcome = invoke("history", *args, "--json", "-", env=env)
        assert outcome.exit_code == 0, outcome.output
        answers[args[0] + ("-one" if args[-1] == IDS["DRIVER"] else "")] = json.loads(outcome.output)
    assert all(a["format"] == "dmlconform-history/v1" for a in answers.values())
    assert [r["meta"]["build"] for r in answers["runs"]["runs"]] == ["9", "10", "10"]
    assert [r["status"] for r in answers["timeline"]["stacks"][0]["runs"]][:3] == ["PASS", "FAIL", "PASS"]
    assert [(c["case"]["id"], c["last_pass"]["meta"]["build"], c["first_failure"]["meta"]["build"])
            for c in answers["first-failure"]["cases"]] == [
        (IDS["REGRESSED"], "6", "7"), (IDS["DRIVER"], "5", "6"), (IDS["GAP"], "3", "6")]
    assert [c["flip_rate"] for c in answers["flaky"]["cases"]] == [4 / 9, 0.25]
    assert [(c["case"]["id"], c["runs_to_limit"]) for c in answers["drift"]["cases"]] == [
        (IDS["DRIFTING"], pytest.approx(10.0))]
    assert [(v["value"], v["runs"]) for v in answers["compare"]["values"]] == [("1.0", 15), ("2.0", 5)]
    assert [c["outcomes"] for c in answers["compare"]["changes"]] == [{"1.0": "PASS", "2.0": "FAIL"}]
    assert [(c["stack"], c["failing"]) for c in answers["first-failure-one"]["cases"]] == [
        ("directml on GPU-B", True), ("directml on GPU-A", False)]


def test_the_json_says_where_the_suites_changed(tmp_path: Path) -> None:
    """tests/history/suite_change.py's history: RETIRED left with build 5's newer suite, CHANGED passed in the older
    suite and fails in the newer, NEWCOMER and RETIRED are each in one suite only."""
    ids = suite_change.case_ids()
    db = str(tmp_path / "history.sqlite")
    for number, (document, meta) in enumerate(suite_change.runs()):
        path = tmp_path / f"run-{number}.json"
        path.write_text(json.dumps(document))
        assert invoke("history", "add", "--db", db, str(path), f"--meta=build={meta['build']}").exit_code == 0
    first = json.loads(invoke("history", "first-failure", "--all", "--db", db, "--json", "-").output)
    by_case = {c["case"]["id"]: c for c in first["cases"]}
    assert (by_case[ids["RETIRED"]]["failing"], by_case[ids["RETIRED"]]["left"]["meta"]["build"]) == (False, "5")
    assert (by_case[ids["CHANGED"]]["failing"], by_case[ids["CHANGED"]]["suite_changed"]) == (True, True)
    assert by_case[ids["NEWCOMER"]]["last_pass"] is None and by_case[ids["NEWCOMER"]]["left"] is None
    compared = json.loads(invoke("history", "compare", "--by", "suite_fingerprint", "--where", "tier=standard",
                                 "--db", db, "--json", "-").output)
    assert [(c["case"]["id"], c["suites_differ"]) for c in compared["changes"]] == sorted(
        [(ids["CHANGED"], True), (ids["FLIPPY"], True)])
    assert [(s["held_by_all"], s["held_by_one"], s["suites"]) for s in compared["stacks"]] == [(5, 2, 2)]


def test_adding_the_same_result_twice_adds_nothing(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    db = str(tmp_path / "history.sqlite")
    path = ci_files[0][0]
    packed = tmp_path / "same.json.xz"
    packed.write_bytes(lzma.compress(path.read_bytes()))
    assert "1 run(s) added, 0 already held" in invoke("history", "add", "--db", db, str(path)).output
    again = invoke("history", "add", "--db", db, str(path), str(packed))
    assert again.exit_code == 0 and "0 run(s) added, 2 already held" in again.output
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


@pytest.mark.parametrize(("bad", "message"), [
    (b"{not json", "bad.json: is not JSON"),
    (b'{"format": "dmlconform-result/v1"}', "bad.json: field backend: missing"),
])
def test_a_bad_file_among_good_ones_writes_nothing(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]],
                                                   bad: bytes, message: str) -> None:
    db = str(tmp_path / "history.sqlite")
    add_all(db, ci_files[:1])
    (tmp_path / "bad.json").write_bytes(bad)
    outcome = invoke("history", "add", "--db", db, str(ci_files[1][0]), str(tmp_path / "bad.json"),
                     str(ci_files[2][0]))
    assert outcome.exit_code == 2 and message in outcome.stderr and len(outcome.stderr.splitlines()) == 1
    assert "Traceback" not in outcome.output
    assert sqlite3.connect(db).execute("SELECT COUNT(*), (SELECT COUNT(*) FROM case_results) FROM runs").fetchone() \
        == (1, len(scenario.ROLES))


@pytest.mark.parametrize(("args", "message"), [
    (["history", "runs", "--db", "{d}/missing.sqlite"], "no history database there"),
    (["history", "first-failure", "--db", "{d}/h.sqlite"], "give a CASE or --all"),
    (["history", "first-failure", "x", "--all", "--db", "{d}/h.sqlite"], "give a CASE or --all"),
    (["history", "timeline", "no-such-case", "--db", "{d}/h.sqlite"], "no case 'no-such-case' in the history"),
    (["history", "add", "{d}/r.json", "--meta", "oops", "--db", "{d}/h.sqlite"], "--meta oops: give key=value"),
    (["history", "flaky", "--where", "branch", "--db", "{d}/h.sqlite"], "--where branch: give KEY=VALUE"),
    (["history", "runs", "--db", "{d}/text.sqlite"], "is not a SQLite database, or is corrupt"),
    (["history", "runs", "--db", "postgresql://ci:pw@127.0.0.1:1/x?connect_timeout=3"], "cannot connect"),
    (["run", str(SEED), "--meta", "build=1"], "--meta is for --record"),
    (["run", str(SEED), "--record", "--meta", "device=x"], "--meta device: taken from the result document"),
])
def test_unusable_input_is_one_line_and_exit_2(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]],
                                               args: list[str], message: str) -> None:
    if "postgresql" in " ".join(args):
        pytest.importorskip("psycopg")
    add_all(str(tmp_path / "h.sqlite"), ci_files[:1])
    (tmp_path / "r.json").write_text(ci_files[1][0].read_text())
    (tmp_path / "text.sqlite").write_text("not a database\n" * 300)
    outcome = invoke(*(arg.replace("{d}", str(tmp_path)) for arg in args))
    assert outcome.exit_code == 2 and message in outcome.stderr, outcome.output
    assert len(outcome.stderr.splitlines()) == 1 and "pw@" not in outcome.stderr


@pytest.mark.slow
def test_prune_and_the_page(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    db = str(tmp_path / "history.sqlite")
    add_all(db, ci_files)
    page = tmp_path / "history.html"
    made = invoke("history", "report", "--db", db, "--html", str(page))
    assert made.exit_code == 0 and page.read_text().count("<svg") >= 3
    pruned = invoke("history", "prune", "--db", db, "--keep", "4", "--json", "-")
    assert pruned.exit_code == 0 and json.loads(pruned.output)["runs_removed"] == 12
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone() == (8,)


def test_migrate_says_when_there_is_nothing_to_do(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    db = str(tmp_path / "history.sqlite")
    add_all(db, ci_files[:1])
    outcome = invoke("history", "migrate", "--db", db)
    assert outcome.exit_code == 0 and "the schema is this dmlconform's already" in outcome.output


@pytest.mark.slow
def test_run_record_adds_the_run_it_wrote(tmp_path: Path) -> None:
    db, result = str(tmp_path / "history.sqlite"), tmp_path / "seed.json"
    ran = invoke("run", str(SEED), "--json", str(result), "--record", "--db", db, "--meta", "build=77",
                 "--meta", "branch=main")
    assert ran.exit_code == 0, ran.output
    assert "recorded as run #1 of numpy on " in ran.stderr
    again = invoke("history", "add", "--db", db, str(result))  # the same document: already there
    assert "0 run(s) added, 1 already held" in again.output
    runs = json.loads(invoke("history", "runs", "--db", db, "--json", "-").output)["runs"]
    assert len(runs) == 1 and runs[0]["meta"]["build"] == "77" and runs[0]["meta"]["backend"] == "numpy"
    assert runs[0]["cases"] == len(json.loads(result.read_text())["cases"])
    # Without --json the run is recorded from the document it would have written.
    assert invoke("run", str(SEED), "--record", "--db", db).exit_code == 0
    assert sqlite3.connect(db).execute("SELECT COUNT(*), MAX(source) FROM runs").fetchone() == (2, "dmlconform run")


def test_which_database_a_command_uses(tmp_path: Path, ci_files: list[tuple[Path, dict[str, str]]]) -> None:
    """The subcommand's --db, else the group's, else $DMLCONFORM_DB."""
    db = str(tmp_path / "h.sqlite")
    add_all(db, ci_files[:1])
    missing = {"DMLCONFORM_DB": str(tmp_path / "missing.sqlite")}
    assert invoke("history", "runs", env=missing).exit_code == 2
    assert invoke("history", "--db", db, "runs", env=missing).exit_code == 0
    assert invoke("history", "--db", str(tmp_path / "other.sqlite"), "runs", "--db", db, env=missing).exit_code == 0
