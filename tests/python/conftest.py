import json
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# The project's shared folder: beside the checkout, or a copy inside it (how
# the GPU machine gets it: scripts/gather-gpu-deps).
_SHARED = REPO / "shared" if (REPO / "shared" / "reference").is_dir() else REPO.parent / "shared"
VECTORS = _SHARED / "reference" / "vectors"
# The vectors belong to the outside reference, not to this repository: a
# fresh clone has none, and the tests that read them skip.
requires_vectors = pytest.mark.skipif(
    not VECTORS.is_dir(),
    reason=f"the outside reference vectors are missing ({VECTORS}): put the project's "
    "shared/ folder beside the checkout to run this test",
)


def pytest_configure(config):
    # scripts/test-wheel: the suite runs against the wheel installed in a
    # fresh environment, never the source tree.
    expected = os.environ.get("PTERUN_EXPECT_INSTALLED")
    if expected:
        import pterun

        where = pathlib.Path(pterun.__file__).resolve()
        assert pathlib.Path(expected).resolve() in where.parents, (
            f"pterun imported from {where}, not from the environment {expected}")


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


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster of 2 CPUs for the pterun.ray tests, started once.

    Without Ray (pterun installed without its [ray] extra) the tests that
    use it skip; scripts/test-wheel sets PTERUN_REQUIRE_RAY=1, so in CI a
    missing Ray fails them instead.
    """
    try:
        import ray
        import ray.data  # noqa: F401
        from ray import serve  # noqa: F401
    except ImportError as error:
        if os.environ.get("PTERUN_REQUIRE_RAY") == "1":
            pytest.fail(f"PTERUN_REQUIRE_RAY=1 but Ray cannot be imported: {error}")
        pytest.skip(f"Ray is not installed (pip install 'pterun[ray]'): {error}")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reports from tests
    # Serve kills an HTTP proxy that is not ready within 5 s (health checks
    # 10 s) and the module's server fixture then fails: on a loaded 2-core CI
    # machine a proxy's start can take longer. The cluster's processes take
    # the environment from here.
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
    os.environ.setdefault("RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S", "60")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 2**20,
             log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()
