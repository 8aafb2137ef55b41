"""`dmlconform --help` stays cheap: it must not import the heavy optional libraries (timing is a benchmark's job)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
sys.argv = ["dmlconform", *json.loads(sys.argv[1])]
try:
    from dmlconform.cli import main
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True,
                          check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [("--help",), ("run", "--help")])
def test_help_imports_neither_onnxruntime_nor_torch(args: tuple[str, ...]) -> None:
    modules = imported_by(*args)
    assert "click" in modules  # the probe really ran the command line
    heavy = sorted(m for m in modules if m.split(".")[0] in {"onnxruntime", "torch", "onnx"})
    assert heavy == []


def test_the_probe_sees_an_import_when_there_is_one() -> None:
    # `dmlconform backends` lists backend names; whatever it imports, the probe must report what was loaded.
    assert "dmlconform.backends" in imported_by("backends")
