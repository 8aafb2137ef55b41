"""The parsed-suite cache gives exactly what parsing gives, and never a parse of anything else: a changed suite file,
a changed tensor file, another tier or other limits is parsed again; a torn entry is a miss; the tree's limits hold
over hits too."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from dmlconform.ops import find_operator
from dmlconform.suite import SuiteError, parsed_cache
from dmlconform.suite.limits import SuiteLimits
from dmlconform.suite.loader import load_paths, load_suites
from dmlconform.suite.tiers import Tier

VECTORS = Path(__file__).resolve().parents[2] / "test_vectors"


class CountingParser:
    """load_suites, counting the files it is asked to parse."""

    def __init__(self) -> None:
        self.parsed: list[Path] = []

    def __call__(self, files: list[tuple[Path, Path]], tier: Tier | None, limits: SuiteLimits) -> list:
        self.parsed.extend(file for file, _ in files)
        return load_suites(files, tier, limits)


def _same(first: list, second: list) -> None:
    assert [c.full_id for c in first] == [c.full_id for c in second]
    for a, b in zip(first, second, strict=True):
        assert a.op is b.op and a.file == b.file and a.description == b.description
        assert a.tolerance == b.tolerance and a.tags == b.tags and a.expect_invalid == b.expect_invalid
        for mine, theirs in ((a.inputs, b.inputs), *zip(a.answers().values(), b.answers().values(), strict=True)):
            assert mine.keys() == theirs.keys()
            for name in mine:
                assert mine[name].dtype == theirs[name].dtype and mine[name].tobytes() == theirs[name].tobytes()


def _tree(tmp_path: Path) -> Path:
    """A copy of the smoke tier's relu_grad suite with its tensor archives."""
    import shutil

    root = tmp_path / "suites"
    shutil.copytree(VECTORS / "smoke", root, ignore=lambda folder, names: [
        name for name in names if name == "MANIFEST.json" or (name.endswith(".yaml") and name != "relu_grad.yaml")])
    return root


def test_a_hit_is_what_parsing_gives_and_parses_nothing(tmp_path: Path) -> None:
    parser = CountingParser()
    cached = parsed_cache.with_cache(parser, tmp_path / "cache")
    fresh = load_paths([VECTORS / "smoke"], Tier.SMOKE)
    first = load_paths([VECTORS / "smoke"], Tier.SMOKE, cached)
    assert len(parser.parsed) == len(list((VECTORS / "smoke").glob("*.yaml")))
    second = load_paths([VECTORS / "smoke"], Tier.SMOKE, cached)
    assert len(parser.parsed) == len(list((VECTORS / "smoke").glob("*.yaml")))  # nothing parsed again
    _same(fresh, first)
    _same(fresh, second)
    assert second[0].op is find_operator(second[0].op.name)


