"""Method.__call__ and Module.__call__ run plain calls through the types'
own call slot (method.cpp): every form of the bound signature
`(inputs, *, clone_outputs=True)` gives the same results, and every other
call, and every error, is what the bound `__call__` gives (docs/python-api.md, B6, B16, B17)."""

import numpy as np
import pytest

import pterun
from behaviour_util import method, module


def _inputs():
    r = np.random.default_rng(3)
    return [r.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]


@pytest.fixture(params=["method", "module"])
def callable_add(request):
    return method("add") if request.param == "method" else module("add")


def test_every_call_form_gives_the_same_outputs(callable_add):
    x, y = _inputs()
    m = callable_add
    expected = x + y
    forms = [
        lambda: m([x, y]),
        lambda: m((x, y)),
        lambda: m(inputs=[x, y]),
        lambda: m([x, y], clone_outputs=True),
        lambda: m([x, y], clone_outputs=False),
        lambda: m(inputs=[x, y], clone_outputs=False),
        lambda: m.__call__([x, y]),
        lambda: m(*[[x, y]], **{"clone_outputs": True}),
    ]
    for form in forms:
        out = form()
        assert isinstance(out, list) and len(out) == 1
        assert isinstance(out[0], pterun.Tensor)
        np.testing.assert_array_equal(out[0].numpy(), expected)


def test_clone_outputs_false_returns_views_through_the_slot():
    # B17: a view is overwritten by the next run, a clone is not.
    m = method("add")
    x, y = _inputs()
    view = m([x, y], clone_outputs=False)[0]
    m([x * 2, y * 2], clone_outputs=False)
    np.testing.assert_array_equal(view.numpy(), 2 * (x + y))
    kept = m([x, y])[0]
    m([x * 2, y * 2])
    np.testing.assert_array_equal(kept.numpy(), x + y)


def _error(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((), {}),
        ((None, None), {}),
        (([0], True), {}),
        ((), {"clone_outputs": True}),
        (([0],), {"clone_outputs": 1}),
        (([0],), {"clone_outputs": None}),
        (([0],), {"other": True}),
        (([0],), {"clone_outputs": True, "other": True}),
    ],
)
def test_other_signatures_fail_as_the_bound_call_does(callable_add, args, kwargs):
    m = callable_add
    via_slot = _error(lambda: m(*args, **kwargs))
    bound = _error(lambda: m.__call__(*args, **kwargs))
    assert via_slot == bound
    assert via_slot[0] is TypeError


def test_call_errors_keep_their_types_and_messages(callable_add):
    m = callable_add
    x, y = _inputs()
    cases = [
        (lambda f: f(x), TypeError),  # not a list or tuple
        (lambda f: f([x, y, x]), ValueError),  # too many inputs
        (lambda f: f([x, y.astype(np.float64)]), TypeError),  # dtype (B5, B6)
        (lambda f: f([x, np.ones((3, 2), np.float32)]), ValueError),  # static shape
        (lambda f: f([x, object()]), TypeError),  # unreadable
    ]
    for call, expected in cases:
        got = _error(lambda: call(m))
        assert got[0] is expected
        assert got == _error(lambda: call(m.__call__))
    # The method still runs after the errors.
    np.testing.assert_array_equal(m([x, y])[0].numpy(), x + y)


class ProducerError(Exception):
    pass


def test_python_exception_of_an_input_passes_through(callable_add):
    class Producer:
        def __dlpack__(self, **kwargs):
            raise ProducerError("from the producer")

        def __dlpack_device__(self):
            return (1, 0)

    x, _ = _inputs()
    got = _error(lambda: callable_add([x, Producer()]))
    assert got == (ProducerError, "input 1 of method 'forward': from the producer")
