"""The `numpy` backend: the reference itself, run like any other backend."""

from __future__ import annotations

import numpy as np

from dmlconform import __version__
from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops.base import DescriptionError


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
        return Outcome.ran(case.reference(variant).outputs)

    def close(self) -> None:
        pass


@register("numpy")
def create(options: BackendOptions) -> NumpyBackend:
    return NumpyBackend(options.variant)
