"""State rules B8-B14: calls before inputs or runs, all-or-nothing
set_inputs(), repeatable runs and mutable state, failed runs, Module partial
calls, and a Module keeping its program bytes alive."""

import gc

import numpy as np
import pytest

import pterun
from behaviour_util import (
    MANIFEST,
    assert_close,
    call_inputs,
    call_outputs,
    method,
    module,
    program,
    pte,
    rng,
)


def _add_inputs(seed):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


def _int_ops_failing_inputs():
    """int_ops inputs whose floor division (a // b) divides by zero, so the
    run fails in a kernel after set_inputs() succeeded."""
    a, b, c = call_inputs("int_ops", 0)
    b = b.copy()
    b[0, 0] = 0
    return [a, b, c]


# --- B8 --------------------------------------------------------------------------


def test_b08_execute_before_set_inputs_raises():
    m = method("add")
    with pytest.raises(RuntimeError):
        m.execute()


def test_b08_execute_before_set_inputs_raises_for_a_method_without_inputs_too():
    # get_state takes no inputs; "before the first successful set_inputs()"
    # still holds: set_inputs([]) is what installs its (empty) input list.
    m = program("shared_state").load_method("get_state")
    with pytest.raises(RuntimeError):
        m.execute()
    m.set_inputs([])
    m.execute()
    assert len(m.get_outputs()) == 1


def test_b08_get_outputs_before_execute_raises():
    m = method("add")
    with pytest.raises(RuntimeError):
        m.get_outputs()
    with pytest.raises(RuntimeError):
        m.get_outputs(clone_outputs=False)


def test_b08_failed_first_set_inputs_still_refuses_execute():
    m = method("add")
    x, _ = _add_inputs(0)
    with pytest.raises(ValueError):
        m.set_inputs([x])  # wrong count
    with pytest.raises(RuntimeError):
        m.execute()
    with pytest.raises(TypeError):
        m.set_inputs([x, x.astype(np.float64)])
    with pytest.raises(RuntimeError):
        m.execute()


def test_b08_set_inputs_then_execute_then_get_outputs():
    m = method("add")
    x, y = _add_inputs(1)
    assert m.set_inputs([x, y]) is None
    assert m.execute() is None
    out = m.get_outputs()
    assert isinstance(out, list) and len(out) == 1
    np.testing.assert_array_equal(out[0].numpy(), x + y)
    # Tuples are accepted as well as lists.
    m.set_inputs((y, y))
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), y + y)


def test_b08_inputs_must_be_list_or_tuple():
    m = method("add")
    x, y = _add_inputs(2)
    for bad in [x, (v for v in (x, y)), {0: x, 1: y}, None, "xy"]:
        with pytest.raises(TypeError):
            m.set_inputs(bad)
        with pytest.raises(TypeError):
            m(bad)


# --- B9 --------------------------------------------------------------------------

def _bad_second_inputs():
    x, _ = _add_inputs(3)
    return {
        "count_low": [x],
        "count_high": [x, x, x],
        "dtype": [x, x.astype(np.float64)],
        "shape": [x, np.zeros((3, 2), np.float32)],
        "rank": [x, np.zeros((6,), np.float32)],
        "unreadable": [x, object()],
        "byte_order": [x, x.astype(">f4")],
    }


@pytest.mark.parametrize("case", list(_bad_second_inputs()))
def test_b09_failed_set_inputs_keeps_previous_inputs(case):
    m = method("add")
    x0, y0 = _add_inputs(4)
    m.set_inputs([x0, y0])
    bad = _bad_second_inputs()[case]
    with pytest.raises((TypeError, ValueError, BufferError)):
        m.set_inputs(bad)
    # Nothing of the refused call was installed: not even its valid input 0.
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)


@pytest.mark.parametrize("case", list(_bad_second_inputs()))
def test_b09_failed_set_inputs_keeps_outputs_of_last_run(case):
    m = method("add")
    x0, y0 = _add_inputs(5)
    m.set_inputs([x0, y0])
    m.execute()
    bad = _bad_second_inputs()[case]
    with pytest.raises((TypeError, ValueError, BufferError)):
        m.set_inputs(bad)
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)
    np.testing.assert_array_equal(m.get_outputs(clone_outputs=False)[0].numpy(), x0 + y0)
    # And a failed __call__ behaves the same.
    with pytest.raises((TypeError, ValueError, BufferError)):
        m(bad)
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)


