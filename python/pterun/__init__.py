"""pterun: run ExecuTorch programs (.pte) on CPU and NVIDIA GPUs without PyTorch."""

from pterun._pterun import (
    MethodMeta,
    Program,
    ProgramError,
    TensorInfo,
    dtype,
    load_program,
)

__all__ = [
    "MethodMeta",
    "Program",
    "ProgramError",
    "TensorInfo",
    "dtype",
    "load_program",
]
