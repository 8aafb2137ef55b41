import hashlib

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.suite.generate import generate


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
