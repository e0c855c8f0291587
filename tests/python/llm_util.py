"""Shared pieces of the pterun.llm tests: the fixtures in tests/fixtures/llm_gen
(made by tests/fixtures/export_llm_gen.py) and ExecuTorch's generations saved
beside them."""

import importlib.util
import json
import os

import numpy as np
import pytest

import pterun
from conftest import FIXTURES

LLM = FIXTURES / "llm_gen"
TOKENIZER_JSON = LLM / "tokenizer.json"
PROGRAMS = ("kv", "kv_static", "nokv")
with open(LLM / "reference.json") as f:
    REF = json.load(f)
LOGITS = dict(np.load(LLM / "reference.npz"))
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    pterun.cuda_device_count() == 0, reason="no CUDA device"))]


def _have(module):
    return importlib.util.find_spec(module) is not None


def requires(*modules):
    """Skips without the tokenizer packages (the `llm` extra), except in CI,
    where they are installed and their absence is a failure."""
    missing = [m for m in modules if not _have(m)]
    return pytest.mark.skipif(bool(missing) and not os.environ.get("CI"),
                              reason=f"needs {missing}: pip install 'pterun[llm]'")


requires_hf = requires("tokenizers")


def pte(name):
    return LLM / f"{name}.pte"


def prompt_ids(key):
    return list(REF["prompts"][key]["ids"])


def expected(name, key):
    return list(REF["programs"][name]["generations"][key])


def generations():
    """(program, prompt) pairs that ExecuTorch generated from."""
    return [(n, k) for n in PROGRAMS for k in REF["programs"][n]["generations"]]
