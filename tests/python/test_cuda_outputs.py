"""Results of CUDA methods: B17 (clone_outputs), B18 (two device buffers take
turns, no allocations in steady state), B19 (one wait per call), B20
(pterun.Tensor on a GPU: to_host, from_host, numpy, repr, DLPack), B21
(torch, CuPy and JAX share a result's memory). Skipped without a GPU."""

import ctypes

import numpy as np
import pytest

import pterun
from behaviour_util import call_inputs, call_outputs, program, rng
from cuda_util import (  # noqa: F401 - pytest fixtures
    collect,
    cupy,
    host,
    jax,
    jax_ptr,
    needs_cuda,
    stat,
    torch,
)

pytestmark = needs_cuda


def cuda_method(name, method_name="forward"):
    return program(name).load_method(method_name, device="cuda:0")


def _add_inputs(seed):
    r = rng(seed)
    return r.standard_normal((2, 3)).astype(np.float32), r.standard_normal((2, 3)).astype(np.float32)


# --- B17 / B18 ---------------------------------------------------------------------


def test_b17_cloned_result_never_changes():
    m = cuda_method("add")
    x, y = _add_inputs(0)
    first = m([x, y])[0]
    for k in range(3):
        m(list(_add_inputs(k + 1)))
    np.testing.assert_allclose(host(first), x + y, rtol=1e-6)


def test_b17_view_result_is_overwritten_by_the_next_run():
    m = cuda_method("add")
    x, y = _add_inputs(5)
    view = m([x, y], clone_outputs=False)[0]
    assert view.device == "cuda:0"
    m([2 * x, 2 * y])
    np.testing.assert_allclose(host(view), 2 * (x + y), rtol=1e-6)


@pytest.mark.parametrize("name", ["add", "mlp", "chain8"])
def test_b18_out_loop_device_buffers_take_turns_and_allocations_stop(name):
    m = cuda_method(name)
    x = call_inputs(name, 0)
    expected = call_outputs(name, 0)[0]
    ptrs, allocs = [], []
    pterun.reset_stats()
    out = None
    for _ in range(12):
        out = m(x)[0]
        assert out.device == "cuda:0"
        ptrs.append(out.data_ptr)
        allocs.append(stat("device_allocs"))
    np.testing.assert_allclose(host(out), expected, rtol=1e-4, atol=1e-4)
    assert ptrs[0] != ptrs[1]
    for i in range(2, len(ptrs)):
        assert ptrs[i] == ptrs[i - 2], ptrs
    assert allocs[1:] == [allocs[1]] * (len(allocs) - 1), allocs
    assert stat("output_copies") == 0


def test_b18_dropped_result_buffer_is_reused():
    m = cuda_method("add")
    x, y = _add_inputs(6)
    m([x, y])
    m([x, y])
    pterun.reset_stats()
    ptrs = [m([x, y])[0].data_ptr for _ in range(6)]
    assert len(set(ptrs)) == 1, ptrs
    assert stat("device_allocs") == 0


def test_b18_aliasing_outputs_are_copied_on_the_device():
    m = cuda_method("identity")
    x, y = call_inputs("identity", 0)
    expected = call_outputs("identity", 0)
    m([x, y])
    pterun.reset_stats()
    out = m([x, y])
    assert stat("output_copies") == 4
    assert len({t.data_ptr for t in out}) == 4
    for got, exp in zip(out, expected):
        assert got.device == "cuda:0"
        np.testing.assert_array_equal(host(got), exp)


# --- B19 ---------------------------------------------------------------------------


def test_b19_chain_of_8_calls_with_host_uploads_waits_8_times():
    m = cuda_method("chain8")
    x = call_inputs("chain8", 0)[0]
    m([x])  # warm-up: first-call allocations
    collect()  # no capsule of an earlier test released mid-count
    before = stat("device_syncs")
    for k in range(8):
        m([x + k])
    assert stat("device_syncs") - before == 8


def test_b19_chain_of_8_calls_on_own_results_waits_8_times():
    m = cuda_method("chain8")
    x = call_inputs("chain8", 0)[0]
    y = m([x])[7]
    collect()  # no capsule of an earlier test released mid-count
    before = stat("device_syncs")
    for _ in range(8):
        y = m([y])[7]  # a pterun result never handed out: no wait before
    assert stat("device_syncs") - before == 8
    expected = x.astype(np.float64)
    for _ in range(9 * 8):
        expected = expected * 1.0001 + 1
    np.testing.assert_allclose(host(y), expected, rtol=1e-4)


def test_b19_module_calls_wait_once():
    from behaviour_util import pte

    mod = pterun.Module(pte("chain8"), device="cuda:0")
    x = call_inputs("chain8", 0)[0]
    mod.forward([x])
    collect()  # no capsule of an earlier test released mid-count
    before = stat("device_syncs")
    for _ in range(4):
        mod.forward([x])
    assert stat("device_syncs") - before == 4


