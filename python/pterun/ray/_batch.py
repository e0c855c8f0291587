"""Batch inference with Ray Data: a callable class for
``Dataset.map_batches`` that runs a method on the rows of each batch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import ray
import ray.data

import pterun
from pterun.ray import _program
from pterun.ray._signature import MethodSignature


class Predictor:
    """Runs one method of a program on Ray Data batches, row for row.

    Ray Data makes one instance per actor, so the program is loaded (and
    its method prepared) once per actor, never per batch. Each call takes
    a batch, a dict of columns (``batch_format="numpy"``), a pandas
    DataFrame or a single NumPy array, and returns a dict of columns.

    Rows are dimension 0: input ``i`` of the method is column
    ``input_columns[i]`` of the batch, and output ``j`` becomes column
    ``output_columns[j]``, one row per input row. A batch larger than the
    method takes (its bound, or its shape for a static input), or than
    ``rows_per_call``, is run in several calls; a static method's last call
    is padded with zero rows, whose results are dropped. Inputs are never
    cast: a column's dtype must be the one the method declares (a TypeError
    otherwise).

    Args:
        program: a path (on storage every node can read), bytes, or an
            object reference from :func:`put_program`.
        method: the method to run.
        input_columns: column per method input, in input order; default
            ``["data"]`` (the column ``ray.data.from_numpy`` makes) for a
            method with one input.
        output_columns: column per method output, in output order (None
            drops that output); default ``["output"]`` for one output,
            else ``output_0``, ``output_1`` ...
        keep_columns: columns of the batch copied to the result unchanged
            (ids, labels): True for every column that is not an input,
            False for none, or a list of names.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"``; default ``"cuda"``
            when Ray gave the actor a GPU (``num_gpus=1``), else ``"cpu"``.
        data: a ``.ptd`` file, given the same ways as ``program``.
        num_threads: pterun's CPU threads in this actor; default the CPUs
            Ray reserved for the actor (at least 1).
        rows_per_call: the most rows one pterun call takes (at most the
            method's bound). Ray Data spends a fixed time on every batch
            (docs/ray.md measures it), so a small, fast model runs best on
            large Ray batches split into calls of the size it runs fastest
            at.
        cuda_graphs, allow_tf32: as ``Program.load_method``.
    """

    def __init__(self, program: _program.ProgramSource, *, method: str = "forward",
                 input_columns: Optional[Sequence[str]] = None,
                 output_columns: Optional[Sequence[Optional[str]]] = None,
                 keep_columns: Union[bool, Sequence[str]] = True, device: Optional[str] = None,
                 data: Optional[_program.ProgramSource] = None, num_threads: Optional[int] = None,
                 rows_per_call: Optional[int] = None, cuda_graphs: bool = True,
                 allow_tf32: bool = False) -> None:
        _program.set_threads(num_threads)
        self._program = _program.load(program, data)
        self.device = _program.choose_device(device)
        self._method = self._program.load_method(method, device=self.device,
                                                 cuda_graphs=cuda_graphs, allow_tf32=allow_tf32)
        self.signature = MethodSignature(self._program.method_meta(method))
        sig = self.signature
        where = f"pterun.ray.Predictor (method '{method}')"
        for i, spec in enumerate(sig.inputs):
            if spec.tag != "Tensor" or not spec.sizes:
                raise ValueError(f"{where}: input {i} is not a tensor with rows ({spec.tag}, "
                                 f"shape {list(spec.sizes)}); only such inputs come from columns")
        for j, spec in enumerate(sig.outputs):
            if spec.tag != "Tensor" or not spec.sizes:
                raise ValueError(f"{where}: output {j} is not a tensor with rows")
        if input_columns is None:
            if len(sig.inputs) != 1:
                raise ValueError(f"{where}: the method takes {len(sig.inputs)} inputs; name a "
                                 "column for each with input_columns=")
            input_columns = ["data"]
        if len(input_columns) != len(sig.inputs):
            raise ValueError(f"{where}: {len(input_columns)} input_columns for "
                             f"{len(sig.inputs)} inputs")
        if output_columns is None:
            output_columns = (["output"] if len(sig.outputs) == 1 else
                              [f"output_{j}" for j in range(len(sig.outputs))])
        if len(output_columns) != len(sig.outputs):
            raise ValueError(f"{where}: {len(output_columns)} output_columns for "
                             f"{len(sig.outputs)} outputs")
        self.input_columns = list(input_columns)
        self.output_columns = list(output_columns)
        self.keep_columns = keep_columns if isinstance(keep_columns, bool) else list(keep_columns)
        self._static = any(not s.dynamic for s in sig.inputs)
        self._chunk = _call_rows(sig, rows_per_call, where)

    def __call__(self, batch: Any) -> Dict[str, np.ndarray]:
        columns = _columns(batch, self.input_columns)
        missing = [c for c in self.input_columns if c not in columns]
        if missing:
            raise KeyError(f"pterun.ray.Predictor: the batch has no column {missing} "
                           f"(it has {sorted(columns)}); map columns with input_columns=")
        outputs = self.run_rows([columns[c] for c in self.input_columns])
        result: Dict[str, np.ndarray] = {}
        if self.keep_columns is True:
            kept = [c for c in columns if c not in self.input_columns]
        else:
            kept = self.keep_columns or []
        for c in kept:
            result[c] = columns[c]
        for name, value in zip(self.output_columns, outputs):
            if name is None:
                continue
            if name in result:
                raise ValueError(f"pterun.ray.Predictor: output column '{name}' is also a kept "
                                 "column; rename it with output_columns= or keep_columns=")
            result[name] = value
        return result

    def run_rows(self, arrays: List[np.ndarray]) -> List[np.ndarray]:
        """The method's outputs for these row-aligned input arrays, one
        output row per input row."""
        rows = len(arrays[0])
        if any(len(a) != rows for a in arrays):
            raise ValueError("pterun.ray.Predictor: input columns of different lengths "
                             f"{[len(a) for a in arrays]}")
        if rows == 0:
            return [np.zeros((0,) + s.sizes[1:], s.dtype) for s in self.signature.outputs]
        pieces: List[List[np.ndarray]] = [[] for _ in self.signature.outputs]
        for start in range(0, rows, self._chunk):
            part = [a[start:start + self._chunk] for a in arrays]
            taken = len(part[0])
            if self._static and taken < self._chunk:
                part = [_pad_rows(a, self._chunk) for a in part]
            for j, value in enumerate(self._method(part)):
                out = value.numpy()  # a view of the result on the host; a copy from a GPU
                if out.ndim == 0 or out.shape[0] != len(part[0]):
                    raise ValueError(
                        f"pterun.ray.Predictor: output {j} of method '{self.signature.name}' has "
                        f"shape {list(out.shape)} for {len(part[0])} input rows; the predictor "
                        "needs one output row per input row")
                pieces[j].append(out[:taken])
        return [p[0] if len(p) == 1 else np.concatenate(p) for p in pieces]


def _columns(batch: Any, input_columns: List[str]) -> Dict[str, np.ndarray]:
    """The batch as a dict of NumPy columns."""
    if isinstance(batch, np.ndarray):
        if len(input_columns) != 1:
            raise TypeError("pterun.ray.Predictor: a bare array batch feeds a method with one "
                            "input; give a dict of columns")
        return {input_columns[0]: batch}
    if isinstance(batch, Mapping):
        return {c: _as_array(v) for c, v in batch.items()}
    if hasattr(batch, "columns") and hasattr(batch, "__getitem__"):  # pandas.DataFrame
        return {c: _as_array(batch[c]) for c in batch.columns}
    raise TypeError(f"pterun.ray.Predictor: a batch must be a dict of columns, a pandas "
                    f"DataFrame or a NumPy array, not {type(batch).__name__} (use "
                    "batch_format='numpy')")


def _as_array(column: Any) -> np.ndarray:
    """A column as one array: rows that are arrays (a pandas column of
    tensors, or Ray's variable-shape tensors) are stacked."""
    values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    if values.dtype == object and len(values) and isinstance(values[0], np.ndarray):
        return np.stack(list(values))
    return values


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    pad = np.zeros((rows - len(a),) + a.shape[1:], a.dtype)
    return np.concatenate([a, pad])


def _call_rows(sig: MethodSignature, rows_per_call: Optional[int], where: str) -> int:
    """Rows of one pterun call: ``rows_per_call`` within the method's bound
    (exactly its rows for a static method), by default the bound."""
    if rows_per_call is None:
        return sig.max_rows
    if rows_per_call < 1:
        raise ValueError(f"{where}: rows_per_call must be at least 1, got {rows_per_call}")
    if any(not s.dynamic for s in sig.inputs) and rows_per_call != sig.max_rows:
        raise ValueError(f"{where}: the method takes exactly {sig.max_rows} rows a call "
                         f"(a static shape), not rows_per_call={rows_per_call}")
    return min(rows_per_call, sig.max_rows)


# predict()'s Ray batches, when not given: rows whose inputs and outputs
# take about BATCH_BYTES, at most BATCH_ROWS (docs/ray.md, "Ray batches and
# pterun calls"), a whole number of pterun calls.
BATCH_BYTES = 16 * 2**20
BATCH_ROWS = 16384
FALLBACK_BATCH_ROWS = 4096  # where the driver cannot read the program
# Ray Data tasks queued at each actor (Ray's default is 2): with 4 the next
# task is ready when one ends, which shortens the actor's idle time between
# tasks (docs/ray.md).
TASKS_IN_FLIGHT = 4


def batch_rows(signature: MethodSignature, rows_per_call: Optional[int] = None) -> int:
    """The rows of a Ray batch that :func:`predict` asks for by default:
    as many as fit in ``BATCH_BYTES`` of the method's inputs and outputs
    (each tensor at its bound), at most ``BATCH_ROWS``, rounded down to a
    whole number of pterun calls of ``rows_per_call`` rows (at least one)."""
    call = _call_rows(signature, rows_per_call, "pterun.ray.predict")
    if call < 1:  # a method without rows, which the Predictor refuses
        return FALLBACK_BATCH_ROWS
    row_bytes = sum(s.row_nbytes for s in signature.inputs + signature.outputs)
    rows = min(BATCH_ROWS, BATCH_BYTES // max(row_bytes, 1))
    return max(call, rows // call * call)


def _signature_here(program: Any, method: str) -> Optional[MethodSignature]:
    """The method's signature, read in this process, or None where the
    program cannot be read here (a path only the cluster's nodes see). Only
    a guess for the batch size: the actors report any real problem with
    the program or the method, in their own words."""
    try:
        return MethodSignature(pterun.load_program(_program.resolve(program)).method_meta(method))
    except Exception:  # noqa: BLE001 - see above
        return None


def predict(dataset: "ray.data.Dataset", program: _program.ProgramSource, *,
            batch_size: Optional[int] = None, concurrency: int = 1,
            num_cpus: Optional[float] = None, num_gpus: Optional[float] = None,
            predictor_class: type = Predictor, **predictor_args: Any) -> "ray.data.Dataset":
    """``dataset.map_batches`` with a :class:`Predictor` on a pool of
    ``concurrency`` actors, each with ``num_cpus`` CPUs and ``num_gpus``
    GPUs (with a GPU the method runs there).

    ``batch_size`` is the rows of one Ray batch (one Predictor call, run in
    pterun calls of ``rows_per_call`` rows). Ray spends a fixed time on
    every batch, so the default is large: as many rows as fill about 16 MiB
    of the method's inputs and outputs (at their bounds), at most 16384, a
    whole number of pterun calls (4096 where this process cannot read the
    program). Batches are handed over without a copy
    (``zero_copy_batch``; the Predictor never writes into them) and the
    Predictor runs on the actor's own thread (``enable_true_multi_threading``,
    one call at a time), which spares Ray a copy of every batch and a
    handover between threads; each actor has 4 tasks queued instead of
    Ray's 2, which shortens its pause between tasks. Program bytes are put into the object store
    once (:func:`put_program`), not sent to each actor.
    ``predictor_class`` is the class the actors run, a subclass of
    :class:`Predictor` (one that adds pre- or post-processing);
    ``predictor_args`` go to its constructor. The result is lazy, as Ray
    Data is."""
    if not (isinstance(predictor_class, type) and issubclass(predictor_class, Predictor)):
        raise TypeError(f"pterun.ray.predict: predictor_class must be pterun.ray.Predictor or "
                        f"a subclass of it, not {predictor_class!r}")
    if isinstance(program, (bytes, bytearray, memoryview)):
        program = _program.put_program(program)
    if batch_size is None:
        signature = _signature_here(program, predictor_args.get("method", "forward"))
        batch_size = (FALLBACK_BATCH_ROWS if signature is None else
                      batch_rows(signature, predictor_args.get("rows_per_call")))
    remote_args: Dict[str, Any] = {}
    if num_cpus is not None:
        remote_args["num_cpus"] = num_cpus
    if num_gpus is not None:
        remote_args["num_gpus"] = num_gpus
    return dataset.map_batches(
        predictor_class, fn_constructor_kwargs={"program": program, **predictor_args},
        batch_size=batch_size, batch_format="numpy", zero_copy_batch=True,
        compute=ray.data.ActorPoolStrategy(size=concurrency, enable_true_multi_threading=True,
                                           max_tasks_in_flight_per_actor=TASKS_IN_FLIGHT),
        **remote_args)
