"""Baseline, skip and flake files (deqp-runner's formats): `load_expectations` as `run --baseline/--skip/--flakes`
reads them, then the overlay on results of every status, the settling of retries, and the next baseline.

Input: the three files' texts separated by NUL bytes (baseline, skips, flakes; missing ones are not given).
Contract: a one-line ResultsError, or expectations that every step applies without raising; memory within the
bound of the input's size.
"""

from __future__ import annotations

from collections.abc import Iterator

from dmlconform.results import ResultsError
from dmlconform.results.expectations import load_expectations, next_baseline
from fuzz.contract import check_refusal, memory_bound, scratch
from fuzz.recorded import recorded, synthetic_run

_results: list = []


def results() -> list:
    if not _results:
        _results.extend(synthetic_run().results)
    return _results


def one_input(data: bytes) -> None:
    parts = data.split(b"\0", 2)
    paths = []
    for kind, text in zip(("baseline", "skip", "flakes"), parts, strict=False):
        path = scratch() / f"{kind}.txt"
        path.write_bytes(text)
        paths.append(path)
    baseline = paths[0] if paths else None
    with memory_bound(len(data)):
        try:
            expectations = load_expectations(baseline, paths[1:2], paths[2:3])
        except ResultsError as exc:
            check_refusal(exc)
            return
        for result in results():
            expectations.skip(result.id)
            expectations.overlay(result)
            if expectations.needs_retry(result):
                expectations.settle([result, result])
        next_baseline(results(), expectations)


def seeds() -> Iterator[bytes]:
    baseline = recorded().baseline.read_bytes()
    yield baseline
    yield baseline + b"\0seed\\.broken/relu.*\n# comment\n\0max-pooling\n"
    yield b"seed.broken/.*,Fail\nseed\\.broken/max-pooling-grad-2x2,CRASH\n\0\0.*slice.*\n"
    yield b"# deqp-runner style\nseed.broken/relu-grad-formula,NotSupported\n(seed|other)\\.broken/.+,Timeout\n"
