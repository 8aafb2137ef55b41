"""The JSON result, format dmlconform-result/v1 (contract §7)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dmlconform import __version__
from dmlconform.case_result import CaseResult
from dmlconform.run_result import RunResult, summary
from dmlconform.verdicts import fingerprint, level_verdicts

FORMAT = "dmlconform-result/v1"


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def case_json(result: CaseResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "op": result.op,
        "dtype": result.dtype,
        "rank": result.rank,
        "required_feature_level": result.required_level.label,
        "required": result.required,
        "status": result.status.value,
        "outcome": result.outcome.value if result.outcome else None,
        "matched": result.matched,
        "matched_all": list(result.matched_all),
        "behaviour": result.behaviour,
        "tolerance": result.tolerance.to_json() if result.tolerance else None,
        "max_ulp": result.max_ulp,
        "max_abs_error": _number(result.max_abs_error),
        "worst_index": list(result.worst_index) if result.worst_index is not None else None,
        "worst_elements": [
            {"index": list(e.index), "expected": e.expected, "actual": e.actual, "ulp": e.ulp, "allowed": e.allowed}
            for e in result.worst
        ],
        "message": result.message,
        "duration_s": round(result.duration_s, 6),
        "file": result.file,
        "tags": list(result.tags),
    }


def to_json(run: RunResult) -> dict[str, Any]:
    info = run.backend
    return {
        "format": FORMAT,
        "tool_version": __version__,
        "backend": {"name": info.name, "version": info.version, "device": info.device,
                    "feature_level": info.feature_level.label,
                    "feature_level_source": info.feature_level_source, **info.extra},
        "target_feature_level": run.target_level.label,
        "started": run.started.isoformat(),
        "duration_s": round(run.duration_s, 6),
        "summary": summary(run.results),
        "feature_levels": {
            v.level.label: {"required": v.required, "matched": v.matched, "conformant": v.conformant,
                            "claimed": v.claimed}
            for v in level_verdicts(run.results, run.target_level)
        },
        "behaviour_fingerprint": fingerprint(run.results),
        "cases": [case_json(r) for r in run.results],
    }


def write_json(run: RunResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(run), indent=1) + "\n", encoding="utf-8")
