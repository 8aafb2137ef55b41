"""The `numpy` backend: the reference itself, run like any other backend."""

from __future__ import annotations

import numpy as np

from dmlconform import __version__
from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops.base import DescriptionError
from dmlconform.surface.buffers import images_after, images_before


class NumpyBackend:
    name = "numpy"
    #: The reference holds no state between cases, and NumPy releases the GIL in its kernels.
    thread_safe = True

    def __init__(self, variant: str | None = None) -> None:
        #: Which documented-silent behaviour to compute, where the operator has a variant of that name.
        self.variant = variant

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, f"dmlconform {__version__}, numpy {np.__version__}", "cpu (reference)",
                           HIGHEST, "the reference implements every operator at every level")

    def run(self, case: Case) -> Outcome:
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return Outcome.refused(str(exc))
        variant = self.variant if self.variant in case.op.variants else None
        outputs = case.reference(variant).outputs
        if case.uses_buffers:
            # The reference computes logical tensors; on a layout or path it writes them where the case's buffers
            # hold them, and nowhere else.
            binding = case.binding
            before = images_before(case.description, binding, case.inputs)
            return Outcome.ran_buffers(images_after(case.description, binding, before, outputs))
        return Outcome.ran(outputs)

    def close(self) -> None:
        pass


@register("numpy")
def create(options: BackendOptions) -> NumpyBackend:
    return NumpyBackend(options.variant)
