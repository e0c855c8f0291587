"""XNNPACK-delegated programs run: every fixture in tests/fixtures/xnnpack/
(and xnnpack_mlp.pte) matches the outputs of ExecuTorch's own runtime,
which ran the delegate with XNNPACK, within 1e-4 relative for float32; on
the CPU, and on cuda:0 where there is a GPU. Dynamically quantized fully
connected layers (qdint8 inputs) have no CUDA kernel yet: such a graph is
refused at load on a GPU, naming the operator (B23)."""

import json

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from cuda_util import needs_cuda

XNNPACK = FIXTURES / "xnnpack"

# float32 within 1e-4 relative to the largest output (XNNPACK sums in other
# orders and uses its own approximations of exp, tanh, sigmoid ...).
TOLERANCE = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 2e-2}


def xnnpack_manifest():
    with open(XNNPACK / "manifest.json") as f:
        return json.load(f)["fixtures"]


def bf16_bits_to_float(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_input(arrays, spec, device="cpu"):
    value = arrays[spec["key"]]
    if spec["kind"] != "Tensor":
        return value.item()
    if spec["dtype"] == "bfloat16":
        return pterun.Tensor.from_host(value, device, dtype="bfloat16")
    return value


def host_values(tensor, dtype):
    if dtype == "bfloat16":
        return np.asarray(tensor.to_host().numpy(), dtype=np.float32)
    return tensor.to_host().numpy()


def check_outputs(outputs, call, arrays, where):
    assert len(outputs) == len(call["outputs"]), where
    for i, (got, spec) in enumerate(zip(outputs, call["outputs"])):
        expected = arrays[spec["key"]]
        assert isinstance(got, pterun.Tensor), where
        assert got.dtype_name == spec["dtype"], where
        if spec["dtype"] == "bfloat16":
            expected = bf16_bits_to_float(expected)
        actual = host_values(got, spec["dtype"])
        assert actual.shape == expected.shape, f"{where} output {i}"
        if spec["dtype"] in TOLERANCE:
            tol = TOLERANCE[spec["dtype"]]
            scale = max(1.0, float(np.abs(expected).max(initial=0)))
            np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale,
                                       err_msg=f"{where} output {i}")
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=f"{where} output {i}")


def run_fixture(name, entry, device="cpu"):
    program = pterun.load_program(XNNPACK / entry["files"]["pte"])
    arrays = np.load(XNNPACK / entry["files"]["npz"])
    methods = {}
    for k, call in enumerate(entry["calls"]):
        m = call["method"]
        if m not in methods:
            methods[m] = program.load_method(m, device=device)
        inputs = [as_input(arrays, spec, device) for spec in call["inputs"]]
        check_outputs(methods[m](inputs), call, arrays, f"{name} call {k}")


@pytest.mark.parametrize("name", sorted(xnnpack_manifest()))
def test_xnnpack_fixture_matches_executorch(name):
    run_fixture(name, xnnpack_manifest()[name])


@needs_cuda
@pytest.mark.parametrize("name", sorted(xnnpack_manifest()))
def test_xnnpack_fixture_matches_executorch_on_cuda(name):
    """The same file on the GPU: no re-export, the delegate's nodes run as
    pterun's CUDA kernels (CUDA graphs included)."""
    run_fixture(name, xnnpack_manifest()[name], device="cuda:0")


def test_b01_channels_last_and_contiguous_inputs_agree():
    """An XNNPACK graph reads its inputs in memory order: pterun reorders an
    input given in another layout first (B1), so a channels-last input to
    a contiguous method (and the reverse) gives the same results."""
    for name in ("resnet", "ops_channels_last"):
        entry = xnnpack_manifest()[name]
        program = pterun.load_program(XNNPACK / entry["files"]["pte"])
        arrays = np.load(XNNPACK / entry["files"]["npz"])
        method = program.load_method("forward")
        x = arrays["c0_in0"]
        nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        a = method([x])[0].numpy().copy()
        b = method([nhwc])[0].numpy()
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_xnnpack_mlp_matches_torch(manifest):
    entry = manifest["fixtures"]["xnnpack_mlp"]
    program = pterun.load_program(FIXTURES / entry["files"]["pte"])
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    method = program.load_method("forward")
    for k, call in enumerate(entry["calls"]):
        inputs = [as_input(arrays, spec) for spec in call["inputs"]]
        check_outputs(method(inputs), call, arrays, f"xnnpack_mlp call {k}")


def test_delegated_method_reports_the_files_metadata():
    """The expansion is internal: MethodMeta still shows the delegate and the
    file's planned memory."""
    entry = xnnpack_manifest()["mobilenet"]
    program = pterun.load_program(XNNPACK / entry["files"]["pte"])
    meta = program.method_meta("forward")
    assert meta.backends == ("XnnpackBackend",)
    sizes = entry["methods"]["forward"]["memory_planned_buffer_sizes"]
    assert list(meta.memory_planned_buffer_sizes) == sizes


def test_repeated_calls_give_the_same_outputs():
    """B11 for a delegated method: its internal values live in extra planned
    memory that each call rewrites."""
    entry = xnnpack_manifest()["resnet"]
    program = pterun.load_program(XNNPACK / entry["files"]["pte"])
    arrays = np.load(XNNPACK / entry["files"]["npz"])
    method = program.load_method("forward")
    call = entry["calls"][0]
    inputs = [as_input(arrays, spec) for spec in call["inputs"]]
    first = method(inputs)[0].numpy().copy()
    method.execute()
    again = method.get_outputs()[0].numpy()
    np.testing.assert_array_equal(first, again)
