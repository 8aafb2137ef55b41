"""The fixtures of the docs-commands step (tests marked docs_commands): the files the docs' commands take, made once
in a test run from the wheel, and a folder the workers share."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.docs import doc_commands
from tests.docs.doc_commands import ROOT

HARNESS_SCRIPT = """#!/bin/sh
# A harness of one's own, for the docs' commands: the reference's Python harness; its arguments are ignored.
exec python -m dmlconform.harness --backend numpy
"""


def sh(command: str, cwd: Path, env: dict[str, str], timeout: int = 300) -> None:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"fixture `{command}` exited {done.returncode}:\n{done.stdout[-2000:]}" \
                                 f"{done.stderr[-2000:]}"


def environment(bin_dir: Path, folder: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST", "VIRTUAL_ENV", "PYTHONPATH", "COV_"))}
    env.update(doc_commands.ENVIRONMENT)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(folder), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["DMLCONFORM_DB"] = str(folder / "history.sqlite")
    env.pop("DMLCONFORM_DIRECTML", None)
    return env


@pytest.fixture(scope="session")
def doc_fixtures(doc_commands_bin: Path, shared_runs: Path) -> Path:
    """The files the docs' commands take (doc_commands.FIXTURE_FILES), made once in a test run from the installed
    wheel (by the first worker to need them; the others wait)."""
    folder = shared_runs / "fixtures"
    with (shared_runs / "fixtures.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            _make_fixtures(folder, environment(doc_commands_bin, folder))
            (folder / ".made").write_text("")
    return folder


def _make_fixtures(folder: Path, env: dict[str, str]) -> None:
    shutil.copytree(ROOT / "test_vectors", folder / "test_vectors")
    (folder / "examples").mkdir()
    for entry in (ROOT / "examples").iterdir():
        if entry.name in ("c_harness", "plugin_backend"):  # commands build or install these: copies
            shutil.copytree(entry, folder / "examples" / entry.name)
        else:
            (folder / "examples" / entry.name).symlink_to(entry)
    (folder / "ci").mkdir()
    for name in ("fails.csv", "flakes.txt", "skips.txt"):
        (folder / "ci" / name).write_text("")
    (folder / "granted.yaml").write_text("format: dmlconform-waivers/v1\nwaivers: []\n")
    for name in ("my_harness.exe", "my-harness"):
        (folder / name).write_text(HARNESS_SCRIPT)
        (folder / name).chmod(0o755 | stat.S_IXUSR)
    (folder / "DirectML.dll").write_bytes(b"MZ a stand-in for the DLL a harness loads\n")
    shutil.copytree(ROOT / "test_vectors" / "relu_grad", folder / "my")
    sh("dmlconform run --tier smoke --json old.json >/dev/null && cp old.json new.json && "
        "dmlconform run --json reports/numpy.json >/dev/null", folder, env)
    sh("ssh-keygen -q -t ed25519 -N '' -C vendor@example.com -f vendor_key && "
        "echo \"vendor@example.com $(cut -d' ' -f1,2 vendor_key.pub)\" > allowed_signers", folder, env)


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder all workers of this test run share (pytest-xdist gives each a temporary folder under one of the run's):
    the fixtures, and the SHARED commands' results."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "doc-commands-shared"
    folder.mkdir(exist_ok=True)
    return folder
