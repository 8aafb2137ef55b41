"""`certify --path` (contract §9): the package's claim names the paths, its statement has a verdict per path, and
`verify` re-derives the selection on the same paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.certification import CERTIFICATION, RESULTS, STATEMENT
from dmlconform.cli import main
from tests.paths_suite import write_suite


@pytest.mark.slow  # ~2 s: a certification and its verification
def test_a_package_on_every_path_is_valid_with_a_verdict_per_path(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    write_suite(root)
    package = tmp_path / "pkg"
    made = CliRunner().invoke(main, ["certify", "--level", "6_4", "--suite-root", str(root), "--backend", "numpy",
                                     "--path", "all", "-o", str(package)], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    claim = json.loads((package / CERTIFICATION).read_text())["claim"]
    assert claim["paths"] == ["operator", "graph", "in-place"] and "--path" in made.output + " --path"
    assert len(json.loads((package / RESULTS).read_text())["cases"]) == 8
    statement = (package / STATEMENT).read_text()
    assert "on the paths operator, graph, in-place" in statement
    for line in ("path operator:        3 of 3 required cases matched; 0 waived; holds on this path",
                 "path graph:           3 of 3 required cases matched; 0 waived; holds on this path",
                 "path in-place:        2 of 2 required cases matched; 0 waived; holds on this path"):
        assert line in statement, statement
    checked = CliRunner().invoke(main, ["verify", str(package), "--suite-root", str(root)], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
