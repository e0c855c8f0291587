"""B25 in a CUDA build on a machine without a GPU (CI, this build machine):
CPU methods run, cuda_device_count() is 0, and every way of asking for a GPU
raises RuntimeError saying why. Also device-string checks that need no GPU."""

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from pterun._testing import Out, call_kernel, time_kernel

no_gpu = pytest.mark.skipif(pterun.cuda_device_count() > 0, reason="a GPU is present")


@no_gpu
def test_b25_no_gpu_count_is_zero_and_cpu_runs():
    assert pterun.cuda_device_count() == 0
    m = pterun.load_program(FIXTURES / "add.pte").load_method("forward")
    x = np.ones((2, 3), np.float32)
    out = m([x, x])[0]
    assert out.device == "cpu"
    assert out.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(out.numpy(), x + x)


@no_gpu
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1"])
def test_b25_no_gpu_every_cuda_request_is_runtime_error(device):
    program = pterun.load_program(FIXTURES / "add.pte")
    with pytest.raises(RuntimeError, match="not available"):
        program.load_method("forward", device=device)
    with pytest.raises(RuntimeError, match="not available"):
        pterun.Module(FIXTURES / "add.pte", device=device)
    with pytest.raises(RuntimeError, match="not available"):
        pterun.Tensor.from_host(np.zeros(3, np.float32), device)
    x = np.ones(4, np.float32)
    with pytest.raises(RuntimeError, match="not available"):
        call_kernel("aten::add.out", x, x, 1.0, Out(np.float32, [4]), device=device)
    with pytest.raises(RuntimeError, match="not available"):
        time_kernel("aten::add.out", x, x, 1.0, Out(np.float32, [4]), device=device)


@pytest.mark.parametrize("device", ["gpu", "cuda:", "cuda:x", "CPU", "cuda:-1", "cuda0"])
def test_bad_device_strings_are_value_errors(device):
    with pytest.raises(ValueError):
        pterun.Tensor.from_host(np.zeros(3, np.float32), device)
    with pytest.raises(ValueError):
        pterun.Module(FIXTURES / "add.pte", device=device)
    with pytest.raises(ValueError):
        call_kernel("aten::add.out", np.ones(2, np.float32), np.ones(2, np.float32), 1.0,
                    Out(np.float32, [2]), device=device)


def test_index_beyond_the_gpus_present_is_runtime_error():
    bad = f"cuda:{pterun.cuda_device_count() + 3}"
    program = pterun.load_program(FIXTURES / "add.pte")
    with pytest.raises(RuntimeError):
        program.load_method("forward", device=bad)
    with pytest.raises(RuntimeError):
        pterun.Tensor.from_host(np.zeros(3, np.float32), bad)


def test_call_kernel_and_time_kernel_on_the_cpu():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = call_kernel("aten::add.out", x, x, 2.0, Out(np.float32, [2, 3]), device="cpu")
    np.testing.assert_array_equal(out, x + 2 * x)
    seconds = time_kernel("aten::add.out", x, x, 2.0, Out(np.float32, [2, 3]), device="cpu",
                          iterations=5)
    assert isinstance(seconds, float) and seconds >= 0


def test_call_kernel_unknown_kernel_is_not_implemented():
    with pytest.raises(NotImplementedError):
        call_kernel("aten::no_such_op.out", np.ones(2, np.float32), device="cpu")
