"""pterun's build backend: scikit-build-core, plus one build requirement that
depends on the machine.

With a CUDA compiler present the CUDA backend is built, and it compiles
against cuBLAS's headers from NVIDIA's ``nvidia-cublas`` wheel. An isolated
build (plain ``pip install .``) sees only the packages named here, so the
wheel is asked for exactly when the build will want it: a CUDA compiler is
found and CUDA is not switched off. Everything else is scikit-build-core's.
"""

from __future__ import annotations

import os
import shutil

from scikit_build_core import build as _skbuild
from scikit_build_core.build import *  # noqa: F401,F403  (the PEP 517 hooks)

CUBLAS_REQUIREMENT = "nvidia-cublas>=13,<14"
_OFF = {"0", "off", "no", "false", "n"}


def _cuda_disabled(config_settings: dict | None) -> bool:
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
    for candidate in (os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _extra_requires(config_settings: dict | None) -> list[str]:
    if _cuda_disabled(config_settings) or cuda_compiler() is None:
        return []
    return [CUBLAS_REQUIREMENT]


def get_requires_for_build_wheel(config_settings=None):
    return _skbuild.get_requires_for_build_wheel(config_settings) + _extra_requires(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _skbuild.get_requires_for_build_editable(config_settings) + _extra_requires(
        config_settings
    )
