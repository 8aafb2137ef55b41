"""Suites parsed in helper processes come out as the sequential loader gives them: cases, order, errors."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.cli.common import bundled_suites
from dmlconform.runner import loading
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths, load_suites


@pytest.fixture
def always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "MIN_PARALLEL_BYTES", 0)


@cache
def sequential_bundled() -> tuple[Case, ...]:
    """The bundled suites parsed in this process, once for the tests that compare a parallel parse with them."""
    return tuple(load_paths([bundled_suites()], parse=load_suites))


def same_cases(left: Sequence, right: Sequence) -> bool:
    if [c.full_id for c in left] != [c.full_id for c in right]:
        return False
    for a, b in zip(left, right, strict=True):
        tensors_a = {**a.inputs, **{f"out.{k}": v for k, v in (a.expected or {}).items()}}
        tensors_b = {**b.inputs, **{f"out.{k}": v for k, v in (b.expected or {}).items()}}
        if tensors_a.keys() != tensors_b.keys() or a.op is not b.op or repr(a.description.params) != repr(b.description.params):
            return False
        if not all(np.array_equal(tensors_a[k].reshape(-1).view(np.uint8), tensors_b[k].reshape(-1).view(np.uint8)) for k in tensors_a):
            return False
    return True


@pytest.mark.slow
def test_parallel_parsing_gives_the_sequential_cases(always_parallel: None) -> None:
    sequential = sequential_bundled()
    assert same_cases(load_paths([bundled_suites()], parse=loading.parallel_parser(2)), sequential)
    assert not same_cases(sequential[1:], sequential)  # the comparison can fail


@pytest.mark.slow
def test_the_first_broken_file_in_order_is_reported(always_parallel: None, tmp_path: Path) -> None:
    shutil.copytree(bundled_suites(), tmp_path / "suites", ignore=shutil.ignore_patterns("*.py"))
    files = sorted((tmp_path / "suites").rglob("*.yaml"))
    for broken in (files[1], files[-1]):
        broken.write_text(broken.read_text().replace("format: dmlconform/v1", "format: other/v9", 1))
    with pytest.raises(SuiteError) as sequential:
        load_paths([tmp_path / "suites"], parse=load_suites)
    with pytest.raises(SuiteError) as parallel:
        load_paths([tmp_path / "suites"], parse=loading.parallel_parser(2))
    assert str(parallel.value) == str(sequential.value)
    assert str(files[1]) in str(parallel.value)


@pytest.mark.slow
def test_a_helper_that_dies_costs_only_time(always_parallel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    start = loading._Helper.__init__

    def start_and_kill(self: loading._Helper) -> None:
        start(self)
        self.process.kill()

    monkeypatch.setattr(loading._Helper, "__init__", start_and_kill)
    assert same_cases(load_paths([bundled_suites()], parse=loading.parallel_parser(2)), sequential_bundled())


@pytest.mark.slow
def test_a_helper_that_dies_with_files_in_hand_costs_only_time(always_parallel: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    give = loading._Helper.give
    given: list[int] = []

    def give_then_die(self: loading._Helper, *args: object) -> bool:
        handed = give(self, *args)  # type: ignore[arg-type]
        given.append(1)
        if len(given) == 3:  # two files answered or in flight, a third in the pipe
            self.process.kill()
        return handed

    monkeypatch.setattr(loading._Helper, "give", give_then_die)
    assert same_cases(load_paths([bundled_suites()], parse=loading.parallel_parser(1)), sequential_bundled())
    assert len(given) >= 3


@pytest.mark.slow
def test_an_interrupted_parse_leaves_no_helper_behind(always_parallel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    helpers: list[loading._Helper] = []
    start, parse = loading._Helper.__init__, loading.load_suite
    parsed_here: list[Path] = []

    def start_and_keep(self: loading._Helper) -> None:
        start(self)
        helpers.append(self)

    def parse_then_interrupt(file: Path, *args: object):  # type: ignore[no-untyped-def]
        parsed_here.append(file)
        if len(parsed_here) == 2:
            raise KeyboardInterrupt
        return parse(file, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(loading._Helper, "__init__", start_and_keep)
    monkeypatch.setattr(loading, "load_suite", parse_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        load_paths([bundled_suites()], parse=loading.parallel_parser(2))
    assert len(helpers) == 2 and all(not h.process.is_alive() for h in helpers)
