"""pterun: run ExecuTorch programs (.pte) on CPU and NVIDIA GPUs without PyTorch."""

from pterun._pterun import (
    Method,
    MethodMeta,
    Module,
    Program,
    Tensor,
    ProgramError,
    TensorInfo,
    dtype,
    load_program,
)

__all__ = [
    "Method",
    "MethodMeta",
    "Module",
    "Program",
    "Tensor",
    "ProgramError",
    "TensorInfo",
    "dtype",
    "load_program",
]
