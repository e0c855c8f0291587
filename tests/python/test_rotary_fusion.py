"""Rotary fusion at load (docs/architecture.md, "Loading a method"): torch's
rotate-half rotary embedding (x * cos + cat(-x[..., h:], x[..., :h]) *
sin: two products, two slices, a negation, a concatenation and the sum)
runs as one pterun::rotary_half.out step on every device;
PTERUN_FUSE_ROTARY=0 turns the pass off. llama_block applies it to its
queries and keys; the outputs stay torch's and the unfused run's, bit for
bit where each step rounds as the kernel does."""

import json

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_paths
from cuda_util import host
from fusion_util import DEVICES, check_outputs, fixture_calls

# Rotary embeddings per call, each seven steps made one; gpt has none.
FUSED = {"llama_block": 2, "gpt": 0}


def run_calls(name, device, monkeypatch, fuse):
    # The attention and elementwise fusions would take some of the same
    # steps either way: off, so that the steps counted are the rotary
    # pass's alone.
    return fixture_calls(name, device, monkeypatch, {
        "PTERUN_FUSE_ROTARY": "1" if fuse else "0", "PTERUN_FUSE_ATTENTION": "0",
        "PTERUN_FUSE_ELEMENTWISE": "0"})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_rotary_gives_torchs_outputs_in_fewer_steps(name, device, monkeypatch):
    fused, expected, fused_steps = run_calls(name, device, monkeypatch, fuse=True)
    plain, _, plain_steps = run_calls(name, device, monkeypatch, fuse=False)
    check_outputs(fused, expected, plain, f"{name} on {device}", plain_tol=(1e-6, 1e-7))
    for f, p in zip(fused_steps, plain_steps):
        # Seven steps become one per embedding.
        assert p - f == 6 * FUSED[name], f"{name} on {device}: {f} steps fused, {p} without"


@pytest.mark.parametrize("device", DEVICES)
def test_rotary_and_the_other_fusions_give_torchs_outputs(device, monkeypatch):
    # With every pass on (the default), as a user loads it.
    monkeypatch.delenv("PTERUN_FUSE_ROTARY", raising=False)
    entry = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]["llama_block"]
    pte, ptd = fixture_paths(entry)
    method = pterun.load_program(pte, data=ptd).load_method("forward", device=device)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    for call in entry["calls"]:
        got = method([arrays[spec["key"]] for spec in call["inputs"]])
        for t, spec in zip(got, call["outputs"]):
            x = host(t) if device != "cpu" else t.numpy()
            np.testing.assert_allclose(x, arrays[spec["key"]], rtol=1e-5, atol=2e-6)