def test_anything_the_parse_depends_on_makes_it_parse_again(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    parser = CountingParser()
    cached = parsed_cache.with_cache(parser, tmp_path / "cache")
    suite = next(root.glob("*.yaml"))
    load_paths([root], Tier.SMOKE, cached)
    load_paths([root], Tier.SMOKE, cached)
    assert parser.parsed == [suite]

    load_paths([root], Tier.STANDARD, cached)  # another tier
    load_paths([root], Tier.SMOKE, cached, SuiteLimits(cases=50_000))  # other limits
    assert parser.parsed == [suite] * 3

    suite.write_text(suite.read_text().replace("relu_grad.smoke", "relu_grad.other", 1))  # the suite file
    assert load_paths([root], Tier.SMOKE, cached)[0].suite == "relu_grad.other"
    assert parser.parsed == [suite] * 4

    archive = next((root / "data").glob("*.npz"))  # a tensor file: a changed value comes back changed
    with np.load(archive) as members:
        arrays = {name: members[name].copy() for name in members.files}
    name = next(n for n, a in arrays.items() if a.dtype == np.float32 and a.size)
    arrays[name].reshape(-1)[0] = np.float32(1234.5)
    np.savez(archive, **arrays)
    reloaded = load_paths([root], Tier.SMOKE, cached)
    assert parser.parsed == [suite] * 5
    _same(load_paths([root], Tier.SMOKE), reloaded)
    assert any(np.float32(1234.5) in tensor for case in reloaded for tensor in case.inputs.values()
               if tensor.dtype == np.float32)


def test_a_torn_or_foreign_entry_is_a_miss_and_is_written_again(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    parser = CountingParser()
    folder = tmp_path / "cache"
    cached = parsed_cache.with_cache(parser, folder)
    expected = load_paths([root], Tier.SMOKE, cached)
    [entry] = list(folder.iterdir())
    for damage in (entry.read_bytes()[:100], pickle.dumps({"not": "cases"}), b""):
        entry.write_bytes(damage)
        _same(expected, load_paths([root], Tier.SMOKE, cached))
    assert len(parser.parsed) == 4
    _same(expected, load_paths([root], Tier.SMOKE, cached))
    assert len(parser.parsed) == 4  # the last miss wrote a good entry


def test_the_trees_limits_hold_over_cached_files(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    cached = parsed_cache.with_cache(load_suites, tmp_path / "cache")
    cases = load_paths([root], Tier.SMOKE, cached)
    # A file is checked against the limits on its own while it is parsed; a hit was parsed at other limits' key,
    # so this is a miss that fails in the parse, and the same limit over a tree of two copies fails on the tree.
    with pytest.raises(SuiteError, match="cases"):
        load_paths([root], Tier.SMOKE, cached, SuiteLimits(cases=len(cases) - 1))
    second = tmp_path / "second"
    import shutil

    shutil.copytree(root, second)
    (next(second.glob("*.yaml"))).write_text(next(second.glob("*.yaml")).read_text().replace(
        "relu_grad.smoke", "relu_grad.second", 1))
    merged = tmp_path / "merged"
    shutil.copytree(root, merged / "a")
    shutil.copytree(second, merged / "b")
    limits = SuiteLimits(cases=len(cases) + 1)
    with pytest.raises(SuiteError, match="the suites here hold"):
        load_paths([merged], Tier.SMOKE, parsed_cache.with_cache(load_suites, tmp_path / "cache"), limits)
    with pytest.raises(SuiteError, match="the suites here hold"):  # again, every file a hit now
        load_paths([merged], Tier.SMOKE, parsed_cache.with_cache(load_suites, tmp_path / "cache"), limits)


def test_an_unwritable_cache_is_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    parser = CountingParser()
    cached = parsed_cache.with_cache(parser, blocker / "cache")
    first = load_paths([VECTORS / "seed"], None, cached)
    _same(first, load_paths([VECTORS / "seed"], None, cached))
    assert len(parser.parsed) == 2


def test_it_is_on_unless_turned_off() -> None:
    assert parsed_cache.enabled({})
    assert not parsed_cache.enabled({"DMLCONFORM_SUITE_CACHE": "off"})
    assert parsed_cache.cache_folder({"DMLCONFORM_CACHE": "/c"}) == Path("/c/suites")


def test_the_folder_is_kept_below_its_bound_least_recently_used_first(tmp_path: Path) -> None:
    import os

    for age, name in enumerate(("old", "middle", "new")):
        (tmp_path / name).write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1_000_000 + age, 1_000_000 + age))
    parsed_cache._prune(tmp_path, keep_bytes=150)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]


def test_files_past_the_bounds_are_parsed_each_time_and_never_read_whole_by_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    parser = CountingParser()
    cached = parsed_cache.with_cache(parser, tmp_path / "cache")
    monkeypatch.setattr(parsed_cache, "MAX_SUITE_BYTES", 10)  # the suite file
    load_paths([root], Tier.SMOKE, cached)
    load_paths([root], Tier.SMOKE, cached)
    monkeypatch.undo()
    monkeypatch.setattr(parsed_cache, "MAX_TREE_BYTES", 10)  # its tensors
    load_paths([root], Tier.SMOKE, cached)
    load_paths([root], Tier.SMOKE, cached)
    assert len(parser.parsed) == 4 and not (tmp_path / "cache").exists()
    import os

    if hasattr(os, "mkfifo"):  # a pipe in the tree is never opened for reading (it would block)
        monkeypatch.undo()
        os.mkfifo(root / "data" / "pipe")
        load_paths([root], Tier.SMOKE, cached)
        assert len(parser.parsed) == 5


def test_the_code_fingerprint_covers_every_module_the_loader_can_run() -> None:
    from tests.test_layers import PACKAGE, imported_modules

    def source(module: str) -> Path | None:
        relative = Path(*module.split(".")[1:])
        for candidate in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None  # `from a import name`: a name, not a module

    fingerprinted = set(parsed_cache.parsing_sources())
    todo, seen = [PACKAGE / "suite" / "loader.py", PACKAGE / "suite" / "parsed_cache.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        assert path in fingerprinted, f"{path} can run while a suite is parsed but is not in the fingerprint"
        todo += [found for module in imported_modules(path, PACKAGE) if (found := source(module)) is not None]
    assert len(seen) > 20
    assert PACKAGE / "backends" / "directml.py" not in fingerprinted  # a backend's change keeps the cache
