"""Memory that does not fit (docs/python-api.md, "Which exception": MemoryError):
planned memory or an output buffer the device cannot hold raises
MemoryError naming the method, the size and the device; nothing is left
half-made, so the method, and the others on the device, keep working.
The CUDA tests skip without a GPU."""

import gc
import struct

import numpy as np
import pytest

import pterun
from behaviour_util import assert_close, call_inputs, call_outputs, pte
from cuda_util import needs_cuda


def with_planned_bytes(name, nbytes):
    """Fixture `name` with its one planned buffer made `nbytes` long (the
    tensors in it still fit: a valid program that asks for more memory)."""
    raw = pte(name).read_bytes()
    old = pterun.load_program(raw).method_meta("forward").memory_planned_buffer_sizes
    assert len(old) == 1, old
    # non_const_buffer_sizes: a vector [0, size] of int64 (entry 0 is reserved).
    before = struct.pack("<Iqq", 2, 0, old[0])
    assert raw.count(before) == 1, name
    raw = raw.replace(before, struct.pack("<Iqq", 2, 0, nbytes))
    program = pterun.load_program(raw)
    assert program.method_meta("forward").memory_planned_buffer_sizes == (nbytes,)
    return program


def check_add(method):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = method([x, x])[0]
    np.testing.assert_array_equal(np.asarray(out.to_host()), 2 * x)


def test_cpu_planned_memory_that_cannot_exist_is_memory_error():
    program = with_planned_bytes("add", 1 << 62)
    with pytest.raises(MemoryError) as info:
        program.load_method("forward")
    message = str(info.value)
    assert "method 'forward' on cpu" in message and str(1 << 62) in message, message
    check_add(pterun.load_program(pte("add")).load_method("forward"))


@needs_cuda
def test_cuda_planned_memory_that_does_not_fit_is_memory_error():
    loaded_before = pterun.load_program(pte("add")).load_method("forward", device="cuda")
    check_add(loaded_before)
    program = with_planned_bytes("add", 1 << 40)  # 1 TiB: more than any GPU has
    for _ in range(2):  # nothing sticky: the same failure again, the same message
        with pytest.raises(MemoryError) as info:
            program.load_method("forward", device="cuda")
        message = str(info.value)
        assert "method 'forward' on cuda:0" in message, message
        assert f"cannot allocate {1 << 40} bytes on cuda:0" in message, message
    check_add(loaded_before)
    check_add(pterun.load_program(pte("add")).load_method("forward", device="cuda"))


def fill_device(smallest=8 << 20):
    """Methods that hold planned memory until less than `smallest` bytes of
    the GPU are free (each failure on the way is a MemoryError)."""
    hogs = []
    size = 1 << 40
    while size >= smallest:
        try:
            hogs.append(with_planned_bytes("add", size).load_method("forward", device="cuda"))
        except MemoryError:
            size //= 2
    return hogs


@needs_cuda
def test_cuda_call_without_room_for_its_output_is_memory_error_and_recovers():
    # scale_2048: a 16 MiB output, in a buffer allocated at its first call.
    big = pterun.load_program(pte("scale_2048")).load_method("forward", device="cuda")
    inputs, expected = call_inputs("scale_2048", 0), call_outputs("scale_2048", 0)
    other = pterun.load_program(pte("add")).load_method("forward", device="cuda")
    for _ in range(3):  # its output buffer exists (and a CUDA graph, if any) before the fill
        check_add(other)
    hogs = fill_device()
    try:
        assert hogs, "no planned memory could be allocated at all"
        for _ in range(2):
            with pytest.raises(MemoryError) as info:
                big(inputs)
            message = str(info.value)
            assert "method 'forward', output 0" in message, message
            assert "cannot allocate 16777216 bytes on cuda:0" in message, message
        check_add(other)  # the other method on the device runs in its own buffers
    finally:
        del hogs
        gc.collect()
    for _ in range(2):
        assert_close(big(inputs)[0].to_host(), expected[0])
    check_add(other)
