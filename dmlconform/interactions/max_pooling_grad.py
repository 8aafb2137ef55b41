"""MaxPoolingGrad's features: per window (one gradient element), what its taps in the input hold and where, and the
geometry around it.

An implementation picks a window's winner by scanning its taps, so its path is chosen by which values the window
holds and in which order: DirectML 1.15.4's running maximum starts at −FLT_MAX on a window's first tap and moves on
a strict `>` (examples/dml_harness/results/DECISIONS.md §7), so a window of −∞ then −FLT_MAX routes its gradient
to the −∞, a bug that needs three features of one window together. A site is a window:

* `maximum`: the class (dmlconform/interactions/value_classes.py) of its largest non-NaN tap in the input (`none`:
  no such tap); `where`: which of its in-input taps, in scan order, first holds that maximum (`only` where the
  window has one in-input tap); `first`: the class of its first in-input tap; `nan`: whether a tap holds NaN;
  `ties`: whether the maximum is held `once` or `tied` (the lowest index must win);
* `padding`: every tap in the input (`inside`), some before it (`beside-start`), after it or past the padded input
  (`beside-end`), on both sides (`beside-both`), or none in it (`only`);
* the case's geometry: `dilation` 1 or 2+ (on an axis the window spans), windows `apart` or `overlapping`, and the
  gradient at the `pooled` size, `smaller` or `larger` (taps past the padded input).

The universe is derived, not asserted: every window of one to four in-input taps over representative values of
every class (two values for the classes that hold many, so that ties and order within a class show) is classified
by the same scan `sites` runs, and four taps are enough for every combination of the window's features (the
first tap, the maximum, a tie after it and a NaN).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import Feature, Interaction, OperatorModel, Site
from dmlconform.interactions.value_classes import ALL_CLASSES, FLOAT_CLASSES, class_codes
from dmlconform.ops.max_pooling_grad import pooled_size

OP = "MAX_POOLING_GRAD"
NONE = "none"
MAXIMUM = (*(name for name in FLOAT_CLASSES if name != "nan"), NONE)
WHERE = ("only", "first", "middle", "last", NONE)
FIRST = (*FLOAT_CLASSES, NONE)
NAN = ("no", "yes")
TIES = ("once", "tied", NONE)
PADDING = ("inside", "beside-start", "beside-end", "beside-both", "only")
DILATION = ("1", "2+")
WINDOWS = ("apart", "overlapping")
GRADIENT = ("pooled", "smaller", "larger")
#: The window's own features, in the model's order (the columns of `WindowScan.contents`).
CONTENT = ("maximum", "where", "first", "nan", "ties")
#: Where DirectML 1.15.4's running maximum, which starts at −FLT_MAX on a window's first tap and moves on a strict
#: `>`, never moves: a maximum of −∞ or −FLT_MAX at a later tap (then a −∞ or a NaN is first, and DirectML routes
#: the gradient there, DECISIONS.md §7; the reference's default NaN reading picks the maximum).
LOWEST_MAXIMA = ("-inf", "-max")
UNMOVED = ("middle", "last")
#: Taps of the enumerated windows: enough for the first tap, the maximum, a tie after it and a NaN to be apart.
ENUMERATED_TAPS = 4
_NO_CLASS = np.uint8(255)


class WindowScan:
    """The window features of many windows at once, fed one tap at a time in scan order: the tap's values (any array
    that broadcasts to the windows' shape) and whether it lies in the input."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.count = np.zeros(shape, dtype=np.int64)
        self.best = np.zeros(shape, dtype=dtype)
        self.best_class = np.full(shape, _NO_CLASS, dtype=np.uint8)
        self.best_at = np.zeros(shape, dtype=np.int64)
        self.has_best = np.zeros(shape, dtype=bool)
        self.tied = np.zeros(shape, dtype=bool)
        self.nan = np.zeros(shape, dtype=bool)
        self.first = np.full(shape, _NO_CLASS, dtype=np.uint8)

    def tap(self, values: np.ndarray, inside: np.ndarray) -> None:
        values = np.broadcast_to(values, self.count.shape)
        inside = np.broadcast_to(inside, self.count.shape)
        codes = class_codes(values)
        is_nan = np.isnan(values)
        valid = inside & ~is_nan
        self.nan |= inside & is_nan
        opening = inside & (self.count == 0)
        self.first[opening] = codes[opening]
        with np.errstate(invalid="ignore"):
            higher = valid & (~self.has_best | (values > self.best))
            equal = valid & self.has_best & (values == self.best)
        self.tied = np.where(higher, False, self.tied | equal)
        self.best[higher] = values[higher]
        self.best_class[higher] = codes[higher]
        self.best_at[higher] = self.count[higher]
        self.has_best |= valid
        self.count += inside

    def contents(self) -> np.ndarray:
        """Per window, the indexes of its features' values in CONTENT order (MAXIMUM, WHERE, FIRST, NAN, TIES), as
        a [windows, 5] array."""
        count, found = self.count.ravel(), self.has_best.ravel()
        at = self.best_at.ravel()
        where = np.select([~found, count == 1, at == 0, at == count - 1],
                          [WHERE.index(NONE), WHERE.index("only"), WHERE.index("first"), WHERE.index("last")],
                          WHERE.index("middle"))
        maximum = _recode(self.best_class.ravel(), MAXIMUM)
        first = _recode(self.first.ravel(), FIRST)
        ties = np.where(found, np.where(self.tied.ravel(), TIES.index("tied"), TIES.index("once")), TIES.index(NONE))
        return np.stack([maximum, where, first, self.nan.ravel().astype(np.int64), ties], axis=1)


