"""Inputs of CUDA methods (docs/python-api.md, B7): host arrays (uploaded), GPU arrays from
torch, CuPy, JAX and pterun (read on the GPU), in any layout (B1); CPU
methods given GPU arrays (copied down). Skipped without a GPU; each
producer's tests skip when it is not installed or has no GPU."""

import weakref

import numpy as np
import pytest

import pterun
from behaviour_util import call_inputs, call_outputs, method, program, rng
from cuda_util import (  # noqa: F401 - pytest fixtures
    collect,
    cupy,
    host,
    jax,
    jax_gpu_array,
    needs_cuda,
    needs_two_gpus,
    stat,
    torch,
)

pytestmark = needs_cuda


def _add_inputs(seed, shape=(2, 3)):
    r = rng(seed)
    return r.standard_normal(shape).astype(np.float32), r.standard_normal(shape).astype(np.float32)


def cuda_add():
    return program("add").load_method("forward", device="cuda:0")


def test_b07_method_device_and_host_inputs():
    m = cuda_add()
    assert m.device == "cuda:0"
    assert "cuda:0" in repr(m)
    x, y = _add_inputs(0)
    out = m([x, y])[0]
    assert out.device == "cuda:0"
    assert out.__dlpack_device__() == (2, 0)
    np.testing.assert_allclose(host(out), x + y, rtol=1e-6)


def test_b07_cuda_alias_is_cuda0():
    assert program("add").load_method("forward", device="cuda").device == "cuda:0"


def test_b07_set_inputs_execute_get_outputs():
    m = cuda_add()
    x, y = _add_inputs(1)
    m.set_inputs([x, y])
    m.execute()
    out = m.get_outputs()
    np.testing.assert_allclose(host(out[0]), x + y, rtol=1e-6)


def test_b07_pterun_cuda_tensors_as_inputs():
    m = cuda_add()
    x, y = _add_inputs(2)
    tx = pterun.Tensor.from_host(x, "cuda:0")
    ty = pterun.Tensor.from_host(y, "cuda:0")
    assert tx.device == "cuda:0"
    np.testing.assert_allclose(host(m([tx, ty])[0]), x + y, rtol=1e-6)
    # A result of one call as the input of the next (no wait before: B19).
    first = m([x, y])[0]
    np.testing.assert_allclose(host(m([first, first])[0]), 2 * (x + y), rtol=1e-6)


def test_b01_transposed_pterun_and_host_inputs():
    m = cuda_add()
    x, y = _add_inputs(3, shape=(3, 2))
    np.testing.assert_allclose(host(m([x.T, y.T])[0]), x.T + y.T, rtol=1e-6)


def test_b07_cpu_method_given_cuda_tensors_copies_them_down():
    m = method("add")
    x, y = _add_inputs(4)
    out = m([pterun.Tensor.from_host(x, "cuda:0"), pterun.Tensor.from_host(y, "cuda:0")])[0]
    assert out.device == "cpu"
    np.testing.assert_allclose(out.numpy(), x + y, rtol=1e-6)


@needs_two_gpus
def test_b07_inputs_on_another_gpu_are_copied():
    m = program("add").load_method("forward", device="cuda:1")
    x, y = _add_inputs(5)
    out = m([pterun.Tensor.from_host(x, "cuda:0"), pterun.Tensor.from_host(y, "cuda:0")])[0]
    assert out.device == "cuda:1"
    np.testing.assert_allclose(host(out), x + y, rtol=1e-6)


# --- torch -------------------------------------------------------------------------


def test_b07_torch_cuda_inputs(torch):
    m = cuda_add()
    x, y = _add_inputs(10)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    np.testing.assert_allclose(host(m([tx, ty])[0]), x + y, rtol=1e-6)


def test_b01_transposed_torch_cuda_inputs(torch):
    m = cuda_add()
    x, y = _add_inputs(11, shape=(3, 2))
    tx, ty = torch.from_numpy(x).cuda().T, torch.from_numpy(y).cuda().T
    assert not tx.is_contiguous()
    before = stat("layout_conversions")
    downloads = stat("device_to_host_copies")
    out = m([tx, ty])[0]
    # Reordered on the GPU: nothing came down to the host.
    assert stat("device_to_host_copies") == downloads
    assert stat("layout_conversions") - before == 2
    np.testing.assert_allclose(host(out), x.T + y.T, rtol=1e-6)


