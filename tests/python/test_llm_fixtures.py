"""The LLM fixtures (tests/fixtures/llm/, made by export_llm.py with
ExecuTorch's own llama exporter): every variant (fp32 / bf16 / fp16; no KV
cache, the -kv cache written with index_put + copy_, the custom
update_cache + custom_sdpa ops; quantized embeddings; XNNPACK-delegated
8da4w linears) runs a prefill and 20 decode steps on each device and
matches ExecuTorch's runtime token for token, its logits within the dtype's
precision. A prompt longer than the context
and a position beyond the cache are refused with a clear error (the same
on every device), and the method goes on working afterwards. CUDA cases skip without a GPU."""

import json
from pathlib import Path

import numpy as np
import pytest

import pterun

LLM = Path(__file__).resolve().parents[1] / "fixtures" / "llm"
MANIFEST = json.loads((LLM / "manifest.json").read_text())
VARIANTS = sorted(k for k, v in MANIFEST.items() if "flags" in v)
CUDA = pterun.cuda_device_count() > 0
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no CUDA device"))]

# Relative to the largest logit: float32 differs from ExecuTorch by the order
# of its sums; float16 and bfloat16 by a few units in their last place, each
# rounding carried through two layers.
TOLERANCE = {"fp32": 2e-5, "fp16": 8e-3, "bf16": 4e-2}


def as_float32(t):
    h = t.to_host()
    if h.dtype_name == "bfloat16":
        bits = np.array(pterun.Tensor.from_host(h, "cpu", dtype="uint16").numpy(), copy=True)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return np.array(h.numpy(), dtype=np.float32, copy=True)


def load(name, device):
    return pterun.load_program(str(LLM / f"{name}.pte")).load_method("forward", device=device)


def call_inputs(ref, k, kv):
    inputs = [ref[f"c{k}_tokens"]]
    if kv:
        inputs.append(ref[f"c{k}_pos"])
    return inputs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", VARIANTS)
def test_matches_executorch_token_for_token(name, device):
    entry = MANIFEST[name]
    ref = np.load(LLM / f"{name}.npz")
    method = load(name, device)
    chosen = []
    for k in range(entry["calls"]):
        logits = as_float32(method(call_inputs(ref, k, entry["kv_cache"]))[0])
        want = ref[f"c{k}_logits"]
        assert logits.shape == want.shape, f"call {k}"
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(logits, want, rtol=0, atol=TOLERANCE[entry["dtype"]] * scale,
                                   err_msg=f"{name} on {device}, call {k}")
        chosen.append(int(np.argmax(logits.reshape(-1))))
    assert chosen[:-1] == list(ref["tokens"]), f"{name} on {device}: generated tokens differ"


@pytest.mark.parametrize("device", DEVICES)
def test_greedy_generation_from_own_tokens(device):
    # Decoding from pterun's own choices (not ExecuTorch's inputs) gives the same text.
    ref = np.load(LLM / "llama_sdpa_fp32.npz")
    method = load("llama_sdpa_fp32", device)
    prompt = list(ref["prompt"])
    out = method([np.array([prompt]), np.array([0])])[0]
    tokens, pos = [], len(prompt)
    for _ in range(len(ref["tokens"])):
        tokens.append(int(np.argmax(as_float32(out))))
        out = method([np.array([[tokens[-1]]]), np.array([pos])])[0]
        pos += 1
    assert tokens == list(ref["tokens"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["llama_sdpa_fp32", "llama_kv_fp32", "llama_sdpa_bf16"])
def test_positions_beyond_the_cache_are_refused(name, device):
    context = MANIFEST[name]["context"]
    ref = np.load(LLM / f"{name}.npz")
    method = load(name, device)
    # Tokens [60, 68) do not fit 64 positions. The position is a value the
    # program reads, so the error is the program's (a ValueError) on every
    # device, saying what did not fit.
    with pytest.raises(pterun.ProgramError, match=f"start 60 with 8 .* runs past .*{context}"):
        method([np.full((1, 8), 3, np.int64), np.array([context - 4])])
    with pytest.raises(pterun.ProgramError, match=f"start {context} with 1 .* runs past .*{context}"):
        method([np.array([[3]]), np.array([context])])
    with pytest.raises(pterun.ProgramError, match="start -1 is negative"):
        method([np.array([[3]]), np.array([-1])])
    # The method still works: a fresh prefill matches ExecuTorch's.
    logits = as_float32(method(call_inputs(ref, 0, True))[0])
    want = ref["c0_logits"]
    tol = TOLERANCE[MANIFEST[name]["dtype"]] * float(np.abs(want).max())
    np.testing.assert_allclose(logits, want, rtol=0, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["llama_sdpa_fp32", "llama_fp32"])
def test_prompt_longer_than_the_context_is_refused(name, device):
    entry = MANIFEST[name]
    method = load(name, device)
    tokens = np.ones((1, entry["context"] + 1), np.int64)
    inputs = [tokens, np.array([0])] if entry["kv_cache"] else [tokens]
    with pytest.raises(ValueError, match="bound"):
        method(inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_kv_ops_program(device):
    # llama::sdpa_with_kv_cache.out and update_cache_with_indices.out as
    # torch.export writes them, against ExecuTorch's runtime over 3 calls.
    ref = np.load(LLM / "kv_ops.npz")
    method = load("kv_ops", device)
    for c in range(MANIFEST["kv_ops"]["calls"]):
        inputs = [ref[f"c{c}_in{i}"] for i in range(5)]
        outs = method(inputs)
        for i, got in enumerate(outs):
            np.testing.assert_allclose(as_float32(got), ref[f"c{c}_out{i}"], rtol=1e-5, atol=1e-5,
                                       err_msg=f"call {c} output {i}")


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
@pytest.mark.parametrize("name", ["llama_sdpa_fp32", "llama_kv_fp32", "llama_sdpa_bf16"])
def test_cuda_decode_steps_replay_as_graphs_with_one_wait(name):
    # The positions rewrite leaves no host read of start_pos: every call
    # waits once (B19), and decode steps (one token, a new position each
    # time) replay CUDA graphs captured once per output buffer.
    entry = MANIFEST[name]
    ref = np.load(LLM / f"{name}.npz")
    method = load(name, "cuda")
    launches = pterun.stats()["graph_launches"]
    for k in range(entry["calls"]):
        syncs = pterun.stats()["device_syncs"]
        out = method(call_inputs(ref, k, True))[0]
        assert pterun.stats()["device_syncs"] - syncs == 1, f"call {k}"
        want = ref[f"c{k}_logits"]
        np.testing.assert_allclose(as_float32(out), want, rtol=0,
                                   atol=TOLERANCE[entry["dtype"]] * float(np.abs(want).max()),
                                   err_msg=f"call {k}")
    # 20 decode steps: each of the two output buffers runs once plainly and
    # is captured the second time it comes.
    assert pterun.stats()["graph_launches"] - launches >= entry["calls"] - 1 - 2
