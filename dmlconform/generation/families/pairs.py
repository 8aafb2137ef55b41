"""Pairwise families: cases chosen from drawn candidates so that every possible combination of an operator's
features (dmlconform/interactions) is exercised by design: in the smoke tier every feature value, in the standard
tier every pair and the operator model's declared higher-order interactions.

A description names the kind (`slice-pairs`, ...), `candidates` (how many to draw) and, as `counts`, the most
cases each tier may take (cumulative, as everywhere; the choice itself decides how many); each operator's family
module gives the candidate builder, which draws a small valid case over the features' classes. The smoke tier's
choice is made first and the standard tier's continues from it, so a smoke case keeps its id and data in the
standard tier. The chosen cases are checked by the freezer as they are chosen (a rejected one is passed over), and
a goal left unmet is an error naming the combinations missing, never a smaller tier.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation import GenerationError
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Plan
from dmlconform.generation.freeze import Rejected, freeze
from dmlconform.generation.spec import REFUSED, CaseSpec
from dmlconform.interactions.coverage import goal_orders
from dmlconform.interactions.model import LAYOUT_FEATURE, OperatorModel
from dmlconform.interactions.registry import models
from dmlconform.interactions.selection import Combination, choose, combinations, possible
from dmlconform.suite.tiers import Tier

#: Draws a candidate: (family, draw, candidate index, case id) -> a case.
Candidate = Callable[[Family, Draw, int, str], CaseSpec]
#: Whether a family's goal takes a combination (the model, the combination).
Wanted = Callable[[OperatorModel, "Combination"], bool]


def spec_sites(model: OperatorModel, spec: CaseSpec) -> set:
    """The case's full sites (the operator's features and the layout)."""
    arrays = {name: tensor.array for name, tensor in spec.inputs.items()}
    if any(array is None for array in arrays.values()):
        raise GenerationError(f"case {spec.id}: a pairwise candidate needs its inputs as arrays")
    layouts = {name: tensor.layout for name, tensor in (*spec.inputs.items(), (model_output(model), spec.output))
               if tensor.layout is not None}
    return model.layout_sites(spec.params, arrays, spec.output.shape, layouts)  # type: ignore[arg-type]


def model_output(model: OperatorModel) -> str:
    from dmlconform.ops import find_operator

    return find_operator(model.op).outputs[0]


def packed_goal(model: OperatorModel, combination: Combination) -> bool:
    """The operator pairwise families' goal: every combination of the operator's own features, but the (data type,
    rank) pairs (`_cells_pair`); the layout's are the layout families' (generation/families/layout.py)."""
    return not _cells_pair(model, combination) and not has_layout(model, combination)


def has_layout(model: OperatorModel, combination: Combination) -> bool:
    position, order, _ = combination
    return LAYOUT_FEATURE.name in model.interactions(order)[position].features


_CHOICES: dict[tuple, tuple[tuple[CaseSpec, ...], tuple[CaseSpec, ...]]] = {}


def choices(family: Family, candidate: Candidate,
            wanted: Wanted = packed_goal) -> tuple[tuple[CaseSpec, ...], tuple[CaseSpec, ...]]:
    """The smoke tier's cases, and the ones the standard tier adds."""
    key = (family.file, family.name, family.seed, family.setting("candidates", int), candidate, wanted)
    if key not in _CHOICES:
        _CHOICES[key] = _choose(family, candidate, wanted)
    return _CHOICES[key]


def _choose(family: Family, candidate: Candidate,
            wanted: Wanted) -> tuple[tuple[CaseSpec, ...], tuple[CaseSpec, ...]]:
    model = models()[family.op.name]
    count = family.setting("candidates", int)
    specs = [candidate(family, Draw(family.seed, index), index, f"{family.name}-c{index}") for index in range(count)]
    covers = [combinations(model, spec_sites(model, spec), (1, 2, 3), refusable=REFUSED in spec.candidates.values())
              for spec in specs]
    taken: set[int] = set()

    def acceptable(index: int) -> bool:
        if index in taken:
            return False
        try:
            freeze(specs[index], "data/check.npz")
        except Rejected:
            return False
        return True

    tiers = []
    covered: set[Combination] = set()
    for tier in (Tier.SMOKE, Tier.STANDARD):
        goal = {combination for combination in possible(model, goal_orders(tier.value)) - covered
                if wanted(model, combination)}
        picks, missing = choose(covers, goal, acceptable)
        if missing:
            shown = ", ".join(str(values) for _, _, values in sorted(missing)[:5])
            raise family.error("candidates", f"{len(missing)} combinations of the {tier.value} goal are in none of "
                               f"the {count} candidates (e.g. {shown}): draw more, or widen the candidate builder")
        taken.update(picks)
        for index in picks:
            covered |= covers[index]
        tiers.append(tuple(specs[index] for index in picks))
    return tiers[0], tiers[1]