def test_b09_failed_set_inputs_before_any_run_keeps_outputs_unavailable():
    m = method("add")
    x0, y0 = _add_inputs(6)
    m.set_inputs([x0, y0])
    with pytest.raises(TypeError):
        m.set_inputs([y0, y0.astype(np.float16)])
    with pytest.raises(RuntimeError):
        m.get_outputs()
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)


def test_b09_failed_set_inputs_on_a_number_input_keeps_all_inputs():
    m = method("scalars")
    x = np.array([2.0, 4.0, 8.0], np.float32)
    m.set_inputs([x, 3, 0.5, True])
    with pytest.raises(ValueError):
        m.set_inputs([x * 0, 3, 0.5, False])  # the Bool differs from the exported one
    m.execute()
    np.testing.assert_allclose(m.get_outputs()[0].numpy(), x * 0.5 + 3)


def test_b09_dynamic_shape_of_refused_call_is_not_kept():
    # A refused call must not have resized the installed input either.
    m = method("dynamic_mlp")
    x7 = call_inputs("dynamic_mlp", 1)[0]
    m.set_inputs([x7])
    with pytest.raises(ValueError):
        m.set_inputs([np.zeros((65, 32), np.float32)])
    with pytest.raises(TypeError):
        m.set_inputs([np.zeros((3, 32), np.float64)])
    m.execute()
    out = m.get_outputs()[0]
    assert out.shape == (7, 10)
    assert_close(out, call_outputs("dynamic_mlp", 1)[0])


# --- B10 -------------------------------------------------------------------------


def test_b10_get_outputs_raises_after_set_inputs_until_execute():
    m = method("add")
    x0, y0 = _add_inputs(7)
    x1, y1 = _add_inputs(8)
    m.set_inputs([x0, y0])
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x0 + y0)
    m.set_inputs([x1, y1])
    with pytest.raises(RuntimeError):
        m.get_outputs()
    with pytest.raises(RuntimeError):
        m.get_outputs(clone_outputs=False)
    m.execute()
    np.testing.assert_array_equal(m.get_outputs()[0].numpy(), x1 + y1)


def test_b10_identity_outputs_share_input_memory():
    # identity's outputs are its inputs: after set_inputs() the old outputs
    # would silently show the new inputs, so they must raise.
    m = method("identity")
    x, y = call_inputs("identity", 0)
    m([x, y])
    m.set_inputs([x * 2, y * 2])
    with pytest.raises(RuntimeError):
        m.get_outputs()
    m.execute()
    out = m.get_outputs()
    np.testing.assert_array_equal(out[0].numpy(), x * 2)
    np.testing.assert_array_equal(out[2].numpy(), y * 2)


# --- B11 -------------------------------------------------------------------------

REPEATABLE = ["add", "add_mul", "mlp", "cnn", "chain8", "split_outputs", "int_ops", "gpt",
              "llama_block", "control_flow", "fp16_add", "identity", "scale_256", "scalars",
              "multi_method"]


@pytest.mark.parametrize("name", REPEATABLE)
def test_b11_execute_twice_gives_the_same_outputs(name):
    prog = program(name)
    methods = {}
    for k, call in enumerate(MANIFEST[name]["calls"]):
        if call["method"] not in methods:
            methods[call["method"]] = prog.load_method(call["method"])
        m = methods[call["method"]]
        inputs = call_inputs(name, k)
        expected = call_outputs(name, k)
        m.set_inputs(inputs)
        for run in range(3):
            m.execute()
            for i, (got, exp, spec) in enumerate(zip(m.get_outputs(), expected,
                                                     call["outputs"])):
                where = f"{name} call {k} run {run} output {i}"
                if spec["kind"] == "Tensor":
                    assert_close(got, exp, spec["dtype"], where)
                else:
                    assert got == exp, where


@pytest.mark.parametrize("name", ["add", "mlp", "chain8", "gpt", "identity"])
def test_b11_plan_execute_after_a_call_gives_the_same_outputs(name):
    mod = module(name)
    inputs = call_inputs(name, 0)
    expected = call_outputs(name, 0)
    first = mod.forward(inputs)
    for out in (first, mod.plan_execute(), mod.plan_execute("forward"),
                mod.plan_execute(clone_outputs=False)):
        assert len(out) == len(expected)
        for got, exp in zip(out, expected):
            assert_close(got, exp, where=name)


