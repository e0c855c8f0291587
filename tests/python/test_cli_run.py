"""`pterun run` and `pterun bench`."""

import subprocess

import numpy as np

from conftest import FIXTURES
from test_cli_inspect import pterun_cli


def cli(*args):
    return subprocess.run([pterun_cli(), *map(str, args)], capture_output=True, text=True)


def test_run_with_npz_inputs_writes_outputs(tmp_path):
    out = tmp_path / "out.npz"
    result = cli("run", FIXTURES / "add_mul.pte", "--inputs", FIXTURES / "add_mul.npz",
                 "--keys", "c0_in0,c0_in1", "--output", out)
    assert result.returncode == 0, result.stderr
    assert "output 0: Tensor float32[4, 4]" in result.stdout
    assert "output 1: Tensor float32[4, 4]" in result.stdout
    expected = np.load(FIXTURES / "add_mul.npz")
    got = np.load(out)
    np.testing.assert_allclose(got["output_0"], expected["c0_out0"], rtol=1e-6)
    np.testing.assert_allclose(got["output_1"], expected["c0_out1"], rtol=1e-6)


def test_run_with_npy_inputs_in_any_layout(tmp_path):
    data = np.load(FIXTURES / "add.npz")
    x = np.asfortranarray(data["c0_in0"])  # a column-major .npy file
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", data["c0_in1"])
    out = tmp_path / "out.npz"
    result = cli("run", FIXTURES / "add.pte", "--input", tmp_path / "x.npy",
                 "--input", tmp_path / "y.npy", "--output", out)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(out)["output_0"], data["c0_out0"], rtol=1e-6)


def test_run_reports_bad_inputs(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 3), np.float32))
    result = cli("run", FIXTURES / "add.pte", "--input", tmp_path / "x.npy", "--input",
                 tmp_path / "x.npy")
    assert result.returncode == 1
    assert "input 0 of method 'forward'" in result.stderr


def test_bench_prints_timings():
    result = cli("bench", FIXTURES / "add.pte", "-n", "200")
    assert result.returncode == 0, result.stderr
    for word in ("load", "first call", "median", "p90", "(200 calls)"):
        assert word in result.stdout


def test_run_missing_operator_or_delegate_fails_clearly(tmp_path):
    raw = (FIXTURES / "xnnpack_mlp.pte").read_bytes()
    (tmp_path / "unknown.pte").write_bytes(raw.replace(b"XnnpackBackend", b"UnknownBackend"))
    result = cli("run", tmp_path / "unknown.pte")
    assert result.returncode == 1
    assert "UnknownBackend" in result.stderr


def test_run_an_xnnpack_delegated_program():
    result = cli("run", FIXTURES / "xnnpack_mlp.pte")
    assert result.returncode == 0, result.stderr
    assert "output 0: Tensor float32" in result.stdout
