"""``executorch.runtime``'s API, run by pterun.

Code written for ExecuTorch's Python runtime switches by changing one import::

    from pterun.runtime import Runtime, Program, Method   # was: executorch.runtime

    program = Runtime.get().load_program("model.pte")
    method = program.load_method("forward")
    outputs = method.execute([np.ones((2, 2), np.float32)])

The classes keep ExecuTorch's names and forms: ``MethodMeta`` and
``TensorInfo`` accessors are methods (``meta.num_inputs()``), where pterun's
own classes have properties. Inputs are NumPy arrays, DLPack objects (torch,
JAX, CuPy ...), buffers or numbers; outputs are ``pterun.Tensor`` objects,
which ``torch.from_dlpack`` and ``np.from_dlpack`` take without a copy. Where
pterun's names differ from ExecuTorch's, both work. The differences are
listed in docs/executorch-runtime.md.
"""

from __future__ import annotations

import enum
import functools
import os
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Set, Tuple, Union

from pterun import _pterun

__all__ = [
    "BackendRegistry",
    "Method",
    "MethodMeta",
    "OperatorRegistry",
    "Program",
    "Runtime",
    "TensorInfo",
    "Verification",
]


class Verification(enum.Enum):
    """ExecuTorch's verification levels. pterun always verifies the whole
    program (every index, offset and size), so both levels do the same."""

    Minimal = 0
    InternalConsistency = 1


class TensorInfo:
    """What a program declares about one tensor, with ExecuTorch's accessors
    (methods) and pterun's extra properties."""

    def __init__(self, info: _pterun.TensorInfo) -> None:
        self._info = info

    def sizes(self) -> Tuple[int, ...]:
        """The shape (the upper bound of a dynamic one)."""
        return self._info.sizes

    def dtype(self) -> _pterun.dtype:
        """ExecuTorch's ScalarType number, as a ``pterun.dtype`` (an int)."""
        return self._info.dtype

    def is_memory_planned(self) -> bool:
        return self._info.is_memory_planned

    def nbytes(self) -> int:
        return self._info.nbytes

    @property
    def dtype_name(self) -> str:
        return self._info.dtype_name

    @property
    def dim_order(self) -> Tuple[int, ...]:
        return self._info.dim_order

    @property
    def shape_dynamism(self) -> str:
        return self._info.shape_dynamism

    @property
    def name(self) -> Optional[str]:
        return self._info.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorInfo) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return repr(self._info)


class MethodMeta:
    """Metadata of one method, with ExecuTorch's accessors (methods) and
    pterun's extra ones."""

    def __init__(self, meta: _pterun.MethodMeta) -> None:
        self._meta = meta

    def name(self) -> str:
        return self._meta.name

    def num_inputs(self) -> int:
        return self._meta.num_inputs

    def num_outputs(self) -> int:
        return self._meta.num_outputs

    def num_attributes(self) -> int:
        return self._meta.num_attributes

    def input_tensor_meta(self, index: int) -> TensorInfo:
        return TensorInfo(self._meta.input_tensor_meta(_index(index, self.num_inputs())))

    def output_tensor_meta(self, index: int) -> TensorInfo:
        return TensorInfo(self._meta.output_tensor_meta(_index(index, self.num_outputs())))

    def attribute_tensor_meta(self, index: int) -> TensorInfo:
        return TensorInfo(self._meta.attribute_tensor_meta(_index(index, self.num_attributes())))

    def input_tag(self, index: int) -> str:
        """'Tensor', 'Int', 'Double', 'Bool', 'String' or 'None' (pterun)."""
        return self._meta.input_tag(index)

    def output_tag(self, index: int) -> str:
        return self._meta.output_tag(index)

    def num_memory_planned_buffers(self) -> int:
        return len(self._meta.memory_planned_buffer_sizes)

    def memory_planned_buffer_size(self, index: int) -> int:
        sizes = self._meta.memory_planned_buffer_sizes
        return sizes[_index(index, len(sizes))]

    @property
    def backends(self) -> Tuple[str, ...]:
        """Delegate backend ids the method uses (pterun)."""
        return self._meta.backends

    def __repr__(self) -> str:
        return repr(self._meta)


def _index(index: int, count: int) -> int:
    # ExecuTorch raises IndexError for an index outside [0, count).
    if not 0 <= index < count:
        raise IndexError(f"index {index} is out of range [0, {count})")
    return index