def _recode(codes: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """ALL_CLASSES codes (255: none) as indexes into `names`."""
    table = np.full(256, names.index(NONE), dtype=np.int64)
    for index, name in enumerate(names):
        if name != NONE:
            table[ALL_CLASSES.index(name)] = index
    return table[codes]


@dataclass(frozen=True)
class AxisGeometry:
    """One spatial axis: tap positions `o*stride - start + k*dilation` for every output o and tap k."""

    extent: int
    out: int
    window: int
    stride: int
    start: int
    end: int
    dilation: int

    @property
    def positions(self) -> np.ndarray:
        return (np.arange(self.out)[:, None] * self.stride - self.start + np.arange(self.window)[None, :]
                * self.dilation)

    @property
    def pooled(self) -> int:
        # DirectML takes a formula of 0 or less as 1 (dmlconform/generation/families/pooling.py).
        return max(1, pooled_size(self.extent, self.window, self.stride, self.start, self.end, self.dilation))


def axes_of(params: Mapping[str, Any], spatial: tuple[int, ...], out: tuple[int, ...]) -> list[AxisGeometry]:
    return [AxisGeometry(n, o, k, s, a, e, d) for n, o, k, s, a, e, d in zip(
        spatial, out, params["WindowSize"], params["Strides"], params["StartPadding"], params["EndPadding"],
        params["Dilations"], strict=True)]


def case_geometry(axes: list[AxisGeometry]) -> tuple[str, str, str]:
    """(dilation, windows, gradient) of a case."""
    dilated = any(axis.window > 1 and axis.dilation > 1 for axis in axes)
    overlapping = any((axis.window - 1) * axis.dilation + 1 > axis.stride for axis in axes)
    if any(axis.out > axis.pooled for axis in axes):
        gradient = "larger"
    elif any(axis.out < axis.pooled for axis in axes):
        gradient = "smaller"
    else:
        gradient = "pooled"
    return DILATION[dilated], WINDOWS[overlapping], gradient


def padding_codes(axes: list[AxisGeometry], count: np.ndarray) -> np.ndarray:
    """Per window ([*out], broadcast over batch and channels by the caller): the index of its PADDING value."""
    before = np.zeros((), dtype=bool)
    after = np.zeros((), dtype=bool)
    for axis in axes:
        positions = axis.positions
        before = np.logical_or.outer(before, (positions < 0).any(axis=1))
        after = np.logical_or.outer(after, (positions >= axis.extent).any(axis=1))
    side = before.astype(np.int64) + 2 * after.astype(np.int64)  # 0 inside, 1 start, 2 end, 3 both
    side = np.broadcast_to(side, count.shape)
    return np.where(count == 0, PADDING.index("only"), side)


def scan_case(x: np.ndarray, axes: list[AxisGeometry]) -> WindowScan:
    """Every window's scan ([N, C, *out]): each tap a strided view of X padded with zeros, and where it is real."""
    before = [axis.start for axis in axes]
    after = [max(0, int(axis.positions.max()) - (axis.extent - 1)) for axis in axes]
    region = tuple(slice(b, b + axis.extent) for b, axis in zip(before, axes, strict=True))
    padded = np.zeros(x.shape[:2] + tuple(b + axis.extent + e for b, axis, e in zip(before, axes, after, strict=True)),
                      dtype=x.dtype)
    padded[(slice(None), slice(None), *region)] = x
    inside = np.zeros(padded.shape[2:], dtype=bool)
    inside[region] = True
    scan = WindowScan(x.shape[:2] + tuple(axis.out for axis in axes), x.dtype)
    for tap in itertools.product(*(range(axis.window) for axis in axes)):
        # `before` is the start padding, so the window of output 0 starts at k*dilation in the padded array.
        view = tuple(slice(k * axis.dilation, k * axis.dilation + (axis.out - 1) * axis.stride + 1, axis.stride)
                     for k, axis in zip(tap, axes, strict=True))
        scan.tap(padded[(slice(None), slice(None), *view)], inside[view])
    return scan


def lowest_windows(contents: np.ndarray) -> np.ndarray:
    """Which windows (rows of `WindowScan.contents`) DirectML 1.15.4 routes to their first tap, where the reference
    (and every NaN reading, when the first tap is −∞) routes to a later one: LOWEST_MAXIMA, UNMOVED."""
    maximum, where = (contents[:, CONTENT.index(name)] for name in ("maximum", "where"))
    return (np.isin(maximum, [MAXIMUM.index(name) for name in LOWEST_MAXIMA])
            & np.isin(where, [WHERE.index(name) for name in UNMOVED]))


class MaxPoolingGradModel(OperatorModel):
    op = OP

    def __init__(self) -> None:
        self.features = (
            dtype_feature(OP),
            rank_feature(OP),
            Feature("maximum", MAXIMUM, "the class of the window's largest non-NaN tap in the input"),
            Feature("where", WHERE, "which in-input tap (scan order) first holds the maximum"),
            Feature("first", FIRST, "the class of the window's first in-input tap"),
            Feature("nan", NAN, "whether a tap in the input holds NaN"),
            Feature("ties", TIES, "whether the maximum is held by one tap or tied"),
            Feature("padding", PADDING, "where the window's taps outside the input lie"),
            Feature("dilation", DILATION, "the case's dilation on an axis its window spans"),
            Feature("windows", WINDOWS, "whether the case's windows overlap"),
            Feature("gradient", GRADIENT, "the gradient's spatial sizes against the pooled size"),
        )
        # DirectML 1.15.4 refuses a gradient that is not the pooled size (a `refused` candidate): such a case
        # exercises its windows only where an implementation computes it.
        self.refusable = ("gradient",)
        self.higher = (
            Interaction(("maximum", "first", "where"),
                        "DirectML 1.15.4's running maximum starts at -FLT_MAX on the first tap: -inf first and "
                        "-FLT_MAX the maximum at a later tap routes the gradient to the -inf"),
            Interaction(("maximum", "nan", "first"),
                        "NaN beside only -inf and -FLT_MAX: where the NaN readings part from a running maximum "
                        "that starts at -FLT_MAX"),
        )

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        axes = axes_of(params, tuple(x.shape[2:]), tuple(dy.shape[2:]))
        scan = scan_case(x, axes)
        padding = padding_codes(axes, scan.count)
        rows = np.unique(np.concatenate([scan.contents(), padding.reshape(-1, 1)], axis=1), axis=0)
        head = (DataType.from_numpy(dy.dtype).name, str(len(output_shape)))
        tail = case_geometry(axes)
        return {(*head, *content_names(row[:5]), PADDING[row[5]], *tail) for row in rows.tolist()}

    def possible_sites(self) -> Iterator[Site]:
        table = enumerated_windows()
        # Per content, whether some window of two or more in-input taps holds it: a window wholly in the input that
        # is dilated or overlaps its neighbours spans two taps on some axis.
        multi: dict[tuple[str, ...], bool] = {}
        for content, count in zip(table.names(), table.count.tolist(), strict=True):
            multi[content] = multi.get(content, False) or count >= 2
        for dtype, rank in support_cells(OP):
            head = (dtype.name, str(rank))
            for content, spans_two in multi.items():
                empty = content[CONTENT.index("maximum")] == NONE and content[CONTENT.index("first")] == NONE
                for padding in PADDING:
                    if (padding == "only") != empty:
                        continue
                    for dilation, windows, gradient in itertools.product(DILATION, WINDOWS, GRADIENT):
                        if padding == "inside" and not spans_two and (dilation, windows) != ("1", "apart"):
                            continue
                        yield (*head, *content, padding, dilation, windows, gradient)


def content_names(row: list[int] | np.ndarray) -> tuple[str, ...]:
    maximum, where, first, nan, ties = (int(v) for v in row)
    return MAXIMUM[maximum], WHERE[where], FIRST[first], NAN[nan], TIES[ties]


def representatives() -> tuple[tuple[str, ...], np.ndarray]:
    """The enumerated windows' values (float32) and their classes: two values for the classes that hold many (lower
    first, so that order and ties within a class show), one for the others."""
    info = np.finfo(np.float32)
    tiny, sub = float(info.tiny), float(info.smallest_subnormal)
    values = {"-inf": [-np.inf], "-max": [-float(info.max)], "-normal": [-2.0, -1.0], "-denormal": [-2 * sub, -sub],
              "-0": [-0.0], "+0": [0.0], "+denormal": [sub, 2 * sub], "+normal": [1.0, 2.0],
              "+max": [float(info.max)], "+inf": [np.inf], "nan": [np.nan]}
    assert 2 * sub < tiny
    names = tuple(name for name in FLOAT_CLASSES for _ in values[name])
    return names, np.array([v for name in FLOAT_CLASSES for v in values[name]], dtype=np.float32)


@dataclass(frozen=True)
class EnumeratedWindows:
    """Every window of 0 to ENUMERATED_TAPS in-input taps over the representatives: `reps[w, t]` the representative
    of tap t (-1 past the window's taps), `count[w]` its taps, `content[w]` its CONTENT indexes."""

    reps: np.ndarray
    count: np.ndarray
    content: np.ndarray

    def names(self) -> list[tuple[str, ...]]:
        return [content_names(row) for row in self.content.tolist()]


@cache
def enumerated_windows() -> EnumeratedWindows:
    _, values = representatives()
    rows = [(-1,) * ENUMERATED_TAPS]
    for taps in range(1, ENUMERATED_TAPS + 1):
        rows += [combo + (-1,) * (ENUMERATED_TAPS - taps) for combo in itertools.product(range(values.size),
                                                                                           repeat=taps)]
    reps = np.array(rows, dtype=np.int64)
    scan = WindowScan((reps.shape[0],), values.dtype)
    for tap in range(ENUMERATED_TAPS):
        column = reps[:, tap]
        scan.tap(values[np.maximum(column, 0)], column >= 0)
    return EnumeratedWindows(reps, scan.count, scan.contents())


@dataclass(frozen=True)
class WindowChoices:
    """Enumerated windows of one tap count, grouped by content: content c's windows are
    `rows[starts[c]:starts[c] + sizes[c]]` (rows of `enumerated_windows().reps`)."""

    rows: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray


@cache
def window_choices(taps: int, nan: bool, denormal: bool, lowest: bool) -> WindowChoices:
    """The enumerated windows of exactly `taps` in-input taps a generator may plant, grouped by content: with a NaN
    (`nan`) or none, denormals or none; `lowest`: only windows with nothing above −FLT_MAX (`lowest_windows`, which
    DirectML 1.15.4 routes otherwise, among them), else none of those (so that they stay in the few cases meant for
    them)."""
    table = enumerated_windows()
    names, _ = representatives()
    barred = {index for index, name in enumerate(names)
              if (name == "nan" and not nan) or (name.endswith("denormal") and not denormal)}
    keep = (table.count == taps) & (table.content[:, CONTENT.index("nan")] == NAN.index("yes" if nan else "no"))
    if barred:
        keep &= ~np.isin(table.reps, sorted(barred)).any(axis=1)
    if lowest:
        keep &= np.isin(table.content[:, CONTENT.index("maximum")], [MAXIMUM.index(name) for name in
                                                                     (*LOWEST_MAXIMA, NONE)])
    else:
        keep &= ~lowest_windows(table.content)
    rows = np.flatnonzero(keep)
    _, group, sizes = np.unique(table.content[rows], axis=0, return_inverse=True, return_counts=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    return WindowChoices(rows[order], np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
