"""Limits on suite files, cases and bytes: each refused with one line before it is spent, raised by a flag, and
high enough by default for the largest bundled tier."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import main
from dmlconform.runner.loading import parallel_parser
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import SuiteLimits, Tally
from dmlconform.suite.loader import discover, load_paths, load_suite


def suite(path: Path, name: str, cases: int, shape: tuple[int, ...] = (4,), dist: str = "iota") -> Path:
    entries = "".join(f"""  - id: c{i}
    op: ACTIVATION_RELU_GRAD
    inputs:
      InputTensor: {{dtype: FLOAT32, shape: {list(shape)}, generate: {{dist: {dist}, seed: 1}}}}
      InputGradientTensor: {{dtype: FLOAT32, shape: {list(shape)}, generate: {{dist: {dist}, seed: 2}}}}
    expect: invalid
    outputs:
      OutputGradientTensor: {{dtype: FLOAT16, shape: {list(shape)}}}
""" for i in range(cases))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"format: dmlconform/v1\nsuite: {name}\ncases:\n{entries}")
    return path


@pytest.mark.parametrize("settings,expected", [
    ((), SuiteLimits(10_000, 100_000, 2 << 30)),
    (("cases=7",), SuiteLimits(10_000, 7, 2 << 30)),
    (("bytes=16GiB", "files=none"), SuiteLimits(None, 100_000, 16 << 30)),
    (("BYTES = 512k",), SuiteLimits(10_000, 100_000, 512 << 10)),
    (("bytes=3M", "bytes=1000"), SuiteLimits(10_000, 100_000, 1000)),
])
def test_settings_parse(settings, expected):
    assert SuiteLimits.parse(settings) == expected


@pytest.mark.parametrize("setting,words", [
    ("cases", "give NAME=N"), ("rows=3", "give NAME=N"), ("cases=1k", "cases must be a whole number"),
    ("bytes=-1", "bytes must be a whole number with an optional unit"), ("files=lots", "files must be"),
])
def test_bad_settings_are_refused(setting, words):
    with pytest.raises(ValueError, match=words):
        SuiteLimits.parse([setting])


def test_too_many_files_are_refused_before_any_is_read(tmp_path):
    for i in range(4):
        (tmp_path / f"s{i}.yaml").write_text("not read")
    assert len(discover([tmp_path], SuiteLimits(files=4))) == 4
    with pytest.raises(SuiteError, match=r"holds more than 3 suite files \(the limit; --suite-limit files=N"):
        discover([tmp_path], SuiteLimits(files=3))


def test_too_many_cases_in_one_file_name_the_case(tmp_path):
    path = suite(tmp_path / "s.yaml", "many", 5)
    assert len(load_paths([path], limits=SuiteLimits(cases=5))) == 5
    with pytest.raises(SuiteError) as caught:
        load_paths([path], limits=SuiteLimits(cases=4))
    assert f"{path}: case 'c4': more than 4 cases (the limit; --suite-limit cases=N raises it)" == str(caught.value)


@pytest.mark.parametrize("parallel", [False, True])
def test_too_many_cases_across_files_name_the_tree(tmp_path, parallel):
    for i in range(4):
        suite(tmp_path / "tree" / f"s{i}.yaml", f"s{i}", 3)
    parse = {"parse": parallel_parser(1)} if parallel else {}
    if parallel:  # the parallel parser only starts helpers for trees worth it
        import dmlconform.runner.loading as loading
        loading_min = loading.MIN_PARALLEL_BYTES
        loading.MIN_PARALLEL_BYTES = 0
    try:
        assert len(load_paths([tmp_path / "tree"], limits=SuiteLimits(cases=12), **parse)) == 12
        with pytest.raises(SuiteError) as caught:
            load_paths([tmp_path / "tree"], limits=SuiteLimits(cases=11), **parse)
    finally:
        if parallel:
            loading.MIN_PARALLEL_BYTES = loading_min
    assert str(caught.value) == (f"{tmp_path / 'tree'}: the suites here hold more than 11 cases in all (the limit; "
                                 "--suite-limit cases=N raises it)")


def test_a_suite_file_larger_than_the_byte_limit_is_not_read(tmp_path):
    path = suite(tmp_path / "s.yaml", "big", 2)
    size = path.stat().st_size
    with pytest.raises(SuiteError, match=rf"a suite file of {size} bytes \(counted 32 times: what parsing it may "
                       rf"cost\) would bring .* to {32 * size} bytes, more than 1000 "):
        load_suite(path, tmp_path, limits=SuiteLimits(bytes=1000))


def test_declared_tensors_past_the_byte_limit_are_refused_before_they_are_made(tmp_path):
    """A 300-byte case declaring 2 x 64 MiB of generated inputs: refused having allocated nothing near that."""
    path = suite(tmp_path / "s.yaml", "declares", 1, shape=(1 << 24,), dist="normal")
    tally = Tally(SuiteLimits(bytes=64 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(SuiteError) as caught:
            load_suite(path, tmp_path, limits=SuiteLimits(bytes=64 << 20), tally=tally)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "case 'c0': a case declaring 134217728 bytes of tensors would bring the suites' memory (declared " \
           "tensors and parsed text) to" in str(caught.value)
    assert "more than 64MiB (the limit; --suite-limit bytes=N" in str(caught.value)
    assert peak < 4 << 20 and tally.tensor_bytes == 0 and tally.text_bytes == path.stat().st_size


def test_the_flag_raises_a_limit_and_a_bad_one_is_a_usage_error(tmp_path):
    path = suite(tmp_path / "s.yaml", "flag", 3)
    runner = CliRunner()
    refused = runner.invoke(main, ["list", str(path), "--suite-limit", "cases=2"])
    assert refused.exit_code == 2 and "more than 2 cases" in refused.output
    assert runner.invoke(main, ["list", str(path), "--suite-limit", "cases=3"]).exit_code == 0
    bad = runner.invoke(main, ["run", str(path), "--suite-limit", "cases=many"])
    assert bad.exit_code == 2 and "--suite-limit" in bad.output


@pytest.mark.slow
def test_the_defaults_admit_every_bundled_tier():
    """The full tier is generated on demand (minutes), so this checks the committed tiers and the sizes the full
    one is known to have (docs/fuzzing.md gives the measured figures; benchmarks/bench_hostile_memory.py --full
    measures them again)."""
    from dmlconform.cli import bundled_suites

    limits = SuiteLimits()
    cases = load_paths([bundled_suites()], limits=limits)
    assert len(cases) < limits.cases // 10
    assert limits.cases >= 10 * 5_800 and limits.bytes >= 3 * (515 << 20) and limits.files >= 100 * 26
