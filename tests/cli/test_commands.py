"""The command line end to end: exit codes, the report pointing at a wrong element, JSON and JUnit."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dmlconform.cli import bundled_suites, main
from tests.suite.test_loader import RELU, with_, write

SEED = bundled_suites() / "seed" / "seed_examples.yaml"


def run(*args: str):
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


@pytest.mark.slow
def test_bundled_suites_are_found_and_pass():
    result = run()
    assert result.exit_code == 0, result.output
    assert "conformant at 5_1: yes" in result.output
    assert "PASSED" in result.output


def test_one_wrong_golden_element_fails_with_a_report_that_points_at_it(tmp_path):
    document = yaml.safe_load(SEED.read_text())
    case = next(c for c in document["cases"] if c["id"] == "max-pooling-grad-2x2")
    case["outputs"]["OutputGradientTensor"]["data"] = [[[[0, 0, 0], [0, 3, 0], [0, 4, 6]]]]  # 5 -> 6
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(document))
    result = run(str(path), "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 1, result.output
    assert "FAIL seed/max-pooling-grad-2x2" in result.output
    assert "worst at [0, 0, 2, 2]" in result.output
    assert "conformant at 3_0: no" in result.output
    data = json.loads((tmp_path / "r.json").read_text())
    failing = [c for c in data["cases"] if c["status"] == "FAIL"]
    assert [c["id"] for c in failing] == ["seed/max-pooling-grad-2x2"]
    assert failing[0]["worst_index"] == [0, 0, 2, 2]
    assert failing[0]["worst_elements"][0]["expected"].startswith("6.0")
    assert data["summary"] == {"PASS": 5, "FAIL": 1}


def test_json_result_has_every_contract_field(tmp_path):
    result = run(str(SEED), "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"))
    assert result.exit_code == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["format"] == "dmlconform-result/v1"
    for key in ("tool_version", "backend", "target_feature_level", "started", "duration_s", "summary",
                "feature_levels", "cases"):
        assert key in data
    assert set(data["backend"]) >= {"name", "version", "device", "feature_level"}
    level = data["feature_levels"]["5_1"]
    assert level == {"required": 6, "matched": 6, "conformant": True, "claimed": True, "known_failures": 0,
                     "waived": 0, "known_issues": 0, "operators": level["operators"], "untested": level["untested"]}
    assert "ADAM_OPTIMIZER" in level["untested"] and not set(level["operators"]) & set(level["untested"])
    assert data["known_issues"] is None  # the reference loads no DirectML
    for case in data["cases"]:
        assert set(case) >= {"id", "op", "dtype", "rank", "required_feature_level", "status", "matched", "tolerance",
                             "max_ulp", "max_abs_error", "worst_index", "message", "duration_s"}
    resample = next(c for c in data["cases"] if c["op"] == "RESAMPLE_GRAD1")
    assert resample["matched"] == "literal" and resample["tolerance"]["rule"] == "bound"
    junit = ET.parse(tmp_path / "r.xml").getroot()
    assert len(junit.findall(".//testcase")) == 6 and not junit.findall(".//failure")


def test_feature_level_override_makes_later_cases_not_required(tmp_path):
    result = run(str(SEED), "--feature-level", "3_0", "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0
    data = json.loads((tmp_path / "r.json").read_text())
    statuses = {c["id"]: (c["status"], c["required"]) for c in data["cases"]}
    assert statuses["seed/clip-grad1-formula"] == ("NOT_REQUIRED", False)
    clip = next(c for c in data["cases"] if c["id"] == "seed/clip-grad1-formula")
    assert clip["outcome"] == "PASS" and clip["required_feature_level"] == "5_0"
    assert data["feature_levels"]["5_0"]["conformant"] and not data["feature_levels"]["5_0"]["claimed"]
    assert data["target_feature_level"] == "3_0"


def test_not_required_failures_do_not_fail_the_run(tmp_path):
    document = yaml.safe_load(SEED.read_text())
    case = next(c for c in document["cases"] if c["id"] == "clip-grad1-formula")  # required from 5_0
    case["outputs"]["OutputGradientTensor"]["data"] = [0, 0, 30, 41, 0, 0]
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(document))
    assert run(str(path), "--feature-level", "4_1").exit_code == 0
    result = run(str(path), "--feature-level", "5_0")
    assert result.exit_code == 1 and "conformant at 5_0: no" in result.output


def test_select_with_k():
    result = CliRunner().invoke(main, ["list", str(SEED), "-k", "relu or slice"])
    assert result.exit_code == 0 and "3 cases" in result.output


@pytest.mark.slow
def test_unusable_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    bad = write(tmp_path, [with_(RELU, "inputs.InputTensor.dtype", "FLOAT8")])
    for args in ([str(bad)], [str(tmp_path / "missing.yaml")], ["-k", "a and"], ["--feature-level", "9_9"],
                 ["--backend", "nope", str(SEED)]):
        result = CliRunner(mix_stderr=False).invoke(main, ["run", *args]) if _has_mix() else \
            CliRunner().invoke(main, ["run", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
        lines = [line for line in (result.stderr if hasattr(result, "stderr") else result.output).splitlines()
                 if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("dmlconform: error:"), lines


def _has_mix() -> bool:
    import inspect

    return "mix_stderr" in inspect.signature(CliRunner).parameters


def test_bundled_suites_path_points_at_the_vectors():
    assert Path(bundled_suites(), "seed", "seed_examples.yaml").is_file()


def test_every_command_module_s_command_is_in_the_group_which_imports_it_only_when_asked_for() -> None:
    """cli/__init__.py names each command (so that a command imports only its own module); a command defined in a
    module and missing there could never be run."""
    import importlib
    import pkgutil
    import subprocess
    import sys

    import click

    from dmlconform import cli

    defined = set()
    for info in pkgutil.iter_modules(cli.__path__):
        module = importlib.import_module(f"dmlconform.cli.{info.name}")
        commands = {name: value for name, value in vars(module).items() if isinstance(value, click.Command)
                    and getattr(value.callback, "__module__", None) == module.__name__}
        grouped = {id(sub) for value in commands.values() if isinstance(value, click.Group)
                   for sub in value.commands.values()}
        defined |= {(info.name, name) for name, value in commands.items() if id(value) not in grouped}
    assert defined == {(module, function) for _, module, function in cli.COMMANDS}
    assert all(cli.main.get_command(click.Context(cli.main), name).name == name for name, _, _ in cli.COMMANDS)
    code = "import sys, dmlconform.cli; print(sorted(m for m in sys.modules if m.startswith('dmlconform.cli.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['dmlconform.cli.common']"


@pytest.mark.parametrize(("args", "line"), [
    (["run", "--jbos", "3"], "dmlconform run: no such option --jbos (did you mean --jobs?)"),
    (["histroy"], "dmlconform: no such command histroy (did you mean history?)"),
    (["history", "add", "--mta", "x"], "dmlconform history add: no such option --mta (did you mean --meta?)"),
    (["run", "--tier", "smok"], "dmlconform run: invalid value for '--tier': 'smok' is not one of 'smoke', 'standard', 'full'"),
    (["run", "--jobs"], "dmlconform run: option '--jobs' requires an argument"),
    (["show"], "dmlconform show: missing argument 'CASE_ID'"),
])
def test_usage_errors_are_one_line_with_the_near_miss_and_exit_2(args, line):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output == line + "\n"


def test_a_bundled_suite_is_named_as_in_a_checkout_or_by_its_name_from_anywhere(tmp_path, monkeypatch):
    """README's `dmlconform run test_vectors/max_pooling_grad -k ...` from outside a checkout (an installed wheel):
    the bundled suite of that name; and `max_pooling_grad` alone. A name that is neither is one line with the near
    miss and the bundled names."""
    monkeypatch.chdir(tmp_path)
    listed = CliRunner().invoke(main, ["list", "test_vectors/max_pooling_grad", "-k", "ties"])
    assert listed.exit_code == 0, listed.output
    by_name = CliRunner().invoke(main, ["list", "max_pooling_grad", "-k", "ties"])
    assert by_name.exit_code == 0 and by_name.output == listed.output
    assert listed.output.rstrip().endswith(" cases") and not listed.output.rstrip().endswith(" 0 cases")
    done = run("relu_grad", "-k", "nan")
    assert done.exit_code == 0, done.output
    typo = CliRunner().invoke(main, ["run", "max_pooling_grd"])
    assert typo.exit_code == 2
    assert typo.output.startswith("dmlconform: error: max_pooling_grd: no such file or folder, nor a bundled suite "
                                  "(did you mean max_pooling_grad?); bundled: average_pooling_grad, clip_grad, clip_grad1, ")
    assert typo.output.count("\n") == 1
