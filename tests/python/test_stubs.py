"""The typed stubs ship in the package and match the committed reference
(python/stubs/_pterun.pyi). After changing the bindings, regenerate it:

    python3 -m nanobind.stubgen -q -m pterun._pterun -o python/stubs/_pterun.pyi
"""

import difflib
import importlib.util
import pathlib

import pterun

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "python" / "stubs" / "_pterun.pyi"


def test_package_ships_stubs_and_marker():
    package = pathlib.Path(pterun.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_pterun.pyi").exists(), "the wheel must ship the generated stub"


def test_shipped_stub_matches_reference():
    shipped = pathlib.Path(importlib.util.find_spec("pterun._pterun").origin).parent / "_pterun.pyi"
    got = shipped.read_text().splitlines()
    want = REFERENCE.read_text().splitlines()
    diff = "\n".join(difflib.unified_diff(want, got, "reference", "shipped", lineterm=""))
    assert got == want, "stubs are out of date; regenerate python/stubs/_pterun.pyi:\n" + diff
