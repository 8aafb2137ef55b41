"""Third-party backends through the entry-point group `dmlconform.backends`: the example plugin of
examples/plugin_backend, installed as a distribution (a .dist-info with entry_points.txt) on a temporary sys.path,
beside a broken plugin and one that would shadow a built-in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.backends import BUILT_IN, PluginError, backend_names, backend_sources, create_backend
from dmlconform.backends.base import BackendOptions
from dmlconform.case_result import Status
from dmlconform.cli import main
from dmlconform.runner import run_cases
from dmlconform.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin_backend"
SEED = ROOT / "test_vectors" / "seed" / "seed_examples.yaml"


def install(site: Path, dist: str, version: str, entry_points: str) -> None:
    """A distribution as an installer leaves it: NAME-VERSION.dist-info with METADATA and entry_points.txt."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[dmlconform.backends]\n{entry_points}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(EXAMPLE / "dmlconform_example_plugin", tmp_path / "dmlconform_example_plugin")
    install(tmp_path, "dmlconform-example-plugin", "0.1.0", "example-reference = dmlconform_example_plugin:create")
    install(tmp_path, "broken-plugin", "0.2", "broken = no_such_module_anywhere:create")
    install(tmp_path, "greedy-plugin", "1.0", "numpy = dmlconform_example_plugin:create")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_example_plugin_is_declared_as_the_docs_say() -> None:
    text = (EXAMPLE / "pyproject.toml").read_text()
    assert '[project.entry-points."dmlconform.backends"]' in text
    assert 'example-reference = "dmlconform_example_plugin:create"' in text


def test_plugins_are_listed_with_where_they_come_from(site: Path) -> None:
    sources = {(s.name, s.origin): s.problem for s in backend_sources()}
    assert sources[("numpy", BUILT_IN)] == "" and sources[("onnxruntime", BUILT_IN)] == ""
    example = "plugin from dmlconform-example-plugin 0.1.0 (dmlconform_example_plugin:create)"
    assert sources[("example-reference", example)] == ""
    broken = sources[("broken", "plugin from broken-plugin 0.2 (no_such_module_anywhere:create)")]
    assert "cannot be loaded: ModuleNotFoundError" in broken and "no_such_module_anywhere" in broken
    assert "shadowed by the built-in" in sources[("numpy", "plugin from greedy-plugin 1.0 "
                                                           "(dmlconform_example_plugin:create)")]
    assert {"example-reference", "broken", "numpy"} <= set(backend_names())


def test_cli_lists_every_backend_and_a_broken_plugin_in_one_line(site: Path) -> None:
    result = CliRunner().invoke(main, ["backends"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "numpy  built-in" in lines and "torch  built-in" in lines
    assert "example-reference  plugin from dmlconform-example-plugin 0.1.0 (dmlconform_example_plugin:create)" in lines
    broken = [line for line in lines if line.startswith("broken ")]
    assert len(broken) == 1 and "BROKEN:" in broken[0] and "ModuleNotFoundError" in broken[0]
    assert "Traceback" not in result.output


def test_a_plugin_backend_runs_cases_and_a_broken_one_fails_in_one_line(site: Path) -> None:
    backend = create_backend("example-reference", BackendOptions())
    assert backend.info().version == "dmlconform-example-plugin 0.1.0"
    cases = load_suite(SEED, SEED.parent)[0]
    result = run_cases(cases, backend)
    assert [r.status for r in result.results] == [Status.PASS] * len(cases)
    with pytest.raises(PluginError, match=r"backend 'broken', plugin from broken-plugin 0\.2") as info:
        create_backend("broken", BackendOptions())
    assert "\n" not in str(info.value)
    assert type(create_backend("numpy", BackendOptions())).__module__ == "dmlconform.backends.numpy_backend"


@pytest.mark.slow
def test_dmlconform_run_uses_a_plugin_in_its_worker_processes(site: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    ran = subprocess.run([sys.executable, "-m", "dmlconform", "run", "--backend", "example-reference", str(SEED),
                          "--jobs", "2"], capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "example-reference" in ran.stdout and "6 PASS" in ran.stdout
    broken = subprocess.run([sys.executable, "-m", "dmlconform", "run", "--backend", "broken", str(SEED)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert broken.returncode == 2 and "cannot be loaded" in broken.stdout + broken.stderr
    assert "Traceback" not in broken.stdout + broken.stderr


def test_each_built_in_module_registers_the_backend_it_is_imported_for() -> None:
    """create_backend imports only the asked-for built-in's module: each must register that name, and a process that
    creates the numpy backend has not imported the directml backend's start or the native one's."""
    code = ("import sys; from dmlconform.backends import _FACTORIES, create_backend; "
            "from dmlconform.backends.base import BackendOptions; create_backend('numpy', BackendOptions()); "
            "print(sorted(_FACTORIES), 'dmlconform.directml.start' in sys.modules, 'dmlconform.processes' in sys.modules)")
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert alone == ["['numpy']", "False", "False"]
    from dmlconform.backends import _FACTORIES, BUILT_IN_MODULES, _load_builtin

    for name in BUILT_IN_MODULES:
        _load_builtin(name)
        assert name in _FACTORIES, name
