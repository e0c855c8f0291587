"""Creation ops (creation.cpp) against NumPy and ATen's rules: full,
full_like, scalar_tensor, zeros/ones/empty (and *_like), fill, arange,
linspace. The output's dtype decides the element type; integer outputs
refuse values they cannot hold."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

CL = (0, 2, 3, 1)
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint16, np.uint32, np.uint64]


def run(name, *args):
    return call_kernel(name, *args)[0]


# ---- full / full_like / scalar_tensor ------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_every_dtype(dtype):
    r = run("aten::full.out", [2, 3], 7, Out(dtype, (2, 3)))
    assert r.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(r, np.full((2, 3), 7, dtype))


def test_full_fixture_form_bool_true_and_bfloat16():
    np.testing.assert_array_equal(run("aten::full.out", [16, 16], True, Out(np.bool_, (16, 16))),
                                  np.ones((16, 16), bool))
    np.testing.assert_array_equal(run("aten::full.out", [3], 1.1, Out("bfloat16", (3,))),
                                  from_bf16_bits(to_bf16_bits(np.full(3, 1.1, np.float32))))


def test_full_float_values_into_integers_truncate_and_inf_into_floats():
    np.testing.assert_array_equal(run("aten::full.out", [2], 1.9, Out(np.int64, (2,))), [1, 1])
    np.testing.assert_array_equal(run("aten::full.out", [2], -1.9, Out(np.int32, (2,))), [-1, -1])
    np.testing.assert_array_equal(run("aten::full.out", [2], -1, Out(np.uint8, (2,))), [255, 255])
    r = run("aten::full.out", [2], float("-inf"), Out(np.float16, (2,)))
    assert np.all(np.isneginf(r))
    np.testing.assert_array_equal(run("aten::full.out", [1], float("nan"), Out(np.bool_, (1,))),
                                  [True])


@pytest.mark.parametrize("value,dtype", [(300, np.uint8), (-129, np.int8), (float("inf"), np.int64),
                                         (float("nan"), np.int32), (2.0**40, np.int32)])
def test_full_rejects_values_that_overflow_an_integer_output(value, dtype):
    with pytest.raises(ValueError, match="overflow"):
        run("aten::full.out", [2], value, Out(dtype, (2,)))


def test_full_resizes_dynamic_out_zero_dim_and_channels_last():
    r = run("aten::full.out", [3, 5], 2.5, Out(np.float32, (1, 1), dynamic=True, capacity=(8, 8)))
    np.testing.assert_array_equal(r, np.full((3, 5), 2.5, np.float32))
    assert run("aten::full.out", [], 4, Out(np.int64, ())) == 4
    r = run("aten::full.out", [1, 2, 3, 4], -3, Out(np.int16, (1, 2, 3, 4), dim_order=CL))
    np.testing.assert_array_equal(r, np.full((1, 2, 3, 4), -3))
    assert run("aten::full.out", [0, 4], 1, Out(np.float32, (0, 4))).shape == (0, 4)
    with pytest.raises(NotImplementedError):
        run("aten::full.out", [3, 3], 1, Out(np.float32, (2, 2)))


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_full_like_fixture_form(memory_format):
    a = np.zeros((2, 3, 4), np.float64)
    r = run("aten::full_like.out", a, 0, memory_format, Out(np.int64, (2, 3, 4)))
    np.testing.assert_array_equal(r, np.zeros((2, 3, 4), np.int64))
    r = run("aten::full_like.out", a, -2.5, memory_format, Out(np.float32, (2, 3, 4)))
    np.testing.assert_array_equal(r, np.full((2, 3, 4), -2.5, np.float32))


def test_full_like_channels_last_memory_format():
    a = np.zeros((1, 2, 3, 4), np.float32)
    r = run("aten::full_like.out", T(a, dim_order=CL), 1, 2,
            Out(np.float32, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, np.ones(a.shape))
    with pytest.raises(ValueError, match="memory format"):
        run("aten::full_like.out", a, 1, 2, Out(np.float32, a.shape))
    with pytest.raises(ValueError, match="memory format"):
        run("aten::full_like.out", a, 1, 5, Out(np.float32, a.shape))


@pytest.mark.parametrize("value,dtype,expected", [(float("-inf"), np.float32, -np.inf),
                                                  (3, np.int64, 3), (True, np.bool_, True),
                                                  (0.5, np.float16, 0.5), (7, np.float64, 7.0)])
def test_scalar_tensor(value, dtype, expected):
    r = run("aten::scalar_tensor.out", value, Out(dtype, ()))
    assert r.shape == () and r.dtype == np.dtype(dtype) and r == expected


def test_scalar_tensor_needs_zero_dim_out():
    with pytest.raises(ValueError, match="scalar_tensor"):
        run("aten::scalar_tensor.out", 1.0, Out(np.float32, (1,)))


# ---- zeros / ones / empty and the *_like forms ---------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float16, np.float64])
def test_zeros_ones(dtype):
    np.testing.assert_array_equal(run("aten::zeros.out", [2, 4], Out(dtype, (2, 4))),
                                  np.zeros((2, 4), dtype))
    np.testing.assert_array_equal(run("aten::ones.out", [2, 4], Out(dtype, (2, 4))),
                                  np.ones((2, 4), dtype))
    a = np.empty((3, 1), np.int8)
    np.testing.assert_array_equal(run("aten::zeros_like.out", a, None, Out(dtype, (3, 1))),
                                  np.zeros((3, 1), dtype))
    np.testing.assert_array_equal(run("aten::ones_like.out", a, 1, Out(dtype, (3, 1))),
                                  np.ones((3, 1), dtype))


def test_empty_only_resizes():
    assert run("aten::empty.out", [3, 2], None,
               Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4))).shape == (3, 2)
    assert run("aten::empty_like.out", np.zeros((2, 5), np.int8), None,
               Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4))).shape == (2, 5)
    with pytest.raises(ValueError, match="empty"):
        run("aten::empty.out", [2, -1], None, Out(np.float32, (1, 1), dynamic=True,
                                                   capacity=(4, 4)))


# ---- fill ---------------------------------------------------------------------------------------


def test_fill_scalar():
    a = np.zeros((2, 3), np.int32)
    np.testing.assert_array_equal(run("aten::fill.Scalar_out", a, 9, Out(np.int32, (2, 3))),
                                  np.full((2, 3), 9))
    with pytest.raises(ValueError, match="dtype"):
        run("aten::fill.Scalar_out", a, 9, Out(np.int64, (2, 3)))


@pytest.mark.parametrize("value,dtype", [(np.array(2.75, np.float64), np.float32),
                                         (np.array(-2.75, np.float32), np.int64),
                                         (np.array(5, np.int64), np.float16),
                                         (np.array(0, np.int32), np.bool_)])
def test_fill_tensor_converts_the_value(value, dtype):
    a = np.zeros((3, 2), dtype)
    r = run("aten::fill.Tensor_out", a, value, Out(dtype, (3, 2)))
    expected = value.astype(np.int64).astype(dtype) if np.dtype(dtype).kind == "i" else value
    np.testing.assert_array_equal(r, np.full((3, 2), expected, dtype))


def test_fill_tensor_needs_zero_dim_value():
    with pytest.raises(ValueError, match="rank 0"):
        run("aten::fill.Tensor_out", np.zeros(3, np.float32), np.zeros(1, np.float32),
            Out(np.float32, (3,)))


# ---- arange / linspace ---------------------------------------------------------------------------


def test_arange_fixture_form():
    r = run("aten::arange.start_out", 0, 16, 1, Out(np.int64, (16,)))
    np.testing.assert_array_equal(r, np.arange(16))


@pytest.mark.parametrize("start,end,step", [(0, 10, 3), (5, -3, -2), (2, 2, 1), (-4, 7, 5),
                                            (0, 1, 0.1), (1.5, -2.25, -0.75), (0, 2.5, 0.5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arange_float(start, end, step, dtype):
    expected = np.arange(start, end, step, dtype=np.float64).astype(dtype)
    r = run("aten::arange.start_out", start, end, step,
            Out(dtype, (1,), dynamic=True, capacity=(64,)))
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("start,end,step,expected", [
    (0, 10, 3, [0, 3, 6, 9]), (5, -3, -2, [5, 3, 1, -1]),
    (0, 2.5, 1, [0, 1]),           # ATen sizes int64 ranges with truncated bounds
    (0, 5, 1.5, [0, 1, 2, 3, 4]),  # ... and a truncated step
])
def test_arange_int64_follows_aten(start, end, step, expected):
    r = run("aten::arange.start_out", start, end, step,
            Out(np.int64, (1,), dynamic=True, capacity=(64,)))
    np.testing.assert_array_equal(r, expected)


def test_arange_other_dtypes_and_end_only_form():
    r = run("aten::arange.start_out", 0.5, 3, 1, Out(np.int32, (3,)))
    np.testing.assert_array_equal(r, [0, 1, 2])
    r = run("aten::arange.start_out", 0, 1, 0.25, Out(np.float16, (4,)))
    np.testing.assert_array_equal(r, [0, 0.25, 0.5, 0.75])
    r = run("aten::arange.start_out", 0, 4, 1, Out("bfloat16", (4,)))
    np.testing.assert_array_equal(r, [0, 1, 2, 3])
    np.testing.assert_array_equal(run("aten::arange.out", 5, Out(np.int64, (5,))), np.arange(5))
    np.testing.assert_array_equal(run("aten::arange.out", 2.5, Out(np.float32, (3,))),
                                  [0, 1, 2])


@pytest.mark.parametrize("start,end,step,dtype", [(0, 5, 0, np.float32), (0, 5, -1, np.float32),
                                                  (5, 0, 1, np.int64), (0, 5, 0.5, np.int64),
                                                  (0, float("inf"), 1, np.float32)])
def test_arange_rejects_bad_ranges(start, end, step, dtype):
    with pytest.raises(ValueError, match="arange"):
        run("aten::arange.start_out", start, end, step,
            Out(dtype, (1,), dynamic=True, capacity=(64,)))


def test_arange_rejects_bool_out_and_wrong_length():
    with pytest.raises(ValueError, match="bool"):
        run("aten::arange.start_out", 0, 2, 1, Out(np.bool_, (2,)))
    with pytest.raises(NotImplementedError):
        run("aten::arange.start_out", 0, 4, 1, Out(np.int64, (3,)))


def test_linspace():
    # ATen counts the first half from start and the second half back from end.
    step = (1 - 0) / 6
    expected = [0 + step * i if i < 3 else 1 - step * (6 - i) for i in range(7)]
    np.testing.assert_array_equal(run("aten::linspace.out", 0, 1, 7, Out(np.float64, (7,))),
                                  expected)
    r = run("aten::linspace.out", 0, 1, 7, Out(np.float32, (7,)))
    np.testing.assert_allclose(r, np.linspace(0, 1, 7), rtol=1e-6)
    assert r[-1] == 1.0
    r = run("aten::linspace.out", -3.7, 10.2, 5, Out(np.int32, (5,)))
    np.testing.assert_array_equal(r, [-3, 0, 3, 6, 10])  # ATen: bounds truncated first
    np.testing.assert_array_equal(run("aten::linspace.out", 2, 9, 1, Out(np.float32, (1,))), [2])
    assert run("aten::linspace.out", 2, 9, 0, Out(np.float32, (0,))).shape == (0,)
    with pytest.raises(ValueError, match="steps"):
        run("aten::linspace.out", 0, 1, -1, Out(np.float32, (0,)))


def test_large_fills_on_threads():
    r = call_kernel("aten::full.out", [300, 400], -2, Out(np.int16, (300, 400)), num_threads=4)[0]
    np.testing.assert_array_equal(r, np.full((300, 400), -2))
    r = call_kernel("aten::arange.start_out", 3, 200003, 2, Out(np.int64, (100000,)),
                    num_threads=4)[0]
    np.testing.assert_array_equal(r, np.arange(3, 200003, 2))
