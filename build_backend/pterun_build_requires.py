"""Which extra build requirements this machine needs (no imports beyond the
standard library, so that tests can check the decision)."""

from __future__ import annotations

import os
import shutil

CUBLAS_REQUIREMENT = "nvidia-cublas>=13,<14"
TOOLKIT_NVCC = "/usr/local/cuda/bin/nvcc"  # where CMake also looks
_OFF = {"0", "off", "no", "false", "n"}


def cuda_disabled(config_settings: dict | None) -> bool:
    """True for -Ccmake.define.PTERUN_ENABLE_CUDA=OFF, or
    SKBUILD_CMAKE_DEFINE="PTERUN_ENABLE_CUDA=OFF" in the environment (the two
    ways scikit-build-core passes the CMake option)."""
    setting = (config_settings or {}).get("cmake.define.PTERUN_ENABLE_CUDA")
    if isinstance(setting, str) and setting.strip().lower() in _OFF:
        return True
    for define in os.environ.get("SKBUILD_CMAKE_DEFINE", "").split(";"):
        name, _, value = define.partition("=")
        if name.strip() == "PTERUN_ENABLE_CUDA" and value.strip().lower() in _OFF:
            return True
    return False


def cuda_compiler() -> str | None:
    """The CUDA compiler CMake would find: $CUDACXX, nvcc on PATH, or the
    toolkit's default location."""
    for candidate in (os.environ.get("CUDACXX"), shutil.which("nvcc"), TOOLKIT_NVCC):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def extra_requires(config_settings: dict | None) -> list[str]:
    """nvidia-cublas when the CUDA backend will be built, else nothing."""
    if cuda_disabled(config_settings) or cuda_compiler() is None:
        return []
    return [CUBLAS_REQUIREMENT]
