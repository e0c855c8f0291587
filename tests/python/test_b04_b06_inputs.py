"""B4 (callers' memory is never written), B5 (no silent casts; shapes and
bounds), B6 (input errors name the input and keep their Python type)."""

import gc
import weakref

import numpy as np
import pytest

import pterun
from behaviour_util import (
    MANIFEST,
    assert_close,
    call_inputs,
    call_outputs,
    method,
    module,
    program,
    rng,
)


def _add_inputs(seed=0):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


def _writable_copies(inputs):
    out = []
    for v in inputs:
        out.append(np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
    return out


# --- B4 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["add", "add_mul", "mlp", "stateful", "identity", "multi_method", "int_ops",
             "split_outputs", "chain8", "scalars", "dynamic_mlp", "control_flow"]
)
def test_b04_callers_buffers_are_never_written(name):
    prog = program(name)
    methods = {}
    for k, call in enumerate(MANIFEST[name]["calls"]):
        if call["method"] not in methods:
            methods[call["method"]] = prog.load_method(call["method"])
        m = methods[call["method"]]
        inputs = _writable_copies(call_inputs(name, k))
        before = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in inputs]
        for clone in (True, False):
            m(inputs, clone_outputs=clone)
        for i, (a, b) in enumerate(zip(inputs, before)):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} call {k} input {i}")


def test_b04_state_update_does_not_write_the_input():
    # stateful: count += x; x must not change, while the state does.
    m = method("stateful")
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    keep = x.copy()
    first = m([x])[0].numpy().copy()
    second = m([x])[0].numpy().copy()
    np.testing.assert_array_equal(x, keep)
    count0 = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(first, (count0 + keep) * 2)
    np.testing.assert_array_equal(second, (count0 + 2 * keep) * 2)


def test_b04_writing_a_view_output_never_reaches_the_callers_input():
    # identity returns its inputs: with clone_outputs=False the results are
    # views of pterun's memory, which must be pterun's copy of the input.
    m = method("identity")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(4, dtype=np.float32)
    keep_x, keep_y = x.copy(), y.copy()
    out = m([x, y], clone_outputs=False)
    for t in out[:3]:  # out[3] is the program's constant
        arr = np.asarray(t)
        if arr.flags.writeable:
            arr[...] = -99
    np.testing.assert_array_equal(x, keep_x)
    np.testing.assert_array_equal(y, keep_y)
    assert out[0].data_ptr != x.ctypes.data
    assert out[2].data_ptr != y.ctypes.data


@pytest.mark.parametrize("how", ["flag", "bytes", "broadcast"])
def test_b04_read_only_buffers_are_accepted(how):
    x, y = _add_inputs(1)
    if how == "flag":
        ro = x.copy()
        ro.setflags(write=False)
    elif how == "bytes":
        ro = np.frombuffer(x.tobytes(), np.float32).reshape(2, 3)
    else:
        ro = np.broadcast_to(x[:1], (2, 3))
        x = np.array(ro)
    assert not ro.flags.writeable
    m = method("add")
    np.testing.assert_array_equal(m([ro, y])[0].numpy(), x + y)
    m.set_inputs([y, ro])
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), y + x)
    np.testing.assert_array_equal(method("add")([ro, ro])[0].numpy(), x + x)


def test_b04_read_only_memoryview_is_accepted():
    x, y = _add_inputs(2)
    mv = memoryview(x.tobytes()).cast("f", (2, 3))
    assert mv.readonly
    np.testing.assert_array_equal(method("add")([mv, mv])[0].numpy(), x + x)


def test_b04_planned_input_is_copied_at_set_inputs():
    # Every input of `add` is memory-planned: set_inputs() copies it, so
    # changing the caller's array afterwards does not change the next run.
    assert MANIFEST["add"]["methods"]["forward"]["inputs"][0]["is_memory_planned"]
    x, y = _add_inputs(3)
    expected = x + y
    m = method("add")
    m.set_inputs([x, y])
    x[...] = 1000
    y[...] = 1000
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), expected)
    m.execute()  # B11: again, still the values installed by set_inputs()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), expected)


def test_b04_large_planned_input_is_copied_at_set_inputs_over_threads():
    # A 16 MiB planned input: its copy is split over the method's threads,
    # and is still a copy (the caller's later changes do not reach the run;
    # its array is never written).
    p = program("scale_2048")
    assert p.method_meta("forward").input_tensor_meta(0).is_memory_planned
    before = pterun.get_num_threads()
    pterun.set_num_threads(2)
    try:
        m = p.load_method("forward")
        x = rng(7).standard_normal((2048, 2048)).astype(np.float32)
        base = x.copy()
        m.set_inputs([x])
        x[...] = 1000
        m.execute()
        np.testing.assert_allclose(m.get_outputs()[0].numpy(), base * 2 + 1, rtol=1e-6)
        np.testing.assert_array_equal(x, np.full_like(x, 1000))
    finally:
        pterun.set_num_threads(before)


