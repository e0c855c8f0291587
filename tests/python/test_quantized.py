"""Quantized programs (tests/fixtures/quant, made by export_quant.py): every
PT2E-quantized fixture without a delegate runs on the CPU, and on each GPU,
within one quantization step of ExecuTorch's own runtime, with integer
kernels for the static chains and with the instructions as written
(PTERUN_INTEGER_QUANTIZED=0); damaged quantization parameters in the file
are refused at load with ProgramError naming them, and nothing crashes."""

import json
import math
import struct

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from pterun import _pterun

QUANT = FIXTURES / "quant"
CUDA = pterun.cuda_device_count()
DEVICES = ["cpu"] + [pytest.param(f"cuda:{i}", marks=pytest.mark.skipif(
    i >= CUDA, reason=f"no CUDA device {i}")) for i in range(max(1, CUDA))]

# Static chains that integer kernels compute, per fixture: cnn_static's 3
# convolutions, max pool, residual add, mean and linear; 3 linears per MLP.
# Dynamic quantization keeps its instructions.
INTEGER_CHAINS = {"cnn_static": 7, "mlp_static": 3, "mlp_static_per_tensor": 3,
                  "mlp_dynamic_per_tensor": 0, "mlp_dynamic_per_channel": 0, "per_token": 0,
                  "per_channel_group": 0}


def manifest():
    with open(QUANT / "manifest.json") as f:
        return json.load(f)["fixtures"]


NAMES = sorted(manifest())


def run_fixture(name, device, monkeypatch, integer=True):
    """Runs every call of fixture `name` on `device`; yields (got, expected,
    step, where) per output."""
    if not integer:
        monkeypatch.setenv("PTERUN_INTEGER_QUANTIZED", "0")
    entry = manifest()[name]
    method = pterun.load_program(QUANT / entry["files"]["pte"]).load_method("forward",
                                                                             device=device)
    arrays = np.load(QUANT / entry["files"]["npz"])
    steps = entry.get("output_steps") or [None] * len(entry["calls"][0]["outputs"])
    for k, call in enumerate(entry["calls"]):
        outs = method([arrays[s["key"]] for s in call["inputs"]])
        assert len(outs) == len(call["outputs"])
        for i, (got, spec) in enumerate(zip(outs, call["outputs"])):
            yield got.to_host().numpy(), arrays[spec["key"]], steps[i], f"{name} call {k} out {i}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("integer", [True, False], ids=["integer", "as_written"])
@pytest.mark.parametrize("name", NAMES)
def test_quantized_fixture_within_one_step_of_executorch(name, integer, device, monkeypatch):
    for got, want, step, where in run_fixture(name, device, monkeypatch, integer):
        assert got.shape == want.shape and got.dtype == want.dtype, where
        if got.dtype.kind != "f":
            # Quantized integers: one step of their own.
            np.testing.assert_allclose(got.astype(np.int64), want.astype(np.int64), atol=1,
                                       rtol=0, err_msg=where)
        elif step is not None:
            # A dequantized output: a multiple of its step, at most one away.
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
            assert diff <= step * (1 + 1e-6), f"{where}: {diff / step:.3f} steps from ExecuTorch"
        else:
            # A float op on exactly quantized operands (dynamic quantization).
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=where)


def test_static_quantized_cpu_results_equal_executorch_exactly(monkeypatch):
    # ExecuTorch's arithmetic on these small models leaves no rounding tie
    # that the integer sums resolve differently: every output is identical.
    for name in ("cnn_static", "mlp_static", "mlp_static_per_tensor"):
        for got, want, _, where in run_fixture(name, "cpu", monkeypatch):
            np.testing.assert_array_equal(got, want, err_msg=where)


@pytest.mark.parametrize("name", NAMES)
def test_static_chains_run_on_integer_kernels(name, monkeypatch):
    path = str(QUANT / manifest()[name]["files"]["pte"])
    assert _pterun._testing_quantized_chains(path) == INTEGER_CHAINS[name]
    monkeypatch.setenv("PTERUN_INTEGER_QUANTIZED", "0")
    assert _pterun._testing_quantized_chains(path) == 0


# ---- damaged files ----------------------------------------------------------------------------


def damaged(name, fmt, old, new):
    """The fixture's bytes with every stored `old` (struct format `fmt`)
    replaced by `new`, and how many there were."""
    data = (QUANT / manifest()[name]["files"]["pte"]).read_bytes()
    a, b = struct.pack(fmt, old), struct.pack(fmt, new)
    count = data.count(a)
    assert count >= 1, f"{name}: {old!r} is not stored as {fmt}"
    return data.replace(a, b), count


