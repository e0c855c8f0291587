"""Turning generated token ids into text pieces as they come.

Two problems: a token may hold part of a character (byte-level BPE splits
UTF-8 sequences), and the spacing of a token may depend on the one before
(SentencePiece drops a leading space at the start of a decode). So each new
piece is the difference between decoding a short window that ends at the
new token and the same window without it, and a piece that ends in an
incomplete character waits for the next token. Stop strings: text that may
be the start of one is held back until it is known not to be.
"""

from __future__ import annotations

from typing import Sequence, Tuple

from pterun.llm.tokenizer import Tokenizer

_CONTEXT_TOKENS = 4  # prompt tokens decoded before the first new one, for its spacing


class TextStream:
    def __init__(self, tokenizer: Tokenizer, context: Sequence[int], stop: Tuple[str, ...]) -> None:
        self._tok = tokenizer
        self._ids = list(context[-_CONTEXT_TOKENS:])
        self._prefix = 0  # window start
        self._read = len(self._ids)  # tokens already turned into text
        self._stop = stop
        self._longest_stop = max((len(s) for s in stop), default=0)
        self._text = ""  # text so far (cut at a stop string)
        self._emitted = 0  # how much of it was handed out
        self.stopped = False  # a stop string was found

    def add(self, token: int) -> str:
        """The text that token makes safe to show ("" when none)."""
        self._ids.append(int(token))
        before = self._tok.decode(self._ids[self._prefix:self._read])
        after = self._tok.decode(self._ids[self._prefix:])
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        self._prefix, self._read = self._read, len(self._ids)
        return self._push(after[len(before):])

    def finish(self) -> str:
        """The rest: pending bytes (as U+FFFD) and text held for stop strings."""
        out = ""
        if not self.stopped and self._read < len(self._ids):
            before = self._tok.decode(self._ids[self._prefix:self._read])
            after = self._tok.decode(self._ids[self._prefix:])
            self._read = len(self._ids)
            out = self._push(after[len(before):])
        return out + self._take(len(self._text))

    @property
    def text(self) -> str:
        return self._text

    def _push(self, piece: str) -> str:
        if self.stopped:
            return ""
        start = max(0, len(self._text) - self._longest_stop + 1)
        self._text += piece
        if not self._stop:
            return self._take(len(self._text))
        found = [i for i in (self._text.find(s, start) for s in self._stop) if i >= 0]
        if found:
            self._text = self._text[: min(found)]
            self.stopped = True
            return self._take(len(self._text))
        return self._take(len(self._text) - self._held_back())

    def _held_back(self) -> int:
        """Length of the longest end of the text that begins a stop string."""
        for n in range(min(self._longest_stop - 1, len(self._text)), 0, -1):
            tail = self._text[-n:]
            if any(s.startswith(tail) for s in self._stop):
                return n
        return 0

    def _take(self, end: int) -> str:
        end = max(end, self._emitted)
        out = self._text[self._emitted:end]
        self._emitted = end
        return out