def test_b11_stateful_program_advances_state_on_every_run():
    # count starts at [0, 1, 2, 3]; every run adds x and returns count * 2.
    m = method("stateful")
    count = np.arange(4, dtype=np.float32)
    x = np.array([1.0, 0.5, -2.0, 3.0], np.float32)
    m.set_inputs([x])
    for _ in range(4):
        m.execute()
        count = count + x
        np.testing.assert_array_equal(m.get_outputs()[0].numpy(), count * 2)
    y = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    count = count + y
    np.testing.assert_array_equal(m([y])[0].numpy(), count * 2)


def test_b11_stateful_fixture_sequence():
    m = method("stateful")
    for k in range(len(MANIFEST["stateful"]["calls"])):
        assert_close(m(call_inputs("stateful", k))[0], call_outputs("stateful", k)[0],
                     where=f"call {k}")


def test_b11_stateful_module_plan_execute_advances_state():
    mod = module("stateful")
    x = np.ones(4, np.float32)
    count = np.arange(4, dtype=np.float32) + x
    np.testing.assert_array_equal(mod.forward([x])[0].numpy(), count * 2)
    for _ in range(3):
        count = count + x
        np.testing.assert_array_equal(mod.plan_execute()[0].numpy(), count * 2)


def test_b11_each_method_has_its_own_state_copy_per_program():
    # Two loaded programs of one file do not share mutable state.
    a, b = method("stateful"), method("stateful")
    x = np.ones(4, np.float32)
    a([x])
    a([x])
    np.testing.assert_array_equal(b([x])[0].numpy(), (np.arange(4) + 1) * 2)


# --- B12 -------------------------------------------------------------------------


def test_b12_failed_execute_keeps_inputs_and_hides_outputs():
    m = method("int_ops")
    good = call_inputs("int_ops", 0)
    expected = call_outputs("int_ops", 0)
    m(good)  # a successful run first: its outputs must not be returned later
    bad = _int_ops_failing_inputs()
    m.set_inputs(bad)
    with pytest.raises(Exception) as first:
        m.execute()
    assert not isinstance(first.value, RuntimeError) or "set_inputs" not in str(first.value)
    with pytest.raises(RuntimeError):
        m.get_outputs()
    # The installed inputs are still usable: the run gets as far as the same
    # kernel error again, rather than refusing for missing inputs.
    with pytest.raises(type(first.value)) as second:
        m.execute()
    assert str(second.value) == str(first.value)
    with pytest.raises(RuntimeError):
        m.get_outputs()
    # New inputs: the method works again.
    m.set_inputs(good)
    m.execute()
    for got, exp in zip(m.get_outputs(), expected):
        assert_close(got, exp, got.dtype_name)


def test_b12_failed_call_hides_outputs_until_a_run_succeeds():
    m = method("int_ops")
    good = call_inputs("int_ops", 0)
    m(good)
    with pytest.raises(Exception):
        m(_int_ops_failing_inputs())
    with pytest.raises(RuntimeError):
        m.get_outputs()
    out = m(good)
    assert_close(out[0], call_outputs("int_ops", 0)[0], "int64")


# --- B13 -------------------------------------------------------------------------


def test_b13_module_forward_call_and_run_method():
    mod = module("add")
    x, y = _add_inputs(10)
    for fn in (mod.forward, mod, lambda i, **kw: mod.run_method("forward", i, **kw)):
        np.testing.assert_array_equal(fn([x, y])[0].numpy(), x + y)
        np.testing.assert_array_equal(fn((y, y), clone_outputs=False)[0].numpy(), y + y)


def test_b13_module_runs_every_method():
    mod = module("multi_method")
    assert sorted(mod.method_names) == ["encode", "forward"]
    for k, call in enumerate(MANIFEST["multi_method"]["calls"]):
        out = mod.run_method(call["method"], call_inputs("multi_method", k))
        for got, exp, spec in zip(out, call_outputs("multi_method", k), call["outputs"]):
            assert_close(got, exp, spec["dtype"])


def test_b13_more_inputs_than_the_method_takes_is_value_error_before_installing():
    mod = module("add")
    x0, y0 = _add_inputs(11)
    x1, _ = _add_inputs(12)
    mod.forward([x0, y0])
    with pytest.raises(ValueError):
        mod.forward([x1, x1, x1])
    # Nothing was installed: the previous inputs are still the ones used.
    np.testing.assert_array_equal(mod.plan_execute()[0].numpy(), x0 + y0)
    np.testing.assert_array_equal(mod.forward([x1])[0].numpy(), x1 + y0)


