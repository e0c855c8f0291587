"""pterun: run ExecuTorch programs (.pte) on CPU and NVIDIA GPUs without PyTorch."""

from pterun._pterun import (
    Method,
    MethodMeta,
    Module,
    Program,
    Tensor,
    ProgramError,
    TensorInfo,
    cuda_device_count,
    dtype,
    get_num_threads,
    load_program,
    reset_stats,
    set_num_threads,
    stats,
)
from pterun._logging import install_log_handler as _install_log_handler

_install_log_handler()

__all__ = [
    "Method",
    "MethodMeta",
    "Module",
    "Program",
    "Tensor",
    "ProgramError",
    "TensorInfo",
    "cuda_device_count",
    "dtype",
    "get_num_threads",
    "load_program",
    "reset_stats",
    "set_num_threads",
    "stats",
]
