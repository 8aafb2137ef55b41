"""How ResampleGrad1's reference evaluates dX = dY ×_a W_aᵀ fast, in NumPy alone, summing every element's terms in
one fixed order: its taps in ascending dY coordinate, one axis after the other, each product and sum in float64.

An axis' taps, grouped by input, make passes (`TransposePass`): pass r gives every input its (r+1)-th term. A pass
is read through a few slices where its rows and cols are evenly spaced (`SliceRun`), else through a gather. On an
integer upsampling most inputs share one tap pattern (`RegularAxis`): each pass is then one long strided sweep over
a whole chunk, and the few inputs at the ends are summed again from their own terms.

Where an element's terms begin is not written as `0.0 + first term`: the sums carry the first term itself, and the
chunk adds 0.0 once, at the end, as it rounds. The two agree on every value: they can differ only in the sign of a
zero, a sum of -0 terms alone, and the final + 0.0 makes that +0 as 0.0 + -0 would have.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dmlconform.ops.parallel import in_parallel

#: dY elements handled together along the leading axes that resampling leaves alone (batch, channel): a chunk's
#: float64 temporaries stay in the CPU caches, and each thread runs long enough between NumPy calls not to
#: queue for the GIL (at 2^16, two threads were no faster than one; at 2^18, 1.6x).
CHUNK_ELEMENTS = 1 << 18

#: Tensors of fewer dY elements than this are left to the slice runs: working out an axis' regular pattern costs
#: more than the sweeps save.
REGULAR_MIN_ELEMENTS = 1 << 14

#: A pass split into more runs than this is applied with a gather instead.
MAX_RUNS = 8


@dataclass
class Scratch:
    """Float64 work arrays that one thread reuses from chunk to chunk, by role. Allocated anew for every chunk, a
    chunk's few MiB went back to the system when freed and were faulted in again page by page; the faults cost
    more than the arithmetic and, taking the process' memory lock, kept two threads from running at once."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def get(self, role: str, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        array = self.arrays.get(role)
        if array is None or array.size < size:
            array = self.arrays[role] = np.empty(size)
        return array[:size].reshape(shape)


