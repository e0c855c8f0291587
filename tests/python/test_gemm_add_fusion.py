"""Residual-add fusion at load (docs/architecture.md, "Load passes"): an
addmm or mm whose result an add.out reads alone (directly or through a
reshape the exporter resolved by planning) runs as one
pterun::gemm_add.out step whose epilogue adds the bias and the residual,
on a device whose products take an addend (CUDA: cuBLASLt's C operand);
PTERUN_FUSE_GEMM_ADD=0 turns the pass off. The outputs stay torch's
(tests/fixtures, expected from torch eager); the CPU, which has no such
kernel, runs the same steps either way."""

import pytest

from fusion_util import DEVICES, check_outputs, fixture_calls

# Residual connections after a product: gpt's two blocks have two each
# (attention and MLP), llama_block's one block two; mlp has none.
FUSED = {"gpt": 4, "llama_block": 2, "mlp": 0}


def run_calls(name, device, monkeypatch, fuse):
    return fixture_calls(name, device, monkeypatch, {"PTERUN_FUSE_GEMM_ADD": "1" if fuse else "0"})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_residual_adds_give_torchs_outputs(name, device, monkeypatch):
    fused, expected, fused_steps = run_calls(name, device, monkeypatch, fuse=True)
    plain, _, plain_steps = run_calls(name, device, monkeypatch, fuse=False)
    check_outputs(fused, expected, plain, f"{name} on {device}")
    saved = FUSED[name] if device != "cpu" else 0
    for f, p in zip(fused_steps, plain_steps):
        assert f == p - saved, f"{name} on {device}: {f} steps fused, {p} without"
