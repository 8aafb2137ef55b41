"""`dmlconform generate`: the committed tiers are what the generators produce (CI runs this), a difference is
named, a broken description is one line, and the full tier is generated on demand into the cache."""

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dmlconform.cli import bundled_suites, common, main
from dmlconform.generation import description


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_committed_tiers_are_exactly_what_the_generators_produce():
    result = invoke("generate", "--check")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "smoke:" in result.stderr and "standard:" in result.stderr and "matches" in result.stderr


def test_check_names_every_file_that_differs(tmp_path):
    shutil.copytree(bundled_suites() / "smoke", tmp_path / "smoke")
    target = tmp_path / "smoke" / "slice_grad.yaml"
    target.write_text(target.read_text().replace("InputWindowStrides: [", "InputWindowStrides: [", 1) + "# edited\n")
    result = invoke("generate", "--tier", "smoke", "--check", "--output", str(tmp_path), "--quiet")
    assert result.exit_code == 1
    assert result.stdout.strip() == f"dmlconform generate --check: {target}: edited by hand (its hash differs from " \
                                    "the manifest's)"


def test_check_of_the_full_tier_is_a_usage_error():
    result = invoke("generate", "--tier", "full", "--check")
    assert result.exit_code == 2 and "the full tier is not committed" in result.stderr


TINY = {"format": "dmlconform-generator/v1", "op": "RESAMPLE_GRAD1", "suite": "tiny",
        "families": [{"name": "cells", "kind": "resample-cells", "seed": 9, "counts": {"smoke": 0, "full": 1},
                      "about": "one case per cell, in the full tier only", "side": {"smoke": 3}}]}


@pytest.fixture
def tiny_descriptions(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "descriptions"
    folder.mkdir()
    (folder / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    monkeypatch.setattr(description, "DESCRIPTIONS", folder)
    monkeypatch.setenv("DMLCONFORM_CACHE", str(tmp_path / "cache"))
    # The bundled suites the full tier sits on: the seed examples alone keep each command quick.
    bundled = tmp_path / "bundled"
    shutil.copytree(bundled_suites() / "seed", bundled / "seed")
    monkeypatch.setattr(common, "bundled_suites", lambda: bundled)
    return folder


def test_the_full_tier_is_generated_on_demand_once(tiny_descriptions, tmp_path):
    first = invoke("list", "--tier", "full", "-k", "tiny.full")
    assert first.exit_code == 0, first.stderr
    assert "generating the full tier" in first.stderr and "8 cases" in first.stdout  # every ResampleGrad1 cell
    assert (tmp_path / "cache" / "full" / "MANIFEST.json").is_file()
    again = invoke("run", "--tier", "full", "-k", "tiny.full")
    assert again.exit_code == 0 and "generating" not in again.stderr and "8 PASS" in again.stdout
    # A change to the descriptions makes the cache stale.
    (tiny_descriptions / "tiny.yaml").write_text(yaml.safe_dump({**TINY, "about": "changed"}))
    assert "generating the full tier" in invoke("list", "--tier", "full", "-k", "tiny.full").stderr


def test_a_broken_description_is_one_line_and_exit_2(tiny_descriptions, tmp_path):
    broken = {**TINY, "families": [{**TINY["families"][0], "kind": "resample-everything"}]}
    (tiny_descriptions / "tiny.yaml").write_text(yaml.safe_dump(broken))
    result = invoke("generate", "--output", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "tiny.yaml: family 'cells': kind: 'resample-everything'" in result.stderr
