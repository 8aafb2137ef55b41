"""Merge shard results (`dmlconform merge`) into the result an unsharded run would have given.

Refused, naming the field: results of different configurations (tool version, backend name, judged
level, suite fingerprint, settings, expectation files), of different backends (version, device,
driver...), of different shard counts, and overlapping shards or cases. Missing shards are reported
in `missing_shards`, and make the merged result fail.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from dmlconform.results import ResultsError
from dmlconform.results.document import backend_json, configuration, dotted, first_difference, value_at
from dmlconform.run_result import RunResult


def merge_results(inputs: list[tuple[Path, RunResult]]) -> RunResult:
    if not inputs:
        raise ResultsError("merge", "needs at least one result file")
    first_path, first = inputs[0]
    reference = _comparable(first)
    for path, run in inputs[1:]:
        difference = first_difference(reference, _comparable(run))
        if difference is not None:
            raise ResultsError(path, f"is {json.dumps(value_at(_comparable(run), difference))} here but "
                                     f"{json.dumps(value_at(reference, difference))} in {first_path}; "
                                     "only shards of one run configuration can be merged", field=dotted(difference))
    count = _shard_count(inputs)
    owners: dict[int, Path] = {}
    case_owner: dict[str, Path] = {}
    for path, run in inputs:
        index = run.shard.index if run.shard else 1
        if index in owners:
            raise ResultsError(path, f"shard {index}/{count} is also in {owners[index]}", field="shard.index")
        owners[index] = path
        for result in run.results:
            if result.id in case_owner:
                raise ResultsError(path, f"is also in {case_owner[result.id]}; shards overlap", f"case {result.id}")
            case_owner[result.id] = path
    results = sorted((r for _, run in inputs for r in run.results), key=lambda r: r.index)
    missing = [i for i in range(1, count + 1) if i not in owners]
    if not missing and first.suite is not None and len(results) != first.suite.cases:
        raise ResultsError(first_path, f"the shards hold {len(results)} cases but the selection had "
                                       f"{first.suite.cases}", field="suite.cases")
    interrupted = next((run.interrupted for _, run in inputs if run.interrupted), None)
    return replace(
        first, results=results, shard=None, interrupted=interrupted,
        started=min(run.started for _, run in inputs),
        duration_s=max(run.duration_s for _, run in inputs),  # shards run side by side: the longest is the wait
        resumed=sum(run.resumed for _, run in inputs),
        shards=[{"index": run.shard.index if run.shard else 1, "count": count, "file": str(path),
                 "cases": len(run.results), "started": run.started.isoformat(), "duration_s": round(run.duration_s, 6),
                 "interrupted": run.interrupted}
                for path, run in sorted(inputs, key=lambda item: item[1].shard.index if item[1].shard else 1)],
        missing_shards=missing)


def _comparable(run: RunResult) -> dict[str, object]:
    settings = configuration(run)
    settings.pop("shard")
    settings["backend"] = backend_json(run.backend)
    return settings


def _shard_count(inputs: list[tuple[Path, RunResult]]) -> int:
    counts = {(run.shard.count if run.shard else 1): path for path, run in inputs}
    if len(counts) > 1:
        (a, path_a), (b, path_b) = list(counts.items())[:2]
        raise ResultsError(path_b, f"is {b} here but {a} in {path_a}", field="shard.count")
    return next(iter(counts))
