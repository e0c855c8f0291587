"""Every fixture runs on CPU and matches the outputs torch computed at
export time (tests/fixtures/*.npz)."""

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_names, fixture_paths

SKIP: dict = {}

# Relative / absolute tolerances by dtype: float32 within 1e-5 relative;
# float16 and bfloat16 within their precision; integers and bools exactly.
TOLERANCE = {
    "float32": (1e-5, 1e-5),
    "float64": (1e-9, 1e-9),
    "float16": (2e-3, 2e-3),
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
            return pterun.Tensor.from_host(value, "cpu", dtype="bfloat16")
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
    assert got.dtype_name == spec["dtype"], where
    if spec["dtype"] == "bfloat16":
        actual = got.numpy().astype(np.float32)  # an ml_dtypes array
        expected = bf16_bits_to_float(expected)
    else:
        actual = got.numpy()
    assert actual.shape == expected.shape, where
    if spec["dtype"] in TOLERANCE:
        rtol, atol = TOLERANCE[spec["dtype"]]
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_runs_and_matches_exporter(manifest, name):
    if name in SKIP:
        pytest.skip(SKIP[name])
    entry = manifest["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    program = pterun.load_program(pte, data=ptd)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    methods = {}
    for k, call in enumerate(entry["calls"]):
        name_m = call["method"]
        if name_m not in methods:
            methods[name_m] = program.load_method(name_m)
        inputs = [as_input(arrays, spec) for spec in call["inputs"]]
        outputs = methods[name_m](inputs)
        assert len(outputs) == len(call["outputs"])
        for i, (got, spec) in enumerate(zip(outputs, call["outputs"])):
            check_output(got, spec, arrays, f"{name} call {k} ({name_m}) output {i}")
