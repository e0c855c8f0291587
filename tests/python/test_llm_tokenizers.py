"""The three tokenizer formats pterun.llm reads, each built offline here: a HF
byte-level BPE trained with `tokenizers`, a SentencePiece model trained with
`sentencepiece`, and a tiktoken file written by hand. Expected values come
from the libraries themselves; the incremental text stream must give the
same text as decoding everything at once."""

import base64

import pytest

from llm_util import TOKENIZER_JSON, pte, requires, requires_hf
from pterun.llm import TextLLMRunner, load_tokenizer
from pterun.llm.text_stream import TextStream

CORPUS = [
    "Once upon a time there was a little robot who liked to count numbers.",
    "The quick brown fox jumps over the lazy dog.",
    "Caf\u00e9 na\u00efve \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u2713 emoji \U0001f600.",
]
SAMPLES = ["Once upon a time", "the lazy robot", "\u65e5\u672c\u8a9e \u2713\U0001f600 caf\u00e9!",
           "  spaces  and\nnewlines\t", "<|end_of_text|> as text"]


@pytest.fixture(scope="module")
def hf_path(tmp_path_factory):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS * 10, trainer)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def sp_path(tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    import io

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 20), model_writer=model, vocab_size=360,
        model_type="bpe", byte_fallback=True, character_coverage=1.0, minloglevel=2)
    path = tmp_path_factory.mktemp("sp") / "tokenizer.model"
    path.write_bytes(model.getvalue())
    return path


@pytest.fixture(scope="module")
def tiktoken_path(tmp_path_factory):
    """Every byte, then merges whose parts have lower ranks."""
    tokens = [bytes([b]) for b in range(256)]
    for merge in (b"on", b"ce", b"On", b"Once", b" u", b"up", b" up", b" upon", b" t", b"im",
                  b" tim", b" time", b"th", b"the", b" the"):
        tokens.append(merge)
    lines = [f"{base64.b64encode(t).decode()} {rank}" for rank, t in enumerate(tokens)]
    path = tmp_path_factory.mktemp("tiktoken") / "tokenizer.model"
    path.write_text("\n".join(lines) + "\n")
    return path


def library_decode(kind, path, ids):
    """The library's own decode, as an independent expectation."""
    if kind == "hf":
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path)).decode(ids, skip_special_tokens=False)
    if kind == "sentencepiece":
        import sentencepiece

        return sentencepiece.SentencePieceProcessor(model_file=str(path)).decode(ids)
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    enc = tiktoken.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=load_tiktoken_bpe(str(path)),
                            special_tokens={})
    return enc.decode(ids, errors="replace")


FORMATS = [
    pytest.param("hf", marks=requires("tokenizers")),
    pytest.param("sentencepiece", marks=requires("sentencepiece")),
    pytest.param("tiktoken", marks=requires("tiktoken", "pytorch_tokenizers")),
]


class _Paths:
    """path_of[kind]: the tokenizer file of one format, built on first use."""

    def __init__(self, request):
        self._request = request

    def __getitem__(self, kind):
        name = {"hf": "hf_path", "sentencepiece": "sp_path", "tiktoken": "tiktoken_path"}[kind]
        return self._request.getfixturevalue(name)


@pytest.fixture
def path_of(request):
    return _Paths(request)


@pytest.mark.parametrize("kind", FORMATS)
def test_format_is_detected_and_round_trips(kind, path_of):
    tok = load_tokenizer(path_of[kind])
    assert tok.kind == kind
    for text in SAMPLES:
        ids = tok.encode(text)
        assert ids and all(0 <= i < tok.vocab_size for i in ids)
        decoded = tok.decode(ids)
        if kind == "sentencepiece":  # NFKC normalisation and whitespace folding
            assert decoded.split() == library_decode(kind, path_of[kind], ids).split()
        else:
            assert decoded == text
    assert tok.bos_id is not None and tok.eos_id is not None and tok.bos_id != tok.eos_id
    # Ids outside the vocabulary decode to nothing instead of raising.
    assert tok.decode([tok.vocab_size, tok.vocab_size + 5]) == ""


