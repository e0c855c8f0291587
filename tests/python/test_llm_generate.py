"""pterun.llm's generation loop on ExecuTorch's own LLM exports, checked
against ExecuTorch's runtime (token ids and logits saved by
tests/fixtures/export_llm_gen.py). No tokenizer needed: prompts are ids."""

import threading

import numpy as np
import pytest

import pterun
from llm_util import DEVICES, LOGITS, PROGRAMS, REF, expected, generations, prompt_ids, pte
from pterun.llm import GenerationConfig, TextLLMRunner
from pterun.llm.decoder import Decoder

GREEDY = dict(temperature=0, max_new_tokens=20)


@pytest.fixture(scope="module", params=DEVICES)
def device(request):
    return request.param


_runners = {}


def runner(name, device="cpu", **kw):
    """A runner per program and device, shared by the tests (loading is the slow part)."""
    if kw:
        return TextLLMRunner(pte(name), device=device, **kw)
    key = (name, device)
    if key not in _runners:
        _runners[key] = TextLLMRunner(pte(name), device=device)
    return _runners[key]


@pytest.mark.parametrize("name,key", generations())
def test_greedy_tokens_equal_executorch(name, key, device):
    r = runner(name, device)
    got = list(r.generate_tokens(prompt_ids(key), **GREEDY))
    assert got == expected(name, key)
    assert r.stats.num_generated_tokens == 20
    assert r.stats.num_prompt_tokens == len(prompt_ids(key))
    assert r.stats.stop_reason == "max_new_tokens"