def test_b19_result_handed_out_is_waited_for_before_use(torch):
    m = cuda_method("add")
    x, y = _add_inputs(7)
    out = m([x, y])[0]
    shared = torch.from_dlpack(out)
    shared.mul_(2)  # another library writes our result
    collect()  # no capsule of an earlier test released mid-count
    before = stat("device_syncs")
    again = m([out, out])[0]
    assert stat("device_syncs") - before == 2  # one wait before, one after
    np.testing.assert_allclose(host(again), 4 * (x + y), rtol=1e-6)


def test_b19_torch_input_costs_no_host_wait_before(torch):
    m = cuda_method("add")
    x, y = _add_inputs(8)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    m([tx, ty])
    collect()  # no capsule of an earlier test released mid-count
    before = stat("device_syncs")
    out = m([tx, ty])[0]
    assert stat("device_syncs") - before == 1  # torch's stream is joined on the GPU
    np.testing.assert_allclose(host(out), x + y, rtol=1e-6)


# --- B20 ---------------------------------------------------------------------------


def test_b20_to_host_and_properties():
    m = cuda_method("add")
    x, y = _add_inputs(9)
    t = m([x, y])[0]
    assert t.device == "cuda:0"
    assert t.shape == (2, 3) and t.ndim == 2 and len(t) == 2
    assert t.dtype == pterun.dtype.float32 and t.dtype_name == "float32"
    assert t.nbytes == 24
    assert t.data_ptr != 0
    h = t.to_host()
    assert isinstance(h, pterun.Tensor) and h.device == "cpu"
    assert h.data_ptr != t.data_ptr
    np.testing.assert_allclose(h.numpy(), x + y, rtol=1e-6)
    assert h.to_host() is h


def test_b20_numpy_tolist_item_copy_to_host_and_array_refuses():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = pterun.Tensor.from_host(x, "cuda:0")
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.tolist() == x.tolist()
    assert pterun.Tensor.from_host(np.array([2.5], np.float32), "cuda:0").item() == 2.5
    assert pterun.Tensor.from_host(np.array(7, np.int64), "cuda").item() == 7
    with pytest.raises(ValueError):
        t.item()
    with pytest.raises(TypeError, match="to_host"):
        np.asarray(t)


def test_b20_repr_shows_device_and_small_values():
    t = pterun.Tensor.from_host(np.array([[1.5, 2.0], [3.0, -4.0]], np.float32), "cuda:0")
    r = repr(t)
    assert "cuda:0" in r and "(2, 2)" in r and "float32" in r
    assert "1.5" in r and "-4.0" in r
    big = pterun.Tensor.from_host(np.arange(100000, dtype=np.float32), "cuda:0")
    assert "cuda:0" in repr(big) and len(repr(big)) < 200


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]
)
def test_b20_from_host_round_trips_every_dtype(dtype):
    a = np.abs(rng(10).standard_normal((3, 4)) * 10).astype(dtype)
    t = pterun.Tensor.from_host(a, "cuda:0")
    assert t.device == "cuda:0" and t.shape == (3, 4)
    assert t.dtype_name == np.dtype(dtype).name
    np.testing.assert_array_equal(t.to_host().numpy(), a)


def test_b20_from_host_any_layout_and_empty():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for src in (a.transpose(2, 0, 1), a[:, ::-1, ::2], a[..., 1]):
        t = pterun.Tensor.from_host(src, "cuda:0")
        np.testing.assert_array_equal(host(t), src)
    e = pterun.Tensor.from_host(np.zeros((0, 3), np.float32), "cuda:0")
    assert e.shape == (0, 3) and e.nbytes == 0
    assert host(e).shape == (0, 3)


def test_b20_from_host_keeps_bfloat16_and_goes_back_to_cpu():
    bits = np.array([0x3F80, 0x4000, 0xC040], np.uint16)  # 1, 2, -3
    t = pterun.Tensor.from_host(bits, "cuda:0", dtype="bfloat16")
    assert t.dtype_name == "bfloat16" and t.device == "cuda:0"
    back = pterun.Tensor.from_host(t, "cpu")
    assert back.device == "cpu" and back.dtype_name == "bfloat16"
    np.testing.assert_array_equal(host(back), [1.0, 2.0, -3.0])
    np.testing.assert_array_equal(host(t), [1.0, 2.0, -3.0])


def test_b20_from_host_counts_one_upload_and_one_allocation():
    pterun.reset_stats()
    pterun.Tensor.from_host(np.ones((16, 16), np.float32), "cuda:0")
    assert stat("host_to_device_copies") == 1
    assert stat("device_allocs") == 1


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


