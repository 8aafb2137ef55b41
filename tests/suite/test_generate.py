import hashlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlconform.dtypes import DataType
from dmlconform.suite.generate import generate
from tests.properties import PROPERTIES


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(array.tobytes()).hexdigest()[:16]


def test_same_spec_same_bits_and_seed_matters():
    spec = {"dist": "normal", "seed": 7}
    a = generate(spec, DataType.FLOAT32, (3, 4))
    assert np.array_equal(a.view(np.uint32), generate(spec, DataType.FLOAT32, (3, 4)).view(np.uint32))
    assert not np.array_equal(a, generate({"dist": "normal", "seed": 8}, DataType.FLOAT32, (3, 4)))


def test_streams_are_pinned():
    """Known digests: a change here means suites silently changed their data on some platform."""
    assert digest(generate({"dist": "uniform", "seed": 1}, DataType.FLOAT32, (8,))) == \
        digest(((np.random.PCG64(1).random_raw(8) >> np.uint64(11)).astype(np.float64) * 2.0**-53 * 2 - 1)
               .astype(np.float32))


@pytest.mark.parametrize("dtype", list(DataType))
def test_every_dtype_and_distribution_in_range(dtype):
    for dist in ("uniform", "normal", "ints", "ties", "iota", "constant"):
        spec = {"dist": dist, "seed": 3}
        if dist == "iota":
            spec = {"dist": "iota", "start": 1}
        values = generate(spec, dtype, (2, 5))
        assert values.dtype == dtype.numpy and values.shape == (2, 5)
    ints = generate({"dist": "ints", "seed": 1, "low": 0, "high": 3}, dtype, (1000,))
    assert set(np.unique(ints).tolist()) == {0, 1, 2, 3}


def test_full_range_64_bit_integers():
    values = generate({"dist": "ints", "seed": 5, "low": -(2**63), "high": 2**63 - 1}, DataType.INT64, (64,))
    assert values.min() < -(2**60) and values.max() > 2**60
    uvalues = generate({"dist": "ints", "seed": 5, "low": 2**64 - 4, "high": 2**64 - 1}, DataType.UINT64, (64,))
    assert set(uvalues.tolist()) <= {2**64 - 4, 2**64 - 3, 2**64 - 2, 2**64 - 1}


def test_ties_draw_from_the_given_values():
    values = generate({"dist": "ties", "seed": 2, "values": [1, 5]}, DataType.FLOAT16, (100,))
    assert set(values.tolist()) == {1.0, 5.0}


@pytest.mark.parametrize("spec,message", [
    ({"dist": "gauss", "seed": 1}, "generate.dist"),
    ({"dist": "uniform"}, "generate.seed"),
    ({"dist": "uniform", "seed": -1}, "generate.seed"),
    ({"dist": "uniform", "seed": 1, "lo": 0}, "generate.lo"),
    ({"dist": "ints", "seed": 1, "low": 5, "high": 1}, "generate.high"),
    ({"dist": "ints", "seed": 1, "low": 0, "high": 300}, "range of UINT8"),
    ({"dist": "uniform", "seed": 1, "low": "a"}, "generate.low"),
    ("uniform", "mapping"),
])
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(ValueError, match=message):
        generate(spec, DataType.UINT8, (4,))


def _unchunked(spec: dict, dtype: DataType, count: int) -> np.ndarray:
    """The generators as one expression over the whole tensor (how they were written before they drew in
    chunks): every value must be the same, bit for bit."""
    def uniform(n: int) -> np.ndarray:
        return (np.random.PCG64(spec["seed"]).random_raw(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def cast(values: np.ndarray) -> np.ndarray:
        if dtype.is_float:
            with np.errstate(over="ignore"):
                return values.astype(dtype.numpy)
        info = np.iinfo(dtype.numpy)
        return np.clip(values, info.min, info.max).astype(dtype.numpy)

    if spec["dist"] == "iota":
        return cast(spec.get("start", 1) + spec.get("step", 1) * np.arange(count, dtype=np.float64))
    if spec["dist"] == "ties":
        pool = np.array(spec["values"], dtype=dtype.numpy)
        return pool[np.floor(uniform(count) * len(pool)).astype(np.int64)]
    if spec["dist"] == "ints":
        low, high = spec["low"], spec["high"]
        if dtype.is_float:
            return cast(low + np.floor(uniform(count) * (high - low + 1)))
        shifted = np.random.PCG64(spec["seed"]).random_raw(count) % np.uint64(high - low + 1) + np.uint64(low % 2**64)
        return shifted.view(np.int64).astype(dtype.numpy) if dtype.is_signed else shifted.astype(dtype.numpy)
    if spec["dist"] == "uniform":
        values = spec.get("low", -1) + (spec.get("high", 1) - spec.get("low", -1)) * uniform(count)
    else:
        values = spec.get("mean", 0) + spec.get("std", 1) * (uniform(12 * count).reshape(count, 12).sum(axis=1) - 6.0)
    return cast(values if dtype.is_float else np.floor(values))


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.INT8,
                                   DataType.INT64, DataType.UINT32])
@pytest.mark.parametrize("spec", [
    {"dist": "uniform", "seed": 3, "low": -40, "high": 90}, {"dist": "normal", "seed": 11, "mean": 2, "std": 30},
    {"dist": "ints", "seed": 5, "low": -3, "high": 100}, {"dist": "ties", "seed": 9, "values": [1, 2, 7]},
    {"dist": "iota", "start": -5, "step": 3},
])
def test_drawing_in_chunks_gives_the_values_of_one_draw(dtype, spec):
    """Generators draw CHUNK elements at a time (memory: the output plus a few chunks, whatever the shape); the
    values must be those of one draw over the whole tensor, across chunk boundaries and a short last chunk."""
    from dmlconform.suite.generate import CHUNK

    if spec["dist"] == "ints" and not dtype.is_signed:
        spec = {**spec, "low": 0}
    count = 2 * CHUNK + 37
    got = generate(spec, dtype, (count,))
    want = _unchunked(spec, dtype, count)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_constant_keeps_the_bits_of_its_value():
    values = generate({"dist": "constant", "value": "0x7e01"}, DataType.FLOAT16, (3, 2))
    assert values.view(np.uint16).tolist() == [[0x7E01] * 2] * 3


ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8),
                       st.lists(st.integers(-300, 300) | st.floats() | st.text(max_size=4), max_size=4))


@PROPERTIES
@given(dist=st.sampled_from(["uniform", "normal", "ints", "ties", "iota", "constant", "gauss", 3]),
       extra=st.dictionaries(st.sampled_from(["seed", "low", "high", "mean", "std", "values", "start", "step", "value",
                                              "other"]), ODD_VALUES, max_size=4),
       dtype=st.sampled_from(list(DataType)), shape=st.lists(st.integers(0, 6), max_size=3).map(tuple))
def test_any_spec_generates_the_declared_tensor_the_same_way_twice_or_is_refused(dist, extra, dtype, shape):
    spec = {"dist": dist, **extra}
    try:
        first = generate(spec, dtype, shape)
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    assert first.dtype == dtype.numpy and first.shape == shape
    assert first.tobytes() == generate(spec, dtype, shape).tobytes()