def test_b13_partial_call_keeps_the_rest_from_earlier_calls():
    mod = module("add")
    x0, y0 = _add_inputs(13)
    x1, _ = _add_inputs(14)
    mod.forward([x0, y0])
    np.testing.assert_array_equal(mod.forward([x1])[0].numpy(), x1 + y0)
    np.testing.assert_array_equal(mod.forward([])[0].numpy(), x1 + y0)
    np.testing.assert_array_equal(mod.run_method("forward", [x0])[0].numpy(), x0 + y0)


def test_b13_partial_call_with_numbers_kept():
    mod = module("scalars")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    mod.forward([x, 3, 0.5, True])
    out = mod.forward([x * 2])
    np.testing.assert_allclose(out[0].numpy(), x * 2 * 0.5 + 3)
    assert out[1:] == [4, 1.0, False]


def test_b13_never_passed_inputs_raise_naming_them():
    mod = module("add")
    x, _ = _add_inputs(15)
    with pytest.raises(RuntimeError, match=r"\b1\b"):
        mod.forward([x])
    with pytest.raises(RuntimeError, match=r"0, 1|0 and 1|\[0, 1\]"):
        mod.forward([])
    with pytest.raises(RuntimeError):
        mod.plan_execute()
    mod2 = module("scalars")
    with pytest.raises(RuntimeError, match=r"1, 2, 3|1, 2 and 3|\[1, 2, 3\]"):
        mod2.forward([np.zeros(3, np.float32)])


def test_b13_module_refuses_inputs_left_by_a_failed_call():
    mod = module("add")
    x0, y0 = _add_inputs(16)
    x1, y1 = _add_inputs(17)
    mod.forward([x0, y0])
    with pytest.raises(TypeError):
        mod.forward([x1, y1.astype(np.float64)])  # input 1 refused
    with pytest.raises(RuntimeError):
        mod.plan_execute()
    with pytest.raises(RuntimeError, match=r"\b1\b"):
        mod.forward([x1])  # input 1 still has to be passed again
    np.testing.assert_array_equal(mod.forward([x1, y1])[0].numpy(), x1 + y1)
    np.testing.assert_array_equal(mod.plan_execute()[0].numpy(), x1 + y1)


def test_b13_module_failed_partial_call_refuses_its_inputs():
    mod = module("add")
    x0, y0 = _add_inputs(18)
    mod.forward([x0, y0])
    with pytest.raises(ValueError):
        mod.forward([np.zeros((3, 3), np.float32)])
    with pytest.raises(RuntimeError):
        mod.plan_execute()
    # Passing input 0 again is enough: input 1 was not part of the failed call.
    np.testing.assert_array_equal(mod.forward([x0])[0].numpy(), x0 + y0)


def test_b13_plan_execute_before_any_call_raises():
    with pytest.raises(RuntimeError):
        module("add").plan_execute()
    with pytest.raises(RuntimeError):
        module("multi_method").plan_execute("encode")


def test_b13_module_method_without_inputs():
    mod = module("shared_state")
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert mod.run_method("set_state", [v]) == [None]
    np.testing.assert_array_equal(mod.run_method("get_state", [])[0].numpy(), v)
    np.testing.assert_array_equal(mod.plan_execute("get_state")[0].numpy(), v)


# --- B14 -------------------------------------------------------------------------


def test_b14_module_keeps_its_program_bytes_alive():
    raw = bytes(pte("mlp").read_bytes())
    mod = pterun.Module(raw)
    del raw
    gc.collect()
    x = call_inputs("mlp", 0)[0]
    assert_close(mod.forward([x])[0], call_outputs("mlp", 0)[0])


@pytest.mark.parametrize("kind", ["bytearray", "memoryview"])
def test_b14_module_survives_changes_to_its_source_buffer(kind):
    raw = bytearray(pte("add").read_bytes())
    src = raw if kind == "bytearray" else memoryview(raw)
    mod = pterun.Module(src)
    x, y = _add_inputs(19)
    np.testing.assert_array_equal(mod([x, y])[0].numpy(), x + y)
    if kind == "memoryview":
        src.release()
    raw[:] = b"\xff" * len(raw)
    del raw, src
    gc.collect()
    np.testing.assert_array_equal(mod([y, y])[0].numpy(), y + y)


def test_b14_methods_outlive_their_program_and_module():
    prog = pterun.load_program(bytes(pte("add").read_bytes()))
    m = prog.load_method("forward")
    del prog
    gc.collect()
    x, y = _add_inputs(20)
    np.testing.assert_array_equal(m([x, y])[0].numpy(), x + y)
    out = method("add")([x, y])[0]  # method and program dropped, result alive
    gc.collect()
    np.testing.assert_array_equal(out.numpy(), x + y)
