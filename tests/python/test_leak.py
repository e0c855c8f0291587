"""Memory stays flat over many calls (no leak per call, per result, per
failed call or per DLPack export). RSS comes from /proc/self/statm."""

import gc
import os

import numpy as np
import pytest

import pterun
from behaviour_util import method, module

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")

PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20


def _rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _growth(body, calls, warmup):
    for i in range(warmup):
        body(i)
    before = _rss()
    for i in range(calls):
        body(i)
    return _rss() - before


def _inputs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), np.float32)
    return x, y


def test_leak_100k_add_calls_keep_memory_flat():
    m = method("add")
    x, y = _inputs()
    expected = x + y

    def body(i):
        out = m([x, y])[0]
        if i % 10000 == 0:
            np.testing.assert_array_equal(out.numpy(), expected)

    growth = _growth(body, 100_000, 5_000)
    assert growth < 2 * MiB, f"RSS grew by {growth / MiB:.2f} MiB over 100000 calls"


def test_leak_method_steps_keep_memory_flat():
    m = method("add")
    x, y = _inputs()

    def body(i):
        m([x, y], clone_outputs=False)
        m.set_inputs([x, y])
        m.execute()
        m.get_outputs()
        m.get_outputs(clone_outputs=False)

    growth = _growth(body, 20_000, 2_000)
    assert growth < 2 * MiB, f"RSS grew by {growth / MiB:.2f} MiB"


def test_leak_module_calls_keep_memory_flat():
    mod = module("add")
    x, y = _inputs()

    def body(i):
        mod.forward([x, y])
        mod.forward([x], clone_outputs=False)
        mod.plan_execute()

    growth = _growth(body, 20_000, 2_000)
    assert growth < 2 * MiB, f"RSS grew by {growth / MiB:.2f} MiB"


def test_leak_failed_calls_keep_memory_flat():
    m = method("add")
    mod = module("add")
    x, y = _inputs()
    bad = x.astype(np.float64)

    def body(i):
        for fn in (m, m.set_inputs, mod.forward, mod.plan_execute):
            try:
                fn([x, bad]) if fn != mod.plan_execute else fn()
            except (TypeError, RuntimeError):
                pass
        try:
            m([x, np.zeros((3, 3), np.float32)])
        except ValueError:
            pass

    growth = _growth(body, 20_000, 2_000)
    assert growth < 2 * MiB, f"RSS grew by {growth / MiB:.2f} MiB"


def test_leak_dlpack_exports_and_views_keep_memory_flat():
    m = method("add")
    x, y = _inputs()
    t = m([x, y])[0]

    def body(i):
        np.from_dlpack(t)
        t.numpy()
        np.asarray(t)
        t.__dlpack__()
        t.__dlpack__(max_version=(1, 0))
        pterun.Tensor.from_host(t, "cpu")
        repr(t)

    growth = _growth(body, 20_000, 2_000)
    assert growth < 2 * MiB, f"RSS grew by {growth / MiB:.2f} MiB"


def test_leak_loading_programs_and_methods_keeps_memory_flat():
    from behaviour_util import pte

    raw = pte("mlp").read_bytes()

    def body(i):
        prog = pterun.load_program(raw)
        prog.load_method("forward")
        pterun.Module(raw)

    growth = _growth(body, 2_000, 200)
    assert growth < 4 * MiB, f"RSS grew by {growth / MiB:.2f} MiB"
