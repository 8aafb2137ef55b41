"""The fast reference kernels against the kernels they replaced (tests/ops/slow_reference.py), over many random
descriptions: outputs bit for bit, accumulation data (n, f exactly; v, M, D to a few float64 roundings, since
the old kernel summed through BLAS, whose order and fused multiply-adds are its own), whole and at a few
elements. Chunk sizes and thread counts are varied, since neither may change a result."""

from __future__ import annotations

import numpy as np
import pytest

import dmlconform.ops._resample_kernel as resample
import dmlconform.ops.max_pooling_grad as max_pooling
from dmlconform.compare.accumulation import Accumulation
from dmlconform.dtypes import DataType
from dmlconform.ops import MAX_POOLING_GRAD, RESAMPLE_GRAD, RESAMPLE_GRAD1
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.ops.resample_grad1 import axis_taps
from tests.ops import slow_reference

F16, F32 = DataType.FLOAT16, DataType.FLOAT32


def assert_same_reference(new_out: np.ndarray, new: Accumulation, old_out: np.ndarray, old: Accumulation,
                          shape: tuple[int, ...]) -> None:
    """Outputs bit for bit (any NaN matches any NaN); n and f equal; v, M, D within 4 float64 ULPs of M."""
    assert new_out.dtype == old_out.dtype and new_out.shape == old_out.shape
    nan_new, nan_old = np.isnan(new_out), np.isnan(old_out)
    assert np.array_equal(nan_new, nan_old)
    bits = np.dtype(f"u{new_out.dtype.itemsize}")
    assert np.array_equal(new_out[~nan_new].view(bits), old_out[~nan_old].view(bits))

    def whole(values: np.ndarray | float) -> np.ndarray:
        return np.broadcast_to(values, shape).reshape(-1)

    assert np.array_equal(whole(new.count), whole(old.count))
    assert np.array_equal(whole(new.weight_factors), whole(old.weight_factors))
    assert np.array_equal(whole(new.coordinate_slack), whole(old.coordinate_slack), equal_nan=True)
    magnitude = whole(old.abs_sum)
    for name in ("value", "abs_sum", "abs_gradient_sum"):
        a, b = whole(getattr(new, name)), whole(getattr(old, name))
        if name == "abs_gradient_sum":  # D is read only where f > 0 (the old MaxPoolingGrad left it 0)
            keep = whole(old.weight_factors) > 0
            a, b, scale = a[keep], b[keep], b[keep]
        else:
            scale = magnitude
        assert np.array_equal(np.isnan(a), np.isnan(b)), name
        finite = np.isfinite(b) & np.isfinite(scale)
        assert np.array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)]), name
        assert (np.abs(a[finite] - b[finite]) <= 4 * np.finfo(np.float64).eps * scale[finite]).all(), name


def test_the_comparison_catches_a_one_ulp_change_and_a_wrong_count():
    out = np.array([1.0, 2.0], np.float32)
    acc = Accumulation(np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([1, 2]))
    assert_same_reference(out, acc, out.copy(), acc, (2,))
    with pytest.raises(AssertionError):
        assert_same_reference(np.nextafter(out, np.float32(3)), acc, out, acc, (2,))
    with pytest.raises(AssertionError):
        assert_same_reference(out, Accumulation(acc.value, acc.abs_sum, np.array([1, 3])), out, acc, (2,))
    with pytest.raises(AssertionError):
        assert_same_reference(out, Accumulation(acc.value * (1 + 1e-12), acc.abs_sum, acc.count), out, acc, (2,))


