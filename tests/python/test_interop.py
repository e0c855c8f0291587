"""Interop with NumPy, torch (CPU), JAX and ml_dtypes: inputs from each
(docs/python-api.md, B1, B2, B4, B5), results into each through DLPack (B20, B21). torch, JAX
and ml_dtypes are optional: their tests skip when the package is missing."""

import gc

import numpy as np
import pytest

import pterun
from behaviour_util import (
    assert_close,
    bf16_tensor_bits,
    call_inputs,
    call_outputs,
    float_to_bf16_bits,
    method,
    module,
    rng,
)


def _add_inputs(seed):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


def _conversions():
    return pterun.stats()["layout_conversions"]


# --- NumPy -------------------------------------------------------------------------


def test_numpy_in_and_out():
    x, y = _add_inputs(0)
    t = method("add")([x, y])[0]
    for arr in (t.numpy(), np.asarray(t), np.array(t, copy=False), np.from_dlpack(t)):
        assert arr.ctypes.data == t.data_ptr
        np.testing.assert_array_equal(arr, x + y)
    copied = np.array(t)
    np.testing.assert_array_equal(copied, x + y)


def test_numpy_read_only_arrays_are_accepted():
    x, y = _add_inputs(1)
    x.setflags(write=False)
    y.setflags(write=False)
    np.testing.assert_array_equal(method("add")([x, y])[0].numpy(), x + y)


def test_numpy_big_endian_arrays_are_type_errors():
    x, y = _add_inputs(2)
    for bad in (x.astype(">f4"), x.astype(">f4")[:, ::-1]):
        with pytest.raises(TypeError):
            method("add")([bad, y])
        with pytest.raises(TypeError):
            pterun.Tensor.from_host(bad, "cpu")


def test_numpy_result_kept_alive_after_producer_dropped():
    m = method("add")
    x, y = _add_inputs(3)
    t = m([x, y])[0]
    arr = np.from_dlpack(t)
    del t, m  # the producer (result and method) may go: the memory must not
    gc.collect()
    np.testing.assert_array_equal(arr, x + y)


# --- torch -------------------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_inputs(torch):
    x, y = _add_inputs(4)
    tx, ty = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    np.testing.assert_array_equal(method("add")([tx, ty])[0].numpy(), x + y)
    a, b = call_inputs("multi_method", 1)  # float32 and int64
    out = method("multi_method", "encode")([torch.from_numpy(a), torch.from_numpy(b)])
    for got, exp in zip(out, call_outputs("multi_method", 1)):
        assert_close(got, exp, got.dtype_name)


def test_torch_inputs_in_another_layout_b01(torch):
    x, y = _add_inputs(5)
    base = torch.from_numpy(np.ascontiguousarray(x.T))
    tx = base.t()  # (2, 3) view with strides (1, 2)
    assert not tx.is_contiguous()
    pterun.reset_stats()
    np.testing.assert_array_equal(method("add")([tx, torch.from_numpy(y)])[0].numpy(), x + y)
    assert _conversions() == 1
    # Zero strides (expand) and a step slice.
    row = torch.tensor([1.0, 2.0, 3.0])
    wide = torch.zeros(2, 6)
    wide[:, ::2] = torch.from_numpy(y)
    got = method("add")([row.expand(2, 3), wide[:, ::2]])[0].numpy()
    np.testing.assert_array_equal(got, np.array([1.0, 2.0, 3.0], np.float32) + y)


def test_torch_channels_last_both_ways_b01(torch):
    x = call_inputs("cnn", 0)[0]
    contiguous = torch.from_numpy(x.copy())
    channels_last = contiguous.to(memory_format=torch.channels_last)
    assert channels_last.stride()[1] == 1
    cnn, cnn_cl = method("cnn"), method("cnn_channels_last")
    reference = cnn([x])[0].numpy().copy()
    assert_close(reference, call_outputs("cnn", 0)[0])
    pterun.reset_stats()
    np.testing.assert_array_equal(cnn([channels_last])[0].numpy(), reference)
    assert _conversions() == 1
    pterun.reset_stats()
    from_contiguous = cnn_cl([contiguous])[0].numpy().copy()
    assert _conversions() == 1
    pterun.reset_stats()
    from_cl = cnn_cl([channels_last])[0].numpy()
    assert _conversions() == 0
    np.testing.assert_array_equal(from_cl, from_contiguous)
    assert_close(from_cl, reference)  # same weights, same input