def test_b20_dlpack_device_and_capsules():
    t = pterun.Tensor.from_host(np.arange(6, dtype=np.float32), "cuda:0")
    assert t.__dlpack_device__() == (2, 0)
    assert _capsule_name(t.__dlpack__()) == "dltensor"
    assert _capsule_name(t.__dlpack__(stream=None)) == "dltensor"
    assert _capsule_name(t.__dlpack__(stream=1, max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(t.__dlpack__(stream=2, dl_device=(2, 0))) == "dltensor"
    with pytest.raises(BufferError):
        t.__dlpack__(copy=True)
    with pytest.raises(TypeError):
        t.__dlpack__(stream="default")


class _HostRequest:
    """Asks a GPU tensor for a host capsule (what from_dlpack(x, device="cpu")
    does in NumPy 2.1+)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        kwargs["dl_device"] = (1, 0)
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


def test_b20_dlpack_to_cpu_device_gives_a_host_copy():
    a = np.arange(6, dtype=np.float32)
    t = pterun.Tensor.from_host(a, "cuda:0")
    np.testing.assert_array_equal(np.from_dlpack(_HostRequest(t)), a)
    capsule = t.__dlpack__(dl_device=(1, 0), max_version=(1, 0))
    assert _capsule_name(capsule) == "dltensor_versioned"
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(1, 0), copy=False)


def test_b20_exported_tensor_to_host_waits_for_the_device(torch):
    t = pterun.Tensor.from_host(np.zeros((256, 256), np.float32), "cuda:0")
    shared = torch.from_dlpack(t)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        shared.fill_(5.0)
    np.testing.assert_array_equal(host(t), np.full((256, 256), 5.0, np.float32))


# --- B21 ---------------------------------------------------------------------------


def test_b21_torch_from_dlpack_shares_memory_and_keeps_it_alive(torch):
    m = cuda_method("add")
    x, y = _add_inputs(11)
    t = m([x, y])[0]
    ptr = t.data_ptr
    tt = torch.from_dlpack(t)
    assert tt.device.type == "cuda" and tt.device.index == 0
    assert tt.data_ptr() == ptr
    del t
    collect()
    for k in range(4):  # the runner must not reuse the memory torch holds
        m(list(_add_inputs(20 + k)))
    np.testing.assert_allclose(tt.cpu().numpy(), x + y, rtol=1e-6)
    del tt
    collect()


def test_b21_torch_result_buffer_reused_after_torch_lets_go(torch):
    m = cuda_method("add")
    x, y = _add_inputs(12)
    tt = torch.from_dlpack(m([x, y])[0])
    ptr = tt.data_ptr()
    ptrs = {m([x, y])[0].data_ptr for _ in range(4)}  # each result dropped at once
    assert ptr not in ptrs
    del tt
    collect()
    ptrs, out = set(), None
    for _ in range(4):  # `out` held across the next call: both buffers are used
        out = m([x, y])[0]
        ptrs.add(out.data_ptr)
    assert ptr in ptrs


def test_b21_cupy_from_dlpack_shares_memory(cupy):
    m = cuda_method("add")
    x, y = _add_inputs(13)
    t = m([x, y])[0]
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t.data_ptr
    del t
    collect()
    m(list(_add_inputs(14)))
    np.testing.assert_allclose(cupy.asnumpy(c), x + y, rtol=1e-6)


def test_b21_jax_from_dlpack_shares_memory(jax):
    m = cuda_method("add")
    x, y = _add_inputs(15)
    t = m([x, y])[0]
    ptr = t.data_ptr
    j = jax.dlpack.from_dlpack(t)
    assert jax_ptr(j) == ptr
    del t
    collect()
    m(list(_add_inputs(16)))
    np.testing.assert_allclose(np.asarray(j), x + y, rtol=1e-6)


def test_b21_torch_result_back_as_input(torch):
    m = cuda_method("add")
    x, y = _add_inputs(17)
    tt = torch.from_dlpack(m([x, y])[0])
    out = m([tt, tt])[0]
    np.testing.assert_allclose(host(out), 2 * (x + y), rtol=1e-6)


def test_b19_result_written_by_torch_on_its_stream_then_passed_back(torch):
    m = cuda_method("add")
    x, y = _add_inputs(18)
    out = m([x, y])[0]
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        shared = torch.from_dlpack(out)
        torch.cuda._sleep(50_000_000)  # keep the stream busy
        shared.mul_(3)
    # Our tensor, whose memory was handed out: read after torch's writes.
    again = m([out, out])[0]
    np.testing.assert_allclose(host(again), 6 * (x + y), rtol=1e-6)
    # torch's view of it, passed while its stream is current: read after it.
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        shared.add_(1)
        back = m([shared, shared])[0]
    np.testing.assert_allclose(host(back), 2 * (3 * (x + y) + 1), rtol=1e-6)


def test_b17_view_results_fed_back_are_not_overwritten_while_read():
    # clone_outputs=False results are the method's own memory; fed back as
    # the next input they must be read before anything writes over them.
    gpu = cuda_method("llama_block")
    cpu = program("llama_block").load_method("forward")
    x = call_inputs("llama_block", 0)[0]
    y_gpu = gpu([x], clone_outputs=False)[0]
    y_cpu = cpu([x])[0].numpy()
    for _ in range(4):
        y_gpu = gpu([y_gpu], clone_outputs=False)[0]
        y_cpu = cpu([y_cpu])[0].numpy()
        np.testing.assert_allclose(host(y_gpu), y_cpu, rtol=1e-3, atol=1e-4)
