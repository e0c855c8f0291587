"""Attention fusion at load (docs/architecture.md, "Load passes"): torch's
decomposed scaled-dot-product attention (layout copies of the queries, keys
and values, two products, the scale, the mask, the softmax or safe softmax,
the copies of the result) runs as one pterun::attention.out step, with
torch's outputs (tests/fixtures, expected from torch eager) and fewer steps;
PTERUN_FUSE_ATTENTION=0 turns the pass off.

attention_forms holds the forms the pass takes (an additive mask with rows
masked whole, more keys than queries, causal, an explicit scale, grouped
keys and values, the result laid out as [B, S, H * D]) and one it must leave
alone: attention written by hand whose probabilities are an output too.
attention_traps holds forms close to those that compute something else
(the mask before the scale, scaled values, reshaped scores)."""

import numpy as np
import pytest

from fusion_util import DEVICES, check_outputs, fixture_calls

# Steps a call saves at least with the pass on: on the CPU, every step of
# each attention but one; on a GPU, where elementwise fusion already joins
# the layout copies and scalings, at least the two products, the softmax
# and a copy per attention.
SAVED = {
    "gpt": (34, 8),            # two attentions
    "llama_block": (13, 4),    # one, with grouped keys and values repeated before it
    "attention_forms": (51, 16),  # four; the fifth is left alone
}


def run_calls(name, device, monkeypatch, fuse):
    return fixture_calls(name, device, monkeypatch, {"PTERUN_FUSE_ATTENTION": "1" if fuse else "0"})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(SAVED))
def test_fused_attention_gives_torchs_outputs_in_fewer_steps(name, device, monkeypatch):
    fused, expected, fused_steps = run_calls(name, device, monkeypatch, fuse=True)
    plain, _, plain_steps = run_calls(name, device, monkeypatch, fuse=False)
    # Rows that may use no key are zeros (the safe softmax), never NaN.
    check_outputs(fused, expected, plain, f"{name} on {device}")
    saved = SAVED[name][0 if device == "cpu" else 1]
    for f, p in zip(fused_steps, plain_steps):
        assert f <= p - saved, f"{name} on {device}: {f} steps fused, {p} without"


def test_rows_masked_whole_are_zeros(monkeypatch):
    # attention_forms' first output: query 2 may use no key.
    fused, expected, _ = run_calls("attention_forms", "cpu", monkeypatch, fuse=True)
    for got, want in zip(fused, expected):
        assert np.all(want[0][:, :, 2] == 0)
        assert np.all(got[0][:, :, 2] == 0)
        assert np.abs(got[0]).sum() > 0


@pytest.mark.parametrize("device", DEVICES)
def test_forms_that_compute_something_else_keep_their_results(device, monkeypatch):
    # attention_traps: the mask added before the scale, the values scaled,
    # the scores reshaped between the products.
    fused, expected, _ = run_calls("attention_traps", device, monkeypatch, fuse=True)
    for k, (got, want) in enumerate(zip(fused, expected)):
        for i, (x, y) in enumerate(zip(got, want)):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=2e-6,
                                       err_msg=f"attention_traps on {device}, call {k}, output {i}")


@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet_like", "mobilenet_like"])
def test_nothing_to_fuse_changes_nothing(name, monkeypatch):
    _, _, fused = run_calls(name, "cpu", monkeypatch, fuse=True)
    _, _, plain = run_calls(name, "cpu", monkeypatch, fuse=False)
    assert fused == plain
