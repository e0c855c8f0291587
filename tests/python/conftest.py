import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# The project's shared folder: beside the checkout, or a copy inside it (how
# the GPU machine gets it: scripts/gather-gpu-deps).
_SHARED = REPO / "shared" if (REPO / "shared" / "reference").is_dir() else REPO.parent / "shared"
VECTORS = _SHARED / "reference" / "vectors"


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