def vary_chunks_and_threads(monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> None:
    pooling_chunks = [1, 7, 64, 1 << 17, max_pooling.CHUNK_ELEMENTS]
    monkeypatch.setattr(max_pooling, "CHUNK_ELEMENTS", int(rng.choice(pooling_chunks)))
    monkeypatch.setattr(resample, "CHUNK_ELEMENTS", int(rng.choice([1, 5, 64, 1 << 16, resample.CHUNK_ELEMENTS])))
    monkeypatch.setattr(resample, "REGULAR_MIN_ELEMENTS", int(rng.choice([0, resample.REGULAR_MIN_ELEMENTS])))
    monkeypatch.setenv("DMLCONFORM_THREADS", str(rng.choice([1, 2, 3])))


def pooling_case(rng: np.random.Generator, trial: int) -> tuple[Description, dict[str, np.ndarray]]:
    dims = int(rng.integers(1, 4))
    spatial = [int(v) for v in rng.integers(1, 8, size=dims)]
    window = [int(v) for v in rng.integers(1, 5, size=dims)]  # often wider than the stride: overlaps
    params = {"Strides": tuple(int(v) for v in rng.integers(1, 4, size=dims)), "WindowSize": tuple(window),
              "StartPadding": tuple(int(rng.integers(0, w + 1)) for w in window),
              "EndPadding": tuple(int(rng.integers(0, w + 1)) for w in window),
              "Dilations": tuple(int(v) for v in rng.integers(1, 4, size=dims))}
    out = [int(rng.integers(1, 8)) for _ in range(dims)]  # below, at or past the pooled size
    dtype = (F32, F16)[trial % 2]
    planes = (int(rng.integers(1, 3)), int(rng.integers(1, 4)))
    values = [-1.0, 0.0, -0.0, 2.0, 3.5]  # few values: ties
    values += [np.nan] * (trial % 5 == 0) + [-np.inf] * (trial % 7 == 0) + [np.inf] * (trial % 11 == 0)
    x = rng.choice(values, size=(*planes, *spatial))
    if trial % 3 == 0:
        x = rng.standard_normal(x.shape)
    dy = rng.standard_normal((*planes, *out))
    if trial % 4 == 0:
        dy.reshape(-1)[rng.integers(0, dy.size)] = rng.choice([np.nan, np.inf, -np.inf])
    shapes = {"InputTensor": x.shape, "InputGradientTensor": dy.shape, "OutputGradientTensor": x.shape}
    desc = Description(MAX_POOLING_GRAD, params, {k: TensorDesc(dtype, v) for k, v in shapes.items()})
    return desc, {"InputTensor": x.astype(dtype.numpy), "InputGradientTensor": dy.astype(dtype.numpy)}


def check_against_the_old_kernel(op: object, old_kernel: object, desc: Description, inputs: dict[str, np.ndarray],
                                 rng: np.random.Generator) -> None:
    """Every variant, whole and at three random elements."""
    for variant in op.variants:  # type: ignore[attr-defined]
        with np.errstate(all="ignore"):
            new = op.reference(desc, inputs, variant)  # type: ignore[attr-defined]
            old_out, old = old_kernel(desc, inputs, variant)  # type: ignore[operator]
            acc = new.accumulation["OutputGradientTensor"]
            out, shape = new.outputs["OutputGradientTensor"], desc.output.shape
            assert_same_reference(out, acc.dense, old_out, old, shape)
            picked = np.sort(rng.choice(out.size, size=min(3, out.size), replace=False))
            assert_same_reference(out.reshape(-1)[picked], acc.at(picked, shape), old_out.reshape(-1)[picked],
                                  old.at(picked, shape), picked.shape)
            # v and M alone (what `show` reads of its probes), as `at` gives them
            at = acc.at(picked, shape)
            value, abs_sum = acc.sums_at(picked, shape)
            assert_same_reference(out.reshape(-1)[picked], Accumulation(value, abs_sum, at.count, at.weight_factors,
                                                                        at.abs_gradient_sum, at.coordinate_slack),
                                  old_out.reshape(-1)[picked], old.at(picked, shape), picked.shape)
        if op is MAX_POOLING_GRAD:
            assert acc.max_count() == int(old.count.max(initial=0))


@pytest.mark.slow
def test_max_pooling_grad_matches_the_tap_scan(monkeypatch):
    rng = np.random.default_rng(11)
    for trial in range(400):
        vary_chunks_and_threads(monkeypatch, rng)
        check_against_the_old_kernel(MAX_POOLING_GRAD, slow_reference.max_pooling_grad, *pooling_case(rng, trial), rng)


def resample_case(rng: np.random.Generator, trial: int) -> tuple[Description, dict[str, np.ndarray]]:
    rank = int(rng.integers(1, 5))

    def per_axis(*choices: float) -> tuple[float, ...]:
        return tuple(float(np.float32(rng.choice(choices))) for _ in range(rank))

    params = {"InterpolationMode": ("LINEAR", "NEAREST_NEIGHBOR")[int(rng.integers(0, 2))],
              "RoundingDirection": ("INCREASING", "DECREASING")[int(rng.integers(0, 2))],
              "Scales": per_axis(1.0, 2.0, 0.5, 1.5, 0.7, 3.0, rng.uniform(0.2, 4)),
              "InputPixelOffsets": per_axis(0, 0.5, -0.5, 0.25, rng.uniform(-1, 1)),
              "OutputPixelOffsets": per_axis(0, 0.5, -0.5, rng.uniform(-1, 1))}
    dx = tuple(int(v) for v in rng.integers(1, 6, size=rank))
    dy_shape = tuple(int(v) for v in rng.integers(1, 9, size=rank))
    dtype = (F32, F16)[trial % 2]
    dy = rng.standard_normal(dy_shape)
    if trial % 4 == 0:
        dy.reshape(-1)[rng.integers(0, dy.size)] = rng.choice([np.nan, np.inf, -np.inf])
    if trial % 6 == 0:
        dy = rng.choice([-0.0, 0.0, 1.0, -2.0], size=dy_shape)
    shapes = {"InputGradientTensor": dy_shape, "OutputGradientTensor": dx}
    desc = Description(RESAMPLE_GRAD1, params, {k: TensorDesc(dtype, v) for k, v in shapes.items()})
    return desc, {"InputGradientTensor": dy.astype(dtype.numpy)}


@pytest.mark.slow
def test_resample_grad1_matches_the_dense_products(monkeypatch):
    rng = np.random.default_rng(12)
    for trial in range(500):
        vary_chunks_and_threads(monkeypatch, rng)
        check_against_the_old_kernel(RESAMPLE_GRAD1, slow_reference.resample_grad1, *resample_case(rng, trial), rng)


@pytest.mark.slow
def test_resample_grad_v0_matches_the_dense_products_under_every_reading(monkeypatch):
    """ResampleGrad (v0) through the same kernels, every variant (the rounding rules, LINEAR taps dropped past the
    edges: axes whose last outputs have no tap at all)."""
    rng = np.random.default_rng(14)
    for trial in range(120):
        vary_chunks_and_threads(monkeypatch, rng)
        desc, inputs = resample_case(rng, trial)
        params = {k: v for k, v in desc.params.items() if k != "RoundingDirection"}
        v0 = Description(RESAMPLE_GRAD, params, desc.tensors)
        check_against_the_old_kernel(RESAMPLE_GRAD, slow_reference.resample_grad1, v0, inputs, rng)


def test_two_linear_taps_clamped_onto_one_element_are_two_terms():
    # Scale 2, offsets 0: output 3 samples x = 1.5 on an input of 2 elements, so its taps 1 and 2 both clamp
    # onto element 1, each a term of weight 0.5.
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": (2.0,),
              "InputPixelOffsets": (0.0,), "OutputPixelOffsets": (0.0,)}
    desc = Description(RESAMPLE_GRAD1, params, {"InputGradientTensor": TensorDesc(F32, (4,)),
                                                "OutputGradientTensor": TensorDesc(F32, (2,))})
    dy = np.array([0.0, 0.0, 0.0, 8.0], np.float32)
    ref = RESAMPLE_GRAD1.reference(desc, {"InputGradientTensor": dy})
    acc = ref.accumulation["OutputGradientTensor"]
    at = acc.at(np.array([1]), (2,))
    old_out, old = slow_reference.resample_grad1(desc, {"InputGradientTensor": dy})
    assert ref.outputs["OutputGradientTensor"].tolist() == old_out.tolist() == [0.0, 8.0]
    assert int(at.count[0]) == int(old.count[1]) == 4  # outputs 1, 2 (one tap each) and output 3 (two)
    assert float(at.abs_gradient_sum[0]) == float(old.abs_gradient_sum[1]) == 16.0  # output 3's dy counted twice


