"""The build backend asks for nvidia-cublas exactly when the CUDA backend
will be built: a CUDA compiler is found and CUDA is not switched off
(build_backend/pterun_build_requires.py; the isolated `pip install .`)."""

import os
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "build_backend"))
import pterun_build_requires as req  # noqa: E402


@pytest.fixture
def no_cuda(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDACXX", raising=False)
    monkeypatch.delenv("SKBUILD_CMAKE_DEFINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(req, "TOOLKIT_NVCC", str(tmp_path / "absent" / "nvcc"))
    return tmp_path


def fake_nvcc(tmp_path):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    return nvcc


def test_without_a_cuda_compiler_nothing_more(no_cuda):
    assert req.cuda_compiler() is None
    assert req.extra_requires(None) == []


def test_nvcc_on_path_or_cudacxx_brings_cublas(no_cuda, monkeypatch):
    nvcc = fake_nvcc(no_cuda)
    monkeypatch.setenv("PATH", str(nvcc.parent))
    assert req.cuda_compiler() == str(nvcc)
    assert req.extra_requires({}) == [req.CUBLAS_REQUIREMENT]
    monkeypatch.setenv("PATH", str(no_cuda / "empty"))
    monkeypatch.setenv("CUDACXX", str(nvcc))
    assert req.extra_requires(None) == [req.CUBLAS_REQUIREMENT]
    # A CUDACXX that is not executable is not a compiler.
    os.chmod(nvcc, 0o644)
    assert req.extra_requires(None) == []


def test_cuda_switched_off_needs_no_cublas(no_cuda, monkeypatch):
    monkeypatch.setenv("CUDACXX", str(fake_nvcc(no_cuda)))
    assert req.extra_requires({"cmake.define.PTERUN_ENABLE_CUDA": "OFF"}) == []
    assert req.extra_requires({"cmake.define.PTERUN_ENABLE_CUDA": "ON"}) == [req.CUBLAS_REQUIREMENT]
    monkeypatch.setenv("SKBUILD_CMAKE_DEFINE", "FOO=1;PTERUN_ENABLE_CUDA=off")
    assert req.extra_requires(None) == []