@requires("tiktoken", "pytorch_tokenizers")
def test_tiktoken_uses_llama3_special_tokens(tiktoken_path):
    tok = load_tokenizer(tiktoken_path)
    base = 256 + 15
    assert (tok.bos_id, tok.eos_id, tok.vocab_size) == (base, base + 1, base + 256)
    assert tok.decode([tok.bos_id]) == "<|begin_of_text|>"
    # Special-token text in a prompt stays text.
    assert tok.bos_id not in tok.encode("<|begin_of_text|>")
    # Merges apply inside the pattern's pieces: "Once", " upon", " a", " time".
    assert tok.encode("Once upon a time") == [259, 263, 32, 97, 267]


@pytest.mark.parametrize("kind", FORMATS)
def test_stream_pieces_join_to_the_full_decode(kind, path_of):
    """Token by token, multi-byte characters split across tokens included."""
    tok = load_tokenizer(path_of[kind])
    prompt = tok.encode("Once upon")
    for text in SAMPLES:
        new = tok.encode(" " + text)
        stream = TextStream(tok, prompt, ())
        pieces = [stream.add(t) for t in new] + [stream.finish()]
        assert not any("\ufffd" in p for p in pieces)
        whole = tok.decode(prompt + new)
        assert "".join(pieces) == whole[len(tok.decode(prompt)):]


@pytest.mark.parametrize("kind", FORMATS)
def test_stop_strings_hold_back_partial_matches(kind, path_of):
    tok = load_tokenizer(path_of[kind])
    new = tok.encode(" the lazy robot liked numbers")
    full = tok.decode(new)
    stream = TextStream(tok, [], ("robot", "zzz"))
    pieces = []
    for t in new:
        pieces.append(stream.add(t))
        assert "rob" not in "".join(pieces)  # never shown before it is known
        if stream.stopped:
            break
    pieces.append(stream.finish())
    assert stream.stopped
    assert "".join(pieces) == full[:full.find("robot")]


@pytest.mark.parametrize("kind", FORMATS)
def test_generation_with_each_format(kind, path_of):
    """The model's ids beyond a smaller tokenizer decode to nothing; text
    and stream agree, and greedy text is reproducible."""
    r = TextLLMRunner(pte("kv"), path_of[kind])
    opts = dict(temperature=0, max_new_tokens=20, echo=False)
    text = r.generate("Once upon a time", **opts)
    tokens = r.context[-20:]
    assert text == "".join(r.stream("Once upon a time", **opts))
    known = [t for t in tokens if t < r.tokenizer.vocab_size and t not in r.eos_ids]
    if kind != "sentencepiece":
        assert text == r.tokenizer.decode(known)


@requires_hf
def test_hf_names_from_tokenizer_config(tmp_path):
    import json
    import shutil

    shutil.copy(TOKENIZER_JSON, tmp_path / "tokenizer.json")
    assert load_tokenizer(tmp_path / "tokenizer.json").eos_id == 1  # guessed: <|end_of_text|>
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": {"content": "<|end_of_text|>"}, "eos_token": "<|begin_of_text|>"}))
    tok = load_tokenizer(tmp_path / "tokenizer.json")
    assert (tok.bos_id, tok.eos_id) == (1, 0)


@requires("pytorch_tokenizers", "tokenizers")
def test_unreadable_tokenizers_raise(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_tokenizer(tmp_path / "missing.model")
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\x00\x01not a tokenizer\xff" * 10)
    with pytest.raises(ValueError, match="neither a SentencePiece nor a tiktoken"):
        load_tokenizer(bad)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{")
    with pytest.raises(ValueError, match="not a readable tokenizer.json"):
        load_tokenizer(bad_json)
