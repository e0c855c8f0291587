"""The typed stubs ship in the package and match the committed reference
(python/stubs/_pterun.pyi). After changing the bindings, regenerate it:

    python3 -m nanobind.stubgen -q -m pterun._pterun -o python/stubs/_pterun.pyi
"""

import difflib
import importlib.util
import pathlib
import subprocess
import sys

import pterun

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "python" / "stubs" / "_pterun.pyi"


def test_package_ships_stubs_and_marker():
    package = pathlib.Path(pterun.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_pterun.pyi").exists(), "the wheel must ship the generated stub"


def _compare(got_text, label):
    got = got_text.splitlines()
    want = REFERENCE.read_text().splitlines()
    diff = "\n".join(difflib.unified_diff(want, got, "reference", label, lineterm=""))
    assert got == want, "stubs are out of date; regenerate python/stubs/_pterun.pyi:\n" + diff


def test_shipped_stub_matches_reference():
    shipped = pathlib.Path(importlib.util.find_spec("pterun._pterun").origin).parent / "_pterun.pyi"
    _compare(shipped.read_text(), "shipped")


def test_reference_stub_matches_the_built_module(tmp_path):
    # A stub generated now from the module under test: the committed
    # reference must describe the bindings as built.
    out = tmp_path / "_pterun.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "pterun._pterun",
                    "-o", str(out)], check=True, cwd=tmp_path)
    _compare(out.read_text(), "generated")