def test_slice_runs_split_at_every_change_of_step() -> None:
    rows, cols = np.array([0, 1, 3, 5, 7, 7, 8]), np.array([0, 1, 2, 3, 4, 6, 8])
    runs = resample.slice_runs(rows, cols, np.ones(7), np.ones(7))
    assert runs is not None
    assert [(r.rows, r.cols, r.entries) for r in runs] == [
        (slice(0, 2, 1), slice(0, 2, 1), slice(0, 2)), (slice(3, 8, 2), slice(2, 5, 1), slice(2, 5)),
        (slice(7, 9, 1), slice(6, 9, 2), slice(5, 7))]  # a row used twice (step 0) starts a new run
    irregular = np.cumsum(np.arange(1, 40))
    assert resample.slice_runs(irregular, np.arange(39), np.ones(39), np.ones(39)) is None


@pytest.mark.parametrize("trial", range(60))
def test_passes_through_slices_sum_what_gathers_sum(trial: int) -> None:
    """The slice runs are a faster way to the same products and sums: bit for bit what the gathers give,
    with -0, NaN and infinities in dY; and a deliberately wrong run is caught."""
    import dataclasses

    rng = np.random.default_rng(trial)
    n_out = int(rng.integers(1, 40))
    n_in = max(1, round(n_out / float(rng.choice([0.5, 1, 2, 3, 0.75, 1.37]))))
    scale = n_out / n_in if trial % 3 else float(rng.choice([2.0, 0.5, 3.0]))
    taps = axis_taps(n_in, n_out, scale, float(rng.choice([0.5, 0.0, 0.25])),
                              float(rng.choice([-0.5, 0.0])), "LINEAR" if trial % 2 else "NEAREST_NEIGHBOR",
                              str(rng.choice(["DECREASING", "INCREASING"])))
    passes = taps.passes()
    gathered = [dataclasses.replace(p, runs=None) for p in passes]
    dy = rng.standard_normal((3, n_out)) * rng.choice([1.0, 1e30], size=(3, n_out))
    dy[rng.random(dy.shape) < 0.1] = -0.0
    dy[0, rng.integers(0, n_out)] = rng.choice([np.nan, np.inf, -np.inf])
    for weight in ("weights", "taps"):
        fast = resample.apply_transposed(dy, [passes], (n_in,), weight, first_axis=1)
        slow = resample.apply_transposed(dy, [gathered], (n_in,), weight, first_axis=1)
        assert fast.tobytes() == slow.tobytes()
    # A plausible bug: a run that starts one row late (an off-by-one in the slice) must change the sums.
    shiftable = [i for i, p in enumerate(passes) if p.runs is not None and p.runs[0].rows.stop < n_out]
    finite = np.where(np.isfinite(dy), dy, 1.0) + 1.0
    if shiftable:
        late = list(gathered)
        first, *others = passes[shiftable[0]].runs  # type: ignore[misc]
        late[shiftable[0]] = dataclasses.replace(passes[shiftable[0]], runs=(dataclasses.replace(
            first, rows=slice(first.rows.start + 1, first.rows.stop + 1, first.rows.step)), *others))
        wrong = resample.apply_transposed(finite, [late], (n_in,), "weights", first_axis=1)
        right = resample.apply_transposed(finite, [gathered], (n_in,), "weights", first_axis=1)
        assert wrong.tobytes() != right.tobytes()


