"""Whether a certification holds: every case required at the claimed level matched, or failed and is waived for
this device; the run whole (not a shard, nothing missing, not interrupted); the device at the claimed level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dmlconform.case_result import Status
from dmlconform.certification import CERTIFICATION_TIERS
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult
from dmlconform.verdicts import effective_status


@dataclass(frozen=True)
class CertificationVerdict:
    level: FeatureLevel
    required: int
    matched: int
    waived: int
    #: Required cases that neither matched nor are waived, in selection order.
    not_matched: tuple[str, ...]
    #: Why the claim does not hold; none when it does.
    reasons: tuple[str, ...]

    @property
    def certified(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict[str, Any]:
        return {"certified": self.certified, "feature_level": self.level.label, "required": self.required,
                "matched": self.matched, "waived": self.waived, "not_matched": list(self.not_matched),
                "reasons": list(self.reasons)}


def certification_verdict(run: RunResult, level: FeatureLevel, tier: str) -> CertificationVerdict:
    required = [r for r in run.results if r.required_level <= level]
    matched = sum(1 for r in required if effective_status(r).matched)
    waived = sum(1 for r in required if r.status is Status.WAIVED)
    not_matched = tuple(r.id for r in required if not effective_status(r).matched and r.status is not Status.WAIVED)
    reasons = []
    if tier not in CERTIFICATION_TIERS:
        reasons.append(f"the {tier} tier is a rehearsal; a certification runs the standard or the full tier")
    if run.shard is not None:
        reasons.append(f"this is shard {run.shard} of a run: a certification is every shard merged "
                       "(dmlconform certify --merge)")
    if run.missing_shards:
        reasons.append(f"shard(s) {', '.join(map(str, run.missing_shards))} missing from the merge")
    if run.interrupted:
        reasons.append(f"the run was interrupted ({run.interrupted})")
    if run.backend.feature_level < level:
        reasons.append(f"the device reports feature level {run.backend.feature_level}, below the claimed {level}")
    if run.target_level != level:
        reasons.append(f"the run was judged at {run.target_level}, not at the claimed {level}")
    if not_matched:
        reasons.append(f"{len(not_matched)} of {len(required)} required case(s) neither matched nor waived")
    return CertificationVerdict(level, len(required), matched, waived, not_matched, tuple(reasons))
