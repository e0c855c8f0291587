"""What an installed pterun reports about itself: the version (one place:
CMakeLists.txt), the command's --version, file-like sources, and the CPU
check of wheels built for one x86-64 level."""

import io
import pathlib
import re
import subprocess

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, REPO
from pterun import _cpu
from test_cli_inspect import pterun_cli


def project_version():
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(pterun VERSION ([0-9.]+)", text).group(1)


def test_version_comes_from_one_place():
    assert pterun.__version__ == project_version()
    from importlib.metadata import PackageNotFoundError, version

    try:
        assert version("pterun") == project_version()
    except PackageNotFoundError:  # a build tree on PYTHONPATH, not an installed package
        pass


def test_cli_version():
    out = subprocess.run([pterun_cli(), "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert re.fullmatch(rf"pterun {re.escape(project_version())} \(backends: cpu(, cuda)?\)\n",
                        out.stdout), out.stdout
    from pterun import _build

    assert f"(backends: {_build.BACKENDS})" in out.stdout


def test_file_like_sources_for_load_program_and_module(tmp_path):
    data = (FIXTURES / "add.pte").read_bytes()
    x = np.ones((2, 3), np.float32)
    assert pterun.load_program(io.BytesIO(data)).method_names == ["forward"]
    with open(FIXTURES / "add.pte", "rb") as f:
        assert pterun.load_program(f).method_names == ["forward"]
    with open(FIXTURES / "add.pte", "rb") as f:
        np.testing.assert_array_equal(pterun.Module(f).forward([x, x])[0].numpy(), 2 * x)
    # The .ptd too.
    pte, ptd = FIXTURES / "external_weights.pte", FIXTURES / "external_weights.ptd"
    program = pterun.load_program(io.BytesIO(pte.read_bytes()), data=io.BytesIO(ptd.read_bytes()))
    assert program.method_names == ["forward"]
    (tmp_path / "notes.txt").write_text("not a program")
    with open(tmp_path / "notes.txt") as text:  # text mode: read() gives str
        with pytest.raises(TypeError, match="binary mode"):
            pterun.load_program(text)
    # The bytes read are the program's: the file-like object can go.
    buf = io.BytesIO(data)
    module = pterun.Module(buf)
    buf.close()
    del buf
    assert module.forward([x, x])[0].shape == (2, 3)


def test_cpu_level_check():
    flags = "flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm"
    assert _cpu.missing_flags("x86-64-v2", flags) == []
    missing = _cpu.missing_flags("x86-64-v3", flags)
    assert "avx2" in missing and "fma" in missing
    assert _cpu.missing_flags("native", flags) == []
    assert _cpu.missing_flags("x86-64-v3", "no flags line") == []
    # This machine runs this build, so it has what the build needs.
    from pterun import _build

    if pathlib.Path("/proc/cpuinfo").exists():
        assert _cpu.missing_flags(_build.ARCH, pathlib.Path("/proc/cpuinfo").read_text()) == []


def test_the_module_does_not_link_cublas():
    # cuBLAS is loaded when a CUDA method first needs it (pterun[cuda]), so
    # a CUDA build imports without it (docs/python-api.md, B25).
    ext = pathlib.Path(pterun._pterun.__file__)
    needed = subprocess.run(["ldd", str(ext)], capture_output=True, text=True).stdout
    assert "libcublas" not in needed, needed
    assert "not found" not in needed, needed
