"""Quantized XNNPACK-delegated programs (tests/fixtures/xnnpack/q_*, made by
export_quant.py with XNNPACKQuantizer and XnnpackPartitioner) against
ExecuTorch's own runtime, which ran them with XNNPACK.

Static int8 graphs (quantized activations between Convert nodes) must land
within one quantization step of the output: pterun requantizes in float32
where XNNPACK uses its own fixed-point rounding, so a value within rounding
of a half step may go the other way. The step is read off the outputs: all
of them, ExecuTorch's and pterun's, lie on the output's grid (zero point +
k * scale), so where they differ the smallest spacing between any two of
them is at most one step. Dynamically quantized graphs (qdint8 activations)
quantize as XNNPACK does and differ by float rounding only (1e-5 of the
largest output), as do float outputs (`q_mlp_dynamic_per_tensor` delegates
only the weights' dequantization); they have no CUDA kernel yet and are refused on a GPU,
naming the operator. CUDA cases skip without a GPU."""

import json

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from cuda_util import needs_cuda

XNNPACK = FIXTURES / "xnnpack"
MANIFEST = json.loads((XNNPACK / "q_manifest.json").read_text())["fixtures"]


def dynamic(entry):
    return any(v["datatype"] == "qdint8" for graphs in entry["xnnpack"].values()
               for g in graphs for v in g["values"])


def run(name, device):
    entry = MANIFEST[name]
    arrays = np.load(XNNPACK / entry["files"]["npz"])
    method = pterun.load_program(XNNPACK / entry["files"]["pte"]).load_method(
        "forward", device=device)
    got, want = [], []
    for call in entry["calls"]:
        outs = method([arrays[spec["key"]] for spec in call["inputs"]])
        assert len(outs) == len(call["outputs"]) == 1
        got.append(np.asarray(outs[0].to_host().numpy(), dtype=np.float64))
        want.append(arrays[call["outputs"][0]["key"]].astype(np.float64))
        assert got[-1].shape == want[-1].shape
    return got, want


def check(name, got, want):
    diff = max(float(np.abs(g - w).max()) for g, w in zip(got, want))
    scale = max(float(np.abs(w).max()) for w in want)
    if diff <= 1e-5 * scale:
        return  # float rounding (a dynamic graph, or a float output)
    assert not dynamic(MANIFEST[name]), f"{name}: {diff} from ExecuTorch"
    grid = np.unique(np.concatenate([a.ravel() for a in got + want]))
    step = float(np.diff(grid).min()) if grid.size > 1 else 0.0
    assert diff <= step * (1 + 1e-4), f"{name}: {diff} from ExecuTorch, more than a step ({step})"


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_quantized_fixture_matches_executorch(name):
    check(name, *run(name, "cpu"))


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if not dynamic(MANIFEST[n])))
def test_converts_inside_linear_layers_change_nothing(name, monkeypatch):
    # The int8 Converts around a fully connected layer run inside it on the
    # CPU (PTERUN_FUSE_QUANT_IO=0 keeps them apart): the same bytes.
    fused, _ = run(name, "cpu")
    monkeypatch.setenv("PTERUN_FUSE_QUANT_IO", "0")
    apart, _ = run(name, "cpu")
    for f, a in zip(fused, apart):
        np.testing.assert_array_equal(f, a)


@needs_cuda
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_quantized_fixture_on_cuda(name):
    check(name, *run(name, "cuda:0"))


def test_static_graph_keeps_int8_between_its_converts():
    """The static MLP computes on int8: the same outputs with the integer
    kernels as ExecuTorch's XNNPACK, to the bit, at any thread count."""
    got, want = run("q_mlp_static", "cpu")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    before = pterun.get_num_threads()
    pterun.set_num_threads(2)
    try:
        got2, _ = run("q_mlp_static", "cpu")
    finally:
        pterun.set_num_threads(before)
    for a, b in zip(got, got2):
        np.testing.assert_array_equal(a, b)
