"""GenerationConfig and Stats, named after ExecuTorch's LLM runner's."""

from __future__ import annotations

import dataclasses
import json
from typing import Optional, Tuple


@dataclasses.dataclass
class GenerationConfig:
    """How one generation runs. The first seven fields and their defaults are
    those of ExecuTorch's ``GenerationConfig``; the rest are pterun's.

    max_new_tokens and seq_len take -1 for "as many as the context holds";
    ``resolve_max_new_tokens`` combines them as ExecuTorch does.
    """

    echo: bool = True
    """Start the text (and the stream) with the prompt."""
    max_new_tokens: int = -1
    """New tokens at most, the EOS token included; -1: until the context is full."""
    warming: bool = False
    """A warm-up run: nothing is printed (the CLI's ``--warmup`` uses it)."""
    seq_len: int = -1
    """Total tokens at most (context before the call, prompt and new ones); -1: no limit."""
    temperature: float = 0.8
    """0: greedy (argmax). Above 0: logits / temperature, then top-p sampling."""
    num_bos: int = 0
    """BOS tokens put before the prompt's tokens."""
    num_eos: int = 0
    """EOS tokens put after the prompt's tokens."""
    # pterun's own fields.
    top_p: float = 0.9
    """Nucleus sampling: sample among the most likely tokens whose probabilities
    add up to top_p (ExecuTorch's runner fixes it at 0.9). In (0, 1]."""
    seed: Optional[int] = None
    """Seed of the NumPy generator that samples; None: fresh entropy."""
    stop: Tuple[str, ...] = ()
    """Strings that end the text; the text stops before the first one found."""
    ignore_eos: bool = False
    """Keep going past the program's EOS tokens."""
    prefill_chunk: int = 0
    """Prompt tokens per prefill call; 0: as many as the program takes (the
    smaller of get_max_seq_len and the tokens input's bound)."""

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = (self.stop,)
        self.stop = tuple(self.stop)

    def validate(self) -> None:
        """ValueError for values generation cannot use."""
        if not isinstance(self.max_new_tokens, int) or not (
            self.max_new_tokens == -1 or self.max_new_tokens >= 1
        ):
            raise ValueError(
                f"GenerationConfig: max_new_tokens must be -1 (as many as fit) or at least 1, "
                f"got {self.max_new_tokens!r}"
            )
        if not isinstance(self.seq_len, int) or not (self.seq_len == -1 or self.seq_len >= 1):
            raise ValueError(f"GenerationConfig: seq_len must be -1 or at least 1, got {self.seq_len!r}")
        if not self.temperature >= 0:  # also refuses NaN
            raise ValueError(f"GenerationConfig: temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"GenerationConfig: top_p must be in (0, 1], got {self.top_p!r}")
        if self.num_bos < 0 or self.num_eos < 0:
            raise ValueError("GenerationConfig: num_bos and num_eos must be >= 0")
        if self.prefill_chunk < 0:
            raise ValueError(f"GenerationConfig: prefill_chunk must be >= 0, got {self.prefill_chunk}")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"GenerationConfig: stop must hold non-empty strings, got {self.stop!r}")

    def resolve_max_new_tokens(self, max_context_len: int, num_tokens_occupied: int) -> int:
        """New tokens this generation may make, given the context size and the
        positions already taken (context and prompt): ExecuTorch's rule."""
        room = max_context_len - num_tokens_occupied
        if self.seq_len != -1:
            room = min(self.seq_len, max_context_len) - num_tokens_occupied
        if self.max_new_tokens != -1:
            room = min(room, self.max_new_tokens)
        return max(0, room)

    def with_overrides(self, **overrides) -> "GenerationConfig":
        """A copy with the given fields replaced (None values are ignored)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise TypeError(f"unknown generation option(s) {unknown}; known: {sorted(names)}")
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclasses.dataclass
class Stats:
    """Timings and counts of the last generation, in ExecuTorch's names.

    Times are milliseconds on one monotonic clock (``time.perf_counter``),
    floats rather than ExecuTorch's whole milliseconds, so short runs keep
    their precision. Rates are derived by the properties below.
    """

    SCALING_FACTOR_UNITS_PER_SECOND = 1000
    model_load_start_ms: float = 0.0
    model_load_end_ms: float = 0.0
    inference_start_ms: float = 0.0
    """Before the prompt is encoded."""
    token_encode_end_ms: float = 0.0
    """After the prompt is encoded: prefill starts."""
    prompt_eval_end_ms: float = 0.0
    """After the prefill calls and the first token's sampling."""
    first_token_ms: float = 0.0
    inference_end_ms: float = 0.0
    aggregate_sampling_time_ms: float = 0.0
    aggregate_model_execution_time_ms: float = 0.0
    num_prompt_tokens: int = 0
    """Tokens prefilled (the prompt with its BOS/EOS, and any context token not yet in the cache)."""
    num_generated_tokens: int = 0
    """New tokens, the first (from the prefill) and an EOS included."""
    num_prefill_calls: int = 0
    stop_reason: str = ""
    """Why generation ended: "eos", "stop_string", "max_new_tokens", "context" (the
    context or seq_len is full), "stopped" (stop()), "closed" (the iterator was
    closed early) or "error"."""

    @property
    def prefill_tokens_per_second(self) -> float:
        """Prompt tokens per second over the prefill calls (encoding excluded)."""
        ms = self.prompt_eval_end_ms - self.token_encode_end_ms
        return self.num_prompt_tokens * 1000.0 / ms if ms > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Tokens per second after the first: each costs one decode call."""
        ms = self.inference_end_ms - self.prompt_eval_end_ms
        steps = self.num_generated_tokens - 1
        return steps * 1000.0 / ms if ms > 0 and steps > 0 else 0.0

    @property
    def time_to_first_token_ms(self) -> float:
        return self.first_token_ms - self.inference_start_ms

    def reset(self, all_stats: bool = False) -> None:
        """Zero the counters; the model load times too when all_stats."""
        keep = (self.model_load_start_ms, self.model_load_end_ms)
        for field in dataclasses.fields(self):
            setattr(self, field.name, field.default)
        if not all_stats:
            self.model_load_start_ms, self.model_load_end_ms = keep

    def to_json_string(self) -> str:
        values = dataclasses.asdict(self)
        values["prefill_tokens_per_second"] = self.prefill_tokens_per_second
        values["decode_tokens_per_second"] = self.decode_tokens_per_second
        return json.dumps(values)

    def report(self) -> str:
        """Two lines for people: prefill and decode counts, times and rates."""
        prefill_ms = self.prompt_eval_end_ms - self.token_encode_end_ms
        decode_ms = self.inference_end_ms - self.prompt_eval_end_ms
        return (
            f"prefill: {self.num_prompt_tokens} tokens in {prefill_ms:.2f} ms "
            f"({self.prefill_tokens_per_second:.1f} tokens/s, {self.num_prefill_calls} calls); "
            f"first token after {self.time_to_first_token_ms:.2f} ms\n"
            f"decode: {self.num_generated_tokens} new tokens, "
            f"{max(self.num_generated_tokens - 1, 0)} decode calls in {decode_ms:.2f} ms "
            f"({self.decode_tokens_per_second:.1f} tokens/s); stopped by {self.stop_reason}"
        )
