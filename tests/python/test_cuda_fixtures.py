"""Every fixture (the XNNPACK-delegated one included) runs on cuda:0 and
matches the outputs torch computed at export time, with host inputs
uploaded (docs/python-api.md, B7) and results on the GPU. Skipped without a GPU; a fixture that
uses an operator without a CUDA kernel is skipped naming it (B23)."""

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_names, fixture_paths
from cuda_util import host, needs_cuda

pytestmark = needs_cuda

SKIP: dict = {}

# GPU kernels sum in other orders than torch's CPU kernels: float32 gets a
# little more room than on the CPU.
TOLERANCE = {
    "float32": (1e-4, 1e-4),
    "float64": (1e-9, 1e-9),
    "float16": (4e-3, 4e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}


def bf16_bits_to_float(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_input(arrays, spec):
    if spec["kind"] == "None":
        return None
    value = arrays[spec["key"]]
    if spec["kind"] == "Tensor":
        if spec["dtype"] == "bfloat16":
            return pterun.Tensor.from_host(value, "cuda:0", dtype="bfloat16")
        return value
    return value.item()


def check_output(got, spec, expected_arrays, where):
    if spec["kind"] == "None":
        assert got is None, where
        return
    expected = expected_arrays[spec["key"]]
    if spec["kind"] != "Tensor":
        assert got == pytest.approx(expected.item()), where
        return
    assert isinstance(got, pterun.Tensor), where
    assert got.device == "cuda:0", where
    assert got.dtype_name == spec["dtype"], where
    actual = host(got)
    if spec["dtype"] == "bfloat16":
        expected = bf16_bits_to_float(expected)
    assert actual.shape == expected.shape, where
    if spec["dtype"] in TOLERANCE:
        rtol, atol = TOLERANCE[spec["dtype"]]
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def load(program, name):
    try:
        return program.load_method(name, device="cuda:0")
    except NotImplementedError as e:
        pytest.skip(f"no CUDA kernel: {e}")


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_runs_on_cuda_and_matches_exporter(manifest, name):
    if name in SKIP:
        pytest.skip(SKIP[name])
    entry = manifest["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    program = pterun.load_program(pte, data=ptd)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    methods = {}
    for k, call in enumerate(entry["calls"]):
        method_name = call["method"]
        if method_name not in methods:
            methods[method_name] = load(program, method_name)
            assert methods[method_name].device == "cuda:0"
        inputs = [as_input(arrays, spec) for spec in call["inputs"]]
        outputs = methods[method_name](inputs)
        assert len(outputs) == len(call["outputs"])
        for i, (got, spec) in enumerate(zip(outputs, call["outputs"])):
            check_output(got, spec, arrays, f"{name} call {k} ({method_name}) output {i}")


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_fixture_module_on_cuda_matches_cpu(manifest, name):
    entry = manifest["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    inputs = [as_input(arrays, spec) for spec in entry["calls"][0]["inputs"]]
    cpu = pterun.Module(pte, data=ptd)(inputs)
    try:
        gpu_module = pterun.Module(pte, data=ptd, device="cuda")
        gpu = gpu_module(inputs)
    except NotImplementedError as e:
        pytest.skip(f"no CUDA kernel: {e}")
    assert "cuda:0" in repr(gpu_module)
    for c, g in zip(cpu, gpu):
        assert g.device == "cuda:0"
        np.testing.assert_allclose(host(g), host(c), rtol=1e-4, atol=1e-4)