def upsampling_case(rng: np.random.Generator, trial: int) -> tuple[np.ndarray, list[list[resample.TransposePass]],
                                                                     tuple[int, ...]]:
    """dY and passes of an integer upsampling on some axes (the regular patterns the sweeps take), identity on
    others; -0, NaN and infinities in dY."""
    rank = int(rng.integers(1, 5))
    n_in = tuple(int(v) for v in rng.integers(1, 20, size=rank))
    steps, taps = [], []
    for size in n_in:
        step = 1 if rng.random() < 0.3 else int(rng.choice([1, 2, 4]))
        mode = "LINEAR" if rng.random() < 0.7 else "NEAREST_NEIGHBOR"
        taps.append(axis_taps(size, step * size, float(step), float(rng.choice([0.5, 0.0, 0.25])),
                              float(rng.choice([-0.5, 0.0])), mode, str(rng.choice(["DECREASING", "INCREASING"]))))
        steps.append(step)
    dy = rng.standard_normal(tuple(s * n for s, n in zip(steps, n_in, strict=True)))
    dy[rng.random(dy.shape) < 0.1] = -0.0
    if trial % 3 == 0:
        dy.reshape(-1)[rng.integers(0, dy.size)] = rng.choice([np.nan, np.inf, -np.inf])
    if trial % 5 == 0:
        dy[...] = -0.0  # every sum is of -0 terms alone: +0 after the final + 0.0, as 0.0 + -0 gives
    return dy.astype(np.float32), [axis.passes() for axis in taps], n_in


