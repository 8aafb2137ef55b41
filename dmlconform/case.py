"""A test case as loaded from a suite: an operator description, input data and what must come out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import Description, Operator, Reference
from dmlconform.surface.buffers import Binding
from dmlconform.surface.layout import LayoutRuleError, check_layout
from dmlconform.surface.paths import ExecutionPath

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
    #: How the case reaches DirectML (contract §9); a case on another path than `operator` has an id ending in
    #: `@graph` or `@in-place` (`on_path`).
    path: ExecutionPath = ExecutionPath.OPERATOR
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

    @property
    def uses_buffers(self) -> bool:
        """Runs with whole buffer images (canaries checked): a tensor has a layout, or the path is not `operator`."""
        return self.path is not ExecutionPath.OPERATOR or self.description.has_layouts

    def on_path(self, path: ExecutionPath) -> Case | None:
        """This case as run on `path`, or None where the path does not apply: in place, only an operator whose page
        allows it, never a negative case, and only where the input it aliases could be an output (not broadcast)."""
        if path is ExecutionPath.OPERATOR:
            return self
        if path is ExecutionPath.IN_PLACE:
            if self.op.in_place is None or self.expect_invalid:
                return None
            output, aliased = self.op.in_place
            desc = self.description
            layout = desc.layout(aliased)
            try:
                check_layout(output, desc.tensors[aliased], layout, output=True)
            except LayoutRuleError:
                return None
            if desc.tensors[aliased] != desc.tensors[output]:
                return None
            layouts = dict(desc.layouts)
            if layout.is_default:
                layouts.pop(output, None)
            else:
                layouts[output] = layout
            description = replace(desc, layouts=layouts)
            return replace(self, id=self.id + path.suffix, description=description, path=path, _references={})
        return replace(self, id=self.id + path.suffix, path=path, _references={})

    @property
    def binding(self) -> Binding:
        """The buffers the case binds on its path (dmlconform.surface.buffers)."""
        in_place = self.path is ExecutionPath.IN_PLACE and self.op.in_place
        aliases = {self.op.in_place[0]: self.op.in_place[1]} if in_place and self.op.in_place else {}
        return Binding(self.op.inputs, self.op.outputs, aliases, edges=self.path is ExecutionPath.GRAPH)

    @property
    def aliased_input(self) -> str | None:
        """In place: the input the output is bound over."""
        return self.op.in_place[1] if self.path is ExecutionPath.IN_PLACE and self.op.in_place else None

    def answers(self) -> dict[str, Tensors]:
        """Every acceptable answer by name; a single-answer case has one, named 'expected'."""
        if self.expected is not None:
            return {"expected": self.expected}
        return dict(self.candidates)
