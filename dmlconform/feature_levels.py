"""DML_FEATURE_LEVEL values, ordered, and the operator support tables built from them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from dmlconform.dtypes import DataType


class FeatureLevel(Enum):
    """DML_FEATURE_LEVEL_<major>_<minor>; the value is the DML enum value."""

    L1_0 = 0x1000
    L2_0 = 0x2000
    L2_1 = 0x2100
    L3_0 = 0x3000
    L3_1 = 0x3100
    L4_0 = 0x4000
    L4_1 = 0x4100
    L5_0 = 0x5000
    L5_1 = 0x5100
    L5_2 = 0x5200
    L6_0 = 0x6000
    L6_1 = 0x6100
    L6_2 = 0x6200
    L6_3 = 0x6300
    L6_4 = 0x6400

    @property
    def label(self) -> str:
        return self.name[1:]

    def __str__(self) -> str:
        return self.label

    def __lt__(self, other: FeatureLevel) -> bool:
        return self.value < other.value

    def __le__(self, other: FeatureLevel) -> bool:
        return self.value <= other.value

    def __gt__(self, other: FeatureLevel) -> bool:
        return self.value > other.value

    def __ge__(self, other: FeatureLevel) -> bool:
        return self.value >= other.value

    @classmethod
    def parse(cls, text: object) -> FeatureLevel:
        key = str(text).strip().upper().removeprefix("DML_FEATURE_LEVEL_").replace(".", "_")
        try:
            return cls["L" + key]
        except KeyError:
            known = ", ".join(level.label for level in cls)
            raise ValueError(f"unknown feature level {text!r} (known: {known})") from None


HIGHEST = max(FeatureLevel, key=lambda level: level.value)


@dataclass(frozen=True)
class SupportRow:
    """One 'DML_FEATURE_LEVEL_x_y and above' table of a seed page."""

    level: FeatureLevel
    min_rank: int
    max_rank: int
    dtypes: frozenset[DataType]

    def admits(self, dtype: DataType, rank: int) -> bool:
        return dtype in self.dtypes and self.min_rank <= rank <= self.max_rank


@dataclass(frozen=True)
class SupportTable:
    """An operator's tables. Every case asks it several questions (validation, verdicts), so the answers are
    kept: a table is immutable and there are few data types and ranks."""

    rows: tuple[SupportRow, ...]

    @cached_property
    def introduced(self) -> FeatureLevel:
        return min((row.level for row in self.rows), key=lambda level: level.value)

    def required_level(self, dtype: DataType, rank: int) -> FeatureLevel | None:
        """The lowest level whose table admits this data type and rank, or None if none does."""
        return self._required_levels.get((dtype, rank))

    @cached_property
    def _required_levels(self) -> dict[tuple[DataType, int], FeatureLevel]:
        levels: dict[tuple[DataType, int], FeatureLevel] = {}
        for row in sorted(self.rows, key=lambda row: row.level.value, reverse=True):
            for dtype in row.dtypes:
                for rank in range(row.min_rank, row.max_rank + 1):
                    levels[dtype, rank] = row.level
        return levels

    @cached_property
    def all_dtypes(self) -> frozenset[DataType]:
        return frozenset().union(*(row.dtypes for row in self.rows))

    @cached_property
    def rank_range(self) -> tuple[int, int]:
        return min(r.min_rank for r in self.rows), max(r.max_rank for r in self.rows)


#: DirectML's training operators (DML_OPERATOR_* without the prefix) and the feature level that introduced each
#: (../shared/spec/training-ops/dml-feature-level-history.md): a device at a level supports every one introduced at or
#: below it, so a verdict names those its run did not test (dmlconform.verdicts.LevelVerdict.untested).
TRAINING_OPERATORS: dict[str, FeatureLevel] = {
    "ACTIVATION_RELU_GRAD": FeatureLevel.L3_0,
    "AVERAGE_POOLING_GRAD": FeatureLevel.L3_0,
    "MAX_POOLING_GRAD": FeatureLevel.L3_0,
    "RESAMPLE_GRAD": FeatureLevel.L3_0,
    "SLICE_GRAD": FeatureLevel.L3_0,
    "ADAM_OPTIMIZER": FeatureLevel.L3_0,
    "ELEMENT_WISE_CLIP_GRAD": FeatureLevel.L3_1,
    "LOCAL_RESPONSE_NORMALIZATION_GRAD": FeatureLevel.L3_1,
    "BATCH_NORMALIZATION_GRAD": FeatureLevel.L3_1,
    "ROI_ALIGN_GRAD": FeatureLevel.L4_1,
    "BATCH_NORMALIZATION_TRAINING": FeatureLevel.L4_1,
    "BATCH_NORMALIZATION_TRAINING_GRAD": FeatureLevel.L4_1,
    "ELEMENT_WISE_CLIP_GRAD1": FeatureLevel.L5_0,
    "RESAMPLE_GRAD1": FeatureLevel.L5_1,
}


def training_operators_at(level: FeatureLevel) -> tuple[str, ...]:
    """The training operators a device at `level` supports, in the order of TRAINING_OPERATORS."""
    return tuple(name for name, introduced in TRAINING_OPERATORS.items() if introduced <= level)
