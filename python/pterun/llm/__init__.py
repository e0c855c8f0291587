"""Text generation with LLM programs exported by ExecuTorch (``pterun.llm``).

    from pterun.llm import TextLLMRunner

    runner = TextLLMRunner("llama.pte", "tokenizer.json")
    print(runner.generate("Once upon a time", max_new_tokens=64, temperature=0))
    for piece in runner.stream("Once upon a time", temperature=0.7, seed=1):
        print(piece, end="", flush=True)
    print(runner.stats.report())

The names follow ExecuTorch's ``executorch.extension.llm.runner``
(``TextLLMRunner``, ``GenerationConfig``, ``Stats``); docs/llm.md maps them.
Tokenizers need the ``llm`` extra: ``pip install 'pterun[llm]'``.
"""

from pterun.llm.config import GenerationConfig, Stats
from pterun.llm.runner import TextLLMRunner
from pterun.llm.sampler import Sampler
from pterun.llm.tokenizer import (
    HFTokenizer,
    SentencePieceTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    load_tokenizer,
)

__all__ = [
    "GenerationConfig",
    "HFTokenizer",
    "Sampler",
    "SentencePieceTokenizer",
    "Stats",
    "TextLLMRunner",
    "TiktokenTokenizer",
    "Tokenizer",
    "load_tokenizer",
]