def test_b04_inputs_may_be_dropped_after_set_inputs():
    m = method("add")
    x, y = _add_inputs(4)
    expected = x + y
    xc, yc = x.copy(), y.copy()
    refs = [weakref.ref(xc), weakref.ref(yc)]
    m.set_inputs([xc, yc])
    del xc, yc
    gc.collect()
    # Planned inputs are copied, so the objects may be gone; either way the
    # run must see the installed values.
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), expected)
    # Once replaced by the next set_inputs(), nothing keeps the old objects.
    m.set_inputs([x, y])
    gc.collect()
    assert all(r() is None for r in refs)


# --- B5 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_dtype,declared",
    [(np.float64, "float32"), (np.float16, "float32"), (np.int32, "float32"),
     (np.bool_, "float32"), (np.complex64, "float32")],
)
def test_b05_wrong_dtype_is_type_error_naming_both(bad_dtype, declared):
    x, y = _add_inputs(5)
    bad = x.astype(bad_dtype)
    got = np.dtype(bad_dtype).name
    with pytest.raises(TypeError) as info:
        method("add")([x, bad])
    message = str(info.value)
    assert message.startswith("input 1 of method 'forward': "), message
    assert got in message and declared in message, message


def test_b05_int_widths_are_not_cast():
    a, b, c = call_inputs("int_ops", 0)
    m = method("int_ops")
    with pytest.raises(TypeError) as info:
        m([a, b, c.astype(np.int64)])  # declared int32
    assert "int64" in str(info.value) and "int32" in str(info.value)
    with pytest.raises(TypeError) as info:
        m([a.astype(np.int32), b, c])  # declared int64
    assert "int64" in str(info.value) and "int32" in str(info.value)
    with pytest.raises(TypeError):
        m([a.astype(np.uint64), b, c])


def test_b05_bfloat16_and_float16_are_not_cast():
    m = method("bf16_mlp")
    x = call_inputs("bf16_mlp", 0)[0]
    as_float = np.zeros(x.shape, np.float32)
    with pytest.raises(TypeError, match="bfloat16"):
        m([as_float])
    with pytest.raises(TypeError, match="bfloat16"):
        m([as_float.astype(np.float16)])
    f16 = method("fp16_add")
    a, b = call_inputs("fp16_add", 0)
    with pytest.raises(TypeError, match="float16"):
        f16([a.astype(np.float32), b])


@pytest.mark.parametrize("shape", [(6,), (1, 2, 3), (2, 3, 1), ()])
def test_b05_wrong_rank_is_value_error(shape):
    x, y = _add_inputs(6)
    bad = np.zeros(shape, np.float32)
    with pytest.raises(ValueError) as info:
        method("add")([bad, y])
    assert str(info.value).startswith("input 0 of method 'forward': ")


@pytest.mark.parametrize("shape", [(3, 2), (2, 2), (2, 4), (1, 3), (0, 3)])
def test_b05_static_shape_mismatch_is_value_error_naming_shapes(shape):
    x, y = _add_inputs(7)
    bad = np.zeros(shape, np.float32)
    with pytest.raises(ValueError) as info:
        method("add")([x, bad])
    message = str(info.value)
    assert message.startswith("input 1 of method 'forward': "), message
    assert str(shape) in message and "(2, 3)" in message, message


@pytest.mark.parametrize("k", range(4))
def test_b05_dynamic_input_within_bounds(k):
    # Calls with batch 1, 7, 64, 3, replayed on one method (grow and shrink).
    m = method("dynamic_mlp")
    for j in range(k + 1):
        (x,) = call_inputs("dynamic_mlp", j)
        out = m([x])[0]
        assert out.shape == (x.shape[0], 10)
        assert_close(out, call_outputs("dynamic_mlp", j)[0], where=f"call {j}")


def test_b05_dynamic_input_shape_changes_both_ways():
    m = method("dynamic_mlp")
    xs = {x.shape[0]: (x, e) for x, e in
          ((call_inputs("dynamic_mlp", k)[0], call_outputs("dynamic_mlp", k)[0]) for k in range(4))}
    for batch in [64, 1, 7, 64, 3, 1]:
        x, e = xs[batch]
        assert_close(m([x])[0], e, where=str(batch))
    # Sub-batches of the 64-row input give the matching rows.
    x64, e64 = xs[64]
    for batch in [2, 33, 63]:
        assert_close(m([x64[:batch]])[0], e64[:batch], where=str(batch))