@pytest.mark.parametrize("trial", range(120))
def test_regular_sweeps_sum_what_the_passes_sum(trial: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The strided sweeps of a regular axis and the sums of its edge inputs: bit for bit what the slice runs and
    gathers give, for the value, M and D, rounded to each dtype, whatever the chunk size and thread count."""
    rng = np.random.default_rng(trial)
    dy, passes, n_in = upsampling_case(rng, trial)
    for weight, magnitudes in (("weights", False), ("weights", True), ("taps", True)):
        for dtype in (np.float16, np.float32, np.float64):
            monkeypatch.setattr(resample, "REGULAR_MIN_ELEMENTS", 1 << 62)
            runs = resample.resample_transposed(dy, passes, n_in, np.dtype(dtype), weight, magnitudes)
            monkeypatch.setattr(resample, "REGULAR_MIN_ELEMENTS", 0)
            vary_chunks_and_threads(monkeypatch, rng)
            monkeypatch.setattr(resample, "REGULAR_MIN_ELEMENTS", 0)
            swept = resample.resample_transposed(dy, passes, n_in, np.dtype(dtype), weight, magnitudes)
            assert swept.tobytes() == runs.tobytes()


def test_the_regular_pattern_of_a_doubling() -> None:
    """LINEAR x2 with half-pixel offsets: input i reads coordinates 2i-1, 2i, 2i+1, 2i+2 with weights 1/4, 3/4, 3/4,
    1/4; inputs 0, 1 and the last have fewer or clamped taps and are summed on their own."""
    pattern = resample.regular_axis(axis_taps(56, 112, 2.0, 0.5, -0.5, "LINEAR", "DECREASING").passes(), 56, 112)
    assert pattern is not None
    assert (pattern.step, pattern.shifts, pattern.weights) == (2, (-1, 0, 1, 2), (0.25, 0.75, 0.75, 0.25))
    assert [col for col, _ in pattern.edges] == [0, 1, 55]
    assert [(t.row, t.weights, t.taps) for t in pattern.edges[0][1]] == [(0, 1.0, 2.0), (1, 0.75, 1.0), (2, 0.25, 1.0)]
    # Scale 3 rounds its coordinates in float32, so its weights differ from input to input: no shared pattern.
    assert resample.regular_axis(axis_taps(20, 60, 3.0, 0.5, -0.5, "LINEAR", "DECREASING").passes(), 20, 60) is None


@pytest.mark.parametrize("bug", ["shift", "edges"])
def test_a_wrong_sweep_is_caught(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plausible bugs in the sweeps change the result the comparison above reads: a pattern one coordinate off,
    and edge inputs left with the sweeps' stray sums."""
    import dataclasses

    rng = np.random.default_rng(5)
    dy = rng.standard_normal((3, 40, 48)).astype(np.float32)
    passes = [resample.transpose_passes(np.arange(3), np.arange(3), np.ones(3), np.ones(3), 3)]
    passes += [axis_taps(n, 2 * n, 2.0, 0.5, -0.5, "LINEAR", "DECREASING").passes() for n in (20, 24)]
    monkeypatch.setattr(resample, "REGULAR_MIN_ELEMENTS", 0)
    right = resample.resample_transposed(dy, passes, (3, 20, 24), np.dtype(np.float32))
    original = resample.regular_axis

    def wrong(tap_passes: list[resample.TransposePass], n_in: int, n_out: int) -> resample.RegularAxis | None:
        pattern = original(tap_passes, n_in, n_out)
        if pattern is None:
            return None
        if bug == "shift":
            return dataclasses.replace(pattern, shifts=(pattern.shifts[0] + 1, *pattern.shifts[1:]))
        return dataclasses.replace(pattern, edges=())

    monkeypatch.setattr(resample, "regular_axis", wrong)
    assert resample.resample_transposed(dy, passes, (3, 20, 24), np.dtype(np.float32)).tobytes() != right.tobytes()
