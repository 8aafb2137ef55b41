import numpy as np

from dmlconform.generation.build import GeneratedSuite
from dmlconform.generation.freeze import freeze
from dmlconform.generation.writer import (
    MANIFEST,
    array_digest,
    differences,
    npz_bytes,
    read_manifest,
    read_npz,
    render,
    write,
)
from dmlconform.suite.loader import load_paths
from dmlconform.suite.tiers import Tier
from tests.generation.test_freeze import relu


def suite(gradients=(5, 6, 7)) -> GeneratedSuite:
    frozen = freeze(relu([1, -1, 2], list(gradients)), "data/relu-cells.npz")
    return GeneratedSuite("relu_grad.standard", "relu_grad.yaml", Tier.STANDARD, "test", [frozen],
                          {"data/relu-cells.npz": frozen.arrays})


def test_npz_bytes_do_not_depend_on_when_or_in_what_order():
    a = {"b": np.arange(3, dtype=np.float16), "a": np.ones((2, 2), np.int64)}
    assert npz_bytes(a) == npz_bytes(dict(reversed(a.items())))
    assert array_digest(a) == array_digest(dict(reversed(a.items())))
    assert array_digest(a) != array_digest({**a, "a": np.ones((4,), np.int64)})  # same bytes, other shape


def test_written_suites_load_and_match_their_manifest(tmp_path):
    rendered = render(Tier.STANDARD, [suite()])
    write(tmp_path, rendered)
    manifest = read_manifest(tmp_path)
    assert manifest["cases"] == 1 and set(manifest["files"]) == {"relu_grad.yaml", "data/relu-cells.npz"}
    [case] = load_paths([tmp_path])
    assert case.full_id == "relu_grad.standard/c" and case.expected["OutputGradientTensor"].tolist() == [5, 0, 7]
    assert load_paths([tmp_path], Tier.SMOKE) == []  # a standard suite is not part of the smoke tier
    assert differences(tmp_path, rendered) == []


def test_a_hand_edit_and_a_generator_change_are_both_found(tmp_path):
    rendered = render(Tier.STANDARD, [suite()])
    write(tmp_path, rendered)
    yaml_file = tmp_path / "relu_grad.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("tags: [", "tags: [edited, "))
    assert differences(tmp_path, rendered) == [f"{yaml_file}: edited by hand (its hash differs from the manifest's)"]
    write(tmp_path, rendered)
    changed = render(Tier.STANDARD, [suite((5, 6, 8))])
    found = differences(tmp_path, changed)
    assert found == [f"{tmp_path / 'data/relu-cells.npz'}: differs from what the generators produce"]


def test_an_npz_is_compared_by_content(tmp_path):
    rendered = render(Tier.STANDARD, [suite()])
    write(tmp_path, rendered)
    npz = tmp_path / "data/relu-cells.npz"
    arrays = read_npz(npz)
    np.savez(npz, **arrays)  # other zip bytes, the same arrays
    assert differences(tmp_path, rendered) == []
    arrays["c.out"] = arrays["c.out"] + 1
    np.savez(npz, **arrays)
    assert any("edited by hand" in line for line in differences(tmp_path, rendered))


def test_files_the_generators_no_longer_produce_are_removed_and_a_missing_manifest_is_reported(tmp_path):
    write(tmp_path, render(Tier.STANDARD, [suite()]))
    write(tmp_path, render(Tier.STANDARD, []))
    assert not (tmp_path / "relu_grad.yaml").exists() and not (tmp_path / "data/relu-cells.npz").exists()
    (tmp_path / MANIFEST).unlink()
    assert "missing or unreadable" in differences(tmp_path, render(Tier.STANDARD, []))[0]
