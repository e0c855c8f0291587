"""What a method takes and gives, read once from its MethodMeta, and the
checks that refuse an input before it is batched with others.

The checks are pterun's own (B5: exact dtype, rank, static shape or
per-dimension bound), made early: a server that joins requests into one
call must know that each request fits on its own, so that one bad request
is refused alone instead of failing everyone's batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

import pterun


class InputError(ValueError):
    """An input that does not fit the method; ``status`` is the HTTP status
    a server answers with (400 unreadable, 404 no such method, 415 unknown
    body type, 422 does not fit the method)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self):  # so that it crosses Ray's process boundaries whole
        return (InputError, (self.status, str(self)))


def numpy_dtype(name: str) -> Optional[np.dtype]:
    """NumPy's dtype for a pterun dtype name; None where NumPy has none
    (bfloat16 without ml_dtypes, quantized and float8 types)."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            return None
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        return None


@dataclass(frozen=True)
class ValueSpec:
    """One input or output: its tag and, for a tensor, dtype and sizes."""

    tag: str  # "Tensor", "Int", "Double", "Bool", "String" or "None"
    dtype_name: Optional[str] = None
    dtype: Optional[np.dtype] = None
    sizes: Tuple[int, ...] = ()
    dynamic: bool = False
    nbytes: int = 0  # of the whole tensor at its sizes (for a dynamic one, its bound)

    @staticmethod
    def of(tag: str, info: Optional[pterun.TensorInfo]) -> "ValueSpec":
        if tag != "Tensor" or info is None:
            return ValueSpec(tag)
        return ValueSpec(tag, info.dtype_name, numpy_dtype(info.dtype_name), tuple(info.sizes),
                         info.shape_dynamism != "static", int(info.nbytes))

    @property
    def row_nbytes(self) -> int:
        """Bytes of one row (dimension 0) at most; 0 for a value without rows."""
        if self.tag != "Tensor" or not self.sizes or self.sizes[0] < 1:
            return 0
        return -(-self.nbytes // self.sizes[0])

    def describe(self) -> dict:
        if self.tag != "Tensor":
            return {"kind": self.tag}
        return {"kind": "Tensor", "dtype": self.dtype_name, "shape": list(self.sizes),
                "dynamic": self.dynamic}


class MethodSignature:
    """A method's inputs and outputs, and whether requests can be joined
    along dimension 0 (every input a dynamic tensor of rank 1 or more and
    every output a tensor)."""

    def __init__(self, meta: pterun.MethodMeta) -> None:
        self.name = meta.name
        self.inputs = [
            ValueSpec.of(meta.input_tag(i),
                         meta.input_tensor_meta(i) if meta.input_tag(i) == "Tensor" else None)
            for i in range(meta.num_inputs)
        ]
        self.outputs = [
            ValueSpec.of(meta.output_tag(i),
                         meta.output_tensor_meta(i) if meta.output_tag(i) == "Tensor" else None)
            for i in range(meta.num_outputs)
        ]
        self.batchable = (
            bool(self.inputs)
            and all(s.tag == "Tensor" and s.dynamic and s.sizes for s in self.inputs)
            and all(s.tag == "Tensor" for s in self.outputs))
        # Most rows one call may take: the smallest bound of dimension 0.
        self.max_rows = min((s.sizes[0] for s in self.inputs if s.sizes), default=0)

    def describe(self) -> dict:
        return {"inputs": [s.describe() for s in self.inputs],
                "outputs": [s.describe() for s in self.outputs],
                "batched": self.batchable}

    def _where(self, i: int) -> str:
        return f"input {i} of method '{self.name}'"

    def check(self, inputs: List[Any]) -> None:
        """Raises InputError (422) when ``inputs`` (arrays for tensors,
        Python values for numbers) do not fit the method."""
        if len(inputs) != len(self.inputs):
            raise InputError(422, f"method '{self.name}' takes {len(self.inputs)} inputs, "
                             f"got {len(inputs)}")
        for i, (spec, value) in enumerate(zip(self.inputs, inputs)):
            if spec.tag == "Tensor":
                self._check_tensor(i, spec, value)

    def _check_tensor(self, i: int, spec: ValueSpec, value: Any) -> None:
        if not isinstance(value, np.ndarray):
            raise InputError(422, f"{self._where(i)}: expected a {spec.dtype_name} tensor, "
                             f"got {type(value).__name__}")
        if spec.dtype is not None and value.dtype != spec.dtype:
            raise InputError(422, f"{self._where(i)}: dtype {value.dtype}, expected "
                             f"{spec.dtype_name} (inputs are never cast)")
        if value.ndim != len(spec.sizes):
            raise InputError(422, f"{self._where(i)}: rank {value.ndim} (shape "
                             f"{list(value.shape)}), expected rank {len(spec.sizes)} (shape "
                             f"{list(spec.sizes)})")
        if not spec.dynamic and tuple(value.shape) != spec.sizes:
            raise InputError(422, f"{self._where(i)}: shape {list(value.shape)}, expected "
                             f"{list(spec.sizes)}")
        for d, (size, bound) in enumerate(zip(value.shape, spec.sizes)):
            if size > bound:
                raise InputError(422, f"{self._where(i)}: shape {list(value.shape)} is over the "
                                 f"bound {list(spec.sizes)} in dimension {d}")