def load(data):
    return pterun.load_program(data).load_method("forward")


@pytest.mark.parametrize("bad", [0.0, -0.02, math.nan, math.inf, 1e-60])
@pytest.mark.parametrize("name", ["cnn_static", "mlp_static", "mlp_static_per_tensor"])
def test_damaged_scale_is_refused_at_load(name, bad):
    data, _ = damaged(name, "<d", manifest()[name]["damage"]["scale"], bad)
    with pytest.raises(pterun.ProgramError, match=r"instruction \d+: .*quantize_per_tensor.out: "
                       r"scale .* is not a usable quantization scale"):
        load(data)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
@pytest.mark.parametrize("name", ["cnn_static", "mlp_static", "mlp_dynamic_per_channel"])
def test_damaged_weight_scale_is_refused_at_load(name, bad):
    data, _ = damaged(name, "<f", manifest()[name]["damage"]["weight_scale"], bad)
    with pytest.raises(pterun.ProgramError, match=r"dequantize_per_channel.out: scales\[0\] .* "
                       "is not a usable quantization scale"):
        load(data)


@pytest.mark.parametrize("name", ["cnn_static", "mlp_static", "mlp_static_per_tensor"])
def test_damaged_zero_point_is_refused_at_load(name):
    # The zero point's int64 pattern may also be stored for unrelated
    # numbers: damage each copy alone; every load raises or runs, and the
    # quantization's copies are refused by name.
    zp = manifest()[name]["damage"]["zero_point"]
    data = (QUANT / manifest()[name]["files"]["pte"]).read_bytes()
    pattern = struct.pack("<q", zp)
    refused = 0
    at = data.find(pattern)
    while at >= 0:
        bad = data[:at] + struct.pack("<q", 300) + data[at + 8:]
        try:
            method = load(bad)
            arrays = np.load(QUANT / manifest()[name]["files"]["npz"])
            method([arrays["c0_in0"]])
        except pterun.ProgramError as exc:
            refused += "zero_point 300 lies outside the quant range [-128, 127]" in str(exc)
        except (ValueError, IndexError, NotImplementedError, RuntimeError):
            pass
        at = data.find(pattern, at + 1)
    assert refused >= 1


def test_damaged_quant_range_is_refused_at_load():
    # quant_max 127 -> 300 in every instruction that states it.
    data, _ = damaged("mlp_static", "<q", 127, 300)
    with pytest.raises(pterun.ProgramError, match=r"quant range \[-\d+, 300\] exceeds int8"):
        load(data)


MUTANT_CHILD = r"""
import random, struct, sys
import numpy as np
import pterun

pte = open(sys.argv[1], "rb").read()
x = np.load(sys.argv[2])["c0_in0"]
rng = random.Random(int(sys.argv[3]))
loaded = 0
for _ in range(int(sys.argv[4])):
    data = bytearray(pte)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(0, len(data) - 8)
        kind = rng.random()
        if kind < 0.4:
            data[at] ^= 1 << rng.randrange(8)
        elif kind < 0.7:  # a word: a small int, a zero point, a range bound
            struct.pack_into("<q", data, at, rng.choice([0, -1, 127, 128, 255, 300, -129, 2**40]))
        else:  # a scale
            struct.pack_into("<d", data, at, rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e-300]))
    try:
        method = pterun.load_program(bytes(data)).load_method("forward")
    except (pterun.ProgramError, NotImplementedError, MemoryError):
        continue
    except ValueError as exc:  # a damaged method name
        assert "no method named" in str(exc), exc
        continue
    loaded += 1
    try:
        method([x])
    except (ValueError, IndexError, TypeError, RuntimeError, MemoryError):
        pass
print("loaded", loaded)
"""


@pytest.mark.parametrize("name", ["cnn_static", "mlp_static", "mlp_dynamic_per_tensor"])
def test_damaged_quantized_programs_never_crash(name):
    # Mutants in a child process: a crash fails this test, not the session.
    import subprocess
    import sys

    entry = manifest()[name]
    result = subprocess.run(
        [sys.executable, "-c", MUTANT_CHILD, str(QUANT / entry["files"]["pte"]),
         str(QUANT / entry["files"]["npz"]), "7", "150"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("loaded"), result.stdout
