"""B23 (missing operators and delegates), B24 (logging), B25 (CUDA without a
GPU), and the runtime settings."""

import logging

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, VECTORS, requires_vectors


def unknown_delegate_program():
    """xnnpack_mlp.pte with its delegate renamed to a backend pterun lacks
    (same length, so the file stays valid)."""
    raw = (FIXTURES / "xnnpack_mlp.pte").read_bytes()
    assert raw.count(b"XnnpackBackend") == 1
    return raw.replace(b"XnnpackBackend", b"UnknownBackend")


def test_b23_missing_delegate_names_backend_and_device():
    program = pterun.load_program(unknown_delegate_program())
    with pytest.raises(NotImplementedError, match=r"UnknownBackend") as info:
        program.load_method("forward")
    assert "cpu" in str(info.value)


def test_b23_module_raises_the_same():
    module = pterun.Module(unknown_delegate_program())
    with pytest.raises(NotImplementedError, match="UnknownBackend"):
        module.forward([np.zeros((8, 32), np.float32)])


def test_b24_runtime_messages_go_to_logging(caplog):
    with caplog.at_level(logging.INFO, logger="pterun"):
        pterun._pterun._testing_log(30, "a warning from the runtime")
        pterun._pterun._testing_log(20, "some information")
    records = [r for r in caplog.records if r.name == "pterun"]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, "a warning from the runtime"),
        (logging.INFO, "some information"),
    ]


@requires_vectors
def test_b24_a_deprecated_program_logs_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="pterun"):
        pterun.load_program(VECTORS / "et_inline_constant_buffer.pte")
    records = [r for r in caplog.records if r.name == "pterun"]
    assert records and "deprecated inline constant_buffer" in records[0].getMessage()
    assert records[0].levelno == logging.WARNING


def test_b25_cuda_device_count_and_clear_error():
    count = pterun.cuda_device_count()
    assert isinstance(count, int) and count >= 0
    if count == 0:
        program = pterun.load_program(FIXTURES / "add.pte")
        with pytest.raises(RuntimeError, match="not available"):
            program.load_method("forward", device="cuda")
        with pytest.raises(RuntimeError, match="not available"):
            pterun.Module(FIXTURES / "add.pte", device="cuda:0")


def test_bad_device_string_is_value_error():
    program = pterun.load_program(FIXTURES / "add.pte")
    for bad in ["gpu", "cuda:", "cuda:x", "CPU"]:
        with pytest.raises(ValueError):
            program.load_method("forward", device=bad)


def test_set_num_threads_round_trips_and_rejects_zero():
    before = pterun.get_num_threads()
    try:
        pterun.set_num_threads(1)
        assert pterun.get_num_threads() == 1
        with pytest.raises(ValueError):
            pterun.set_num_threads(0)
    finally:
        pterun.set_num_threads(before)


def test_stats_has_every_counter():
    keys = set(pterun.stats())
    assert keys == {
        "device_syncs",
        "device_allocs",
        "host_to_device_copies",
        "device_to_host_copies",
        "device_to_device_copies",
        "layout_conversions",
        "output_copies",
        "graph_launches",
        "kernel_calls",
    }
    pterun.reset_stats()
    assert all(v == 0 for v in pterun.stats().values())