def test_torch_bfloat16_in_and_out(torch):
    bits = call_inputs("bf16_mlp", 0)[0]
    x = torch.from_numpy(bf16_tensor_bits(bits).view(np.int16)).view(torch.bfloat16)
    assert x.dtype == torch.bfloat16
    out = method("bf16_mlp")([x])[0]
    assert out.dtype_name == "bfloat16"
    result = torch.from_dlpack(out)
    assert result.dtype == torch.bfloat16
    assert result.data_ptr() == out.data_ptr
    expected = call_outputs("bf16_mlp", 0)[0]
    np.testing.assert_allclose(result.float().numpy(), expected, rtol=1.6e-2, atol=1.6e-2)
    # Exactly what the pterun.Tensor input gives.
    direct = method("bf16_mlp")([bits])[0]
    np.testing.assert_array_equal(result.view(torch.int16).numpy().view(np.uint16),
                                  bf16_tensor_bits(direct))


def test_torch_bfloat16_from_host_keeps_dtype(torch):
    x = torch.tensor([1.0, -0.5, 3.0], dtype=torch.bfloat16)
    t = pterun.Tensor.from_host(x, "cpu")
    assert t.dtype_name == "bfloat16"
    np.testing.assert_array_equal(bf16_tensor_bits(t),
                                  float_to_bf16_bits(np.array([1.0, -0.5, 3.0], np.float32)))
    back = torch.from_dlpack(t)
    assert back.dtype == torch.bfloat16 and torch.equal(back, x)


def test_torch_wrong_dtype_is_type_error_b05(torch):
    x, y = _add_inputs(6)
    with pytest.raises(TypeError) as info:
        method("add")([torch.from_numpy(x).double(), torch.from_numpy(y)])
    message = str(info.value)
    assert message.startswith("input 0 of method 'forward': ")
    assert "float64" in message and "float32" in message
    with pytest.raises(TypeError):
        method("add")([torch.from_numpy(x).bfloat16(), torch.from_numpy(y)])


def test_torch_inputs_are_not_written_b04(torch):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    keep = x.clone()
    m = method("stateful")
    m([x])
    m([x])
    assert torch.equal(x, keep)


def test_torch_input_kept_alive_after_dropped(torch):
    m = method("add")
    x, y = _add_inputs(7)
    tx, ty = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    m.set_inputs([tx, ty])
    del tx, ty
    gc.collect()
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x + y)


def test_torch_from_dlpack_shares_memory_and_keeps_it_alive_b21(torch):
    m = method("add")
    x, y = _add_inputs(8)
    t = m([x, y])[0]
    ptr = t.data_ptr
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == ptr
    del t
    gc.collect()
    for k in range(4):  # later calls must not reuse the shared memory
        m(list(_add_inputs(9 + k)))
    np.testing.assert_array_equal(tt.numpy(), x + y)
    # A clone_outputs=False view too.
    view = m([x, y], clone_outputs=False)[0]
    tv = torch.from_dlpack(view)
    assert tv.data_ptr() == view.data_ptr
    del view
    gc.collect()
    np.testing.assert_array_equal(tv.numpy(), x + y)


def test_torch_result_as_input_again(torch):
    m = method("add")
    x, y = _add_inputs(13)
    tt = torch.from_dlpack(m([x, y])[0])
    out = m([tt, torch.from_numpy(y)])[0]
    np.testing.assert_array_equal(out.numpy(), x + y + y)


def test_torch_module_call(torch):
    mod = module("mlp")
    x = torch.from_numpy(call_inputs("mlp", 0)[0].copy())
    assert_close(mod.forward([x])[0], call_outputs("mlp", 0)[0])


def test_plain_torch_tensors_are_read_without_dlpack(torch, monkeypatch):
    # torch's __dlpack__ costs tens of microseconds: plain tensors are read
    # from their attributes instead, layouts and dtypes included.
    def refuse(*args, **kwargs):
        raise AssertionError("__dlpack__ was called")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    x, y = _add_inputs(14)
    m = method("add")
    tx = torch.from_numpy(np.ascontiguousarray(x.T)).T  # transposed (B1)
    before = _conversions()
    out = m([tx, torch.from_numpy(y.copy())])[0]
    np.testing.assert_array_equal(out.numpy(), x + y)
    assert _conversions() - before == 1
    bits = torch.arange(6, dtype=torch.int16).reshape(2, 3)
    t = pterun.Tensor.from_host(bits.view(torch.bfloat16), "cpu")
    assert t.dtype_name == "bfloat16" and t.shape == (2, 3)
    assert torch.equal(torch.from_dlpack(t).view(torch.int16), bits)


