import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.values import elements_to_array


def test_float_words_signed_zero_and_hex_patterns_are_bit_exact():
    values = elements_to_array(["nan", "inf", "-inf", "-0.0", "0x7e01", 1.5, "0x0001"], DataType.FLOAT16)
    bits = values.view(np.uint16)
    assert np.isnan(values[0]) and values[1] == np.inf and values[2] == -np.inf
    assert bits[3] == 0x8000 and bits[4] == 0x7E01 and values[5] == 1.5 and bits[6] == 0x0001


def test_64_bit_integers_are_exact():
    values = elements_to_array([2**63 - 1, -(2**63), "9223372036854775806"], DataType.INT64)
    assert values.tolist() == [2**63 - 1, -(2**63), 2**63 - 2]
    assert elements_to_array([2**64 - 1], DataType.UINT64)[0] == np.uint64(2**64 - 1)


@pytest.mark.parametrize("value,dtype,message", [
    (256, DataType.UINT8, "outside the range"), (-1, DataType.UINT32, "outside the range"),
    (1.5, DataType.INT32, "not an integer"), ("nan", DataType.INT8, "not a number"),
    (70000.0, DataType.FLOAT16, "overflows FLOAT16"), ("0x12345", DataType.FLOAT16, "1 to 4 digits"),
    # Found by fuzz/fuzz_suite_generate.py: int() took '-e0' as -224, which numpy refused with OverflowError.
    ("0x-e0", DataType.FLOAT16, "not a hex bit pattern"), ("0x e0", DataType.FLOAT16, "not a hex bit pattern"),
    ("0x1_0", DataType.FLOAT16, "not a hex bit pattern"),
    (True, DataType.FLOAT32, "boolean"), ("abc", DataType.FLOAT32, "not a number"), ([1], DataType.FLOAT32, "not a number"),
])
def test_bad_elements_are_refused_with_position(value, dtype, message):
    with pytest.raises(ValueError, match=message) as info:
        elements_to_array([0, value], dtype)
    assert str(info.value).startswith("element 1:")
