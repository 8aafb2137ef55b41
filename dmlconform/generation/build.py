"""Build a tier's suites from the descriptions: every family's new cases, frozen, grouped per operator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dmlconform.generation import GenerationError
from dmlconform.generation.description import Description, Family, description_files, load_description
from dmlconform.generation.draw import Draw
from dmlconform.generation.families import KINDS
from dmlconform.generation.families.common import Plan
from dmlconform.generation.freeze import FrozenCase, Rejected, freeze
from dmlconform.suite.tiers import Tier

#: Draws a case may take before its family is declared broken.
ATTEMPTS = 40


@dataclass
class GeneratedSuite:
    """One suite file of a tier, `<folder>.yaml`, and its `.npz` files (one per family), relative to the tier folder."""

    name: str
    file: str
    tier: Tier
    description: str
    cases: list[FrozenCase] = field(default_factory=list)
    #: npz file (relative to the tier folder) -> key -> array
    data: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def load_descriptions(files: Iterable[Path] | None = None) -> list[Description]:
    return [load_description(path, KINDS) for path in (files if files is not None else description_files())]


def freeze_plan(family: Family, plan: Plan, npz: str) -> FrozenCase:
    """The first draw of the plan that passes every check."""
    last: Rejected | None = None
    for attempt in range(ATTEMPTS):
        try:
            spec = plan.make(Draw(family.seed, *plan.key, attempt))
        except Rejected as exc:  # a family that sees its own draw cannot tell right from wrong draws again
            last = exc
            continue
        if spec.id != plan.id:
            raise GenerationError(f"{family.file}: family '{family.name}': built {spec.id} for plan {plan.id}")
        try:
            return freeze(spec, npz)
        except Rejected as exc:
            last = exc
        except GenerationError as exc:
            raise GenerationError(f"{family.file}: family '{family.name}': {exc}") from None
    raise GenerationError(f"{family.file}: family '{family.name}': case {plan.id}: no acceptable draw in "
                          f"{ATTEMPTS} attempts (last: {last})")


def plans(family: Family, tier: Tier) -> Iterator[Plan]:
    if not family.new_in(tier):
        return
    builder: Callable[[Family, Tier], Iterable[Plan]] = KINDS[family.kind]
    yield from builder(family, tier)


def build_tier(tier: Tier, descriptions: list[Description] | None = None,
               progress: Callable[[str], None] | None = None) -> list[GeneratedSuite]:
    suites = []
    for description in descriptions if descriptions is not None else load_descriptions():
        suite = GeneratedSuite(f"{description.suite}.{tier.value}", f"{description.suite}.yaml", tier,
                               f"{description.about.strip()} The cases the {tier.value} tier adds.")
        ids: set[str] = set()
        for family in description.families:
            npz = f"data/{description.suite}-{family.name}.npz"
            before = len(suite.cases)
            for plan in plans(family, tier):
                if plan.id in ids:
                    raise GenerationError(f"{family.file}: family '{family.name}': case id {plan.id} is used twice")
                ids.add(plan.id)
                frozen = freeze_plan(family, plan, npz)
                suite.cases.append(frozen)
                if frozen.arrays:
                    suite.data.setdefault(npz, {}).update(frozen.arrays)
            if progress is not None and len(suite.cases) > before:
                progress(f"{suite.name}: {family.name}, {len(suite.cases) - before} cases")
        if suite.cases:
            suites.append(suite)
    return suites
