"""The operator suite: every kernel's cases against NumPy on the CPU and
against the CPU on every CUDA device (see harness.py).

Run with `pytest tests/ops`; without a GPU the CUDA params skip. `--perf`
also times kernels on the GPU and prints achieved bandwidth or FLOP/s.
"""

import pathlib
import sys
import zlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import harness  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--perf", action="store_true", default=False,
                     help="time each CUDA kernel and print bandwidth / FLOP/s")


def pytest_configure(config):
    harness.PERF = config.getoption("--perf")
    config.addinivalue_line("markers", "cpu_only(reason): the test's cases run on the CPU only")
    config.addinivalue_line("markers", "cuda_only(reason): the test's kernels are CUDA only")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        reasons = {}
        for name in ("cpu_only", "cuda_only"):
            marker = metafunc.definition.get_closest_marker(name)
            reasons[name] = marker.kwargs["reason"] if marker else None
        params = harness.device_params(reasons["cpu_only"], reasons["cuda_only"])
        metafunc.parametrize("device", params)


def _case_key(item) -> str:
    """The test's id without its device, so every device draws the same inputs."""
    callspec = getattr(item, "callspec", None)
    name = item.nodeid
    if callspec is not None and "device" in callspec.params:
        base, _, ids = name.partition("[")
        parts = [p for p in ids.rstrip("]").split("-") if p != callspec.params["device"]]
        name = base + "[" + "-".join(parts) + "]"
    return name


@pytest.fixture(autouse=True)
def _seed_inputs(request):
    harness.seed(zlib.crc32(_case_key(request.node).encode()))


def pytest_terminal_summary(terminalreporter):
    if harness.PERF_ROWS:
        terminalreporter.write_sep("=", "CUDA kernel performance (median of timed launches)")
        for line in harness.perf_lines():
            terminalreporter.write_line(line)
