"""Every operator's interaction model, and the sites of the suite layer's cases."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from dmlconform.case import Case
from dmlconform.interactions.coverage import OperatorCoverage, measure
from dmlconform.interactions.model import OperatorModel, Site


@cache
def models() -> dict[str, OperatorModel]:
    from dmlconform.interactions.average_pooling_grad import AveragePoolingGradModel
    from dmlconform.interactions.elementwise import ClipGrad1Model, ClipGradModel, ReluGradModel
    from dmlconform.interactions.max_pooling_grad import MaxPoolingGradModel
    from dmlconform.interactions.resample_grad import ResampleGradModel
    from dmlconform.interactions.resample_grad1 import ResampleGrad1Model
    from dmlconform.interactions.slice_grad import SliceGradModel

    found = [ReluGradModel(), ClipGrad1Model(), SliceGradModel(), MaxPoolingGradModel(), ResampleGrad1Model(),
             ClipGradModel(),
             ResampleGradModel(), AveragePoolingGradModel()]
    return {model.op: model for model in found}


def case_sites(model: OperatorModel, case: Case) -> set[Site]:
    shape = case.description.tensors[case.op.outputs[0]].shape
    return model.layout_sites(case.description.params, case.inputs, tuple(shape), case.description.layouts)


def cases_coverage(cases: Iterable[Case]) -> list[OperatorCoverage]:
    """Per operator with a model, the interaction coverage of the valid cases among these."""
    per_op: dict[str, list[Case]] = {}
    for case in cases:
        if not case.expect_invalid:
            per_op.setdefault(case.op.name, []).append(case)
    found = []
    for op, model in models().items():
        chosen = per_op.get(op, [])
        sites: set[Site] = set()
        refusable: set[Site] = set()
        for case in chosen:
            (refusable if case.refusal_candidate is not None else sites).update(case_sites(model, case))
        found.append(measure(model, sites, len(chosen), refusable))
    return found
