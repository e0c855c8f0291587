"""Inputs of CUDA methods (B7): host arrays (uploaded), GPU arrays from
torch, CuPy, JAX and pterun (read on the GPU), in any layout (B1); CPU
methods given GPU arrays (copied down). Skipped without a GPU; each
producer's tests skip when it is not installed or has no GPU."""

import numpy as np
import pytest

import pterun
from behaviour_util import method, program, rng
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


def test_b07_torch_input_written_on_a_side_stream_is_waited_for(torch):
    # The producer's pending writes come first: pterun passes stream=1 and
    # waits for it once before the run (B19).
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
    assert stat("device_syncs") - before == 2  # one wait before, one after
    np.testing.assert_array_equal(host(out), np.full(n, 3.0, np.float32))


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
