"""pterun's build backend: scikit-build-core, plus one build requirement that
depends on the machine.

With a CUDA compiler present the CUDA backend is built, and it compiles
against cuBLAS's headers from NVIDIA's ``nvidia-cublas`` wheel. An isolated
build (plain ``pip install .``) sees only the packages named here, so the
wheel is asked for exactly when the build will want it: a CUDA compiler is
found and CUDA is not switched off. Everything else is scikit-build-core's.
"""

from __future__ import annotations

from pterun_build_requires import extra_requires as _extra_requires
from scikit_build_core import build as _skbuild
from scikit_build_core.build import *  # noqa: F401,F403  (the PEP 517 hooks)


def get_requires_for_build_wheel(config_settings=None):
    return _skbuild.get_requires_for_build_wheel(config_settings) + _extra_requires(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _skbuild.get_requires_for_build_editable(config_settings) + _extra_requires(
        config_settings
    )
