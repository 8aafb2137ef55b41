"""`dmlconform run` for driver CI, end to end: each "Done when" of issue 8 shown on real runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import bundled_suites, main
from dmlconform.feature_levels import TRAINING_OPERATORS
from dmlconform.results.journal import read_journal
from tests.cli.conftest import BROKEN, HARNESS, SEED, cases_without_timing, load, start, wait_for_lines


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_three_shards_merged_equal_the_full_run(tmp_path: Path, broken_suite: Path) -> None:
    suites = [str(bundled_suites()), str(broken_suite), "--tier", "smoke"]  # smoke: the point is the merging
    full = invoke("run", *suites, "--json", str(tmp_path / "full.json"))
    assert full.exit_code == 1  # the two broken goldens
    for index in (1, 2, 3):
        invoke("run", *suites, "--shard", f"{index}/3", "--json", str(tmp_path / f"part{index}.json"))
    parts = [load(tmp_path / f"part{i}.json") for i in (1, 2, 3)]
    assert [p["shard"] for p in parts] == [{"index": i, "count": 3} for i in (1, 2, 3)]
    sizes = [len(p["cases"]) for p in parts]
    assert sum(sizes) == len(load(tmp_path / "full.json")["cases"]) and max(sizes) - min(sizes) <= 2
    merged = invoke("merge", *(str(tmp_path / f"part{i}.json") for i in (3, 1, 2)), "-o", str(tmp_path / "m.json"),
                    "--junit", str(tmp_path / "m.xml"))
    assert merged.exit_code == 1, merged.output
    whole, joined = load(tmp_path / "full.json"), load(tmp_path / "m.json")
    assert cases_without_timing(joined) == cases_without_timing(whole)
    for key in ("summary", "feature_levels", "behaviour_fingerprint", "suite", "settings", "backend"):
        assert joined[key] == whole[key], key
    assert joined["shard"] is None and joined["missing_shards"] == [] and len(joined["shards"]) == 3
    xmlschema = pytest.importorskip("xmlschema")
    xmlschema.XMLSchema(Path(__file__).parents[1] / "report" / "junit-10.xsd").validate(tmp_path / "m.xml")


def test_merge_reports_missing_shards_and_refuses_other_runs(tmp_path: Path) -> None:
    for index in (1, 2):
        invoke("run", str(SEED), "--shard", f"{index}/3", "--json", str(tmp_path / f"p{index}.json"))
    invoke("run", str(SEED), "-k", "relu", "--shard", "3/3", "--json", str(tmp_path / "other.json"))
    partial = invoke("merge", str(tmp_path / "p1.json"), str(tmp_path / "p2.json"), "-o", str(tmp_path / "m.json"))
    assert partial.exit_code == 1 and "missing shards: 3" in partial.output
    assert load(tmp_path / "m.json")["missing_shards"] == [3]
    refused = CliRunner().invoke(main, ["merge", str(tmp_path / "p1.json"), str(tmp_path / "other.json")])
    assert refused.exit_code == 2 and "field suite.fingerprint" in refused.output
    twice = CliRunner().invoke(main, ["merge", str(tmp_path / "p1.json"), str(tmp_path / "p1.json")])
    assert twice.exit_code == 2 and "field shard.index: shard 1/3 is also in" in twice.output


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_same_result_with_no_case_run_twice(tmp_path: Path) -> None:
    log = tmp_path / "served.log"
    harness = f"{HARNESS} --delay 0.05 --log-served {log}"
    args = ["run", str(bundled_suites()), "--tier", "smoke", "-k", "relu_grad", "--backend", "native", "--harness", harness,
            "--retries", "0", "--json", str(tmp_path / "r.json"), "--jobs", "2"]
    journal = tmp_path / "r.journal.jsonl"
    process = start(args)
    wait_for_lines(journal, 12, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    first_log = log.read_text().split("\n")[:-1]
    journaled = {r.id for r in read_journal(journal).results}
    assert not (tmp_path / "r.json").exists()  # killed before any report
    resumed = start([*args, "--resume"])
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    document = load(tmp_path / "r.json")
    all_ids = [c["id"] for c in document["cases"]]
    assert len(all_ids) == document["suite"]["cases"] == len(set(all_ids)) > 12
    assert document["resumed"] == len(journaled) >= 12
    served_on_resume = [line.split()[0] for line in log.read_text().split("\n")[:-1][len(first_log):]]
    assert sorted(served_on_resume) == sorted(set(all_ids) - journaled)  # each remaining case once, none again
    assert journaled <= {line.split()[0] for line in first_log}
    reference = invoke("run", str(bundled_suites()), "--tier", "smoke", "-k", "relu_grad", "--backend", "native",
                       "--harness", HARNESS,
                       "--retries", "0", "--json", str(tmp_path / "whole.json"))
    assert reference.exit_code == 0
    assert cases_without_timing(document) == cases_without_timing(load(tmp_path / "whole.json"))


@pytest.mark.parametrize(("sig", "status", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
@pytest.mark.slow
def test_an_interrupt_writes_a_complete_partial_report(tmp_path: Path, sig: signal.Signals, status: int,
                                                       name: str) -> None:
    log = tmp_path / "served.log"
    process = start(["run", str(bundled_suites()), "-k", "relu_grad", "--backend", "native", "--harness",
                     f"{HARNESS} --delay 0.1 --log-served {log}", "--jobs", "2", "--json", str(tmp_path / "r.json"),
                     "--junit", str(tmp_path / "r.xml")])
    wait_for_lines(tmp_path / "r.journal.jsonl", 3, process)
    process.send_signal(sig)
    out, err = process.communicate(timeout=30)
    assert process.returncode == status, err
    assert f"INTERRUPTED ({name})" in out and "Traceback" not in err
    document = load(tmp_path / "r.json")
    statuses = [c["status"] for c in document["cases"]]
    total = document["suite"]["cases"]
    assert len(statuses) == total and document["interrupted"] == name
    assert 3 <= statuses.count("PASS") + statuses.count("INVALID_OK") < total
    assert statuses.count("NOT_RUN") > 0 and set(statuses) <= {"PASS", "INVALID_OK", "NOT_RUN"}
    assert all("interrupted by " + name in c["message"] for c in document["cases"] if c["status"] == "NOT_RUN")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.journal.jsonl", "r.json", "r.xml", "served.log"]
    xmlschema = pytest.importorskip("xmlschema")
    xmlschema.XMLSchema(Path(__file__).parents[1] / "report" / "junit-10.xsd").validate(tmp_path / "r.xml")
    from tests.runner.test_pool import alive

    assert not [pid for pid in {int(line.split()[1]) for line in log.read_text().splitlines()} if alive(pid)]


@pytest.mark.slow
def test_a_baseline_turns_known_failures_into_expected_fail_and_a_new_failure_still_fails(
        tmp_path: Path, broken_suite: Path) -> None:
    first = invoke("run", str(broken_suite), "--json", str(tmp_path / "r.json"), "--failures", str(tmp_path / "f.csv"))
    assert first.exit_code == 1
    baseline = tmp_path / "f.csv"
    assert sorted(line for line in baseline.read_text().splitlines() if not line.startswith("#")) == \
        sorted(f"{case},FAIL" for case in BROKEN)
    known = invoke("run", str(broken_suite), "--baseline", str(baseline), "--json", str(tmp_path / "r.json"))
    assert known.exit_code == 0, known.output
    assert "conformant at 3_0: no, only with 2 known failure(s)" in known.output
    document = load(tmp_path / "r.json")
    assert document["summary"] == {"EXPECTED_FAIL": 2, "PASS": 4}
    level = document["feature_levels"]["6_4"]
    assert level == {"required": 6, "matched": 4, "conformant": False, "claimed": True, "known_failures": 2,
                     "waived": 0, "known_issues": 0, "operators": level["operators"],
                     "untested": [name for name in TRAINING_OPERATORS if name not in level["operators"]]}
    assert document["expectations"][0]["kind"] == "baseline" and len(document["expectations"][0]["sha256"]) == 64
    baseline.write_text(f"{BROKEN[0]},FAIL\n")  # the other failure is now news
    new = invoke("run", str(broken_suite), "--baseline", str(baseline))
    assert new.exit_code == 1 and f"FAIL {BROKEN[1]}" in new.output
    baseline.write_text(f"{BROKEN[0]},CRASH\n{BROKEN[1]},FAIL\nseed.broken/slice-grad-2d,FAIL\n")
    changed = invoke("run", str(broken_suite), "--baseline", str(baseline), "--json", str(tmp_path / "r.json"))
    assert changed.exit_code == 1 and "changed failure CRASH→FAIL" in changed.output
    assert {c["id"]: c["status"] for c in load(tmp_path / "r.json")["cases"]}["seed.broken/slice-grad-2d"] == \
        "UNEXPECTED_PASS"


def test_a_skip_list_skips_without_running(tmp_path: Path, broken_suite: Path) -> None:
    skips = tmp_path / "skips.txt"
    skips.write_text("# the two broken ones\nrelu-grad-formula$\nmax-pooling\n")
    result = invoke("run", str(broken_suite), "--skip", str(skips), "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0
    assert load(tmp_path / "r.json")["summary"] == {"PASS": 4, "SKIPPED": 2}


@pytest.mark.slow
def test_a_harness_that_fails_a_case_one_time_in_two_is_reported_flake(tmp_path: Path) -> None:
    harness = f"{HARNESS} --flaky-on relu-grad-formula"
    flaky = invoke("run", str(SEED), "--backend", "native", "--harness", harness, "--json", str(tmp_path / "r.json"),
                   "--junit", str(tmp_path / "r.xml"))
    assert flaky.exit_code == 0, flaky.output
    case = next(c for c in load(tmp_path / "r.json")["cases"] if c["id"] == "seed/relu-grad-formula")
    assert case["status"] == "FLAKE" and case["attempts"] == ["FAIL", "PASS"] and case["outcome"] == "FAIL"
    assert "1 FLAKE" in flaky.output and "seed/relu-grad-formula (runs: FAIL, PASS)" in flaky.output
    once = invoke("run", str(SEED), "--backend", "native", "--harness", harness, "--retries", "0")
    assert once.exit_code == 1
    flakes = tmp_path / "flakes.txt"
    flakes.write_text("relu-grad\n")
    known = invoke("run", str(SEED), "--backend", "native", "--harness", harness, "--retries", "0", "--flakes",
                   str(flakes), "--json", str(tmp_path / "k.json"))
    assert known.exit_code == 0
    case = next(c for c in load(tmp_path / "k.json")["cases"] if c["id"] == "seed/relu-grad-formula")
    assert case["status"] == "FLAKE" and case["expectation"] == "flakes.txt:1"


@pytest.mark.slow
def test_jobs_2_on_the_native_backend_equals_the_serial_run(tmp_path: Path) -> None:
    for jobs in ("1", "2"):
        result = invoke("run", "--tier", "smoke", "--backend", "native", "--harness", HARNESS, "--jobs", jobs,
                        "--json", str(tmp_path / f"j{jobs}.json"))
        assert result.exit_code == 0, result.output
    serial, parallel = load(tmp_path / "j1.json"), load(tmp_path / "j2.json")
    assert len(serial["cases"]) == serial["suite"]["cases"] > 300
    assert cases_without_timing(parallel) == cases_without_timing(serial)


@pytest.mark.slow
def test_repeat_reports_outputs_that_are_not_bit_identical(tmp_path: Path) -> None:
    harness = f"{HARNESS} --flaky-on relu-grad-formula"
    result = invoke("run", str(SEED), "--backend", "native", "--harness", harness, "--repeat", "2", "--retries", "0",
                    "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0 and "1 case(s) not bit-identical across 2 repeats" in result.output
    document = load(tmp_path / "r.json")
    assert document["determinism"] == {"repeat": 2, "nondeterministic": ["seed/relu-grad-formula"]}
    case = next(c for c in document["cases"] if c["id"] == "seed/relu-grad-formula")
    assert case["moved_count"] == 1 and case["moved"][0]["index"] == [0, 0]
    assert case["moved"][0]["values"][0].startswith("nan") and case["status"] == "FLAKE"
    steady = invoke("run", str(SEED), "--repeat", "3")
    assert "every output was bit-identical across 3 repeats" in steady.output


@pytest.mark.parametrize(("setup", "args", "words"), [
    (lambda d: (d / "b.csv").write_text("seed/a,FAIL,x\n"), ["--baseline", "{d}/b.csv"], "b.csv: line 1: has 3 fields"),
    (lambda d: (d / "s.txt").write_text("(\n"), ["--skip", "{d}/s.txt"], "s.txt: line 1: field regex"),
    (lambda d: (d / "r.journal.jsonl").write_text('{"journal": "dmlconform-journal/v1"}\nxx\n{"end": {}}\n'),
     ["--json", "{d}/r.json", "--resume"], "r.journal.jsonl: line 2: is not JSON"),
    (lambda d: None, ["--shard", "4/3"], "--shard: '4/3': need 1 <= I <= N"),
    (lambda d: None, ["--resume"], "--resume needs the journal"),
])
def test_unusable_ci_input_exits_2_with_one_line(tmp_path: Path, setup, args: list[str], words: str) -> None:
    setup(tmp_path)
    result = CliRunner().invoke(main, ["run", str(SEED), *(a.format(d=tmp_path) for a in args)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dmlconform: error:") and words in lines[0], lines


def test_resume_refuses_a_journal_of_another_configuration(tmp_path: Path) -> None:
    invoke("run", str(SEED), "--json", str(tmp_path / "r.json"), "--repeat", "2")
    other = CliRunner().invoke(main, ["run", str(SEED), "--json", str(tmp_path / "r.json"), "--resume"])
    assert other.exit_code == 2
    assert "field configuration.settings.repeat: is 2 in the journal but 1 in this run" in other.output
    again = invoke("run", str(SEED), "--json", str(tmp_path / "r.json"), "--repeat", "2", "--resume")
    assert again.exit_code == 0 and "resumed: 6 cases taken from the journal" in again.output


def test_merge_refuses_a_file_of_another_format(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"format": "something/v2"}))
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "x.json: field format: is 'something/v2', not 'dmlconform-result/v1'" in result.output


def test_help_imports_neither_onnxruntime_nor_torch() -> None:
    code = ("import sys\nfrom dmlconform.cli import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('onnxruntime', 'torch', 'onnx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ}).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
@pytest.mark.parametrize("umask", [0o002, 0o027])
@pytest.mark.slow
def test_reports_journals_and_artifacts_honour_the_umask(tmp_path: Path, broken_suite: Path, umask: int) -> None:
    """Every file a run writes gets 0666 less the umask, as open() gives it (before: 0600 for the reports)."""
    out = tmp_path / "out"
    process = subprocess.run(
        [sys.executable, "-m", "dmlconform", "run", str(broken_suite), "--json", str(out / "r.json"), "--junit",
         str(out / "r.xml"), "--html", str(out / "r.html"), "--failures", str(out / "next.csv"), "--artifacts",
         str(out / "artifacts")], capture_output=True, text=True, env={**os.environ, "CI": "true"},
        preexec_fn=lambda: os.umask(umask), check=False)
    assert process.returncode == 1, process.stderr
    written = [path for path in out.rglob("*") if path.is_file()]
    assert {p.name for p in written} >= {"r.json", "r.xml", "r.html", "next.csv", "r.journal.jsonl",
                                         "OutputGradientTensor.npy"}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in written} == {p.name: oct(0o666 & ~umask) for p in written}


def test_an_empty_meta_value_is_a_usage_error_before_the_run(tmp_path: Path) -> None:
    """`--meta build=$BUILD` with BUILD unset: one line naming the key, exit 2, nothing run or recorded."""
    db = tmp_path / "history.sqlite"
    done = CliRunner().invoke(main, ["run", str(SEED), "--record", "--db", str(db), "--meta", "build=",
                                     "--meta", "commit=abc"])
    assert done.exit_code == 2
    assert done.output == ("dmlconform: error: --meta build=: the value is empty (an unset variable?); give build a "
                           "value or leave the entry out\n")
    assert not db.exists()
