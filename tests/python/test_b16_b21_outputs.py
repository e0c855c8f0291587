"""Outputs: B16 (kinds and order), B17 (clone_outputs), B18 (no copies; two
buffers take turns; aliasing outputs copied and counted), B20 (pterun.Tensor),
B21 (DLPack export shares memory and keeps it alive). B19 is about CUDA
waits and is not tested on the CPU."""

import ctypes
import gc
import re
import sys

import numpy as np
import pytest

import pterun
from behaviour_util import (
    MANIFEST,
    assert_close,
    bf16_bits_to_float,
    bf16_tensor_bits,
    call_inputs,
    call_outputs,
    float_to_bf16_bits,
    method,
    module,
    program,
    pte,
    ptd,
    rng,
)


def _add_inputs(seed):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


def _stat(name):
    return pterun.stats()[name]


# --- B16 -------------------------------------------------------------------------


def test_b16_number_outputs_are_python_numbers():
    out = method("scalars")(call_inputs("scalars", 0))
    expected = call_outputs("scalars", 0)
    assert isinstance(out, list) and len(out) == 4
    assert isinstance(out[0], pterun.Tensor)
    assert_close(out[0], expected[0])
    assert type(out[1]) is int and out[1] == expected[1] == 4
    assert type(out[2]) is float and out[2] == expected[2] == 1.0
    assert type(out[3]) is bool and out[3] is expected[3] is False


def test_b16_none_output_is_none():
    out = program("shared_state").load_method("set_state")([np.zeros((2, 3), np.float32)])
    assert out == [None]


def test_b16_outputs_in_plan_order():
    x = call_inputs("split_outputs", 0)[0]
    out = method("split_outputs")([x])
    expected = (x * 2 - 1).reshape(3, 2, 4)
    assert len(out) == 3
    for i, t in enumerate(out):
        assert isinstance(t, pterun.Tensor)
        assert_close(t, expected[i], where=f"output {i}")
    out = method("add_mul")(call_inputs("add_mul", 0))
    a, b = call_inputs("add_mul", 0)
    np.testing.assert_array_equal(out[0].numpy(), a + b)
    np.testing.assert_array_equal(out[1].numpy(), a * b)


def test_b16_output_dtypes_of_multi_output_program():
    out = method("int_ops")(call_inputs("int_ops", 0))
    specs = MANIFEST["int_ops"]["methods"]["forward"]["outputs"]
    assert [t.dtype_name for t in out] == [s["dtype"] for s in specs]
    for got, exp, spec in zip(out, call_outputs("int_ops", 0), specs):
        if spec["dtype"] == "bool":
            np.testing.assert_array_equal(got.numpy(), exp)


def test_b16_external_weights_with_ptd():
    prog = pterun.load_program(pte("external_weights"), data=ptd("external_weights"))
    out = prog.load_method("forward")(call_inputs("external_weights", 0))
    assert_close(out[0], call_outputs("external_weights", 0)[0])
    # The same weights as `mlp`: the same result.
    assert_close(out[0], method("mlp")(call_inputs("external_weights", 0))[0])


def test_b14_module_with_external_weights_from_bytes():
    raw = ptd("external_weights").read_bytes()
    mod = pterun.Module(pte("external_weights").read_bytes(), data=raw)
    del raw
    gc.collect()
    assert_close(mod.forward(call_inputs("external_weights", 0))[0],
                 call_outputs("external_weights", 0)[0])


def test_external_weights_without_ptd_is_value_error_naming_keys_and_data():
    prog = pterun.load_program(pte("external_weights"))
    with pytest.raises(ValueError) as info:
        prog.load_method("forward")
    message = str(info.value)
    assert "data=" in message, message
    keys = MANIFEST["external_weights"]["methods"]["forward"].get("external_constants", [])
    assert keys
    for key in keys:
        assert key in message, (key, message)
    with pytest.raises(ValueError, match="data="):
        pterun.Module(pte("external_weights")).forward(call_inputs("external_weights", 0))


# --- B17 -------------------------------------------------------------------------


def test_b17_cloned_result_never_changes_when_the_method_runs_again():
    m = method("mlp")
    x0 = call_inputs("mlp", 0)[0]
    x1 = call_inputs("mlp", 1)[0]
    first = m([x0])[0]
    keep = first.numpy().copy()
    for _ in range(3):
        m([x1])
        m.set_inputs([x1 * 2])
        m.execute()
    np.testing.assert_array_equal(first.numpy(), keep)
    assert_close(first, call_outputs("mlp", 0)[0])