def _as_sequence(inputs: Any) -> Any:
    """Another iterable of inputs becomes a list; a single array (or any
    object pterun reads as one value) is passed on, and pterun's TypeError
    says that inputs must be a list or tuple (a NumPy array is never taken
    for a sequence of rows)."""
    if isinstance(inputs, (list, tuple)):
        return inputs
    one_value = (str, bytes, bytearray, memoryview)
    if isinstance(inputs, one_value) or any(
        hasattr(inputs, attr) for attr in ("__dlpack__", "__array__", "__array_interface__")
    ):
        return inputs
    try:
        return list(inputs)
    except TypeError:
        return inputs


class Method:
    """A method loaded from a Program, run with ``execute(inputs)``."""

    def __init__(self, method: _pterun.Method) -> None:
        self._method = method

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        """Runs the method on ``inputs`` (a list or tuple: arrays, DLPack
        objects, pterun tensors, numbers) and returns its outputs."""
        return self._method(_as_sequence(inputs))

    __call__ = execute

    @property
    def metadata(self) -> MethodMeta:
        """The method's MethodMeta."""
        return MethodMeta(self._method.method_meta())

    def method_meta(self) -> MethodMeta:
        """pterun's name for ``metadata``."""
        return self.metadata

    @property
    def name(self) -> str:
        return self._method.name

    @property
    def device(self) -> str:
        return self._method.device

    @property
    def pterun_method(self) -> _pterun.Method:
        """The underlying ``pterun.Method`` (set_inputs, get_outputs, ...)."""
        return self._method

    def __repr__(self) -> str:
        return repr(self._method)


class Program:
    """A loaded program; methods are loaded once and kept."""

    def __init__(self, program: _pterun.Program) -> None:
        self._program = program
        self._methods: Dict[Tuple[str, str], Method] = {}

    @property
    def method_names(self) -> Set[str]:
        """The method names, as a set (ExecuTorch's type); ``pterun_program.
        method_names`` gives them in file order."""
        return set(self._program.method_names)

    def load_method(self, name: str, *, device: str = "cpu") -> Method:
        """Loads method ``name`` (once; later calls return the same Method).
        ``device``: "cpu", "cuda" or "cuda:N" (pterun)."""
        key = (name, device)
        if key not in self._methods:
            self._methods[key] = Method(self._program.load_method(name, device=device))
        return self._methods[key]

    def metadata(self, method_name: str) -> MethodMeta:
        """The metadata of a method, without loading it."""
        return MethodMeta(self._program.method_meta(method_name))

    def method_meta(self, method_name: str) -> MethodMeta:
        """pterun's name for ``metadata``."""
        return self.metadata(method_name)

    @property
    def pterun_program(self) -> _pterun.Program:
        """The underlying ``pterun.Program``."""
        return self._program

    def write_etdump_result_to_file(self, etdump_path: str, debug_buffer_path: str) -> None:
        raise NotImplementedError("pterun does not write ETDump traces")

    def __repr__(self) -> str:
        return repr(self._program)


class BackendRegistry:
    """Delegate backends this runtime can run: XnnpackBackend, whose float
    graphs pterun expands into its own kernels at load (on any device).
    Methods using other delegates fail at load_method naming them."""

    @property
    def registered_backend_names(self) -> List[str]:
        return ["XnnpackBackend"]

    def is_available(self, backend_name: str) -> bool:
        return backend_name in self.registered_backend_names


class OperatorRegistry:
    """Operators this build has CPU kernels for."""

    @property
    def operator_names(self) -> Set[str]:
        return set(_pterun.operator_names("cpu"))


class Runtime:
    """The runtime: ``Runtime.get()`` returns the one instance."""

    def __init__(self) -> None:
        self.backend_registry = BackendRegistry()
        self.operator_registry = OperatorRegistry()

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def get() -> "Runtime":
        """The Runtime singleton."""
        return Runtime()

    def load_program(
        self,
        data: Union[bytes, bytearray, memoryview, BinaryIO, "os.PathLike[str]", str],
        *,
        verification: Verification = Verification.InternalConsistency,
        enable_etdump: bool = False,
        debug_buffer_size: int = 0,
        data_path: Optional[Union["os.PathLike[str]", str, bytes]] = None,
    ) -> Program:
        """Loads a program from a path, bytes, a bytearray or a binary
        file-like object (a .bpte loads the program inside it), with the .ptd
        data file ``data_path`` (a path, or bytes). ``verification`` is
        accepted for compatibility: pterun always verifies the whole file."""
        if not isinstance(verification, Verification):
            raise TypeError(
                f"verification must be a Verification, got {type(verification).__name__}"
            )
        if enable_etdump:
            raise NotImplementedError("pterun does not record ETDump traces (enable_etdump=True)")
        del debug_buffer_size  # only used with ETDump
        return Program(_pterun.load_program(data, data=data_path))