@pytest.mark.parametrize("shape", [(65, 32), (65, 16), (128, 8), (64, 33), (1, 64)])
def test_b05_dynamic_input_beyond_its_bound_is_value_error(shape):
    # Checked per dimension: (65, 16) has fewer elements than the bound
    # (64, 32) but its first dimension is beyond it.
    m = method("dynamic_mlp")
    with pytest.raises(ValueError) as info:
        m([np.zeros(shape, np.float32)])
    message = str(info.value)
    assert message.startswith("input 0 of method 'forward': "), message
    assert str(shape) in message, message
    assert "64" in message and "32" in message, message  # the bound


def test_b05_dynamic_input_wrong_rank():
    with pytest.raises(ValueError):
        method("dynamic_mlp")([np.zeros((32,), np.float32)])


# --- B6 --------------------------------------------------------------------------


class _Unreadable:
    pass


class _FailingDLPack:
    def __init__(self, exc):
        self.exc = exc

    def __dlpack__(self, **kwargs):
        raise self.exc

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize(
    "index,value,exc",
    [
        (0, np.zeros((2, 3), np.float64), TypeError),           # dtype
        (1, np.zeros((2, 3), np.float64), TypeError),
        (1, np.zeros((3, 3), np.float32), ValueError),          # shape
        (1, np.zeros((6,), np.float32), ValueError),            # rank
        (1, _Unreadable(), TypeError),                          # not an array
        (1, "abc", TypeError),
        (1, None, TypeError),
        (1, 1.5, TypeError),                                    # number for a tensor
        (1, np.zeros((2, 3), ">f4"), TypeError),                # byte order
        (0, np.zeros((2, 3), "M8[s]"), None),                   # format NumPy cannot export
    ],
)
def test_b06_input_errors_name_the_input(index, value, exc):
    x, y = _add_inputs(8)
    inputs = [x, y]
    inputs[index] = value
    m = method("add")
    with pytest.raises(Exception) as info:
        m(inputs)
    if exc is not None:
        assert isinstance(info.value, exc), repr(info.value)
    assert str(info.value).startswith(f"input {index} of method 'forward': "), str(info.value)
    # The same through set_inputs() and through a Module.
    with pytest.raises(type(info.value)) as again:
        m.set_inputs(inputs)
    assert str(again.value).startswith(f"input {index} of method 'forward': ")
    with pytest.raises(type(info.value)) as again:
        module("add").forward(inputs)
    assert str(again.value).startswith(f"input {index} of method 'forward': ")


def test_b06_names_the_method():
    m = method("multi_method", "encode")
    a, b = call_inputs("multi_method", 1)
    with pytest.raises(TypeError) as info:
        m([a, b.astype(np.float32)])
    assert str(info.value).startswith("input 1 of method 'encode': ")


@pytest.mark.parametrize(
    "index,value,exc",
    [
        (1, 2**70, OverflowError),           # Int input beyond 64 bits
        (1, -(2**70), OverflowError),
        (2, 10**400, OverflowError),         # Double input: int too large for a float
        (1, "3", TypeError),
        (3, 1, TypeError),
    ],
    ids=["int_2p70", "int_minus_2p70", "double_10p400", "int_str", "bool_int"],
)
def test_b06_number_errors_name_the_input_and_keep_their_type(index, value, exc):
    inputs = [np.array([1.0, 2.0, 3.0], np.float32), 3, 0.5, True]
    inputs[index] = value
    with pytest.raises(exc) as info:
        method("scalars")(inputs)
    assert str(info.value).startswith(f"input {index} of method 'forward': "), str(info.value)


@pytest.mark.parametrize("exc_type", [BufferError, ValueError, RuntimeError])
def test_b06_dlpack_producer_error_keeps_its_python_type(exc_type):
    # The producer's own exception, prefixed with the input it belongs to.
    x, _ = _add_inputs(9)
    with pytest.raises(exc_type) as info:
        method("add")([x, _FailingDLPack(exc_type("producer says no"))])
    assert str(info.value).startswith("input 1 of method 'forward': "), str(info.value)
    assert "producer says no" in str(info.value)


def test_b06_buffer_export_error_keeps_its_python_type():
    # A released memoryview raises ValueError when a buffer is requested.
    x, _ = _add_inputs(10)
    mv = memoryview(x.tobytes()).cast("f", (2, 3))
    mv.release()
    with pytest.raises(ValueError) as info:
        method("add")([x, mv])
    assert str(info.value).startswith("input 1 of method 'forward': "), str(info.value)


def test_b06_first_bad_input_is_named():
    # Several bad inputs: the error is about one of them and says which.
    with pytest.raises(TypeError) as info:
        method("add")([np.zeros((2, 3), np.float64), np.zeros((2, 3), np.int32)])
    assert str(info.value).startswith("input 0 of method 'forward': ")