@pytest.mark.parametrize("name", ["identity", "stateful", "split_outputs", "chain8"])
def test_b17_cloned_outputs_of_aliasing_and_state_programs_never_change(name):
    m = method(name)
    inputs = call_inputs(name, 0)
    first = m(inputs)
    keep = [t.numpy().copy() for t in first]
    changed = [np.array(v) * 3 + 1 if isinstance(v, np.ndarray) else v for v in inputs]
    for _ in range(2):
        m(changed)
    for t, k in zip(first, keep):
        np.testing.assert_array_equal(t.numpy(), k)


def test_b17_clone_false_views_are_overwritten_by_the_next_run():
    m = method("add")
    x0, y0 = _add_inputs(1)
    x1, y1 = _add_inputs(2)
    view = m([x0, y0], clone_outputs=False)[0]
    np.testing.assert_array_equal(view.numpy(), x0 + y0)
    m([x1, y1], clone_outputs=False)
    np.testing.assert_array_equal(view.numpy(), x1 + y1)  # documented: overwritten


def test_b17_clone_false_get_outputs_are_views_of_method_memory():
    m = method("stateful")
    x = np.ones(4, np.float32)
    m.set_inputs([x])
    m.execute()
    view = m.get_outputs(clone_outputs=False)[0]
    np.testing.assert_array_equal(view.numpy(), (np.arange(4) + 1) * 2)
    m.execute()
    np.testing.assert_array_equal(view.numpy(), (np.arange(4) + 2) * 2)  # overwritten
    cloned = m.get_outputs()[0]
    m.execute()
    np.testing.assert_array_equal(cloned.numpy(), (np.arange(4) + 2) * 2)  # never changes
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), (np.arange(4) + 3) * 2)


def test_b17_clone_false_view_keeps_memory_alive_after_method_is_dropped():
    x0, y0 = _add_inputs(3)
    m = method("add")
    view = m([x0, y0], clone_outputs=False)[0]
    del m
    gc.collect()
    np.testing.assert_array_equal(view.numpy(), x0 + y0)


def test_b17_module_clone_outputs():
    mod = module("add")
    x0, y0 = _add_inputs(4)
    x1, y1 = _add_inputs(5)
    cloned = mod([x0, y0])[0]
    mod([x1, y1])
    np.testing.assert_array_equal(cloned.numpy(), x0 + y0)
    view = mod([x0, y0], clone_outputs=False)[0]
    mod([x1, y1], clone_outputs=False)
    np.testing.assert_array_equal(view.numpy(), x1 + y1)


# --- B18 -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "mlp"])
def test_b18_out_loop_buffers_take_turns_and_allocations_stop(name):
    m = method(name)
    x = call_inputs(name, 0)
    expected = call_outputs(name, 0)[0]
    ptrs, allocs, copies = [], [], []
    pterun.reset_stats()
    out = None
    for _ in range(12):
        out = m(x)[0]
        ptrs.append(out.data_ptr)
        allocs.append(_stat("device_allocs"))
        copies.append(_stat("output_copies"))
        assert_close(out, expected)
    # Two buffers take turns.
    assert ptrs[0] != ptrs[1]
    for i in range(2, len(ptrs)):
        assert ptrs[i] == ptrs[i - 2], ptrs
    # No allocation after the second call, and no copies at all.
    assert allocs[1:] == [allocs[1]] * (len(allocs) - 1), allocs
    assert copies[-1] == 0, copies


def test_b18_dropped_result_buffer_is_reused():
    m = method("add")
    x, y = _add_inputs(6)
    m([x, y])
    m([x, y])
    pterun.reset_stats()
    ptrs = []
    for _ in range(6):
        ptrs.append(m([x, y])[0].data_ptr)  # result dropped at once
    assert len(set(ptrs)) == 1, ptrs
    assert _stat("device_allocs") == 0


def test_b18_live_results_get_new_buffers():
    m = method("add")
    results = []
    for k in range(5):
        x, y = _add_inputs(10 + k)
        results.append((m([x, y])[0], x + y))
    assert len({t.data_ptr for t, _ in results}) == 5
    for t, expected in results:
        np.testing.assert_array_equal(t.numpy(), expected)


