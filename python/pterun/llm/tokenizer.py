"""Tokenizers for generation: HF tokenizer.json, tiktoken and SentencePiece models.

The formats are those ExecuTorch's LLM runner reads, through the libraries
`pytorch-tokenizers` (ExecuTorch's tokenizer package, the ``llm`` extra)
installs: HF ``tokenizers``, ``tiktoken`` and ``sentencepiece``. A tiktoken
model gets Llama 3's special tokens and split pattern, as ExecuTorch's own
Tiktoken tokenizer does; they come from pytorch-tokenizers.

Every adapter encodes text without special tokens (the runner adds BOS/EOS
as GenerationConfig says) and decodes ids to text with invalid UTF-8
replaced by U+FFFD, never raising for an id outside its vocabulary (a model
may have more rows than its tokenizer has tokens): such ids decode to "".
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import List, Optional, Sequence

from pterun._logging import logger


class Tokenizer:
    """What the runner needs of a tokenizer. ``kind`` names the format."""

    kind = ""
    vocab_size: int = 0
    bos_id: Optional[int] = None
    eos_id: Optional[int] = None

    def encode(self, text: str) -> List[int]:
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def _known(self, ids: Sequence[int]) -> List[int]:
        return [int(i) for i in ids if 0 <= int(i) < self.vocab_size]

    def __repr__(self) -> str:
        return (f"<pterun.llm tokenizer {self.kind}: {self.vocab_size} tokens, "
                f"bos {self.bos_id}, eos {self.eos_id}>")


def _missing(package: str, what: str) -> ImportError:
    return ImportError(
        f"pterun.llm: reading {what} needs the '{package}' package: "
        f"pip install 'pterun[llm]' (it brings pytorch-tokenizers and what that uses)"
    )


# Special-token names tried when a tokenizer.json comes without a
# tokenizer_config.json that names them: Llama 3, Llama 2 / Mistral, GPT-2 /
# Qwen, Gemma.
_BOS_NAMES = ("<|begin_of_text|>", "<s>", "<|startoftext|>", "<bos>")
_EOS_NAMES = ("<|end_of_text|>", "<|eot_id|>", "</s>", "<|endoftext|>", "<eos>", "<|im_end|>")


class HFTokenizer(Tokenizer):
    """A HuggingFace ``tokenizer.json``, read by HF ``tokenizers``."""

    kind = "hf"

    def __init__(self, path: str) -> None:
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError:
            raise _missing("tokenizers", "a tokenizer.json") from None
        try:
            self._tok = _HF.from_file(path)
        except Exception as e:  # the library raises its own Exception type
            raise ValueError(f"pterun.llm: {path} is not a readable tokenizer.json: {e}") from None
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        bos_name, eos_name = self._config_names(Path(path).with_name("tokenizer_config.json"))
        self.bos_id = self._first_id((bos_name,) if bos_name else _BOS_NAMES)
        self.eos_id = self._first_id((eos_name,) if eos_name else _EOS_NAMES)

    @staticmethod
    def _config_names(config: Path):
        if not config.is_file():
            return None, None
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, None

        def name(entry):
            if isinstance(entry, dict):
                entry = entry.get("content")
            return entry if isinstance(entry, str) else None

        return name(data.get("bos_token")), name(data.get("eos_token"))

    def _first_id(self, names) -> Optional[int]:
        for n in names:
            i = self._tok.token_to_id(n)
            if i is not None:
                return int(i)
        return None

    def encode(self, text: str) -> List[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(self._known(ids), skip_special_tokens=False)


@contextlib.contextmanager
def _quiet_stderr():
    """Silences file descriptor 2: pytorch-tokenizers' C++ part prints a
    registration line there when it is first imported."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class TiktokenTokenizer(Tokenizer):
    """A tiktoken BPE file (base64 token, rank per line) with Llama 3's
    special tokens after the ranks and its split pattern."""

    kind = "tiktoken"

    def __init__(self, path: str) -> None:
        try:
            import tiktoken
            from tiktoken.load import load_tiktoken_bpe

            with _quiet_stderr():
                from pytorch_tokenizers.constants import CL100K_PAT_STR, LLAMA_SPECIAL_TOKENS
        except ImportError:
            raise _missing("pytorch-tokenizers", "a tiktoken model") from None
        try:
            ranks = load_tiktoken_bpe(path)
        except Exception as e:  # binascii, ValueError ...: not this format
            raise ValueError(f"pterun.llm: {path} is not a tiktoken model: {e}") from None
        if not ranks:
            raise ValueError(f"pterun.llm: {path} is not a tiktoken model: no tokens")
        base = max(ranks.values()) + 1
        specials = {name: base + i for i, name in enumerate(LLAMA_SPECIAL_TOKENS)}
        try:
            self._enc = tiktoken.Encoding(name=Path(path).name, pat_str=CL100K_PAT_STR,
                                          mergeable_ranks=ranks, special_tokens=specials)
        except Exception as e:
            raise ValueError(f"pterun.llm: {path} is not a usable tiktoken model: {e}") from None
        self.vocab_size = base + len(specials)
        self._ids = set(ranks.values()) | set(specials.values())  # a file may skip ranks
        self.bos_id = specials["<|begin_of_text|>"]
        self.eos_id = specials["<|end_of_text|>"]

    def encode(self, text: str) -> List[int]:
        # Text that looks like a special token is encoded as ordinary text.
        return list(self._enc.encode(text, disallowed_special=()))

    def decode(self, ids: Sequence[int]) -> str:
        return self._enc.decode([int(i) for i in ids if int(i) in self._ids], errors="replace")


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece ``tokenizer.model`` (Llama 2, Mistral, Gemma ...)."""

    kind = "sentencepiece"

    def __init__(self, path: str) -> None:
        try:
            import sentencepiece
        except ImportError:
            raise _missing("sentencepiece", "a SentencePiece model") from None
        try:
            self._sp = sentencepiece.SentencePieceProcessor(model_file=path)
        except Exception as e:  # RuntimeError / OSError from the library
            raise ValueError(f"pterun.llm: {path} is not a SentencePiece model: {e}") from None
        self.vocab_size = int(self._sp.vocab_size())
        self.bos_id = int(self._sp.bos_id()) if self._sp.bos_id() >= 0 else None
        self.eos_id = int(self._sp.eos_id()) if self._sp.eos_id() >= 0 else None

    def encode(self, text: str) -> List[int]:
        return list(self._sp.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self._sp.decode(self._known(ids))


def load_tokenizer(path) -> Tokenizer:
    """Reads a tokenizer file, choosing the format as ExecuTorch's runner does:
    ``*.json`` is a HF tokenizer; anything else is tried as a SentencePiece
    model, then as a tiktoken file. FileNotFoundError for a missing file,
    ValueError when no format reads it."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"pterun.llm: tokenizer file not found: {path}")
    if path.endswith(".json"):
        tok: Tokenizer = HFTokenizer(path)
    else:
        errors = []
        for cls in (SentencePieceTokenizer, TiktokenTokenizer):
            try:
                tok = cls(path)
                break
            except ValueError as e:
                errors.append(str(e))
        else:
            raise ValueError(
                f"pterun.llm: {path} is neither a SentencePiece nor a tiktoken model "
                f"(a HF tokenizer must be named *.json): " + "; ".join(errors))
    logger.debug("pterun.llm: loaded %r from %s", tok, path)
    return tok
