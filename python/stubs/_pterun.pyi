"""pterun: run ExecuTorch programs (.pte) without PyTorch"""

from collections.abc import Sequence
import enum

from pterun import ProgramError as ProgramError


class Tensor:
    """A tensor produced by pterun (B20)."""

    @property
    def shape(self) -> tuple: ...

    @property
    def ndim(self) -> int: ...

    @property
    def dtype(self) -> dtype: ...

    @property
    def dtype_name(self) -> str: ...

    @property
    def device(self) -> str: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def data_ptr(self) -> int: ...

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

    def numpy(self) -> object:
        """
        A NumPy array: a view of a CPU tensor's memory, a host copy of a GPU tensor.
        """

    def __array__(self, dtype: object | None = None, copy: object | None = None) -> object:
        """
        CPU tensors only: a GPU tensor raises TypeError (use to_host() or numpy()).
        """

    def __dlpack__(self, *, stream: object | None = None, max_version: object | None = None, dl_device: object | None = None, copy: object | None = None) -> object:
        """
        A DLPack capsule sharing this tensor's memory (versioned when max_version >= (1, 0)). GPU results are complete when handed out, so `stream` needs no ordering; dl_device=(1, 0) on a GPU tensor gives a host copy.
        """

    def __dlpack_device__(self) -> tuple: ...

    def to_host(self) -> object:
        """
        This tensor on the host: a CPU tensor returns itself, a GPU tensor a copy (after waiting for the device when its memory was handed to another library).
        """

    def item(self) -> object: ...

    def tolist(self) -> object: ...

    @staticmethod
    def from_host(data: object, device: str = 'cpu', *, dtype: object | None = None) -> Tensor:
        """
        A contiguous copy of `data` (buffer, DLPack object, pterun.Tensor) on `device` ('cpu', 'cuda', 'cuda:N'). `dtype` reinterprets elements of the same size (uint16 bits as 'bfloat16').
        """

class dtype(enum.IntEnum):
    """Element types, numbered as ExecuTorch's ScalarType."""

    uint8 = 0

    int8 = 1

    int16 = 2

    int32 = 3

    int64 = 4

    float16 = 5

    float32 = 6

    float64 = 7

    complex32 = 8

    complex64 = 9

    complex128 = 10

    bool = 11

    qint8 = 12

    quint8 = 13

    qint32 = 14

    bfloat16 = 15

    quint4x2 = 16

    quint2x4 = 17

    bits16 = 22

    float8_e5m2 = 23

    float8_e4m3fn = 24

    float8_e5m2fnuz = 25

    float8_e4m3fnuz = 26

    uint16 = 27

    uint32 = 28

    uint64 = 29

class TensorInfo:
    """What a program declares about one tensor."""

    @property
    def sizes(self) -> tuple:
        """The shape; for dynamic tensors, the upper bound."""

    @property
    def dtype(self) -> dtype: ...

    @property
    def dtype_name(self) -> str: ...

    @property
    def dim_order(self) -> tuple:
        """Dimensions from outermost to innermost in memory."""

    @property
    def is_memory_planned(self) -> bool: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def shape_dynamism(self) -> str:
        """'static', 'dynamic_bound' or 'dynamic_unbound'."""

    @property
    def name(self) -> object:
        """The fully qualified name, or None."""

    def __repr__(self) -> str: ...

class MethodMeta:
    """Metadata of one method, read without loading it."""

    @property
    def name(self) -> str: ...

    @property
    def num_inputs(self) -> int: ...

    @property
    def num_outputs(self) -> int: ...

    @property
    def num_attributes(self) -> int: ...

    @property
    def memory_planned_buffer_sizes(self) -> tuple: ...

    @property
    def backends(self) -> tuple:
        """Delegate backend ids the method uses."""

    def input_tag(self, index: int) -> str:
        """'Tensor', 'Int', 'Double', 'Bool', 'String' or 'None'."""

    def output_tag(self, index: int) -> str: ...

    def input_tensor_meta(self, index: int) -> TensorInfo: ...

    def output_tensor_meta(self, index: int) -> TensorInfo: ...

    def attribute_tensor_meta(self, index: int) -> TensorInfo: ...

    def __repr__(self) -> str: ...

class Program:
    """A loaded, verified ExecuTorch program."""

    @property
    def method_names(self) -> list[str]:
        """Method names in file order."""

    def method_meta(self, name: str) -> MethodMeta:
        """Metadata of method `name` (ValueError when there is none)."""

    def load_method(self, name: str, *, device: str = 'cpu', cuda_graphs: bool = True, allow_tf32: bool = False) -> object:
        """
        Loads method `name` on `device` ('cpu', 'cuda', 'cuda:N'). On a GPU, a method with static shapes and no control flow is captured as a CUDA graph and replayed (cuda_graphs=False runs its kernels one by one); allow_tf32=True lets float32 matrix products and convolutions round their inputs to TF32 on the tensor cores (faster, about 3 significant digits; off by default, as in torch).
        """

    def __repr__(self) -> str: ...

