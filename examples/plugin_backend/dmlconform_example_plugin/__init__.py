"""An example dmlconform backend from another distribution (entry point group `dmlconform.backends`).

A real plugin would call a vendor's bindings here; this one computes each case with dmlconform's own reference,
so that it passes every bundled case, and says where it comes from in its info.
"""

from __future__ import annotations

from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops.base import DescriptionError

__version__ = "0.1.0"


class ExampleReferenceBackend:
    name = "example-reference"

    def __init__(self, options: BackendOptions) -> None:
        self.variant = options.variant

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, f"dmlconform-example-plugin {__version__}", "cpu (the reference, as a plugin)",
                           HIGHEST, "the example plugin claims every level its reference covers")

    def run(self, case: Case) -> Outcome:
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return Outcome.refused(str(exc))
        return Outcome.ran(case.op.reference(case.description, case.inputs, self.variant).outputs)

    def close(self) -> None:
        pass


def create(options: BackendOptions) -> ExampleReferenceBackend:
    return ExampleReferenceBackend(options)
