"""B1: an input whose memory order differs from the declared one gives exactly
the results of its reordered copy, and each conversion counts one
`layout_conversions`. Host producers only (NumPy, buffers); torch/JAX layouts
are in test_interop.py."""

import numpy as np
import pytest

import pterun
from behaviour_util import assert_close, call_inputs, call_outputs, method, rng


def _conversions():
    return pterun.stats()["layout_conversions"]


def _add_inputs(seed=0):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


def _views_of(x):
    """(name, array) pairs: the values of `x` (2x3 float32) in other memory orders."""
    transposed = np.ascontiguousarray(x.T).T  # Fortran order, a.T of a contiguous array
    wide = np.zeros((2, 6), np.float32)
    wide[:, ::2] = x
    flipped = np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]  # negative strides
    big = np.zeros((4, 5, 3), np.float32)
    big[1:3, 2, :] = x
    return [
        ("transposed", transposed),
        ("step_slice", wide[:, ::2]),
        ("negative_strides", flipped),
        ("inner_slice", big[1:3, 2, :]),
        ("fortran", np.asfortranarray(x)),
    ]


@pytest.mark.parametrize("which", range(5))
def test_b01_non_contiguous_input_gives_results_of_its_copy(which):
    x, y = _add_inputs(which)
    name, view = _views_of(x)[which]
    assert not view.flags.c_contiguous, name
    np.testing.assert_array_equal(view, x)
    m = method("add")
    got = m([view, y])[0].numpy()
    np.testing.assert_array_equal(got, x + y, err_msg=name)
    # Both inputs in another order, and in the other argument position.
    got = m([y, view])[0].numpy()
    np.testing.assert_array_equal(got, y + x, err_msg=name)
    got = m([view, _views_of(y)[which][1]])[0].numpy()
    np.testing.assert_array_equal(got, x + y, err_msg=name)


def test_b01_transposed_input_is_not_read_as_contiguous():
    # a.T of a 3x2 array read as if contiguous would give other values.
    base = np.arange(6, dtype=np.float32).reshape(3, 2)
    a = base.T  # logical [[0, 2, 4], [1, 3, 5]]
    zero = np.zeros((2, 3), np.float32)
    got = method("add")([a, zero])[0].numpy()
    np.testing.assert_array_equal(got, [[0, 2, 4], [1, 3, 5]])


def test_b01_zero_strides_broadcast_input():
    row = np.array([1.0, 2.0, 3.0], np.float32)
    x = np.broadcast_to(row, (2, 3))  # strides (0, 4), read-only
    y = np.ones((2, 3), np.float32)
    got = method("add")([x, y])[0].numpy()
    np.testing.assert_array_equal(got, [[2, 3, 4], [2, 3, 4]])


def test_b01_each_conversion_counts_one_layout_conversion():
    x, y = _add_inputs(7)
    m = method("add")
    m([x, y])  # warm up
    pterun.reset_stats()
    m([x, y])
    assert _conversions() == 0
    pterun.reset_stats()
    m([np.asfortranarray(x), y])
    assert _conversions() == 1
    pterun.reset_stats()
    m([np.asfortranarray(x), np.asfortranarray(y)])
    assert _conversions() == 2
    pterun.reset_stats()
    m.set_inputs([x[::-1][::-1], np.asfortranarray(y)])  # first is contiguous again
    assert _conversions() == 1


def test_b01_dynamic_input_in_another_order():
    m = method("dynamic_mlp")
    x = call_inputs("dynamic_mlp", 1)[0]  # batch 7
    expected = call_outputs("dynamic_mlp", 1)[0]
    transposed = np.ascontiguousarray(x.T).T
    pterun.reset_stats()
    assert_close(m([transposed])[0], expected)
    assert _conversions() == 1
    assert_close(m([x])[0], expected)


# --- channels-last and contiguous, both ways ---------------------------------


def _channels_last(x):
    """The same logical NCHW values, stored NHWC (dim order [0, 2, 3, 1])."""
    out = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert out.strides[1] == out.itemsize  # channels innermost
    return out


def test_b01_channels_last_input_to_contiguous_program():
    m = method("cnn")
    assert m.method_meta().input_tensor_meta(0).dim_order == (0, 1, 2, 3)
    x = call_inputs("cnn", 0)[0]
    expected = call_outputs("cnn", 0)[0]
    reference = m([x])[0].numpy().copy()
    assert_close(reference, expected)
    pterun.reset_stats()
    got = m([_channels_last(x)])[0].numpy()
    assert _conversions() == 1
    np.testing.assert_array_equal(got, reference)


def test_b01_contiguous_input_to_channels_last_program():
    m = method("cnn_channels_last")
    assert m.method_meta().input_tensor_meta(0).dim_order == (0, 2, 3, 1)
    x = call_inputs("cnn_channels_last", 0)[0]  # stored contiguous (NCHW)
    assert x.flags.c_contiguous
    expected = call_outputs("cnn_channels_last", 0)[0]
    pterun.reset_stats()
    from_contiguous = m([x])[0].numpy().copy()
    assert _conversions() == 1
    assert_close(from_contiguous, expected)
    # Already channels-last: no conversion, same result.
    pterun.reset_stats()
    from_cl = m([_channels_last(x)])[0].numpy()
    assert _conversions() == 0
    np.testing.assert_array_equal(from_cl, from_contiguous)


def test_b01_channels_last_and_contiguous_programs_agree():
    x = call_inputs("cnn", 0)[0]
    a = method("cnn")([x])[0].numpy()
    b = method("cnn_channels_last")([x])[0].numpy()
    assert_close(a, call_outputs("cnn", 0)[0])
    assert_close(b, a)


def test_b01_pterun_tensor_in_another_order_of_a_program():
    # A pterun.Tensor is contiguous; the channels-last program must reorder it.
    x = call_inputs("cnn_channels_last", 0)[0]
    t = pterun.Tensor.from_host(x, "cpu")
    pterun.reset_stats()
    got = method("cnn_channels_last")([t])[0]
    assert _conversions() == 1
    assert_close(got, call_outputs("cnn_channels_last", 0)[0])


def test_b01_random_permutations_of_a_4d_input():
    m = method("cnn")
    x = call_inputs("cnn", 0)[0]
    reference = m([x])[0].numpy().copy()
    r = rng(3)
    for _ in range(4):
        perm = r.permutation(4)
        inverse = np.argsort(perm)
        stored = np.ascontiguousarray(x.transpose(perm)).transpose(inverse)
        np.testing.assert_array_equal(stored, x)
        got = m([stored])[0].numpy()
        np.testing.assert_array_equal(got, reference, err_msg=str(perm))
