"""Family builders by kind name: each turns a family of a description into plans for one tier's new cases."""

from __future__ import annotations

from dmlconform.generation.families import (
    average_pooling,
    elementwise,
    known_bugs,
    layout,
    negative,
    pooling,
    resample,
    slice,
)

KINDS = {**elementwise.KINDS, **slice.KINDS, **pooling.KINDS, **resample.KINDS,
         **negative.KINDS, **known_bugs.KINDS, **layout.KINDS, **average_pooling.KINDS}