def test_torch_tensors_the_fast_path_refuses_go_through_dlpack(torch):
    # Autograd and subclasses keep torch's own DLPack behaviour: its errors
    # (type kept, input named: B6) or its values.
    x, y = _add_inputs(15)
    m = method("add")
    ty = torch.from_numpy(y)
    # (BufferError from torch 2.6 on, RuntimeError before.)
    refused = (BufferError, RuntimeError)
    with pytest.raises(refused, match="^input 0 of method 'forward': .*grad") as e:
        m([torch.from_numpy(x).requires_grad_(), ty])
    assert "Traceback" not in str(e.value)  # the producer's message, not its traceback
    # A negative view reads as its values (torch's DLPack export would give
    # the unnegated memory).
    negated = torch._neg_view(torch.from_numpy(x.copy()))
    assert negated.is_neg()
    np.testing.assert_array_equal(m([negated, ty])[0].numpy(), -x + y)
    # A conjugate view too (torch's DLPack export refuses it).
    c = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64).conj()
    assert c.is_conj()
    got = pterun.Tensor.from_host(c, "cpu").numpy()
    np.testing.assert_array_equal(got, np.array([1 - 2j, 3 + 1j], np.complex64))

    class Sub(torch.Tensor):
        pass

    sub = torch.from_numpy(x.copy()).as_subclass(Sub)
    np.testing.assert_array_equal(m([sub, ty])[0].numpy(), x + y)


# --- JAX ---------------------------------------------------------------------------


@pytest.fixture
def jax():
    return pytest.importorskip("jax")


def _jax_ptr(a):
    return a.unsafe_buffer_pointer()


def test_jax_inputs(jax):
    jnp = jax.numpy
    x, y = _add_inputs(20)
    got = method("add")([jnp.asarray(x), jnp.asarray(y)])[0].numpy()
    np.testing.assert_array_equal(got, x + y)
    mlp_x = call_inputs("mlp", 0)[0]
    assert_close(method("mlp")([jnp.asarray(mlp_x)])[0], call_outputs("mlp", 0)[0])


def test_jax_bfloat16_input(jax):
    jnp = jax.numpy
    bits = bf16_tensor_bits(call_inputs("bf16_mlp", 0)[0])
    x = jax.lax.bitcast_convert_type(jnp.asarray(bits), jnp.bfloat16)
    assert x.dtype == jnp.bfloat16
    out = method("bf16_mlp")([x])[0]
    assert out.dtype_name == "bfloat16"
    direct = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    np.testing.assert_array_equal(bf16_tensor_bits(out), bf16_tensor_bits(direct))


def test_jax_from_dlpack_shares_memory_and_keeps_it_alive_b21(jax):
    m = method("add")
    x, y = _add_inputs(21)
    t = m([x, y])[0]
    ptr = t.data_ptr
    a = jax.dlpack.from_dlpack(t)
    assert _jax_ptr(a) == ptr
    del t
    gc.collect()
    for k in range(4):
        m(list(_add_inputs(22 + k)))
    np.testing.assert_array_equal(np.asarray(a), x + y)


def test_jax_bfloat16_result(jax):
    jnp = jax.numpy
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    a = jnp.from_dlpack(out)
    assert a.dtype == jnp.bfloat16
    assert _jax_ptr(a) == out.data_ptr
    np.testing.assert_allclose(np.asarray(a.astype(jnp.float32)), call_outputs("bf16_mlp", 0)[0],
                               rtol=1.6e-2, atol=1.6e-2)


def test_jax_result_as_input_again(jax):
    m = method("add")
    x, y = _add_inputs(26)
    a = jax.dlpack.from_dlpack(m([x, y])[0])
    b = a * 2  # a new JAX array: read-only buffer
    np.testing.assert_array_equal(m([b, y])[0].numpy(), (x + y) * 2 + y)


# --- ml_dtypes ---------------------------------------------------------------------


@pytest.fixture
def ml_dtypes():
    return pytest.importorskip("ml_dtypes")


def test_ml_dtypes_bfloat16_result(ml_dtypes):
    out = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    arr = out.numpy()
    assert arr.dtype == ml_dtypes.bfloat16
    assert arr.ctypes.data == out.data_ptr
    np.testing.assert_allclose(arr.astype(np.float32), call_outputs("bf16_mlp", 0)[0],
                               rtol=1.6e-2, atol=1.6e-2)
    del out
    gc.collect()
    np.testing.assert_allclose(arr.astype(np.float32), call_outputs("bf16_mlp", 0)[0],
                               rtol=1.6e-2, atol=1.6e-2)


def test_ml_dtypes_bfloat16_array_input(ml_dtypes):
    bits = bf16_tensor_bits(call_inputs("bf16_mlp", 0)[0])
    x = bits.view(ml_dtypes.bfloat16)
    out = method("bf16_mlp")([x])[0]
    direct = method("bf16_mlp")(call_inputs("bf16_mlp", 0))[0]
    np.testing.assert_array_equal(bf16_tensor_bits(out), bf16_tensor_bits(direct))


def test_ml_dtypes_bfloat16_round_trip(ml_dtypes):
    # A bfloat16 result fed back as NumPy (ml_dtypes) array.
    m = method("bf16_mlp")
    first = m(call_inputs("bf16_mlp", 0))[0]
    assert first.numpy().dtype == ml_dtypes.bfloat16
    t = pterun.Tensor.from_host(first.numpy(), "cpu")
    assert t.dtype_name == "bfloat16"
    np.testing.assert_array_equal(bf16_tensor_bits(t), bf16_tensor_bits(first))
