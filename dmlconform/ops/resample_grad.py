"""DML_OPERATOR_RESAMPLE_GRAD (v0, FL 3_0): ResampleGrad1's adjoint of a resample, without RoundingDirection.

The page (DML_RESAMPLE_GRAD_OPERATOR_DESC) points every field at Resample1, whose NEAREST_NEIGHBOR "chooses the input
element nearest to the corresponding pixel center" and names no rounding rule, and it says nothing of LINEAR taps
past the input or of which offset is which. So three choices are open (docs/reference/operators.md, notes OC-RG1..4),
each a reading here, computed by ResampleGrad1's machinery (dmlconform/ops/resample_grad1.py) with the rule swapped in:

* offsets: `swapped` (the gradient's InputPixelOffsets are the forward's OutputPixelOffsets, as DirectML's
  ResampleGrad1 was measured to do) or `literal`;
* NEAREST_NEIGHBOR rounding of the coordinate x: `floor`, `ceil`, `half-up` floor(x + 0.5), `half-down`
  ceil(x − 0.5), `half-even` (HLSL's round). Rounding half away from zero is `half-up` and truncation `floor` here:
  they differ only below 0, where every pick clamps to element 0;
* LINEAR taps outside the input: `clamped` onto the edge (Resample2's rule) or `dropped` (zero padding).

A variant names the readings that differ from the default joined by `+` (`literal`, `floor`, `literal+floor`,
`edges-dropped`); the default, `swapped` (offsets swapped, round half up, edges clamped), is what DirectML 1.8.0 to
1.15.4 were measured to do (examples/dml_harness/investigate/resample_grad_readings.md). Rounding applies to
NEAREST_NEIGHBOR only and edges to LINEAR only, so no variant needs both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops.base import Description, Param, ParamKind
from dmlconform.ops.resample_grad1 import ResampleGrad1, source_coordinates

SUPPORT = SupportTable((SupportRow(L.L3_0, 4, 4, frozenset({T.FLOAT32, T.FLOAT16})),
                        SupportRow(L.L5_1, 1, 4, frozenset({T.FLOAT32, T.FLOAT16}))))

OFFSET_READINGS = ("swapped", "literal")
ROUNDINGS = ("floor", "ceil", "half-up", "half-down", "half-even")
EDGE_READINGS = ("clamped", "dropped")


@dataclass(frozen=True)
class Reading:
    """One answer to each open choice."""

    offsets: str
    rounding: str
    edges: str

    @property
    def name(self) -> str:
        """The variant's name: the choices that differ from DEFAULT, joined by `+` (DEFAULT itself: `swapped`)."""
        parts = [self.offsets] if self.offsets != DEFAULT.offsets else []
        if self.rounding != DEFAULT.rounding:
            parts.append(self.rounding)
        if self.edges != DEFAULT.edges:
            parts.append(f"edges-{self.edges}")
        return "+".join(parts) or DEFAULT.offsets


#: What DirectML 1.8.0 to 1.15.4 did (examples/dml_harness/investigate/resample_grad_readings.md).
DEFAULT = Reading("swapped", "half-up", "clamped")


def reading(variant: str | None) -> Reading:
    """The readings a variant name stands for; an unknown name is DEFAULT (as every backend treats one)."""
    found = DEFAULT
    for part in (variant or DEFAULT.offsets).split("+"):
        if part in OFFSET_READINGS:
            found = replace(found, offsets=part)
        elif part in ROUNDINGS:
            found = replace(found, rounding=part)
        elif part.removeprefix("edges-") in EDGE_READINGS and part.startswith("edges-"):
            found = replace(found, edges=part.removeprefix("edges-"))
        else:
            return DEFAULT
    return found


def variant(offsets: str | None = None, rounding: str | None = None, edges: str | None = None) -> str:
    """The variant name of DEFAULT with the named readings changed."""
    return replace(DEFAULT, **{k: v for k, v in (("offsets", offsets), ("rounding", rounding), ("edges", edges))
                               if v is not None}).name


def _variants() -> tuple[str, ...]:
    names = [variant(offsets=o) for o in OFFSET_READINGS]
    names += [variant(offsets=o, rounding=r) for r in ROUNDINGS if r != DEFAULT.rounding for o in OFFSET_READINGS]
    names += [variant(offsets=o, edges=e) for e in EDGE_READINGS if e != DEFAULT.edges for o in OFFSET_READINGS]
    return tuple(names)


class ResampleGrad(ResampleGrad1):
    name = "RESAMPLE_GRAD"
    support = SUPPORT
    params = (
        Param("InterpolationMode", ParamKind.ENUM, ("NEAREST_NEIGHBOR", "LINEAR"), "DML_INTERPOLATION_MODE_"),
        Param("Scales", ParamKind.FLOATS),
        Param("InputPixelOffsets", ParamKind.FLOATS),
        Param("OutputPixelOffsets", ParamKind.FLOATS),
    )
    variants = _variants()
    offset_readings = tuple(variant(offsets=o) for o in OFFSET_READINGS)

    def offsets_swapped(self, variant: str | None) -> bool:
        return reading(variant).offsets == "swapped"

    def rounding(self, desc: Description, variant: str | None = None) -> str:
        return reading(variant).rounding

    def edges(self, variant: str | None = None) -> str:
        return reading(variant).edges


RESAMPLE_GRAD = ResampleGrad()

__all__ = ["DEFAULT", "RESAMPLE_GRAD", "ROUNDINGS", "Reading", "ResampleGrad", "reading", "source_coordinates",
           "variant"]
