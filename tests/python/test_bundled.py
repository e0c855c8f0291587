"""Bundled programs (.bpte, written by ExecuTorch's devtools): the program
inside, the test cases, verification with ExecuTorch's tolerances (rtol
1e-5, atol 1e-8; bitwise for integers), and `pterun verify`."""

import io
import subprocess

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from test_cli_inspect import pterun_cli


def bundle(name):
    return pterun.load_bundled_program(FIXTURES / f"{name}.bpte")


def executorch_outputs(name):
    return np.load(FIXTURES / f"{name}.npz")


def test_lists_methods_and_cases(manifest):
    for name, entry in manifest["bundled"].items():
        b = bundle(name)
        assert sorted(b.method_names) == sorted(entry["suites"]), name
        for method, count in entry["suites"].items():
            cases = b.test_cases(method)
            assert [c.index for c in cases] == list(range(count))
            assert all(c.method_name == method for c in cases)
        assert isinstance(b.program, pterun.Program)
        assert set(entry["suites"]) <= set(b.program.method_names)


def test_case_values_are_tensors_and_numbers():
    (case,) = bundle("bundled_scalars").test_cases("forward")[:1]
    x, n, s, flag = case.inputs
    assert isinstance(x, pterun.Tensor) and x.shape == (3,) and x.dtype_name == "float32"
    assert (n, s, flag) == (3, 0.5, True)
    assert type(n) is int and type(s) is float and type(flag) is bool
    (expected,) = case.expected_outputs
    np.testing.assert_allclose(expected.numpy(), x.numpy() * 0.5 + 3, rtol=1e-6)
    # A case without expectations.
    assert bundle("bundled_scalars").test_cases("forward")[1].expected_outputs == []


def test_every_case_passes_where_executorch_passes(manifest):
    for name in ("bundled_add", "bundled_multi"):
        results = bundle(name).verify()
        assert len(results) == sum(manifest["bundled"][name]["suites"].values())
        for r in results:
            assert r.compared and r.passed and bool(r), r
            assert r.message == ""
            assert manifest["bundled"][name]["executorch_verified"][r.method][r.index] is True


def test_outputs_match_executorch_runtime():
    # The outputs of every case equal what ExecuTorch's runtime computed.
    for name in ("bundled_add", "bundled_multi", "bundled_wrong"):
        b, saved = bundle(name), executorch_outputs(name)
        for method in b.method_names:
            m = b.program.load_method(method)
            for case in b.test_cases(method):
                for i, out in enumerate(m(case.inputs)):
                    np.testing.assert_allclose(
                        out.numpy(), saved[f"{method}_c{case.index}_out{i}"], rtol=1e-6, atol=1e-7
                    )


def test_a_wrong_expectation_fails_with_the_default_tolerances():
    results = bundle("bundled_wrong").verify()
    assert [r.passed for r in results] == [True, False, True]
    bad = results[1]
    assert not bad and bad.compared
    assert "output 0: 6 of 6 elements differ (rtol 1e-05, atol 1e-08)" in bad.message
    assert 0.0009 < bad.max_abs_error < 0.0011
    # A looser tolerance accepts it.
    assert all(r.passed for r in bundle("bundled_wrong").verify(atol=1e-2))
    # ExecuTorch's call raises for the failing case and returns outputs for the others.
    b = bundle("bundled_wrong")
    with pytest.raises(RuntimeError, match="case 1 failed verification"):
        b.verify_result_with_bundled_expected_output("forward", 1)
    (out,) = b.verify_result_with_bundled_expected_output("forward", 0)
    np.testing.assert_allclose(out.numpy(), executorch_outputs("bundled_wrong")["forward_c0_out0"])


def test_integer_outputs_compare_bitwise():
    # encode returns int64 b*2+1: verified exactly, and a one-off tolerance
    # cannot make a wrong integer pass.
    results = bundle("bundled_multi").verify(methods=["encode"], rtol=1.0, atol=1.0)
    assert [(r.method, r.index) for r in results] == [("encode", 0), ("encode", 1)]
    assert all(r.passed for r in results)


def test_number_inputs_and_cases_without_expectations():
    results = bundle("bundled_scalars").verify()
    assert [(r.compared, r.passed) for r in results] == [(True, True), (False, True)]


def test_load_program_runs_the_program_inside():
    program = pterun.load_program(FIXTURES / "bundled_add.bpte")
    case = bundle("bundled_add").test_cases("forward")[0]
    (out,) = program.load_method("forward")(case.inputs)
    np.testing.assert_allclose(out.numpy(), case.expected_outputs[0].numpy(), rtol=1e-6)
    # From bytes and a file-like object too, and as a Module.
    data = (FIXTURES / "bundled_add.bpte").read_bytes()
    assert pterun.load_program(data).method_names == ["forward"]
    assert pterun.load_program(io.BytesIO(data)).method_names == ["forward"]
    assert pterun.Module(io.BytesIO(data)).forward(case.inputs)[0].shape == (2, 3)
    assert pterun.load_bundled_program(io.BytesIO(data)).method_names == ["forward"]


def test_unknown_method_and_case():
    b = bundle("bundled_add")
    with pytest.raises(ValueError, match="no test cases for method 'encode'"):
        b.test_cases("encode")
    with pytest.raises(IndexError, match="has 3 test cases, no case 3"):
        b.verify_result_with_bundled_expected_output("forward", 3)


def test_damaged_bundles_raise_program_error():
    data = bytearray((FIXTURES / "bundled_add.bpte").read_bytes())
    with pytest.raises(pterun.ProgramError, match="not a .bpte"):
        pterun.load_bundled_program((FIXTURES / "add.pte").read_bytes())
    with pytest.raises(pterun.ProgramError, match="bundled program"):
        pterun.load_bundled_program(bytes(data[: len(data) // 2]))
    rng = np.random.default_rng(0)
    for _ in range(200):  # flipped bytes: a clean error or a clean load, never a crash
        damaged = bytearray(data)
        for pos in rng.integers(8, len(data), 3):
            damaged[pos] ^= int(rng.integers(1, 256))
        try:
            pterun.load_bundled_program(bytes(damaged)).verify()
        except (pterun.ProgramError, ValueError, TypeError, IndexError, RuntimeError,
                NotImplementedError, MemoryError):
            pass


def verify_cli(*args):
    return subprocess.run([pterun_cli(), "verify", *map(str, args)], capture_output=True, text=True)


def test_cli_verify_prints_each_case():
    result = verify_cli(FIXTURES / "bundled_multi.bpte")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == [  # the file's order
        "encode[0]", "encode[1]", "forward[0]", "forward[1]"]
    assert all("passed" in line for line in lines[:4])
    assert lines[-1].startswith("4 passed, 0 failed")


def test_cli_verify_fails_on_a_wrong_case():
    result = verify_cli(FIXTURES / "bundled_wrong.bpte")
    assert result.returncode == 1
    assert "forward[1]: FAILED: output 0: 6 of 6 elements differ" in result.stdout
    assert "2 passed, 1 failed" in result.stdout
    assert verify_cli(FIXTURES / "bundled_wrong.bpte", "--atol", "0.01").returncode == 0
    scalars = verify_cli(FIXTURES / "bundled_scalars.bpte")
    assert scalars.returncode == 0 and "forward[1]: ran (no expected outputs)" in scalars.stdout
    assert verify_cli(FIXTURES / "add.pte").returncode == 1  # not a bundle
