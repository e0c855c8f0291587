"""Shared by the load-pass tests (test_*_fusion.py): a fixture's calls run
with some passes switched on or off, their outputs, the expected ones and
the kernel steps each call ran."""

import json

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_paths
from cuda_util import host

DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.skipif(
    pterun.cuda_device_count() == 0, reason="no CUDA device"))]


def fixture_calls(name, device, monkeypatch, env):
    """Runs every call of fixture `name`'s manifest on `device` with the
    environment variables `env` set (e.g. {"PTERUN_FUSE_ROTARY": "0"}) and
    without CUDA graphs (so each kernel counts): (outputs as NumPy arrays,
    expected outputs, kernel steps) per call."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    entry = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    method = pterun.load_program(pte, data=ptd).load_method("forward", device=device,
                                                            cuda_graphs=False)
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    outs, expected, steps = [], [], []
    for call in entry["calls"]:
        inputs = [arrays[spec["key"]] for spec in call["inputs"]]
        pterun.reset_stats()
        got = method(inputs)
        steps.append(pterun.stats()["kernel_calls"])
        outs.append([host(t) if device != "cpu" else t.numpy() for t in got])
        expected.append([arrays[spec["key"]] for spec in call["outputs"]])
    return outs, expected, steps


def check_outputs(fused, expected, plain, where, rtol=1e-5, atol=2e-6, plain_tol=None):
    """Every call's fused outputs against the expected ones (torch's) and
    the unfused run's (within `plain_tol`, default the same bound); no NaN
    where torch has none."""
    prtol, patol = plain_tol or (rtol, atol)
    for k, (got, want, unfused) in enumerate(zip(fused, expected, plain)):
        assert len(got) == len(want)
        for i, (x, y, z) in enumerate(zip(got, want, unfused)):
            at = f"{where}, call {k}, output {i}"
            assert x.shape == y.shape, at
            assert np.isnan(x).sum() == np.isnan(y).sum(), at
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=at)
            np.testing.assert_allclose(x, z, rtol=prtol, atol=patol, err_msg=at)