def test_b01_sliced_torch_cuda_input(torch):
    m = cuda_add()
    big = rng(12).standard_normal((2, 6)).astype(np.float32)
    y = np.ones((2, 3), np.float32)
    t = torch.from_numpy(big).cuda()[:, ::2]
    np.testing.assert_allclose(host(m([t, y])[0]), big[:, ::2] + y, rtol=1e-6)


def test_b19_torch_input_written_on_a_side_stream_is_read_after_it(torch):
    # The producer's pending writes come first: the method's stream waits
    # for torch's current stream on the GPU, with no host wait before the
    # run (B19).
    m = cuda_add()
    n = (2, 3)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.full(n, 1.0, device="cuda")
        torch.cuda._sleep(50_000_000)  # keep the stream busy
        a.fill_(3.0)
    # Recorded on the side stream; the call runs on the current stream.
    b = torch.zeros(n, device="cuda")
    collect()
    with torch.cuda.stream(side):
        before = stat("device_syncs")
        out = m([a, b])[0]
    assert stat("device_syncs") - before == 1  # the wait after the run
    np.testing.assert_array_equal(host(out), np.full(n, 3.0, np.float32))


def test_b19_cupy_input_written_on_its_stream_is_read_after_it(cupy):
    # CuPy orders its writes before the stream pterun names in __dlpack__
    # (the legacy default stream); the method's stream waits for that one
    # on the GPU (B19).
    m = cuda_add()
    n = (2, 3)
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        # Milliseconds of queued matmuls; every product stays 1/4096.
        big = cupy.full((4096, 4096), 1.0 / 4096, dtype=cupy.float32)
        for _ in range(5):
            big = big @ big
        a = big[:2, :3] * 0 + 3.0
        b = cupy.zeros(n, dtype=cupy.float32)
        collect()
        before = stat("device_syncs")
        out = m([a, b])[0]
    assert stat("device_syncs") - before == 1
    np.testing.assert_array_equal(host(out), np.full(n, 3.0, np.float32))


def test_b19_torch_inputs_from_many_streams(torch):
    # Inputs written on two side streams that the caller joined into its
    # current stream (torch's rule for using a tensor on another stream):
    # pterun orders its reads after the current stream.
    m = cuda_add()
    n = (2, 3)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(s1):
        torch.cuda._sleep(20_000_000)
        a = torch.full(n, 2.0, device="cuda")
    with torch.cuda.stream(s2):
        b = torch.full(n, 5.0, device="cuda")
    current = torch.cuda.current_stream()
    current.wait_stream(s1)
    current.wait_stream(s2)
    out = m([a, b])[0]
    np.testing.assert_array_equal(host(out), np.full(n, 7.0, np.float32))


def test_b04_torch_cuda_input_is_not_written(torch):
    m = cuda_add()
    x, y = _add_inputs(13)
    tx = torch.from_numpy(x).cuda()
    m([tx, tx])
    np.testing.assert_array_equal(tx.cpu().numpy(), x)


def test_b07_torch_cuda_bfloat16_input(torch):
    m = program("bf16_mlp").load_method("forward", device="cuda:0")
    x = torch.randn(4, 16, dtype=torch.bfloat16, device="cuda")
    cpu = method("bf16_mlp")([x.cpu()])[0]
    gpu = m([x])[0]
    assert gpu.dtype_name == "bfloat16"
    np.testing.assert_allclose(host(gpu), host(cpu), rtol=2e-2, atol=2e-2)


def test_b05_torch_cuda_wrong_dtype_is_type_error(torch):
    m = cuda_add()
    t = torch.zeros((2, 3), dtype=torch.float64, device="cuda")
    with pytest.raises(TypeError, match="input 0 of method 'forward'"):
        m([t, t])


def test_b07_cpu_method_given_torch_cuda_inputs(torch):
    m = method("add")
    x, y = _add_inputs(14)
    out = m([torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()])[0]
    assert out.device == "cpu"
    np.testing.assert_allclose(out.numpy(), x + y, rtol=1e-6)


def test_b13_module_on_cuda_with_torch_inputs(torch):
    from behaviour_util import pte

    mod = pterun.Module(pte("add"), device="cuda:0")
    x, y = _add_inputs(15)
    out = mod.forward([torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()])[0]
    np.testing.assert_allclose(host(out), x + y, rtol=1e-6)