@pytest.mark.parametrize("name,key", generations())
def test_logits_match_executorch(name, key, device):
    """Each step's logits, fed the same tokens ExecuTorch was fed."""
    program = pterun.load_program(pte(name))
    d = Decoder(program, device)
    ids = prompt_ids(key)
    new = expected(name, key)
    chunk = 1 if name == "kv_static" else d.max_tokens_per_call
    ref = LOGITS[f"{name}_{key}_logits"]
    if d.use_kv_cache:
        for start in range(0, len(ids), chunk):
            logits = d.forward(ids[start:start + chunk], start).copy()
    else:
        logits = d.forward(ids, 0).copy()
    for step in range(20):
        np.testing.assert_allclose(logits, ref[step], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
        seq = ids + new[:step + 1]
        logits = (d.forward(seq[-1:], len(seq) - 1) if d.use_kv_cache else d.forward(seq, 0)).copy()


def test_metadata_read_from_program():
    r = runner("kv")
    meta = REF["programs"]["kv"]
    assert r.max_seq_len == meta["max_seq_length"] == r.metadata["get_max_seq_len"]
    assert r.max_context_len == meta["max_context_length"]
    assert r.get_max_context_len() == meta["max_context_length"]
    assert r.eos_ids == frozenset(REF["metadata"]["get_eos_ids"])
    assert r.bos_id == REF["metadata"]["get_bos_id"]
    assert r.use_kv_cache and not runner("nokv").use_kv_cache
    assert r.get_vocab_size() == 320
    # Without a KV cache the whole sequence goes into one call: its bound
    # (max_seq_len - 1 tokens) plus the last new token is the context.
    assert runner("nokv").get_max_context_len() == REF["programs"]["nokv"]["max_seq_length"]


@pytest.mark.parametrize("chunk", [1, 3, 7, 31])
def test_chunked_prefill_equals_one_shot(chunk, device):
    r = runner("kv", device)
    ids = prompt_ids("short")
    one_shot = list(r.generate_tokens(ids, **GREEDY))
    assert r.stats.num_prefill_calls == 1
    chunked = list(r.generate_tokens(ids, prefill_chunk=chunk, **GREEDY))
    assert chunked == one_shot == expected("kv", "short")
    assert r.stats.num_prefill_calls == -(-len(ids) // chunk)


def test_prompt_longer_than_max_seq_len_is_prefilled_in_chunks():
    r = runner("kv")
    ids = prompt_ids("long")
    assert len(ids) > r.max_seq_len
    assert list(r.generate_tokens(ids, **GREEDY)) == expected("kv", "long")
    # Chunks of at most the tokens input's bound (max_seq_len - 1 = 31).
    assert r.stats.num_prefill_calls == -(-len(ids) // 31)


@pytest.mark.parametrize("name", PROGRAMS)
def test_eos_stops_generation(name):
    ref = expected(name, "short")
    k = next(i for i in range(4, 20) if ref[i] not in ref[:i])  # first occurrence
    r = runner(name, eos_ids=[ref[k]])
    got = list(r.generate_tokens(prompt_ids("short"), **GREEDY))
    assert got == ref[:k + 1]  # the EOS token is the last one yielded
    assert r.stats.stop_reason == "eos" and r.stats.num_generated_tokens == k + 1
    assert list(r.generate_tokens(prompt_ids("short"), ignore_eos=True, **GREEDY)) == ref


def test_seeded_sampling_is_reproducible(device):
    r = runner("kv", device)
    ids = prompt_ids("short")
    a = list(r.generate_tokens(ids, temperature=1.0, top_p=1.0, seed=7, max_new_tokens=20))
    b = list(r.generate_tokens(ids, temperature=1.0, top_p=1.0, seed=7, max_new_tokens=20))
    c = list(r.generate_tokens(ids, temperature=1.0, top_p=1.0, seed=8, max_new_tokens=20))
    assert a == b
    assert a != c
    assert a != expected("kv", "short")  # temperature 1 does not follow the greedy path


def test_tiny_top_p_equals_greedy():
    r = runner("kv")
    got = list(r.generate_tokens(prompt_ids("short"), temperature=1.5, top_p=1e-9, seed=3,
                                 max_new_tokens=20))
    assert got == expected("kv", "short")


@pytest.mark.parametrize("name", PROGRAMS)
def test_prompt_longer_than_context_is_refused(name):
    r = runner(name)
    cap = r.get_max_context_len()
    with pytest.raises(ValueError, match=r"prompt has \d+ tokens.*context holds"):
        r.generate_tokens([5] * cap)
    with pytest.raises(ValueError, match="context holds"):
        list(r.generate_tokens([5] * (cap + 50), temperature=0))
    # Nothing changed: the next generation is right.
    assert list(r.generate_tokens(prompt_ids("short"), **GREEDY)) == expected(name, "short")


@pytest.mark.parametrize("name", PROGRAMS)
def test_generation_stops_when_the_context_is_full(name):
    r = runner(name)
    ids = prompt_ids("short")
    got = list(r.generate_tokens(ids, temperature=0, ignore_eos=True))  # max_new_tokens=-1
    assert len(got) == r.get_max_context_len() - len(ids)
    assert got[:20] == expected(name, "short")
    assert r.stats.stop_reason == "context"
    # seq_len caps the total the same way, as in ExecuTorch.
    got = list(r.generate_tokens(ids, temperature=0, seq_len=len(ids) + 6))
    assert got == expected(name, "short")[:6]


@pytest.mark.parametrize("name", PROGRAMS)
def test_keep_context_continues_the_sequence(name):
    r = runner(name)
    ref = expected(name, "short")
    first = list(r.generate_tokens(prompt_ids("short"), temperature=0, max_new_tokens=8))
    rest = list(r.generate_tokens([], temperature=0, max_new_tokens=12, keep_context=True))
    assert first + rest == ref
    assert r.context == prompt_ids("short") + ref
    # Without keep_context a new sequence starts.
    assert list(r.generate_tokens(prompt_ids("short"), **GREEDY)) == ref


@pytest.mark.parametrize("name", PROGRAMS)
def test_prefill_then_generate(name):
    r = runner(name)
    ids = prompt_ids("short")
    r.prefill(ids[:5])
    r.prefill(ids[5:])  # a second prefill continues the first
    assert list(r.generate_tokens([], **GREEDY)) == expected(name, "short")
    r.prefill(ids)
    assert list(r.generate_tokens([], **GREEDY)) == expected(name, "short")
    r.reset()
    with pytest.raises(ValueError, match="empty"):
        r.generate_tokens([])


def test_stop_ends_after_the_current_token():
    r = runner("kv")
    got = []
    for token in r.generate_tokens(prompt_ids("short"), **GREEDY):
        got.append(token)
        if len(got) == 4:
            r.stop()
    assert got == expected("kv", "short")[:4]
    assert r.stats.stop_reason == "stopped"


def test_one_generation_at_a_time():
    r = runner("kv")
    first = r.generate_tokens(prompt_ids("short"), **GREEDY)
    next(first)
    with pytest.raises(RuntimeError, match="generation is running"):
        next(r.generate_tokens(prompt_ids("short"), **GREEDY))
    first.close()
    assert r.stats.stop_reason == "closed"
    assert list(r.generate_tokens(prompt_ids("short"), **GREEDY)) == expected("kv", "short")


def test_stats_report_rates():
    r = runner("kv")
    list(r.generate_tokens(prompt_ids("long"), **GREEDY))
    s = r.stats
    assert s.num_prompt_tokens == len(prompt_ids("long")) and s.num_generated_tokens == 20
    assert s.inference_start_ms <= s.token_encode_end_ms <= s.prompt_eval_end_ms <= s.inference_end_ms
    assert s.prefill_tokens_per_second > 0 and s.decode_tokens_per_second > 0
    expect = 19 * 1000 / (s.inference_end_ms - s.prompt_eval_end_ms)
    assert s.decode_tokens_per_second == pytest.approx(expect)
    assert 0 < s.aggregate_model_execution_time_ms <= s.inference_end_ms - s.inference_start_ms
    assert "tokens/s" in s.report() and '"decode_tokens_per_second"' in s.to_json_string()


@pytest.mark.parametrize("options,match", [
    (dict(temperature=-1), "temperature"),
    (dict(top_p=0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(seq_len=0), "seq_len"),
    (dict(prefill_chunk=-2), "prefill_chunk"),
    (dict(stop=("",)), "stop"),
])
def test_bad_options_raise_value_error(options, match):
    with pytest.raises(ValueError, match=match):
        runner("kv").generate_tokens(prompt_ids("short"), **options)


def test_bad_prompts_and_programs():
    r = runner("kv")
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        r.generate_tokens([0, 320])
    with pytest.raises(ValueError, match="needs a tokenizer"):
        r.generate_tokens("text without a tokenizer")
    with pytest.raises(ValueError, match="needs a tokenizer"):
        r.generate("text")
    with pytest.raises(TypeError, match="unknown generation option"):
        r.generate_tokens([0], temprature=0)
    with pytest.raises(ValueError, match="seq_len=3 leaves no room"):
        r.generate_tokens(prompt_ids("short"), seq_len=3)
    from conftest import FIXTURES
    with pytest.raises(ValueError, match="tokens"):
        TextLLMRunner(FIXTURES / "add.pte")
    with pytest.raises(FileNotFoundError):
        TextLLMRunner(FIXTURES / "no_such.pte")


def test_generation_config_resolves_like_executorch():
    # ExecuTorch's GenerationConfig.resolve_max_new_tokens, case by case.
    assert GenerationConfig().resolve_max_new_tokens(128, 10) == 118
    assert GenerationConfig(max_new_tokens=20).resolve_max_new_tokens(128, 10) == 20
    assert GenerationConfig(max_new_tokens=200).resolve_max_new_tokens(128, 10) == 118
    assert GenerationConfig(seq_len=50).resolve_max_new_tokens(128, 10) == 40
    assert GenerationConfig(seq_len=500).resolve_max_new_tokens(128, 10) == 118
    assert GenerationConfig(seq_len=50, max_new_tokens=5).resolve_max_new_tokens(128, 10) == 5
    assert GenerationConfig(seq_len=5).resolve_max_new_tokens(128, 10) == 0


def test_runners_in_two_threads():
    """Separate runners generate in parallel threads without mixing."""
    results = {}

    def work(i):
        r = TextLLMRunner(pte("kv"))
        results[i] = list(r.generate_tokens(prompt_ids("short"), **GREEDY))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] == results[1] == expected("kv", "short")


@pytest.mark.parametrize("device", DEVICES)
def test_half_precision_logits_are_read_as_float32(device):
    x = np.array([[1.5, -2.25, 3.0, 0.0078125]], np.float32)  # exact in bfloat16 and float16
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    bf16 = pterun.Tensor.from_host(bits, device, dtype="bfloat16")
    np.testing.assert_array_equal(Decoder._logits(bf16), x[0])
    f16 = pterun.Tensor.from_host(x.astype(np.float16)[None], device)  # [1, 1, V]: the last row
    np.testing.assert_array_equal(Decoder._logits(f16), x[0])


def test_a_failing_call_resets_and_the_runner_recovers(monkeypatch):
    r = TextLLMRunner(pte("kv"))
    real, calls = r._decoder.forward, []

    def failing(tokens, pos):
        calls.append(pos)
        if len(calls) == 4:
            raise RuntimeError("injected device error")
        return real(tokens, pos)

    monkeypatch.setattr(r._decoder, "forward", failing)
    with pytest.raises(RuntimeError, match="injected"):
        list(r.generate_tokens(prompt_ids("short"), **GREEDY))
    assert r.context == [] and r.stats.stop_reason == "error"
    assert list(r.generate_tokens(prompt_ids("short"), **GREEDY)) == expected("kv", "short")