def _fresh(_role: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.empty(shape)


@dataclass(frozen=True)
class SliceRun:
    """Entries `entries` of a pass: rows `rows` of dY feed cols `cols` of dX, one to one."""

    rows: slice
    cols: slice
    entries: slice
    #: The run's weight and tap count where every entry has the same (a scalar factor is cheaper to apply).
    same_weight: float | None = None
    same_taps: float | None = None


@dataclass(frozen=True)
class TransposePass:
    """One rank of an axis' taps grouped by input: input `cols[j]` receives `weights[j]·dy[rows[j]]`, and no
    input twice, so a pass is a gather, a product and an add. Pass r holds each input's (r+1)-th tap in
    ascending output order; applying the passes in order sums each input's terms in that order."""

    rows: np.ndarray
    cols: np.ndarray
    #: W[o, i]: two taps of one output clamped onto one input are one entry, as in the weight matrix.
    weights: np.ndarray
    #: How many taps the entry stands for (1, or 2 where two clamped together): its terms in D.
    taps: np.ndarray
    every_input: bool
    #: The entries as a few runs of evenly spaced rows and cols (slices, read and written in place of a gather
    #: and a scatter), or None where they are too irregular for that to pay.
    runs: tuple[SliceRun, ...] | None = None


def _same(values: np.ndarray) -> float | None:
    return values.dtype.type(values[0]) if values.size and bool((values == values[0]).all()) else None


def slice_runs(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, taps: np.ndarray
               ) -> tuple[SliceRun, ...] | None:
    """rows → cols (cols ascending) as runs of constant positive steps in both, greedily from the first entry;
    None if there are more than MAX_RUNS."""
    row_steps, col_steps = np.diff(rows).tolist(), np.diff(cols).tolist()
    runs: list[SliceRun] = []
    first = 0
    while first < rows.size:
        last = first  # the run's last entry
        if first < len(row_steps) and row_steps[first] > 0 and col_steps[first] > 0:
            step = (row_steps[first], col_steps[first])
            last += 1
            while last < len(row_steps) and (row_steps[last], col_steps[last]) == step:
                last += 1
        row_step = row_steps[first] if last > first else 1
        col_step = col_steps[first] if last > first else 1
        entries = slice(first, last + 1)
        runs.append(SliceRun(slice(int(rows[first]), int(rows[last]) + 1, row_step),
                             slice(int(cols[first]), int(cols[last]) + 1, col_step), entries,
                             _same(weights[entries]), _same(taps[entries])))
        if len(runs) > MAX_RUNS:
            return None
        first = last + 1
    return tuple(runs)


def transpose_passes(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, taps: np.ndarray, n_in: int
                     ) -> list[TransposePass]:
    """An axis' taps merged per (output, input) pair and sorted by input, then output, as passes."""
    rank = np.arange(cols.size) - np.searchsorted(cols, cols)
    passes = []
    for r in range(int(rank.max()) + 1 if cols.size else 0):
        chosen = rank == r
        entries = (rows[chosen], cols[chosen], weights[chosen], taps[chosen])
        passes.append(TransposePass(*entries, int(chosen.sum()) == n_in, slice_runs(*entries)))
    return passes


def is_identity(passes: list[TransposePass], weight: str, n_out: int) -> bool:
    """Whether the axis maps output i to input i with factor 1 in the named weight, and has as many outputs as inputs
    (then it is skipped, which also keeps a -0 gradient -0). An axis whose outputs past the input have no taps at all
    (ResampleGrad v0's `edges-dropped` reading) maps the first outputs so, and is not one."""
    return len(passes) == 1 and passes[0].every_input and passes[0].cols.size == n_out and \
        np.array_equal(passes[0].rows, passes[0].cols) and bool((getattr(passes[0], weight) == 1).all())


@dataclass(frozen=True)
class Term:
    """One term of an input's sum: dY coordinate `row`, with its weight and tap count."""

    row: int
    weights: float
    taps: float


@dataclass(frozen=True)
class RegularAxis:
    """An integer upsampling's axis (n_out = step·n_in) on which every input i but a few at the ends takes its
    r-th term from dY coordinate step·i + shifts[r], weighted alike. Each pass is then one strided sweep over a
    whole chunk. The sweeps leave stray sums in the other inputs (`edges`), which are then summed again from
    their own terms, in the same order."""

    step: int
    shifts: tuple[int, ...]
    weights: tuple[float, ...]
    taps: tuple[float, ...]
    edges: tuple[tuple[int, tuple[Term, ...]], ...]

    def sweep_last(self, values: np.ndarray, n_in: int, weight: str, scratch: Scratch) -> np.ndarray:
        """Along the last axis of contiguous float64 `values`: over the flattened array, input k's term is
        values[step·k + shift], since a row of n_out = step·n_in coordinates maps onto a row of n_in inputs."""
        flat = values.reshape(-1)
        sums = scratch.get("last sums", (flat.size // self.step,))
        work = scratch.get("last work", sums.shape)
        for rank, (shift, factor) in enumerate(zip(self.shifts, getattr(self, weight), strict=True)):
            low = max(0, -(shift // self.step))
            high = min(sums.size, (flat.size - 1 - shift) // self.step + 1)
            if high > low:
                source = flat[self.step * low + shift:self.step * (high - 1) + shift + 1:self.step]
                _accumulate(sums[low:high], work[low:high], source, factor, rank)
        out = sums.reshape(*values.shape[:-1], n_in)
        self._sum_edges(lambda col: out[..., col], lambda row: values[..., row], weight)
        return out

    def sweep_leading(self, part: np.ndarray, n_in: int, weight: str, magnitudes: bool, scratch: Scratch
                      ) -> np.ndarray:
        """Along axis 1 of `part` [b, n_out, ...] (cast to float64 here, |·| if `magnitudes`). The cast regroups the
        coordinates by their remainder modulo the step, so that each pass reads one contiguous block per b."""
        b, t = part.shape[0], math.prod(part.shape[2:])
        grouped = scratch.get("grouped", (b, self.step, n_in * t))
        np.copyto(grouped.reshape(b, self.step, n_in, t), part.reshape(b, n_in, self.step, t).transpose(0, 2, 1, 3))
        if magnitudes:
            np.abs(grouped, out=grouped)
        sums = scratch.get("leading sums", (b, n_in * t))
        work = scratch.get("leading work", sums.shape)
        for rank, (shift, factor) in enumerate(zip(self.shifts, getattr(self, weight), strict=True)):
            remainder, offset = shift % self.step, (shift // self.step) * t
            low, high = max(0, -offset), min(n_in * t, n_in * t - offset)
            if high > low:
                _accumulate(sums[:, low:high], work[:, low:high], grouped[:, remainder, low + offset:high + offset],
                            factor, rank)
        out = sums.reshape(b, n_in, t)
        by_row = grouped.reshape(b, self.step, n_in, t)
        self._sum_edges(lambda col: out[:, col], lambda row: by_row[:, row % self.step, row // self.step], weight)
        return out.reshape(b, n_in, *part.shape[2:])

    def _sum_edges(self, target: Callable[[int], np.ndarray], source: Callable[[int], np.ndarray],
                   weight: str) -> None:
        for col, terms in self.edges:
            sums = target(col)
            if not terms:
                sums[...] = 0.0
                continue
            np.multiply(source(terms[0].row), getattr(terms[0], weight), out=sums)
            for term in terms[1:]:
                np.add(sums, source(term.row) * getattr(term, weight), out=sums)


def _accumulate(sums: np.ndarray, work: np.ndarray, source: np.ndarray, factor: float, rank: int) -> None:
    """sums = source·factor (the first pass) or sums + source·factor."""
    np.multiply(source, factor, out=sums if rank == 0 else work)
    if rank:
        np.add(sums, work, out=sums)


def regular_axis(passes: list[TransposePass], n_in: int, n_out: int) -> RegularAxis | None:
    """The axis' shared tap pattern, if it has one that covers at least half its inputs; else None."""
    longest = []
    for tap_pass in passes:
        if tap_pass.runs is None:
            return None
        run = _evenly_weighted(tap_pass, max(tap_pass.runs, key=lambda r: r.entries.stop - r.entries.start))
        if run.cols.step != 1:
            return None
        longest.append(run)
    if not longest:
        return None
    step = longest[0].rows.step
    first, stop = max(run.cols.start for run in longest), min(run.cols.stop for run in longest)
    if any(run.rows.step != step for run in longest) or n_out != step * n_in or 2 * (stop - first) < n_in:
        return None
    edges = []
    for col in (*range(first), *range(stop, n_in)):
        terms = []
        for tap_pass in passes:
            entry = np.flatnonzero(tap_pass.cols == col)  # at most one: a pass holds each input once
            if entry.size:
                j = int(entry[0])
                terms.append(Term(int(tap_pass.rows[j]), float(tap_pass.weights[j]), float(tap_pass.taps[j])))
        edges.append((col, tuple(terms)))
    return RegularAxis(step, tuple(run.rows.start - step * run.cols.start for run in longest),
                       tuple(float(run.same_weight) for run in longest),  # type: ignore[arg-type]
                       tuple(float(run.same_taps) for run in longest), tuple(edges))  # type: ignore[arg-type]


def _evenly_weighted(tap_pass: TransposePass, run: SliceRun) -> SliceRun:
    """The run's longest stretch around its middle entry where every entry has that entry's weight and tap count
    (a run's ends may hold inputs whose taps clamped together)."""
    weights, taps = tap_pass.weights[run.entries], tap_pass.taps[run.entries]
    middle = weights.size // 2
    alike = (weights == weights[middle]) & (taps == taps[middle])
    low = middle - int(np.argmin(alike[middle::-1])) + 1 if not alike[:middle + 1].all() else 0
    high = middle + int(np.argmin(alike[middle:])) if not alike[middle:].all() else weights.size
    return SliceRun(slice(run.rows.start + low * run.rows.step, run.rows.start + high * run.rows.step, run.rows.step),
                    slice(run.cols.start + low * run.cols.step, run.cols.start + high * run.cols.step, run.cols.step),
                    slice(run.entries.start + low, run.entries.start + high),
                    tap_pass.weights.dtype.type(weights[middle]), tap_pass.taps.dtype.type(taps[middle]))


def _apply_passes(values: np.ndarray, axis: int, passes: list[TransposePass], size: int, weight: str,
                  scratch: Scratch | None = None) -> np.ndarray:
    """One axis, pass by pass: slice runs where the pass has them, else gathers."""
    shape = (*values.shape[:axis], size, *values.shape[axis + 1:])
    get = scratch.get if scratch is not None else _fresh
    summed, term = get(f"sums {axis}", shape), get(f"term {axis}", shape)
    summed[...] = 0.0
    trailing = (1,) * (values.ndim - axis - 1)
    lead = (slice(None),) * axis
    for rank, tap_pass in enumerate(passes):
        factor = getattr(tap_pass, weight).reshape(-1, *trailing)
        if tap_pass.runs is not None:  # the same products and sums, read and written through slices
            for run in tap_pass.runs:
                sums = summed[(*lead, run.cols)]
                same = run.same_weight if weight == "weights" else run.same_taps
                # An input's first term is written, not added to 0.0: see the module's docstring.
                _accumulate(sums, term[(*lead, run.cols)], values[(*lead, run.rows)],
                            factor[run.entries] if same is None else same, rank)  # type: ignore[arg-type]
        elif tap_pass.every_input:
            np.take(values, tap_pass.rows, axis=axis, out=term)
            np.multiply(term, factor, out=term)
            summed += term
        else:
            where = (slice(None),) * axis + (tap_pass.cols,)
            summed[where] += np.take(values, tap_pass.rows, axis=axis) * factor
    return summed


def _transposed_sums(values: np.ndarray, passes: Sequence[list[TransposePass]], n_in: Sequence[int], weight: str,
                     first_axis: int, last: RegularAxis | None = None, scratch: Scratch | None = None
                     ) -> np.ndarray:
    """dY ×_a W_aᵀ over the axes from `first_axis` on (identity axes skipped), in float64, before the final + 0.0
    (a sum of -0 terms alone may be -0). `values` is float64; with `last` (and `scratch`), the last axis is swept."""
    out = values
    for axis, axis_passes, size in zip(range(first_axis, values.ndim), passes, n_in, strict=True):
        if is_identity(axis_passes, weight, out.shape[axis]):
            continue
        if last is not None and scratch is not None and axis == values.ndim - 1:
            out = last.sweep_last(np.ascontiguousarray(out), size, weight, scratch)
        else:
            out = _apply_passes(out, axis, axis_passes, size, weight, scratch)
    return out


def apply_transposed(dy: np.ndarray, passes: Sequence[list[TransposePass]], n_in: Sequence[int],
                     weight: str = "weights", first_axis: int = 0) -> np.ndarray:
    """dX = dY ×_a W_aᵀ over every axis a (in order; identity axes skipped), in float64. `passes` and `n_in`
    describe the axes from `first_axis` on.

    `weight` names the TransposePass field that weighs each term: `weights` for the value, `taps` for D; M
    is this with `weights` over |dY|, since resampling weights are never negative. Each input's terms are
    multiplied and added one at a time in ascending output order, and only real taps are read, so a NaN or
    an infinity reaches only the elements it contributes to.
    """
    out = _transposed_sums(dy, passes, n_in, weight, first_axis)
    if out is not dy:
        np.add(out, 0.0, out=out)
    return out


def resample_transposed(dy: np.ndarray, passes: list[list[TransposePass]], n_in: tuple[int, ...],
                        out_dtype: np.dtype, weight: str = "weights", magnitudes: bool = False) -> np.ndarray:
    """apply_transposed (of |dY| if `magnitudes`), rounded to `out_dtype`, a chunk of the leading identity axes
    (the batch) at a time; the first and last resampled axes are swept where they are regular."""
    kept = next((a for a, axis in enumerate(passes) if not is_identity(axis, weight, dy.shape[a])), len(passes))
    out = np.empty(n_in, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        if kept == len(passes):
            np.copyto(out, np.abs(dy) if magnitudes else dy, casting="unsafe")
            return out
        last = dy.ndim - 1

        def pattern(a: int) -> RegularAxis | None:
            sweepable = dy.size >= REGULAR_MIN_ELEMENTS and not is_identity(passes[a], weight, dy.shape[a])
            return regular_axis(passes[a], n_in[a], dy.shape[a]) if sweepable else None

        leading = pattern(kept) if kept < last else None
        trailing = pattern(last)
        batch = math.prod(dy.shape[:kept])
        rows_in = dy.reshape(batch, *dy.shape[kept:])
        rows_out = out.reshape(batch, *n_in[kept:])
        step = max(1, CHUNK_ELEMENTS // max(math.prod(dy.shape[kept:]), 1))
        threads = threading.local()

        def chunk(first: int) -> None:
            scratch = threads.__dict__.setdefault("scratch", Scratch())
            with np.errstate(invalid="ignore", over="ignore"):
                part = rows_in[first:first + step]
                if leading is not None:
                    swept = leading.sweep_leading(part, n_in[kept], weight, magnitudes, scratch)
                    summed = _transposed_sums(swept, passes[kept + 1:], n_in[kept + 1:], weight, 2, trailing,
                                              scratch=scratch)
                else:
                    values = scratch.get("values", part.shape)
                    np.copyto(values, part)
                    if magnitudes:
                        np.abs(values, out=values)
                    summed = _transposed_sums(values, passes[kept:], n_in[kept:], weight, 1, trailing,
                                              scratch=scratch)
                np.add(summed, 0.0, out=rows_out[first:first + step], casting="unsafe")

        in_parallel(chunk, range(0, batch, step))
    return out
