"""Request bodies to method inputs and method outputs to response bodies,
for the Serve deployment: JSON, ``.npy`` (one array) and ``.npz`` (several,
``arr_0``, ``arr_1`` ... in input order, as ``np.savez(*arrays)`` writes).

NumPy reads and writes the array files (``allow_pickle=False``: a request
can never make the server unpickle anything).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any, List, Optional, Tuple

import numpy as np

from pterun.ray._signature import InputError, MethodSignature, ValueSpec

JSON = "application/json"
NPY = "application/x-npy"
NPZ = "application/x-npz"
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_BINARY_TYPES = {NPY, NPZ, "application/npy", "application/octet-stream", "application/zip"}


def body_kind(body: bytes, content_type: Optional[str]) -> str:
    """"json", "npy" or "npz", from the Content-Type, or the body's first
    bytes when the type is missing or generic; InputError 415 otherwise."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == JSON or kind.endswith("+json"):
        return "json"
    if kind in ("", *_BINARY_TYPES):
        if body.startswith(_NPY_MAGIC):
            return "npy"
        if body.startswith(_ZIP_MAGIC):
            return "npz"
        if kind == "":
            return "json"
        raise InputError(400, f"the body is not a .npy or .npz file (Content-Type {kind})")
    raise InputError(415, f"Content-Type {kind} is not served: send application/json, "
                     f"{NPY} or {NPZ}")


def decode(body: bytes, content_type: Optional[str], sig: MethodSignature
           ) -> Tuple[str, List[Any]]:
    """(body kind, the method's inputs) of a request. Tensors come back as
    arrays, numbers as Python values; InputError (400) for a body that
    cannot be read. Whether the inputs fit the method is ``sig.check``'s."""
    kind = body_kind(body, content_type)
    if kind == "json":
        return kind, _from_json(body, sig)
    try:
        if kind == "npy":
            arrays = [np.load(io.BytesIO(body), allow_pickle=False)]
        else:
            with np.load(io.BytesIO(body), allow_pickle=False) as npz:
                names = [f"arr_{i}" for i in range(len(npz.files))]
                if sorted(npz.files) != sorted(names):
                    raise InputError(400, f"an .npz body names its arrays arr_0, arr_1 ... in "
                                     f"input order (np.savez(*arrays)); it has {npz.files}")
                arrays = [npz[name] for name in names]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise InputError(400, f"the body is not a readable .{kind} file: {error}") from None
    return kind, [_number_from_array(a, spec) for a, spec in zip(arrays, sig.inputs)] + \
        arrays[len(sig.inputs):]


def _number_from_array(value: np.ndarray, spec: ValueSpec) -> Any:
    """A 0-dimensional array stands for a number input (pterun takes NumPy
    scalars there, B3)."""
    if spec.tag in ("Int", "Double", "Bool") and value.ndim == 0:
        return value[()]
    if spec.tag == "String" and value.ndim == 0 and value.dtype.kind == "U":
        return str(value)
    return value


def _from_json(body: bytes, sig: MethodSignature) -> List[Any]:
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(400, f"the body is not JSON: {error}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), list):
        raise InputError(400, 'a JSON body is an object {"inputs": [input 0, input 1, ...]}')
    values = doc["inputs"]
    if len(values) != len(sig.inputs):
        raise InputError(422, f"method '{sig.name}' takes {len(sig.inputs)} inputs, got "
                         f"{len(values)}")
    return [_json_value(i, v, spec, sig.name) for i, (v, spec) in
            enumerate(zip(values, sig.inputs))]


def _json_value(i: int, value: Any, spec: ValueSpec, method: str) -> Any:
    """A JSON value as input ``i``: nested lists become an array of the
    declared dtype when every number fits it exactly in kind (integers for
    an integer input, true/false for a bool input, any number for a
    floating input); numbers must match a number input's kind."""
    where = f"input {i} of method '{method}'"
    if spec.tag != "Tensor":
        fits = {"Int": isinstance(value, int) and not isinstance(value, bool),
                "Double": isinstance(value, (int, float)) and not isinstance(value, bool),
                "Bool": isinstance(value, bool), "String": isinstance(value, str),
                "None": value is None}[spec.tag]
        if not fits:
            raise InputError(422, f"{where}: expected {spec.tag}, got JSON "
                             f"{json.dumps(value)[:40]}")
        return value
    try:
        array = np.asarray(value)
    except (ValueError, OverflowError) as error:
        raise InputError(400, f"{where}: not a rectangular array of numbers ({error})") from None
    if array.dtype.kind not in "biuf":
        raise InputError(400, f"{where}: not a rectangular array of numbers")
    target = spec.dtype
    if target is None or target.kind == "c":
        raise InputError(422, f"{where}: {spec.dtype_name} inputs cannot be sent as JSON; "
                         "send .npy or .npz")
    if array.size == 0:
        return np.zeros(array.shape, target)
    kind = "f" if target.kind == "V" else target.kind  # bfloat16 is a floating type
    allowed = {"f": "iuf", "i": "iu", "u": "iu", "b": "b"}[kind]
    if array.dtype.kind not in allowed:
        got = {"b": "true/false", "i": "integers", "u": "integers", "f": "numbers with "
               "fractions or exponents"}[array.dtype.kind]
        raise InputError(422, f"{where}: expected {spec.dtype_name}, JSON gave {got}")
    if kind in "iu":
        info = np.iinfo(target)
        if int(array.min()) < info.min or int(array.max()) > info.max:
            raise InputError(422, f"{where}: values outside {spec.dtype_name}'s range")
    return array.astype(target)


def response_kind(accept: Optional[str], request_kind: str) -> str:
    """"json" or "binary": what the Accept header asks for, else the
    request's own kind."""
    accept = (accept or "").lower()
    if JSON in accept:
        return "json"
    if any(t in accept for t in _BINARY_TYPES):
        return "binary"
    return "json" if request_kind == "json" else "binary"


def encode(outputs: List[Any], kind: str) -> Tuple[bytes, str]:
    """(body, Content-Type) of a method's outputs. Binary: one tensor
    output as ``.npy``, else ``.npz`` with ``arr_J`` for output J (a None
    output has no entry)."""
    if kind == "json":
        return json.dumps({"outputs": [_json_output(o) for o in outputs]}).encode(), JSON
    buffer = io.BytesIO()
    if len(outputs) == 1 and isinstance(outputs[0], np.ndarray):
        np.save(buffer, outputs[0], allow_pickle=False)
        return buffer.getvalue(), NPY
    np.savez(buffer, **{f"arr_{j}": np.asarray(o) for j, o in enumerate(outputs)
                        if o is not None})
    return buffer.getvalue(), NPZ


def _json_output(value: Any) -> Any:
    """A tensor as {"dtype", "shape", "data"} (complex values as [real,
    imag] pairs, bfloat16 as float32 numbers); numbers as themselves."""
    if not isinstance(value, np.ndarray):
        return value.item() if isinstance(value, np.generic) else value
    data = value
    if data.dtype.kind == "c":
        data = np.stack([data.real, data.imag], axis=-1)
    elif data.dtype.kind == "V" or data.dtype.name == "bfloat16":
        data = data.astype(np.float32)
    return {"dtype": value.dtype.name, "shape": list(value.shape), "data": data.tolist()}
