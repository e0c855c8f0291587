"""pterun.llm's text API (generate, stream, stop strings, echo) with the
fixtures' HF tokenizer.json (a byte-level BPE trained offline by
tests/fixtures/export_llm_gen.py). Expected text comes from the tokenizer
library decoding ExecuTorch's greedy token ids."""

import pytest

from llm_util import DEVICES, PROGRAMS, REF, TOKENIZER_JSON, expected, pte, requires_hf
from pterun.llm import GenerationConfig, TextLLMRunner

pytestmark = requires_hf
PROMPT = REF["prompts"]["short"]["text"]
GREEDY = dict(temperature=0, max_new_tokens=20, num_bos=1, echo=False)

_runners = {}


def runner(name="kv", device="cpu"):
    if (name, device) not in _runners:
        _runners[name, device] = TextLLMRunner(pte(name), TOKENIZER_JSON, device=device)
    return _runners[name, device]


def hf_decode(ids):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(TOKENIZER_JSON)).decode(ids, skip_special_tokens=False)


def test_prompt_encoding_matches_the_exporters():
    r = runner()
    assert r.bos_id == 0
    ids = [r.bos_id] + r.tokenizer.encode(PROMPT)
    assert ids == REF["prompts"]["short"]["ids"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_greedy_text_is_executorchs_tokens_decoded(name):
    r = runner(name)
    text = r.generate(PROMPT, **GREEDY)
    assert text == hf_decode(expected(name, "short"))
    assert r.context[-20:] == expected(name, "short")


@pytest.mark.parametrize("device", DEVICES)
def test_stream_yields_the_text_of_generate(device):
    r = runner("kv", device)
    for options in (GREEDY, dict(GREEDY, temperature=0.9, seed=11, max_new_tokens=40)):
        pieces = list(r.stream(PROMPT, **options))
        assert all(pieces)
        assert "".join(pieces) == r.generate(PROMPT, **options)
    # Pieces come as tokens complete: more than one for 20 tokens.
    assert len(list(r.stream(PROMPT, **GREEDY))) > 3


def test_callbacks_get_the_pieces_and_the_stats():
    r = runner()
    pieces, stats = [], []
    text = r.generate(PROMPT, None, pieces.append, stats.append, **GREEDY)
    assert "".join(pieces) == text and stats == [r.stats]
    assert stats[0].num_generated_tokens == 20


def test_echo_puts_the_prompt_first():
    r = runner()
    cfg = GenerationConfig(temperature=0, max_new_tokens=20, num_bos=1)  # echo: True
    assert r.generate(PROMPT, cfg) == PROMPT + r.generate(PROMPT, cfg, echo=False)
    assert next(iter(r.stream(PROMPT, cfg))) == PROMPT


@pytest.mark.parametrize("name", PROGRAMS)
def test_stop_string_ends_the_text_before_it(name):
    r = runner(name)
    full = r.generate(PROMPT, **GREEDY)
    # A stop string taken from the middle of the text (its first
    # occurrence), and one that never occurs beside it.
    start = len(full) // 2
    stop = full[start:start + 2]
    cut = full.find(stop)
    assert 0 < cut < len(full)
    got = r.generate(PROMPT, stop=(stop, "no such text"), **GREEDY)
    assert got == full[:cut]
    assert r.stats.stop_reason == "stop_string"
    assert r.stats.num_generated_tokens < 20
    assert "".join(r.stream(PROMPT, stop=stop, **GREEDY)) == full[:cut]
    # A stop string that never occurs changes nothing.
    assert r.generate(PROMPT, stop="no such text", **GREEDY) == full


def test_eos_text_is_not_in_the_output():
    r = runner()
    ref = expected("kv", "short")
    k = next(i for i in range(4, 20) if ref[i] not in ref[:i])
    r_eos = TextLLMRunner(pte("kv"), TOKENIZER_JSON, eos_ids=[ref[k]])
    assert r_eos.generate(PROMPT, **GREEDY) == hf_decode(ref[:k])
    assert r_eos.stats.stop_reason == "eos"


def test_prompt_longer_than_the_context_is_refused_with_text():
    r = runner("nokv")
    with pytest.raises(ValueError, match="context holds 64"):
        r.generate(PROMPT * 20, **GREEDY)
    assert r.generate(PROMPT, **GREEDY) == hf_decode(expected("nokv", "short"))


def test_long_prompt_text_through_chunked_prefill():
    r = runner("kv")
    text = r.generate(REF["prompts"]["long"]["text"], **GREEDY)
    assert text == hf_decode(expected("kv", "long"))
    assert r.stats.num_prefill_calls > 1