def _cells_pair(model: OperatorModel, combination: Combination) -> bool:
    """(data type, rank): every cell of the support table, which the per-cell families cover (`dmlconform
    coverage`); a pairwise case holds one cell, so taking them on here would cost a case per cell."""
    position, order, _ = combination
    return order == 2 and model.interactions(2)[position].features == ("dtype", "rank")


def pairwise_plans(candidate: Candidate, wanted: Wanted = packed_goal,
                   label: Callable[[CaseSpec], str] | None = None) -> Callable[[Family, Tier], Iterator[Plan]]:
    """The plans of a pairwise family over `candidate`'s cases, for the combinations `wanted` takes; a case's id is
    `<family>-<position>-<label>` (label: the data type and rank, unless given)."""
    label = label or _label

    def plans(family: Family, tier: Tier) -> Iterator[Plan]:
        if tier is Tier.FULL:
            return  # the standard tier's choice already covers every possible combination
        smoke, standard = choices(family, candidate, wanted)
        for step, chosen in ((Tier.SMOKE, len(smoke)), (Tier.STANDARD, len(smoke) + len(standard))):
            cap = family.counts.get(step, 0)
            if chosen > cap:
                raise family.error(f"counts.{step.value}", f"the {step.value} goal takes {chosen} cases, more than the "
                                   f"{cap} allowed: raise the cap if the growth is wanted")
        first = 0 if tier is Tier.SMOKE else len(smoke)
        for position, spec in enumerate(smoke if tier is Tier.SMOKE else standard, start=first):
            case_id = f"{family.name}-{position:03d}-{label(spec)}"
            named = replace(spec, id=case_id)
            yield Plan(case_id, (position,), lambda draw, named=named: named)

    return plans


def _label(spec: CaseSpec) -> str:
    return f"{spec.output.dtype.name.lower()}-r{len(spec.output.shape)}"


#: NumPy's type limits, once per type: class_values is asked for hundreds of thousands of values.
_finfo = functools.cache(np.finfo)
_iinfo = functools.cache(np.iinfo)


def class_values(dtype: DataType, value_class: str, count: int, draw: Draw) -> np.ndarray:
    """`count` values of a class of dmlconform/interactions/value_classes.py (distinct where the class has room)."""
    np_type = dtype.numpy
    if dtype.is_float:
        info = _finfo(np_type)
        sign = -1.0 if value_class.startswith("-") else 1.0
        kind = value_class.lstrip("+-")
        if kind == "nan":
            return np.full(count, np.nan, dtype=np_type)
        if kind == "inf":
            return np.full(count, sign * np.inf, dtype=np_type)
        if kind == "max":
            return np.full(count, sign * float(info.max), dtype=np_type)
        if kind == "0":
            return np.full(count, sign * 0.0, dtype=np_type)
        if kind == "denormal":
            steps = np.array([draw.between(1, 2 ** min(info.nmant, 20) - 1) for _ in range(count)], dtype=np.float64)
            return (sign * steps * float(info.smallest_subnormal)).astype(np_type)
        eighths = np.array([draw.between(4, 64) for _ in range(count)], dtype=np.float64)
        return (sign * eighths / 8).astype(np_type)
    info = _iinfo(np_type)
    if value_class == "min":
        return np.full(count, info.min, dtype=np_type)
    if value_class == "max":
        return np.full(count, info.max, dtype=np_type)
    if value_class == "0":
        return np.zeros(count, dtype=np_type)
    if value_class == "negative":
        return np.array([-draw.between(1, min(-int(info.min) - 1, 1000)) for _ in range(count)], dtype=np_type)
    return np.array([draw.between(1, min(int(info.max) - 1, 1000)) for _ in range(count)], dtype=np_type)