def test_b18_result_is_written_in_place_not_copied():
    m = method("mlp")
    x = call_inputs("mlp", 0)
    m(x)
    pterun.reset_stats()
    for _ in range(4):
        m(x)
    assert _stat("output_copies") == 0


def test_b18_aliasing_outputs_are_copied_and_counted():
    # identity returns (x, x, y, const): two outputs alias input 0, one input
    # 1, one a constant.
    m = method("identity")
    x, y = call_inputs("identity", 0)
    expected = call_outputs("identity", 0)
    m([x, y])
    pterun.reset_stats()
    out = m([x, y])
    assert _stat("output_copies") == 4
    for got, exp in zip(out, expected):
        np.testing.assert_array_equal(got.numpy(), exp)
    assert len({t.data_ptr for t in out}) == 4
    # The two results of x are independent copies.
    arr0 = np.asarray(out[0])
    if arr0.flags.writeable:
        arr0[...] = -1
        np.testing.assert_array_equal(out[1].numpy(), x)
    # The constant cannot be damaged through its result either.
    arr3 = np.asarray(out[3])
    if arr3.flags.writeable:
        arr3[...] = 1234
    np.testing.assert_array_equal(m([x, y])[3].numpy(), expected[3])


def test_b18_state_output_is_copied_and_counted():
    prog = program("shared_state")
    prog.load_method("set_state")([np.ones((2, 3), np.float32)])
    get_state = prog.load_method("get_state")
    get_state([])
    pterun.reset_stats()
    get_state([])
    assert _stat("output_copies") == 1


# --- B20 -------------------------------------------------------------------------


def test_b20_tensor_properties():
    m = method("add")
    x, y = _add_inputs(20)
    t = m([x, y])[0]
    assert t.shape == (2, 3) and isinstance(t.shape, tuple)
    assert all(type(s) is int for s in t.shape)
    assert t.ndim == 2
    assert t.dtype == pterun.dtype.float32
    assert int(pterun.dtype.float32) == 6 and int(pterun.dtype.bfloat16) == 15
    assert t.dtype_name == "float32"
    assert t.device == "cpu"
    assert t.nbytes == 24
    assert isinstance(t.data_ptr, int) and t.data_ptr != 0
    assert len(t) == 2
    arr = t.numpy()
    assert arr.ctypes.data == t.data_ptr  # numpy() shares memory
    np.testing.assert_array_equal(arr, x + y)
    np.testing.assert_array_equal(np.asarray(t), x + y)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), (x + y).astype(np.float64))
    assert t.tolist() == (x + y).tolist()
    assert t.to_host().device == "cpu"
    np.testing.assert_array_equal(t.to_host().numpy(), x + y)


def test_b20_dtype_enum_numbers():
    expected = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                "float32": 6, "float64": 7, "complex64": 9, "complex128": 10, "bool": 11,
                "bfloat16": 15}
    for name, number in expected.items():
        member = getattr(pterun.dtype, name)
        assert member == number and int(member) == number, name


def test_b20_repr_shows_shape_dtype_device_and_small_values():
    t = pterun.Tensor.from_host(np.array([[1.5, 2.0], [3.0, -4.0]], np.float32), "cpu")
    text = repr(t)
    assert "(2, 2)" in text and "float32" in text and "cpu" in text, text
    for v in ("1.5", "2.0", "3.0", "-4.0"):
        assert v in text, text
    big = pterun.Tensor.from_host(np.arange(100000, dtype=np.float32), "cpu")
    text = repr(big)
    assert "(100000,)" in text and len(text) < 1000, text
    for obj in (method("add"), program("add"), module("add")):
        assert re.search(r"\w", repr(obj))


def test_b20_item_and_tolist():
    out = method("mlp")(call_inputs("mlp", 0))[0]
    with pytest.raises(ValueError):
        out.item()
    one = pterun.Tensor.from_host(np.array([2.5], np.float32), "cpu")
    assert one.item() == 2.5 and type(one.item()) is float
    scalar = pterun.Tensor.from_host(np.array(7, np.int64), "cpu")
    assert scalar.shape == () and scalar.item() == 7 and type(scalar.item()) is int
    assert scalar.tolist() == 7
    with pytest.raises(TypeError):
        len(scalar)
    b = pterun.Tensor.from_host(np.array([True, False]), "cpu")
    assert b.tolist() == [True, False]


