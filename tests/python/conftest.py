import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
VECTORS = REPO.parent / "shared" / "reference" / "vectors"


@pytest.fixture(scope="session")
def manifest():
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


def fixture_names():
    with open(FIXTURES / "manifest.json") as f:
        return sorted(json.load(f)["fixtures"])


def fixture_paths(entry):
    """(pte path, ptd path or None) of one manifest entry."""
    files = entry["files"]
    ptd = files.get("ptd")
    return FIXTURES / files["pte"], (FIXTURES / ptd if ptd else None)
