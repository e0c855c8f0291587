"""TextLLMRunner: text generation over a pterun Method, named after ExecuTorch's."""

from __future__ import annotations

import time
from typing import Callable, Iterator, List, Optional, Sequence, Union

import numpy as np

from pterun._logging import logger
from pterun.llm.config import GenerationConfig, Stats
from pterun.llm.decoder import open_program
from pterun.llm.sampler import Sampler
from pterun.llm.text_stream import TextStream
from pterun.llm.tokenizer import Tokenizer, load_tokenizer

Prompt = Union[str, Sequence[int]]


def _now_ms() -> float:
    return time.perf_counter() * 1000.0


class TextLLMRunner:
    """Generates text with an LLM program exported by ExecuTorch.

    ``model_path`` (and ``data_path``, a .ptd) is the program, ``tokenizer_path``
    a HF tokenizer.json, tiktoken or SentencePiece model (or pass a loaded
    ``tokenizer``; with neither, only :meth:`generate_tokens` works). The
    program's metadata methods set the limits (``get_max_seq_len``,
    ``get_max_context_len``), the EOS tokens (``get_eos_ids``, else the
    tokenizer's) and BOS (``get_bos_id``, else the tokenizer's);
    ``eos_ids`` / ``bos_id`` replace them.

    Each generation starts a new sequence, unless ``keep_context=True`` or
    :meth:`prefill` was called since the last one: then it continues after
    the tokens already in the context (ExecuTorch's runner always continues,
    until ``reset()``). One generation runs at a time.
    """

    def __init__(self, model_path, tokenizer_path=None, data_path=None, *, device: str = "cpu",
                 tokenizer: Optional[Tokenizer] = None, eos_ids: Optional[Sequence[int]] = None,
                 bos_id: Optional[int] = None) -> None:
        self.stats = Stats()
        self.stats.model_load_start_ms = _now_ms()
        self._program, self._decoder = open_program(model_path, data_path, device)
        if tokenizer is None and tokenizer_path is not None:
            tokenizer = load_tokenizer(tokenizer_path)
        self.tokenizer = tokenizer
        self.stats.model_load_end_ms = _now_ms()

        d = self._decoder
        self.max_seq_len = d.metadata_int("get_max_seq_len", 128)  # ExecuTorch's default
        self.max_context_len = d.metadata_int("get_max_context_len", self.max_seq_len)
        # Prompt tokens per prefill call, and positions the sequence may take.
        self._chunk_limit = max(1, min(self.max_seq_len, d.max_tokens_per_call))
        if d.use_kv_cache:
            self._capacity = self.max_context_len
        else:  # the whole sequence goes in each call, the last new token need not
            self._capacity = min(self.max_context_len, d.max_tokens_per_call + 1)
        if eos_ids is None:
            eos_ids = d.eos_ids() or ([tokenizer.eos_id] if tokenizer and tokenizer.eos_id is not None else [])
        self.eos_ids = frozenset(int(i) for i in eos_ids)
        if bos_id is None:
            bos_id = d.metadata.get("get_bos_id", tokenizer.bos_id if tokenizer else None)
        self.bos_id = None if bos_id is None else int(bos_id)
        if tokenizer is not None and tokenizer.vocab_size < d.vocab_size:
            logger.warning("pterun.llm: the model has %d logits, the tokenizer %d tokens: ids past the "
                           "tokenizer's decode to nothing", d.vocab_size, tokenizer.vocab_size)
        self._context: List[int] = []  # the sequence so far
        self._cached = 0  # with a KV cache: how many of its tokens the cache holds
        self._continue = False  # prefill() was called: the next generation continues
        self._next_logits: Optional[np.ndarray] = None  # after the last token prefill() fed
        self._stop_requested = False
        self._busy = False

    # -- what the program says ------------------------------------------------

    @property
    def metadata(self) -> dict:
        """The program's metadata methods and their values."""
        return dict(self._decoder.metadata)

    @property
    def use_kv_cache(self) -> bool:
        return self._decoder.use_kv_cache

    @property
    def device(self) -> str:
        return self._decoder.device

    @property
    def context(self) -> List[int]:
        """The token ids of the current sequence (prompts and generated tokens)."""
        return list(self._context)

    def get_vocab_size(self) -> int:
        return int(self._decoder.metadata.get("get_vocab_size", self._decoder.vocab_size))

    def get_max_context_len(self) -> int:
        """Positions a sequence may take: the KV cache's size, or without a
        cache the most tokens one call takes, plus the last new token."""
        return self._capacity

    # -- generation -------------------------------------------------------------

    def generate(self, prompt: Prompt, config: Optional[GenerationConfig] = None,
                 token_callback: Optional[Callable[[str], None]] = None,
                 stats_callback: Optional[Callable[[Stats], None]] = None, *,
                 keep_context: bool = False, **options) -> str:
        """Generates text from ``prompt`` and returns it (after the prompt
        when ``echo``). ``options`` replace fields of ``config``
        (max_new_tokens=, temperature=, top_p=, seed=, stop= ...).
        ``token_callback`` gets each text piece as it comes, ``stats_callback``
        the Stats at the end."""
        pieces = []
        for piece in self.stream(prompt, config, keep_context=keep_context, **options):
            pieces.append(piece)
            if token_callback is not None:
                token_callback(piece)
        if stats_callback is not None:
            stats_callback(self.stats)
        return "".join(pieces)

    def stream(self, prompt: Prompt, config: Optional[GenerationConfig] = None, *,
               keep_context: bool = False, **options) -> Iterator[str]:
        """Like generate(), as an iterator of text pieces: joined, they are
        generate()'s text. Checks the arguments before it returns."""
        cfg = self._config(config, options)
        if self.tokenizer is None:
            raise ValueError("pterun.llm: text generation needs a tokenizer (tokenizer_path= or "
                             "tokenizer=); generate_tokens() works without one")
        start = _now_ms()
        ids = self._encode(prompt, cfg)
        self._check_fits(ids, cfg, keep_context)
        return self._text_pieces(prompt, ids, cfg, keep_context, start)

    def generate_tokens(self, prompt: Prompt, config: Optional[GenerationConfig] = None, *,
                        keep_context: bool = False, **options) -> Iterator[int]:
        """The new token ids as they are sampled, an EOS included. ``prompt``
        is text (needs the tokenizer) or token ids, taken as they are
        (num_bos / num_eos apply to text only). Stop strings do not apply."""
        cfg = self._config(config, options)
        start = _now_ms()
        ids = self._encode(prompt, cfg)
        self._check_fits(ids, cfg, keep_context)
        return self._run(ids, cfg, keep_context, start)

    def prefill(self, prompt: Prompt, config: Optional[GenerationConfig] = None, *,
                keep_context: bool = False) -> None:
        """Puts ``prompt`` into the context without generating (to rebuild a
        conversation, say); the next generation, or prefill, continues after
        it. Like a generation, it starts a new sequence unless keep_context or
        a prefill() came before."""
        cfg = self._config(config, {})
        ids = self._encode(prompt, cfg)
        if not ids:
            raise ValueError("pterun.llm: the prompt is empty")
        self._check_fits(ids, cfg, keep_context)
        self._guard()
        try:
            if not self._continuing(keep_context):
                self._context, self._cached, self._next_logits = [], 0, None
            self._context.extend(ids)
            if self._decoder.use_kv_cache:
                self._next_logits = self._feed_cache(cfg).copy()
            self._continue = True
        except BaseException:
            self.reset()
            raise
        finally:
            self._busy = False

    def stop(self) -> None:
        """Ends the running generation after its current token (from another thread, say)."""
        self._stop_requested = True

    def reset(self) -> None:
        """Forgets the context (the next generation starts at position 0) and the stats."""
        self._context, self._cached, self._continue, self._next_logits = [], 0, False, None
        self.stats.reset()

    # -- inside -----------------------------------------------------------------

    def _config(self, config: Optional[GenerationConfig], options: dict) -> GenerationConfig:
        cfg = (config or GenerationConfig()).with_overrides(**options)
        cfg.validate()
        return cfg

    def _encode(self, prompt: Prompt, cfg: GenerationConfig) -> List[int]:
        if not isinstance(prompt, str):
            ids = [int(i) for i in prompt]
            bad = [i for i in ids if not 0 <= i < self._decoder.vocab_size]
            if bad:
                raise ValueError(f"pterun.llm: prompt token ids {bad[:5]} are outside the model's "
                                 f"vocabulary of {self._decoder.vocab_size}")
            return ids
        if self.tokenizer is None:
            raise ValueError("pterun.llm: a text prompt needs a tokenizer (tokenizer_path=)")
        if cfg.num_bos and self.bos_id is None:
            raise ValueError("pterun.llm: num_bos > 0 but neither the program (get_bos_id) nor "
                             "the tokenizer names a BOS token")
        if cfg.num_eos and not self.eos_ids:
            raise ValueError("pterun.llm: num_eos > 0 but there is no EOS token")
        eos = min(self.eos_ids) if self.eos_ids else 0
        return [self.bos_id] * cfg.num_bos + self.tokenizer.encode(prompt) + [eos] * cfg.num_eos

    def _continuing(self, keep_context: bool) -> bool:
        return keep_context or self._continue

    def _check_fits(self, ids: List[int], cfg: GenerationConfig, keep_context: bool) -> int:
        """How many new tokens may come; ValueError when the prompt does not fit."""
        cont = self._continuing(keep_context)
        before = len(self._context) if cont else 0
        occupied = before + len(ids)
        if self._decoder.use_kv_cache:  # tokens the cache has not seen, or prefill()'s logits
            empty = occupied - (self._cached if cont else 0) == 0 and not (
                cont and self._next_logits is not None)
        else:
            empty = occupied == 0
        if empty:
            raise ValueError("pterun.llm: the prompt is empty")
        if occupied >= self._capacity:
            what = "the KV cache (get_max_context_len)" if self._decoder.use_kv_cache else (
                "what one call of this program without a KV cache takes")
            raise ValueError(
                f"pterun.llm: the prompt has {len(ids)} tokens"
                + (f" after {before} of context" if before else "")
                + f"; the model's context holds {self._capacity} ({what}) and generation needs "
                "one free position: shorten the prompt or export with a larger "
                "--max_context_length")
        room = cfg.resolve_max_new_tokens(self._capacity, occupied)
        if room <= 0:
            raise ValueError(f"pterun.llm: seq_len={cfg.seq_len} leaves no room for new tokens "
                             f"after {occupied} tokens")
        return room

    def _guard(self) -> None:
        if self._busy:
            raise RuntimeError("pterun.llm: a generation is running on this runner; finish or "
                               "close it first")
        self._busy = True

    def _text_pieces(self, prompt, ids, cfg, keep_context, start) -> Iterator[str]:
        context = (self._context if self._continuing(keep_context) else []) + ids
        text = TextStream(self.tokenizer, context, cfg.stop)
        if cfg.echo:
            yield prompt if isinstance(prompt, str) else self.tokenizer.decode(ids)
        tokens = self._run(ids, cfg, keep_context, start)
        try:
            for token in tokens:
                if token in self.eos_ids and not cfg.ignore_eos:
                    continue  # the EOS token ends the text, it is not part of it
                piece = text.add(token)
                if piece:
                    yield piece
                if text.stopped:
                    break
        finally:
            tokens.close()
        if text.stopped:
            self.stats.stop_reason = "stop_string"
        rest = text.finish()
        if rest:
            yield rest

    def _run(self, ids: List[int], cfg: GenerationConfig, keep_context: bool,
             start: float) -> Iterator[int]:
        max_new = self._check_fits(ids, cfg, keep_context)  # again: the state may have moved
        self._guard()
        reason = "closed"
        try:
            if not self._continuing(keep_context):
                self._context, self._cached, self._next_logits = [], 0, None
            self._continue = False
            self._stop_requested = False
            stats = self.stats
            stats.reset()
            stats.inference_start_ms = start
            stats.token_encode_end_ms = _now_ms()
            sampler = Sampler(cfg.temperature, cfg.top_p, cfg.seed)

            self._context.extend(ids)
            logits = self._prefill(cfg)
            token = self._sample(sampler, logits)
            stats.first_token_ms = stats.prompt_eval_end_ms = _now_ms()
            while True:
                self._context.append(token)
                stats.num_generated_tokens += 1
                yield token
                n = stats.num_generated_tokens
                if token in self.eos_ids and not cfg.ignore_eos:
                    reason = "eos"
                elif self._stop_requested:
                    reason = "stopped"
                elif n >= max_new:
                    reason = "max_new_tokens" if n == cfg.max_new_tokens else "context"
                else:
                    token = self._sample(sampler, self._decode_step())
                    continue
                break
        except GeneratorExit:
            raise
        except BaseException:
            self.reset()  # a failed call may have left the cache half-written
            reason = "error"
            raise
        finally:
            self.stats.inference_end_ms = _now_ms()
            self.stats.stop_reason = reason
            self._busy = False

    def _prefill(self, cfg: GenerationConfig) -> np.ndarray:
        """Runs the tokens of the context the model has not seen; the logits after the last."""
        d = self._decoder
        if not d.use_kv_cache:
            self.stats.num_prompt_tokens = len(self._context)
            self.stats.num_prefill_calls = 1
            return self._forward(self._context, 0)
        pending = len(self._context) - self._cached
        self.stats.num_prompt_tokens = pending
        if pending == 0:  # prefill() fed everything: its logits give the first token
            logits, self._next_logits = self._next_logits, None
            return logits
        self._next_logits = None
        return self._feed_cache(cfg)

    def _feed_cache(self, cfg: GenerationConfig) -> np.ndarray:
        chunk = min(cfg.prefill_chunk or self._chunk_limit, self._chunk_limit)
        logits = None
        while self._cached < len(self._context):
            part = self._context[self._cached:self._cached + chunk]
            logits = self._forward(part, self._cached)
            self._cached += len(part)
            self.stats.num_prefill_calls += 1
        return logits

    def _decode_step(self) -> np.ndarray:
        if not self._decoder.use_kv_cache:
            return self._forward(self._context, 0)
        pos = len(self._context) - 1
        logits = self._forward(self._context[pos:], pos)
        self._cached = len(self._context)
        return logits

    def _forward(self, tokens: Sequence[int], pos: int) -> np.ndarray:
        t0 = _now_ms()
        logits = self._decoder.forward(tokens, pos)
        self.stats.aggregate_model_execution_time_ms += _now_ms() - t0
        return logits

    def _sample(self, sampler: Sampler, logits: np.ndarray) -> int:
        t0 = _now_ms()
        token = sampler(logits)
        self.stats.aggregate_sampling_time_ms += _now_ms() - t0
        return token

    def __repr__(self) -> str:
        kind = "KV cache" if self.use_kv_cache else "no KV cache"
        return (f"<pterun.llm.TextLLMRunner on {self.device}: {kind}, max_seq_len "
                f"{self.max_seq_len}, context {self._capacity}, tokenizer {self.tokenizer!r}>")