def test_b20_from_host_copies_any_layout_and_keeps_dtype():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::-2]
    t = pterun.Tensor.from_host(a, "cpu")
    assert t.dtype_name == "int32" and t.shape == (3, 2)
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.numpy().flags.c_contiguous
    src = np.ones(3, np.float32)
    t = pterun.Tensor.from_host(src, "cpu")
    src[:] = 5
    np.testing.assert_array_equal(t.numpy(), np.ones(3))  # a copy
    again = pterun.Tensor.from_host(t, "cpu")
    assert again.data_ptr != t.data_ptr
    np.testing.assert_array_equal(again.numpy(), t.numpy())


def test_b20_from_host_keeps_bfloat16():
    bits = float_to_bf16_bits(np.array([1.0, 0.5, -3.0], np.float32))
    t = pterun.Tensor.from_host(bits, "cpu", dtype="bfloat16")
    assert t.dtype_name == "bfloat16" and t.dtype == pterun.dtype.bfloat16
    copy = pterun.Tensor.from_host(t, "cpu")
    assert copy.dtype_name == "bfloat16"
    np.testing.assert_array_equal(bf16_tensor_bits(copy), bits)
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    assert pterun.Tensor.from_host(out, "cpu").dtype_name == "bfloat16"


def test_b20_bfloat16_numpy_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    arr = out.numpy()
    assert arr.dtype == ml_dtypes.bfloat16
    assert arr.ctypes.data == out.data_ptr
    np.testing.assert_allclose(arr.astype(np.float32),
                               call_outputs("bf16_mlp", 0)[0], rtol=1.6e-2, atol=1.6e-2)
    assert np.asarray(out).dtype == ml_dtypes.bfloat16


def test_b20_bfloat16_numpy_without_ml_dtypes_is_type_error(monkeypatch):
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import fails
    with pytest.raises(TypeError):
        out.numpy()
    with pytest.raises(TypeError):
        np.asarray(out)
    # The bits are still readable by reinterpreting them.
    assert bf16_tensor_bits(out).dtype == np.uint16


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


def test_b20_dlpack_versioned_and_legacy_capsules():
    t = pterun.Tensor.from_host(np.arange(6, dtype=np.float32), "cpu")
    assert t.__dlpack_device__() == (1, 0)
    assert _capsule_name(t.__dlpack__()) == "dltensor"
    assert _capsule_name(t.__dlpack__(max_version=None)) == "dltensor"
    assert _capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert _capsule_name(t.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(t.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"
    assert _capsule_name(t.__dlpack__(stream=None, dl_device=(1, 0))) == "dltensor"


# --- B21 -------------------------------------------------------------------------


def test_b21_numpy_from_dlpack_shares_memory_and_keeps_it_alive():
    m = method("add")
    x0, y0 = _add_inputs(30)
    t = m([x0, y0])[0]
    arr = np.from_dlpack(t)
    assert arr.ctypes.data == t.data_ptr
    np.testing.assert_array_equal(arr, x0 + y0)
    del t
    gc.collect()
    # The memory stays alive and is not reused by the next calls (docs/python-api.md, B18).
    for k in range(4):
        x1, y1 = _add_inputs(31 + k)
        m([x1, y1])
    np.testing.assert_array_equal(arr, x0 + y0)


def test_b21_numpy_view_keeps_result_alive():
    m = method("mlp")
    x = call_inputs("mlp", 0)
    arr = m(x)[0].numpy()
    gc.collect()
    for _ in range(3):
        m(call_inputs("mlp", 1))
    assert_close(arr, call_outputs("mlp", 0)[0])


def test_b21_bfloat16_result_to_numpy_from_dlpack_is_refused_cleanly():
    # NumPy has no bfloat16: its DLPack import refuses the dtype (no crash).
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    with pytest.raises((BufferError, TypeError, ValueError, RuntimeError)):
        np.from_dlpack(out)
    np.testing.assert_allclose(bf16_bits_to_float(bf16_tensor_bits(out)),
                               call_outputs("bf16_mlp", 0)[0], rtol=1.6e-2, atol=1.6e-2)
