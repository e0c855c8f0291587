"""`pterun generate` (the C++ command hands it to `python -m pterun.llm`)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from llm_util import REF, TOKENIZER_JSON, expected, pte, requires_hf

pytestmark = requires_hf
PROMPT = REF["prompts"]["short"]["text"]
GREEDY = ["--temperature", "0", "--max-new-tokens", "20", "--num-bos", "1"]


def pterun_command():
    scripts = Path(sysconfig.get_path("scripts")) / "pterun"
    found = str(scripts) if scripts.exists() else shutil.which("pterun")
    if not found:
        pytest.skip("the pterun command is not installed (or on PATH)")
    return found


def hf_decode(ids):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(TOKENIZER_JSON)).decode(ids)


def generate(*args, via_command=True):
    head = [pterun_command(), "generate"] if via_command else [sys.executable, "-m", "pterun.llm"]
    env = dict(os.environ, PTERUN_PYTHON=sys.executable)  # this interpreter, this pterun
    return subprocess.run(head + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("via_command", [True, False], ids=["pterun", "python-m"])
def test_generate_prints_text_and_rates(via_command):
    result = generate(pte("kv"), "--tokenizer", TOKENIZER_JSON, "--prompt", PROMPT, *GREEDY,
                      via_command=via_command)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PROMPT + hf_decode(expected("kv", "short")) + "\n"
    assert "prefill: 12 tokens" in result.stderr and "decode: 20 new tokens" in result.stderr
    assert "tokens/s" in result.stderr


def test_generate_options_reach_the_runner():
    result = generate(pte("nokv"), "--tokenizer", TOKENIZER_JSON, "--prompt", PROMPT, *GREEDY,
                      "--no-echo", "--stats-json", "--warmup", "--threads", "1",
                      "--max-new-tokens", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout == hf_decode(expected("nokv", "short")[:5]) + "\n"
    stats = json.loads(result.stderr.strip().splitlines()[-1])
    assert stats["num_generated_tokens"] == 5 and stats["stop_reason"] == "max_new_tokens"


def test_generate_help_is_pythons():
    result = generate("--help")
    assert result.returncode == 0
    assert "--max-new-tokens" in result.stdout and "--tokenizer" in result.stdout


def test_generate_errors_are_reported():
    long = generate(pte("nokv"), "--tokenizer", TOKENIZER_JSON, "--prompt", PROMPT * 30, *GREEDY)
    assert long.returncode == 1
    assert "pterun: error (ValueError)" in long.stderr and "context holds 64" in long.stderr
    assert "Traceback" not in long.stderr
    missing = generate("missing.pte", "--tokenizer", TOKENIZER_JSON, "--prompt", "x")
    assert missing.returncode == 2 and "missing.pte" in missing.stderr
    usage = generate(pte("kv"), "--prompt", "x")  # no --tokenizer
    assert usage.returncode == 2 and "--tokenizer" in usage.stderr


def test_command_says_when_python_cannot_start(tmp_path):
    env = dict(os.environ, PTERUN_PYTHON=str(tmp_path / "no-python"))
    result = subprocess.run([pterun_command(), "generate", "--help"], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 1 and "PTERUN_PYTHON" in result.stderr


def test_command_finds_its_python_by_itself():
    """Without PTERUN_PYTHON: the python3 of the environment the command is
    installed in (the wheel's venv under scripts/test-wheel), else PATH's."""
    env = {k: v for k, v in os.environ.items() if k != "PTERUN_PYTHON"}
    result = subprocess.run([pterun_command(), "generate", str(pte("kv")), "--tokenizer",
                             str(TOKENIZER_JSON), "--prompt", PROMPT, *GREEDY, "--no-echo"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == hf_decode(expected("kv", "short")) + "\n"
