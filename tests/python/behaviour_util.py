"""Shared helpers for the behaviour tests (test_b*.py, test_interop.py,
test_leak.py): fixture loading, expected values, bfloat16 bit patterns."""

import json

import numpy as np

import pterun
from conftest import FIXTURES

with open(FIXTURES / "manifest.json") as _f:
    MANIFEST = json.load(_f)["fixtures"]

_NPZ = {}


def npz(name):
    """The fixture's saved inputs and expected outputs, as a dict of arrays."""
    if name not in _NPZ:
        with np.load(FIXTURES / f"{name}.npz") as f:
            _NPZ[name] = {k: f[k] for k in f.files}
    return _NPZ[name]


def pte(name):
    return FIXTURES / f"{name}.pte"


def ptd(name):
    entry = MANIFEST[name]["files"]
    return FIXTURES / entry["ptd"] if "ptd" in entry else None


def program(name):
    return pterun.load_program(pte(name), data=ptd(name))


def method(name, method_name="forward"):
    return program(name).load_method(method_name)


def module(name):
    return pterun.Module(pte(name), data=ptd(name))


def call_inputs(name, k):
    """Inputs of call `k` of fixture `name`, as the manifest lists them."""
    arrays = npz(name)
    out = []
    for spec in MANIFEST[name]["calls"][k]["inputs"]:
        if spec["kind"] == "None":
            out.append(None)
        elif spec["kind"] == "Tensor":
            value = arrays[spec["key"]]
            if spec["dtype"] == "bfloat16":
                value = pterun.Tensor.from_host(value, "cpu", dtype="bfloat16")
            out.append(value)
        else:
            out.append(arrays[spec["key"]].item())
    return out


def call_outputs(name, k):
    """Expected outputs of call `k` (bfloat16 as float32 values; None as None)."""
    arrays = npz(name)
    out = []
    for spec in MANIFEST[name]["calls"][k]["outputs"]:
        if spec["kind"] == "None":
            out.append(None)
        elif spec["kind"] == "Tensor":
            value = arrays[spec["key"]]
            if spec["dtype"] == "bfloat16":
                value = bf16_bits_to_float(value)
            out.append(value)
        else:
            out.append(arrays[spec["key"]].item())
    return out


def bf16_bits_to_float(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float_to_bf16_bits(values):
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_tensor_bits(t):
    """The uint16 bit patterns of a CPU bfloat16 pterun.Tensor, without ml_dtypes
    (through NumPy's DLPack import would fail: NumPy has no bfloat16)."""
    assert t.dtype_name == "bfloat16"
    raw = pterun.Tensor.from_host(t, "cpu", dtype="uint16")
    return np.array(raw.numpy(), copy=True)


def as_array(t):
    """A NumPy copy of a pterun.Tensor result (bfloat16 as float32 values)."""
    if t.dtype_name == "bfloat16":
        return bf16_bits_to_float(bf16_tensor_bits(t))
    return np.array(t.numpy(), copy=True)


def assert_close(actual, expected, dtype="float32", where=""):
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-9}
    if isinstance(actual, pterun.Tensor):
        actual = as_array(actual)
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, where
    if dtype in tol:
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(
            actual, expected, rtol=tol[dtype], atol=tol[dtype] * scale, err_msg=where
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def rng(seed=0):
    return np.random.default_rng(seed)

