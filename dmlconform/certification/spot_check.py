"""A certifier's spot-check: cases of a package run again on the certifier's own unit of the device, compared with
what the package recorded. Verify proves a package is consistent; only running cases again ties it to hardware."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from dmlconform.case_result import CaseResult
from dmlconform.certification import Problem, ProblemKind
from dmlconform.certification.waivers import DeviceIdentity
from dmlconform.verdicts import effective_status


@dataclass(frozen=True)
class SpotCheck:
    case_id: str
    recorded: str
    again: str
    #: Whether the outputs are bit for bit the package's; None where either side has none.
    identical: bool | None

    @property
    def agrees(self) -> bool:
        return self.recorded == self.again


def sample(case_ids: list[str], count: int, seed: int) -> list[str]:
    """`count` ids drawn without replacement (all of them when there are fewer), in their original order."""
    chosen = set(random.Random(seed).sample(case_ids, min(count, len(case_ids))))
    return [case_id for case_id in case_ids if case_id in chosen]


def _came_to(result: CaseResult) -> str:
    status = effective_status(result).value
    return f"{status} (candidate {result.matched})" if result.matched else status


def compare(recorded: CaseResult, recorded_outputs: dict[str, np.ndarray] | None, again: CaseResult,
            again_outputs: dict[str, np.ndarray]) -> SpotCheck:
    identical = None
    if recorded_outputs and again_outputs:
        identical = recorded_outputs.keys() == again_outputs.keys() and all(
            a.dtype == again_outputs[name].dtype and a.shape == again_outputs[name].shape
            and a.tobytes() == again_outputs[name].tobytes() for name, a in recorded_outputs.items())
    return SpotCheck(recorded.id, _came_to(recorded), _came_to(again), identical)


def spot_check_problems(checks: list[SpotCheck]) -> list[Problem]:
    return [Problem(ProblemKind.SPOT_CHECK, f"results.json: case {check.case_id}",
                    f"spot-check: {check.recorded} in the package, {check.again} on this unit")
            for check in checks if not check.agrees]


def device_note(package: DeviceIdentity, here: DeviceIdentity) -> str | None:
    """A line when the unit re-running cases is not the device the package names (no problem in itself: the
    certifier decides what counts as the same device)."""
    if (package.adapter, package.vendor_id, package.device_id) == (here.adapter, here.vendor_id, here.device_id):
        return None
    return f"note: the package names {package.describe()}; this unit is {here.describe()}"
