"""Shared helpers for the CUDA tests (test_cuda_*.py): skip markers, the
producers of GPU arrays (torch, CuPy, JAX; each optional), and expected
values from the fixtures."""

import gc

import numpy as np
import pytest

import pterun

needs_cuda = pytest.mark.skipif(pterun.cuda_device_count() == 0, reason="no CUDA device")
needs_two_gpus = pytest.mark.skipif(pterun.cuda_device_count() < 2, reason="needs 2 GPUs")


def stat(name):
    return pterun.stats()[name]


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


@pytest.fixture
def cupy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("CuPy sees no GPU")
    except Exception as e:  # noqa: BLE001 - any CUDA error means no usable CuPy
        pytest.skip(f"CuPy without a usable GPU: {e}")
    return cupy


@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX without a GPU")
    return jax


def jax_gpu_array(jax, array):
    return jax.device_put(array, jax.devices("gpu")[0])


def jax_ptr(a):
    return a.addressable_data(0).unsafe_buffer_pointer()


def host(t):
    """A NumPy copy of a pterun.Tensor on any device (bfloat16 as float32)."""
    assert isinstance(t, pterun.Tensor)
    h = t.to_host()
    assert h.device == "cpu"
    if h.dtype_name == "bfloat16":
        raw = pterun.Tensor.from_host(h, "cpu", dtype="uint16")
        bits = np.array(raw.numpy(), copy=True)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return np.array(h.numpy(), copy=True)


def collect():
    gc.collect()
    gc.collect()
