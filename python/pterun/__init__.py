"""pterun: run ExecuTorch programs (.pte) on CPU and NVIDIA GPUs without PyTorch."""

from pterun._cpu import check_cpu as _check_cpu

_check_cpu()

from pterun._pterun import (  # noqa: E402  (after the CPU check)
    BundledProgram,
    BundledTestCase,
    CaseResult,
    Method,
    MethodMeta,
    Module,
    Program,
    Tensor,
    ProgramError,
    TensorInfo,
    __version__,
    cuda_device_count,
    dtype,
    get_num_threads,
    load_bundled_program,
    load_program,
    operator_names,
    reset_stats,
    set_num_threads,
    stats,
)
from pterun._logging import install_log_handler as _install_log_handler  # noqa: E402

_install_log_handler()

__all__ = [
    "BundledProgram",
    "BundledTestCase",
    "CaseResult",
    "Method",
    "MethodMeta",
    "Module",
    "Program",
    "Tensor",
    "ProgramError",
    "TensorInfo",
    "__version__",
    "cuda_device_count",
    "dtype",
    "get_num_threads",
    "load_bundled_program",
    "load_program",
    "operator_names",
    "reset_stats",
    "set_num_threads",
    "stats",
]