# --- CuPy --------------------------------------------------------------------------


def test_b07_cupy_inputs(cupy):
    m = cuda_add()
    x, y = _add_inputs(20)
    np.testing.assert_allclose(host(m([cupy.asarray(x), cupy.asarray(y)])[0]), x + y, rtol=1e-6)


def test_b01_transposed_and_reversed_cupy_inputs(cupy):
    m = cuda_add()
    x, y = _add_inputs(21, shape=(3, 2))
    cx, cy = cupy.asarray(x).T, cupy.asarray(y)[::-1].T
    expected = x.T + y[::-1].T
    np.testing.assert_allclose(host(m([cx, cy])[0]), expected, rtol=1e-6)


def test_b07_cupy_from_host_and_back(cupy):
    x = rng(22).standard_normal((4, 5)).astype(np.float32)
    t = pterun.Tensor.from_host(cupy.asarray(x).T, "cuda:0")
    assert t.device == "cuda:0" and t.shape == (5, 4)
    np.testing.assert_array_equal(host(t), x.T)


# --- JAX ---------------------------------------------------------------------------


def test_b07_jax_gpu_inputs(jax):
    m = cuda_add()
    x, y = _add_inputs(30)
    out = m([jax_gpu_array(jax, x), jax_gpu_array(jax, y)])[0]
    np.testing.assert_allclose(host(out), x + y, rtol=1e-6)


def test_b01_transposed_jax_gpu_input(jax):
    m = cuda_add()
    x, y = _add_inputs(31, shape=(3, 2))
    out = m([jax_gpu_array(jax, x).T, jax_gpu_array(jax, y).T])[0]
    np.testing.assert_allclose(host(out), x.T + y.T, rtol=1e-6)


def test_b04_planned_gpu_input_is_read_in_place_once_its_address_repeats(torch):
    # A planned input on the method's GPU is copied into planned memory the
    # first time its address is seen and read in place from then on (no
    # copy per call, and a stable CUDA-graph key for changing addresses);
    # pterun never writes it.
    p = program("scale_256")
    assert p.method_meta("forward").input_tensor_meta(0).is_memory_planned
    m = p.load_method("forward", device="cuda:0")
    base = rng(20).standard_normal((256, 256)).astype(np.float32)
    x = torch.from_numpy(base.copy()).cuda()
    before = stat("device_to_device_copies")
    for _ in range(4):
        np.testing.assert_allclose(host(m([x])[0]), base * 2 + 1, rtol=1e-6)
    assert stat("device_to_device_copies") - before == 1
    x.mul_(3)  # the caller changes its memory: the next call reads the new values
    np.testing.assert_allclose(host(m([x])[0]), base * 6 + 1, rtol=1e-6)
    y = x + 1  # another address: copied, then back to x
    np.testing.assert_allclose(host(m([y])[0]), base * 6 + 3, rtol=1e-5)
    np.testing.assert_allclose(host(m([x])[0]), base * 6 + 1, rtol=1e-6)
    np.testing.assert_array_equal(x.cpu().numpy(), (torch.from_numpy(base) * 3).numpy())
    # Installed in place, then the caller drops its tensor: kept alive.
    m.set_inputs([x])
    kept = weakref.ref(x)
    del x
    collect()
    assert kept() is not None
    m.execute()
    np.testing.assert_allclose(host(m.get_outputs()[0]), base * 6 + 1, rtol=1e-6)
    m.set_inputs([y])  # let go of it
    collect()
    assert kept() is None


def test_b05_dynamic_gpu_input_used_in_place_then_a_larger_one(torch):
    # An input read in place keeps its bound: a larger shape within the
    # bound still fits afterwards.
    m = program("dynamic_mlp").load_method("forward", device="cuda:0")
    small = torch.from_numpy(call_inputs("dynamic_mlp", 3)[0].copy()).cuda()
    for _ in range(3):
        np.testing.assert_allclose(host(m([small])[0]), call_outputs("dynamic_mlp", 3)[0],
                                   rtol=1e-4, atol=1e-5)
    for k in (1, 2, 3, 0):
        x = torch.from_numpy(call_inputs("dynamic_mlp", k)[0].copy()).cuda()
        np.testing.assert_allclose(host(m([x])[0]), call_outputs("dynamic_mlp", k)[0],
                                   rtol=1e-4, atol=1e-5)
