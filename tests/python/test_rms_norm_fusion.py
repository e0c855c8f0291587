"""RMS norm fusion at load (docs/architecture.md, "Loading a method"):
torch's decomposed RMSNorm (x * x or x.pow(2), mean over the last dim,
+ eps, rsqrt, x * r, the weight; in LLM exports also x.float() before and
.type_as(x) after) runs as one pterun::rms_norm.out step on every device;
PTERUN_FUSE_RMS_NORM=0 turns the pass off. Each step rounds as the unfused
instruction does, so on the CPU (whose mean sums in the same order) the
outputs are the unfused run's bit for bit; on CUDA they match within the
sum's rounding."""

import json

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_paths
from cuda_util import host
from fusion_util import DEVICES, check_outputs, fixture_calls

LLM = FIXTURES / "llm"
LLM_MANIFEST = json.loads((LLM / "manifest.json").read_text())
# Norms per call: two in llama_block; two a layer and the last one in the
# two-layer LLM exports.
FIXTURE_NORMS = {"llama_block": 2, "gpt": 0}
LLM_NORMS = 5


def run_calls(name, device, monkeypatch, fuse):
    # The elementwise pass would take some of the same steps either way.
    return fixture_calls(name, device, monkeypatch, {
        "PTERUN_FUSE_RMS_NORM": "1" if fuse else "0", "PTERUN_FUSE_ELEMENTWISE": "0"})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FIXTURE_NORMS))
def test_fused_rms_norm_gives_torchs_outputs_in_fewer_steps(name, device, monkeypatch):
    fused, expected, fused_steps = run_calls(name, device, monkeypatch, fuse=True)
    plain, _, plain_steps = run_calls(name, device, monkeypatch, fuse=False)
    # The CPU sums each mean as mean.out does: the same bits. CUDA's sums in
    # another order, and a unit in the last place of a norm's scale carries
    # through the block.
    check_outputs(fused, expected, plain, f"{name} on {device}",
                  plain_tol=(0, 0) if device == "cpu" else None)
    for f, p in zip(fused_steps, plain_steps):
        # pow, mean, add, rsqrt, mul, mul become one step per norm.
        assert p - f == 5 * FIXTURE_NORMS[name], f"{name} on {device}: {f} steps fused, {p} without"


def bf16_call(device, monkeypatch, fuse):
    """llama_block_bf16's call: (output as float32, expected, kernel steps)."""
    monkeypatch.setenv("PTERUN_FUSE_RMS_NORM", "1" if fuse else "0")
    monkeypatch.setenv("PTERUN_FUSE_ELEMENTWISE", "0")
    entry = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]["llama_block_bf16"]
    pte, ptd = fixture_paths(entry)
    method = pterun.load_program(pte, data=ptd).load_method("forward", device=device,
                                                            cuda_graphs=False)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    call = entry["calls"][0]
    inputs = [pterun.Tensor.from_host(arrays[spec["key"]], device, dtype="bfloat16")
              for spec in call["inputs"]]
    pterun.reset_stats()
    out = method(inputs)[0]
    steps = pterun.stats()["kernel_calls"]
    bits = arrays[call["outputs"][0]["key"]]  # bfloat16 stored as its bits
    return host(out), (bits.astype(np.uint32) << 16).view(np.float32), steps


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_norms_with_an_eps_folded_at_load(device, monkeypatch):
    # The eps of a bfloat16 norm is a float32 constant cast to bfloat16,
    # folded at load into memory of its own (where the plan had put it over
    # the norm's out: the pass compares where the tensors lie).
    fused, want, fused_steps = bf16_call(device, monkeypatch, fuse=True)
    plain, _, plain_steps = bf16_call(device, monkeypatch, fuse=False)
    assert plain_steps - fused_steps == 5 * 2, (fused_steps, plain_steps)
    if device == "cpu":
        np.testing.assert_array_equal(fused, plain)
    else:
        np.testing.assert_allclose(fused, plain, rtol=1.6e-2, atol=1.6e-2)
    np.testing.assert_allclose(fused, want, rtol=2e-2, atol=2e-2)


def llm_call(name, device, monkeypatch, fuse):
    """The first call of an LLM fixture: (logits as float32, kernel steps)."""
    monkeypatch.setenv("PTERUN_FUSE_RMS_NORM", "1" if fuse else "0")
    monkeypatch.setenv("PTERUN_FUSE_ELEMENTWISE", "0")  # it takes some of the same steps
    entry = LLM_MANIFEST[name]
    ref = np.load(LLM / f"{name}.npz")
    method = pterun.load_program(str(LLM / f"{name}.pte")).load_method(
        "forward", device=device, cuda_graphs=False)
    inputs = [ref["c0_tokens"]] + ([ref["c0_pos"]] if entry["kv_cache"] else [])
    pterun.reset_stats()
    out = method(inputs)[0]
    return host(out).astype(np.float32), pterun.stats()["kernel_calls"], ref["c0_logits"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["llama_bf16", "llama_fp16", "llama_fp32", "llama_sdpa_bf16",
                                  "llama_kv_fp32", "llama_xnn_8da4w"])
def test_llm_exports_fuse_every_norm(name, device, monkeypatch):
    fused, fused_steps, want = llm_call(name, device, monkeypatch, fuse=True)
    plain, plain_steps, _ = llm_call(name, device, monkeypatch, fuse=False)
    dtype = LLM_MANIFEST[name]["dtype"]
    # Steps each norm saves: x * x, mean, add, rsqrt, x * r and the weight
    # become one; widened exports drop the casts around them too; the
    # XNNPACK file's expanded norm has one step fewer than the plain
    # float32 export's.
    saved = 4 if name.startswith("llama_xnn") else 5 if dtype == "fp32" else 7
    assert plain_steps - fused_steps == saved * LLM_NORMS, (fused_steps, plain_steps)
    scale = float(np.abs(want).max())
    if device == "cpu":
        np.testing.assert_array_equal(fused, plain, err_msg=f"{name}: fused against unfused")
    else:
        tol = {"fp32": 1e-5, "fp16": 4e-3, "bf16": 2e-2}[dtype]
        np.testing.assert_allclose(fused, plain, rtol=0, atol=tol * scale)
    tol = {"fp32": 2e-5, "fp16": 8e-3, "bf16": 4e-2}[dtype]
    np.testing.assert_allclose(fused, want, rtol=0, atol=tol * scale,
                               err_msg=f"{name} on {device} against ExecuTorch")
