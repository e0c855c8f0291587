"""Cross-backend op harness: every CUDA kernel against the CPU kernel.

Run with `pytest tests/ops` (skips without a GPU). `--perf` also times each
kernel on the GPU and prints its achieved bandwidth or FLOP/s.
"""

import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def pytest_addoption(parser):
    parser.addoption("--perf", action="store_true", default=False,
                     help="time each CUDA kernel and print bandwidth / FLOP/s")


def pytest_configure(config):
    import harness

    harness.PERF = config.getoption("--perf")


def pytest_terminal_summary(terminalreporter):
    import harness

    if harness.PERF_ROWS:
        terminalreporter.write_sep("=", "CUDA kernel performance (median of timed launches)")
        for line in harness.perf_lines():
            terminalreporter.write_line(line)