def load_program(src: object, *, data: object | None = None) -> Program:
    """
    Loads a .pte program from a path (memory-mapped), a bytes-like object or a binary file-like object, with an optional .ptd data file (the same kinds). A bundled program (.bpte) loads the program inside it. Raises FileNotFoundError for a missing file and ProgramError for a damaged one.
    """

class Method:
    """A loaded method of a program."""

    def set_inputs(self, inputs: object) -> None:
        """Checks every input, then installs them all (B9)."""

    def execute(self) -> None:
        """Runs the method on the installed inputs (releases the GIL)."""

    def get_outputs(self, *, clone_outputs: bool = True) -> list: ...

    def __call__(self, inputs: object, *, clone_outputs: bool = True) -> list:
        """set_inputs + execute + get_outputs."""

    def call(self, inputs: object, *, clone_outputs: bool = True) -> list: ...

    def method_meta(self) -> MethodMeta: ...

    def get_attribute(self, name: str) -> object:
        """A copy of the named buffer `name` as it is now."""

    @property
    def name(self) -> str: ...

    @property
    def device(self) -> str: ...

    def __repr__(self) -> str: ...

class Module:
    """A program with lazily loaded methods."""

    def __init__(self, src: object, *, data: object | None = None, device: str = 'cpu', cuda_graphs: bool = True, allow_tf32: bool = False) -> None: ...

    @property
    def method_names(self) -> list[str]: ...

    def method_meta(self, name: str) -> MethodMeta: ...

    def forward(self, inputs: object, *, clone_outputs: bool = True) -> list: ...

    def __call__(self, inputs: object, *, clone_outputs: bool = True) -> list: ...

    def run_method(self, name: str, inputs: object, *, clone_outputs: bool = True) -> list: ...

    def plan_execute(self, name: str = 'forward', *, clone_outputs: bool = True) -> list: ...

    def __repr__(self) -> str: ...

class CaseResult:
    """What running one bundled test case gave."""

    @property
    def method(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def compared(self) -> bool:
        """False when the case has no expected outputs (it only ran)."""

    @property
    def passed(self) -> bool:
        """Every output matched (True for a case that ran)."""

    @property
    def message(self) -> str:
        """The first difference; empty when passed."""

    @property
    def max_abs_error(self) -> float: ...

    @property
    def max_rel_error(self) -> float:
        """Largest |a - b| / max(1e-8, |b|), b expected."""

    def __bool__(self) -> bool: ...

    def __repr__(self) -> str: ...

class BundledTestCase:
    """One test case of a bundled program."""

    @property
    def method_name(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def inputs(self) -> list:
        """The inputs: pterun.Tensor copies and numbers."""

    @property
    def expected_outputs(self) -> list:
        """The expected outputs (empty when the case has none)."""

    def __repr__(self) -> str: ...

class BundledProgram:
    """A bundled program (.bpte): a program and test cases for its methods."""

    @property
    def program(self) -> Program:
        """The program inside (a pterun.Program)."""

    @property
    def method_names(self) -> list[str]:
        """Methods that have test cases, in file order."""

    def test_cases(self, method_name: str) -> list:
        """The test cases of one method."""

    def verify(self, *, methods: Sequence[str] = [], rtol: float = 1e-05, atol: float = 1e-08, device: str = 'cpu') -> list[CaseResult]:
        """
        Runs every test case (of `methods`, or all) and compares the outputs with the expected ones: |a - b| <= atol + rtol * |b| for float32/float64/float16/bfloat16, bit for bit for every other dtype. Returns one CaseResult per case.
        """

    def verify_result_with_bundled_expected_output(self, method_name: str, testset_idx: int, rtol: float = 1e-05, atol: float = 1e-08) -> list:
        """
        ExecuTorch's name: runs one case on the CPU and returns its outputs; raises RuntimeError when an output differs from the expected one.
        """

    def __repr__(self) -> str: ...

def load_bundled_program(src: object, *, data: object | None = None) -> BundledProgram:
    """
    Loads a bundled program (.bpte) from a path or a bytes-like object, with an optional .ptd data file for its program.
    """

def stats() -> dict:
    """
    Process-wide counters: device_syncs, device_allocs, copies, layout_conversions, output_copies.
    """

def reset_stats() -> None:
    """Sets every counter of stats() to 0."""

def set_num_threads(n: int) -> None:
    """Bounds the CPU threads one call may use (B15)."""

def get_num_threads() -> int: ...

def operator_names(device: str = 'cpu') -> list[str]:
    """
    Operators this build has kernels for on 'cpu' or 'cuda' (sorted names such as 'aten::add.out').
    """

def cuda_device_count() -> int:
    """
    Usable CUDA devices; 0 without a GPU, a driver, or CUDA support in this build.
    """
