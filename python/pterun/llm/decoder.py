"""One LLM program: its metadata methods and its forward method, called the
way ExecuTorch's LLM exporter lays them out (real-world-programs.md §2).

``forward(tokens [1, S] int64[, input_pos])`` returns logits ``[1, V]`` (the
last token's) or ``[1, S, V]``. With two inputs the program keeps a KV cache
and input_pos is either ``[start_pos]`` (shape [1]) or the positions of the
S tokens (a longer or dynamic shape), as ExecuTorch's runner decides from
the method's metadata. A fixed tokens shape [1, 1] means one token per call.
"""

from __future__ import annotations

import ctypes
from typing import Dict, List, Sequence

import numpy as np

import pterun

# Constant methods the exporter writes (examples/models/llama/export_llama_lib.py).
METADATA_METHODS = (
    "get_max_seq_len", "get_max_context_len", "get_n_layers", "get_vocab_size",
    "use_kv_cache", "use_sdpa_with_kv_cache", "enable_dynamic_shape", "get_bos_id",
    "get_eos_ids",
)
_INDEX_DTYPES = {"int64": np.int64, "int32": np.int32}
_LOGIT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _read_metadata(program) -> Dict[str, object]:
    """Every method without inputs whose outputs are all numbers: its value
    (a list for several outputs, as get_eos_ids)."""
    values: Dict[str, object] = {}
    for name in program.method_names:
        meta = program.method_meta(name)
        if meta.num_inputs != 0 or meta.num_outputs == 0:
            continue
        if any(meta.output_tag(i) not in ("Int", "Bool", "Double") for i in range(meta.num_outputs)):
            continue
        out = program.load_method(name)([])
        values[name] = out if name == "get_eos_ids" or len(out) > 1 else out[0]
    return values


class Decoder:
    """The forward method of an LLM program, on one device."""

    def __init__(self, program, device: str, method: str = "forward") -> None:
        if method not in program.method_names:
            raise ValueError(f"pterun.llm: the program has no method '{method}' "
                             f"(it has {program.method_names})")
        meta = program.method_meta(method)
        self.metadata = _read_metadata(program)
        where = f"pterun.llm: method '{method}'"
        if meta.num_inputs not in (1, 2) or meta.num_outputs < 1:
            raise ValueError(f"{where} takes {meta.num_inputs} inputs and returns "
                             f"{meta.num_outputs} outputs; an LLM program takes tokens [1, S] "
                             "(and input_pos) and returns logits")
        tokens = self._tensor_input(meta, 0, where)
        if len(tokens.sizes) != 2 or tokens.sizes[0] != 1:
            raise ValueError(f"{where}: tokens must be [1, S], the program declares {tokens.sizes}")
        self.token_dtype = _INDEX_DTYPES[tokens.dtype_name]
        # The most tokens one call takes; a fixed shape must be met exactly.
        self.max_tokens_per_call = int(tokens.sizes[1])
        fixed = tokens.shape_dynamism == "static"
        self.use_kv_cache = meta.num_inputs == 2
        if fixed and not (self.use_kv_cache and self.max_tokens_per_call == 1):
            raise NotImplementedError(
                f"{where}: tokens have the fixed shape {tokens.sizes}; pterun.llm runs fixed "
                "shapes only as [1, 1] with a KV cache (one token per call)")
        self.positions_per_token = False
        self.pos_dtype = np.int64
        if self.use_kv_cache:
            pos = self._tensor_input(meta, 1, where)
            self.pos_dtype = _INDEX_DTYPES[pos.dtype_name]
            if len(pos.sizes) != 1:
                raise ValueError(f"{where}: input_pos must have one dimension, not {pos.sizes}")
            # [1]: the start position; otherwise one position per token.
            self.positions_per_token = pos.sizes[0] != 1 or pos.shape_dynamism != "static"
        logits = meta.output_tensor_meta(0) if meta.output_tag(0) == "Tensor" else None
        if logits is None or logits.dtype_name not in _LOGIT_DTYPES or len(logits.sizes) not in (2, 3):
            raise ValueError(f"{where}: output 0 must be float logits [1, V] or [1, S, V]")
        self.vocab_size = int(logits.sizes[-1])
        self._method = program.load_method(method, device=device)
        self.device = self._method.device
        self._one = np.zeros((1, 1), self.token_dtype)  # reused by decode steps
        self._pos = np.zeros(1, self.pos_dtype)

    @staticmethod
    def _tensor_input(meta, i: int, where: str):
        what = f"input {i} ({'tokens' if i == 0 else 'input_pos'})"
        hint = "; an LLM program takes tokens [1, S] (and input_pos [1]) as integers"
        if meta.input_tag(i) != "Tensor":
            raise ValueError(f"{where}: {what} must be a tensor, not {meta.input_tag(i)}{hint}")
        info = meta.input_tensor_meta(i)
        if info.dtype_name not in _INDEX_DTYPES:
            raise ValueError(f"{where}: {what} must be int64 or int32, not {info.dtype_name}{hint}")
        return info

    def forward(self, tokens: Sequence[int], start_pos: int) -> np.ndarray:
        """Runs the tokens at positions start_pos.. (ignored without a KV
        cache) and returns the last token's logits as float32 [V]."""
        if len(tokens) == 1:
            self._one[0, 0] = tokens[0]
            ids = self._one
        else:
            ids = np.asarray(tokens, self.token_dtype).reshape(1, -1)
        if not self.use_kv_cache:
            return self._logits(self._method([ids], clone_outputs=False)[0])
        if self.positions_per_token:
            pos = np.arange(start_pos, start_pos + len(tokens), dtype=self.pos_dtype)
        else:
            self._pos[0] = start_pos
            pos = self._pos
        return self._logits(self._method([ids, pos], clone_outputs=False)[0])

    @staticmethod
    def _logits(t) -> np.ndarray:
        if t.device != "cpu":
            t = t.to_host()
        if t.dtype_name == "bfloat16":
            # NumPy has no bfloat16: take the bits and widen them to float32.
            raw = (ctypes.c_uint16 * (t.nbytes // 2)).from_address(t.data_ptr)
            bits = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32).reshape(t.shape)
        else:
            arr = np.asarray(t)
        row = arr.reshape(-1, arr.shape[-1])[-1]
        return row if row.dtype == np.float32 else row.astype(np.float32)

    def metadata_int(self, name: str, default: int) -> int:
        value = self.metadata.get(name, default)
        return int(value) if isinstance(value, (int, bool, float)) else default

    def eos_ids(self) -> List[int]:
        value = self.metadata.get("get_eos_ids")
        return [int(v) for v in value] if isinstance(value, list) else []


def open_program(model_path, data_path, device: str):
    """The program and its decoder: pterun's exceptions, plus a clear error
    for a file that is not an LLM program."""
    program = pterun.load_program(model_path, data=data_path)
    return program, Decoder(program, device)
