import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.generation.draw import Draw
from dmlconform.generation.values import distinct_nonzero, gradients, next_toward, pick, small_integer_gradients


@pytest.mark.parametrize("dtype", list(DataType))
def test_distinct_nonzero_values(dtype):
    values = distinct_nonzero(dtype, 150, Draw(1))
    assert values.dtype == dtype.numpy and values.size == 150
    assert np.all(values != 0)
    assert np.unique(values.view(dtype.bits_dtype)).size == 150
    if dtype.is_float:
        assert np.all(np.isfinite(values)) and (values < 0).any() and (values > 0).any()


def test_a_narrow_type_cycles_once_its_values_run_out():
    values = distinct_nonzero(DataType.INT8, 600, Draw(2))
    assert np.unique(values).size == 255 and np.all(values != 0)


def test_gradients_carry_specials_but_no_fp32_denormals():
    values = gradients(DataType.FLOAT32, 64, Draw(3))
    assert np.isinf(values).any() and np.isnan(values).any()
    finite = values[np.isfinite(values)]
    assert not np.any((finite != 0) & (np.abs(finite) < np.finfo(np.float32).tiny))
    fp16 = gradients(DataType.FLOAT16, 64, Draw(3))
    assert np.any((fp16 != 0) & (np.abs(fp16) < np.finfo(np.float16).tiny))  # fp16 denormals must be preserved
    assert not np.isnan(gradients(DataType.FLOAT32, 64, Draw(3), with_specials=False)).any()
    assert np.all(gradients(DataType.UINT8, 64, Draw(4)) != 0)


def test_small_integer_gradients_sum_exactly_in_fp16():
    values = small_integer_gradients(DataType.FLOAT16, 300, Draw(5)).astype(np.float64)
    assert np.all(values == np.round(values)) and np.all(np.abs(values) < 256) and np.all(values != 0)
    assert np.abs(values[:8]).sum() < 2048


def test_pick_uses_every_pool_value_when_there_is_room():
    pool = np.array([1, 2, 3], dtype=np.float32)
    assert set(pick(pool, 10, Draw(6)).tolist()) == {1, 2, 3}


def test_next_toward_steps_once_and_stops_at_the_type_edges():
    assert next_toward(np.int8(127), 1) == 127 and next_toward(np.int8(-5), -1) == -6
    assert next_toward(np.float16(1), 2) == np.nextafter(np.float16(1), np.float16(2))
