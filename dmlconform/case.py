"""A test case as loaded from a suite: an operator description, input data and what must come out."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import Description, Operator, Reference

Tensors = dict[str, np.ndarray]


@dataclass
class Case:
    suite: str
    id: str
    file: Path
    description: Description
    inputs: Tensors
    #: Single expected answer; None for candidate cases and negative cases.
    expected: Tensors | None = None
    #: Named alternatives where the docs leave the answer open (docs/reference/operators.md).
    candidates: dict[str, Tensors] = field(default_factory=dict)
    expect_invalid: bool = False
    tolerance: Tolerance | None = None
    tags: tuple[str, ...] = ()
    #: The undocumented behaviour a candidate case probes, for the behaviour fingerprint.
    behaviour: str | None = None
    #: The name of a candidate that is a refusal (`name: refused` in the suite): where the docs leave open
    #: whether DirectML accepts the description at all, refusing it matches that candidate.
    refusal_candidate: str | None = None
    #: References computed while the case runs, by variant (see `reference`).
    _references: dict[str, Reference] = field(default_factory=dict, repr=False, compare=False)

    def reference(self, variant: str | None = None) -> Reference:
        """The reference's outputs and accumulation data for this case, computed once per variant while the case
        runs, so that the numpy backend and the judge share them; the runner calls `forget_references` after."""
        name = variant or self.op.variants[0]
        if name not in self._references:
            self._references[name] = self.op.reference(self.description, self.inputs, name)
        return self._references[name]

    def forget_references(self) -> None:
        self._references.clear()

    @property
    def full_id(self) -> str:
        return f"{self.suite}/{self.id}"

    @property
    def op(self) -> Operator:
        return self.description.op

    @property
    def dtype(self) -> DataType:
        return self.description.output.dtype

    @property
    def rank(self) -> int:
        return self.description.output.rank

    @cached_property
    def required_level(self) -> FeatureLevel:
        """Lowest level whose table admits this case; a negative case is required where its op starts. Worked out
        once: a description does not change."""
        if self.expect_invalid:
            return self.op.introduced
        level = self.op.required_level(self.description)
        return level if level is not None else self.op.introduced

    def answers(self) -> dict[str, Tensors]:
        """Every acceptable answer by name; a single-answer case has one, named 'expected'."""
        if self.expected is not None:
            return {"expected": self.expected}
        return dict(self.candidates)
