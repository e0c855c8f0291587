"""Elementwise fusion at load (docs/architecture.md, "Load passes"): chains
of elementwise operators run as one fused program each, with the outputs
the operators give one by one (bit for bit, on the CPU and on a GPU) and
fewer kernel steps; PTERUN_FUSE_ELEMENTWISE=0 turns the pass off."""

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_paths
from cuda_util import host

# Fixtures with chains the pass fuses, and how many kernel steps a call
# saves at least, on the CPU and on a GPU (the CPU fuses no layout copies
# and recomputes no per-row values, docs/architecture.md).
FUSED = {
    "elementwise_chains": (20, 20),
    "elementwise_chains_dynamic": (15, 15),
    "elementwise_chains_bf16": (15, 15),
    "llama_block": (8, 15),
    "gpt": (0, 10),
    "affine": (1, 1),
}
# Fixtures whose steps the pass leaves as they are.
UNFUSED = ["mlp", "cnn", "hardswish_head", "resnet_like", "mobilenet_like"]

DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.skipif(
    pterun.cuda_device_count() == 0, reason="no CUDA device"))]


def as_input(arrays, spec, device):
    value = arrays[spec["key"]]
    if spec["dtype"] == "bfloat16":
        return pterun.Tensor.from_host(value, device, dtype="bfloat16")
    return value


def to_host(t):
    if isinstance(t, pterun.Tensor):
        if t.device != "cpu":
            return host(t)
        return np.asarray(t.numpy()).astype(np.float32) if t.dtype_name == "bfloat16" else t.numpy()
    return np.asarray(t)


def run_calls(name, device, monkeypatch, fuse):
    """Every call of the fixture's manifest: outputs, and kernel steps run
    per call."""
    if fuse:
        monkeypatch.delenv("PTERUN_FUSE_ELEMENTWISE", raising=False)
    else:
        monkeypatch.setenv("PTERUN_FUSE_ELEMENTWISE", "0")
    # The elementwise pass alone: the attention fusion would take the
    # layout copies and scalings of gpt's and llama_block's attention first,
    # the rotary fusion llama_block's rotary embeddings, the RMS norm
    # fusion its norms, and the residual-add fusion the adds after products.
    for other in ("PTERUN_FUSE_ATTENTION", "PTERUN_FUSE_ROTARY", "PTERUN_FUSE_RMS_NORM",
                  "PTERUN_FUSE_GEMM_ADD"):
        monkeypatch.setenv(other, "0")
    entry = pterun_manifest()["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    method = pterun.load_program(pte, data=ptd).load_method("forward", device=device,
                                                            cuda_graphs=False)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    outs, steps = [], []
    for call in entry["calls"]:
        inputs = [as_input(arrays, spec, device) for spec in call["inputs"]]
        pterun.reset_stats()
        got = method(inputs)
        steps.append(pterun.stats()["kernel_calls"])
        outs.append([to_host(t) for t in got])
    return outs, steps


_MANIFEST = {}


def pterun_manifest():
    if not _MANIFEST:
        import json
        _MANIFEST.update(json.loads((FIXTURES / "manifest.json").read_text()))
    return _MANIFEST


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_chains_give_the_unfused_outputs(name, device, monkeypatch):
    fused, fused_steps = run_calls(name, device, monkeypatch, fuse=True)
    plain, plain_steps = run_calls(name, device, monkeypatch, fuse=False)
    for k, (a, b) in enumerate(zip(fused, plain)):
        for i, (x, y) in enumerate(zip(a, b)):
            assert x.shape == y.shape
            np.testing.assert_array_equal(x, y, err_msg=f"{name} call {k} output {i}")
    saved = FUSED[name][0 if device == "cpu" else 1]
    for f, p in zip(fused_steps, plain_steps):
        assert f <= p - saved, f"{name} on {device}: {f} steps fused, {p} without"


@pytest.mark.parametrize("name", UNFUSED)
def test_nothing_to_fuse_changes_nothing(name, monkeypatch):
    _, fused_steps = run_calls(name, "cpu", monkeypatch, fuse=True)
    _, plain_steps = run_calls(name, "cpu", monkeypatch, fuse=False)
    assert fused_steps == plain_steps
