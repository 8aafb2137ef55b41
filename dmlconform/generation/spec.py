"""What a family builder hands to the freezer: one case, before the reference has run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.surface.layout import TensorLayout


@dataclass(frozen=True)
class TensorSpec:
    """A tensor's data type and sizes, and its data: an array (stored in the suite's .npz) or a `generate:` spec
    (re-created by the loader, for large inputs that need no hand-picked values). Neither for a negative case's
    output. `layout`: how its elements lie in memory (contract §9; None: packed), written as the suite's `strides`,
    `total_bytes` and `offset` keys; the data stays the logical tensor."""

    dtype: DataType
    shape: tuple[int, ...]
    array: np.ndarray | None = None
    generate: dict[str, Any] | None = None
    layout: TensorLayout | None = None


#: Candidate answers that are not reference variants, computed by the freezer (freeze.SPECIAL_ANSWERS).
FLUSHED = "flushed"
#: fp32 denormals flushed where an operation is arithmetic and kept where it only moves data (D3D11's rule):
#: X flushed where it is compared, the gradient kept through the select (`input-flushed`); or the other way
#: (`gradient-flushed`: X compared as it is, the gradient flushed, as a multiply by the mask would).
INPUT_FLUSHED = "input-flushed"
GRADIENT_FLUSHED = "gradient-flushed"
EDGE_CLAMPED = "edge-clamped"
#: A candidate that is a refusal of the description (written `name: refused` in the suite).
REFUSED = "refused"


@dataclass
class CaseSpec:
    id: str
    op: str
    params: dict[str, Any]
    inputs: dict[str, TensorSpec]
    output: TensorSpec
    tags: tuple[str, ...] = ()
    note: str | None = None
    #: Candidate name -> how its answer is computed: a reference variant's name, FLUSHED or EDGE_CLAMPED; or
    #: REFUSED for a candidate that refuses the description.
    #: Empty for a single-answer case.
    candidates: dict[str, str] = field(default_factory=dict)
    behaviour: str | None = None
    #: A negative case names the DML field whose rule its description breaks; the freezer checks that the
    #: reference refuses it for exactly that field.
    refuses: str | None = None
    tolerance: str | None = None

    @property
    def invalid(self) -> bool:
        return self.refuses is not None
