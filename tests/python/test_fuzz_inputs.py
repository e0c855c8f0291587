"""Hostile inputs (docs/python-api.md, B2-B6, B9): methods called with generated inputs of every
dtype, shape and layout (negative, zero and huge strides and sizes,
non-contiguous and read-only arrays), DLPack objects and capsules with
inconsistent fields, numbers of every kind and objects that are none of
these. Only the documented exceptions come out (TypeError, ValueError,
BufferError, OverflowError, or the exception a producer raised itself),
an accepted call gives the right result, and the method keeps giving
correct results afterwards. Deterministic (derandomised Hypothesis)."""

import array
import ctypes
import math

import numpy as np
import pytest

import pterun
from behaviour_util import assert_close, call_inputs, call_outputs, method

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=250, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))

ALLOWED = (TypeError, ValueError, BufferError, OverflowError)

NP_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float16", "float32", "float64", "complex64", "complex128", ">f4", ">i8", "<f4"]


class ProducerError(Exception):
    """What a hostile producer raises from __dlpack__: it must come out as is (B6)."""


# --- DLPack capsules built by hand ----------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
NO_OP_DELETER = DELETER(lambda _: None)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                     ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                                     ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_KEEP = []  # everything a capsule points at lives as long as the test module


def make_capsule(fields):
    """A capsule over a float32 [2, 3] tensor holding 0..5, with `fields`
    overriding what the DLTensor says about it. Its memory has room on both
    sides and its shape and strides arrays are padded, so that a capsule
    whose fields disagree (more dimensions than shape entries, negative
    strides) still lies only about what is there, not about where."""
    buf = (ctypes.c_float * 128)(*[i - 32 for i in range(128)])
    shape = fields.get("shape", (2, 3))
    strides = fields.get("strides", (3, 1))
    shape_arr = (ctypes.c_int64 * 24)(*(shape or ()), *([1] * (24 - len(shape or ()))))
    strides_arr = (ctypes.c_int64 * 24)(*(strides or ()), *([1] * (24 - len(strides or ()))))
    t = DLTensor()
    t.data = None if fields.get("null_data") else ctypes.addressof(buf) + 32 * 4
    t.device = DLDevice(*fields.get("device", (1, 0)))
    t.ndim = fields.get("ndim", len(shape or ()))
    t.dtype = DLDataType(*fields.get("dtype", (2, 32, 1)))
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64)) if shape is not None else None
    t.strides = (ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
                 if strides is not None else None)
    t.byte_offset = fields.get("byte_offset", 0)
    if fields.get("versioned", True):
        mt = DLManagedTensorVersioned()
        mt.major, mt.minor = fields.get("version", (1, 0))
        mt.flags = 1  # read-only
        mt.dl_tensor = t
    else:
        mt = DLManagedTensor()
        mt.dl_tensor = t
    mt.deleter = NO_OP_DELETER
    _KEEP.extend([buf, shape_arr, strides_arr, mt])
    name = fields.get("name", b"dltensor_versioned" if fields.get("versioned", True) else b"dltensor")
    return _capsule_new(ctypes.addressof(mt), name, None)


class Producer:
    """An object with __dlpack__ / __dlpack_device__ that may lie."""

    def __init__(self, capsule=None, device=(1, 0), raises=None, result=None, source=None):
        self.capsule, self.device, self.raises, self.result = capsule, device, raises, result
        self.source = source  # an array whose own __dlpack__ answers

    def __dlpack__(self, **kwargs):
        if self.raises is not None:
            raise self.raises
        if self.source is not None:
            return self.source.__dlpack__(**kwargs)
        return self.result if self.result is not None else self.capsule

    def __dlpack_device__(self):
        return self.device


capsule_fields = st.fixed_dictionaries({}, optional={
    "shape": st.one_of(st.none(), st.lists(st.integers(-3, 4), max_size=3).map(tuple)),
    "strides": st.one_of(st.none(), st.just((3, 1)), st.just((1, 2)), st.just((-1, 1)),
                         st.just((0, 0))),
    "ndim": st.sampled_from([-1, 0, 1, 2, 3, 17, 129, 2**31 - 1]),
    "dtype": st.sampled_from([(2, 32, 1), (2, 32, 4), (2, 7, 1), (0, 32, 1), (99, 8, 1),
                              (1, 64, 1), (5, 64, 1), (6, 1, 1)]),
    "device": st.sampled_from([(1, 0), (2, 0), (2, 99), (99, 0), (3, 0)]),
    "byte_offset": st.sampled_from([0, 4, 8]),
    "version": st.sampled_from([(1, 0), (1, 3), (0, 8), (2, 0), (99, 99)]),
    "versioned": st.booleans(),
    "null_data": st.booleans(),
    "name": st.sampled_from([b"dltensor", b"dltensor_versioned", b"used_dltensor", b"x\x9d"]),
})


@st.composite
def dlpack_objects(draw):
    kind = draw(st.sampled_from(["capsule", "numpy", "bad_device", "raises", "not_capsule"]))
    if kind == "capsule":
        fields = draw(capsule_fields)
        capsule = make_capsule(fields)
        device = fields.get("device", (1, 0)) if draw(st.booleans()) else (1, 0)
        return draw(st.sampled_from([capsule, Producer(capsule, device)]))
    if kind == "numpy":
        a = draw(arrays())
        return Producer(source=a, device=(1, 0))
    if kind == "bad_device":
        return Producer(make_capsule({}), device=draw(st.sampled_from(
            [("cpu", 0), (1,), (), None, (2**70, 0), (1, 2**70), (2, 0), (13, 0), "cpu"])))
    if kind == "raises":
        return Producer(raises=draw(st.sampled_from([ProducerError("no"), BufferError("locked"),
                                                     TypeError("max_version")])))
    return Producer(result=draw(st.sampled_from([None, 3, "capsule", b"x", object()])))


# --- arrays and numbers --------------------------------------------------------


@st.composite
def arrays(draw, shape=None, dtype=None, huge=True):
    dtype = np.dtype(dtype or draw(st.sampled_from(NP_DTYPES)))
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    base = np.arange(math.prod(shape) or 1, dtype=np.float64).astype(dtype)[: math.prod(shape)]
    a = base.reshape(shape)
    layout = draw(st.sampled_from(["c", "f", "reversed", "strided", "broadcast", "readonly",
                                   "transposed_view"] + (["huge"] if huge else [])))
    if layout == "f":
        a = np.asfortranarray(a)
    elif layout == "reversed" and a.ndim:
        a = np.ascontiguousarray(a[::-1])[::-1]  # same values, negative strides
    elif layout == "strided" and a.ndim:
        big = np.repeat(a, 5, axis=-1)  # every 5th element is `a`
        a = big[..., ::5]
    elif layout == "broadcast" and a.ndim:
        a = np.broadcast_to(a[:1], a.shape) if a.shape[0] else a
    elif layout == "readonly":
        a = a.copy()
        a.setflags(write=False)
    elif layout == "huge":
        a = np.broadcast_to(np.zeros((), dtype), draw(st.sampled_from(
            [(2**31, 3), (2, 2**40), (2**20, 2**20, 2**10), (0, 2**50), (2**40, 0, 2)])))
    elif layout == "transposed_view" and a.ndim >= 2:
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    return a


numbers = st.one_of(
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.complex_numbers(), st.sampled_from([2**64, -2**63 - 1, 2**1000, True, False, 0, -0.0]),
    st.builds(lambda d, v: np.array(v).astype(d)[()], st.sampled_from(NP_DTYPES[:14]),
              st.integers(-3, 3)),
)

# Made fresh for each example (some are mutable, some not hashable).
junk = st.sampled_from([
    lambda: None, lambda: "forward", lambda: b"\x00" * 24, lambda: bytearray(24),
    lambda: [1.0, 2.0], lambda: [[1, 2, 3]] * 2, lambda: (1, 2), lambda: {"a": 1}, object,
    lambda: array.array("f", [0] * 6), lambda: memoryview(b"\x00" * 24),
    lambda: memoryview(b"\x00" * 24).cast("f", (2, 3)), lambda: array.array("d", [0] * 6),
]).map(lambda make: make())


def hostile_value(declared):
    """Anything at all, with a bias towards values close to `declared`
    (an ndarray of the right dtype and shape)."""
    near = arrays(shape=declared.shape, dtype=declared.dtype)
    return st.one_of(near, near, arrays(shape=declared.shape), arrays(), numbers, junk,
                     dlpack_objects(),
                     st.builds(lambda a: pterun.Tensor.from_host(a, "cpu"),
                               arrays(shape=declared.shape, huge=False).filter(
                                   lambda a: a.dtype.isnative)))


# --- the properties -------------------------------------------------------------


def check_outcome(run, expected_inputs):
    """Runs `run()`; an exception must be a documented one."""
    try:
        return run()
    except ProducerError:
        return None  # the producer's own exception, kept (B6)
    except ALLOWED as e:
        assert str(e), f"{type(e).__name__} without a message"
        return None


def reference_add(inputs):
    """a + b when both inputs are arrays (or pterun Tensors), else None."""
    if not all(isinstance(v, (np.ndarray, pterun.Tensor)) for v in inputs):
        return None
    a, b = (np.asarray(v.numpy() if isinstance(v, pterun.Tensor) else v) for v in inputs)
    return a.astype(np.float32) + b.astype(np.float32)


ADD = method("add")
ADD_GOOD = call_inputs("add", 0)
ADD_OUT = call_outputs("add", 0)


@SETTINGS
@given(st.data())
def test_add_with_hostile_inputs(data):
    declared = np.zeros((2, 3), np.float32)
    count = data.draw(st.sampled_from([2, 2, 2, 0, 1, 3]))
    inputs = [data.draw(hostile_value(declared)) for _ in range(count)]
    container = data.draw(st.sampled_from([list, list, tuple, iter, set]))
    try:
        arg = container(inputs)
    except TypeError:  # unhashable in a set
        arg = inputs
    out = check_outcome(lambda: ADD(arg), inputs)
    expected = reference_add(inputs) if out is not None else None
    if expected is not None:
        # Accepted: float32 (2, 3) arrays in any layout; the result is their sum.
        assert_close(out[0], expected)
    assert_close(ADD(ADD_GOOD)[0], ADD_OUT[0])


SCALARS = method("scalars")
SCALARS_GOOD = call_inputs("scalars", 0)
SCALARS_OUT = call_outputs("scalars", 0)


@SETTINGS
@given(st.data())
def test_number_inputs_with_hostile_values(data):
    # scalars: (float32 [3], Int 3, Double 0.5, Bool True), numbers baked in.
    inputs = list(SCALARS_GOOD)
    for i in data.draw(st.sets(st.integers(0, 3), min_size=1)):
        inputs[i] = data.draw(st.one_of(numbers, junk, hostile_value(np.zeros(3, np.float32))))
    check_outcome(lambda: SCALARS.set_inputs(inputs), inputs)
    out = SCALARS(SCALARS_GOOD)
    assert_close(out[0], SCALARS_OUT[0])
    assert out[1:] == SCALARS_OUT[1:]


DYNAMIC = method("dynamic_mlp")  # float32 [<=64, 32]
DYNAMIC_GOOD = call_inputs("dynamic_mlp", 0)
DYNAMIC_OUT = call_outputs("dynamic_mlp", 0)


@SETTINGS
@given(st.data())
def test_dynamic_input_with_hostile_shapes(data):
    rows = data.draw(st.sampled_from([0, 1, 7, 64, 65, 2**31, 2**40]))
    cols = data.draw(st.sampled_from([32, 32, 0, 31, 33, 2**10]))
    dtype = data.draw(st.sampled_from(["float32", "float32", "float64", "float16", ">f4"]))
    if rows * cols <= 1 << 16:
        value = data.draw(arrays(shape=(rows, cols), dtype=dtype))
    else:  # no memory behind a huge shape: zero strides
        value = np.broadcast_to(np.zeros((), dtype), (rows, cols))
    out = check_outcome(lambda: DYNAMIC([value]), [value])
    if out is not None:
        assert out[0].shape == (value.shape[0], 10)
    assert_close(DYNAMIC(DYNAMIC_GOOD)[0], DYNAMIC_OUT[0])


CHANNELS_LAST = method("cnn_channels_last")  # float32 [1, 3, 32, 32], channels-last
CL_GOOD = call_inputs("cnn_channels_last", 0)
CL_OUT = call_outputs("cnn_channels_last", 0)


@settings(max_examples=60, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_layouts_give_the_results_of_their_copies(data):
    x = np.asarray(CL_GOOD[0])
    layout = data.draw(st.sampled_from(["c", "f", "nhwc", "reversed", "strided", "readonly",
                                        "dlpack"]))
    if layout == "c":
        value = np.ascontiguousarray(x)
    elif layout == "f":
        value = np.asfortranarray(x)
    elif layout == "nhwc":
        value = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    elif layout == "reversed":
        value = np.ascontiguousarray(x[:, ::-1, ::-1])[:, ::-1, ::-1]
    elif layout == "strided":
        value = np.repeat(x, 3, axis=3)[..., ::3]
    elif layout == "readonly":
        value = x.copy()
        value.setflags(write=False)
    else:
        value = Producer(source=np.asfortranarray(x))
    out = CHANNELS_LAST([value])
    assert_close(out[0], CL_OUT[0])
    if data.draw(st.booleans()):
        bad = data.draw(hostile_value(x))
        check_outcome(lambda: CHANNELS_LAST([bad]), [bad])
    assert_close(CHANNELS_LAST(CL_GOOD)[0], CL_OUT[0])


def test_capsule_with_null_shape_is_a_value_error_not_a_crash():
    with pytest.raises(ValueError, match="no shape"):
        ADD([Producer(make_capsule({"shape": None, "ndim": 2})), ADD_GOOD[1]])
    with pytest.raises(TypeError, match="version 2.0"):
        ADD([Producer(make_capsule({"version": (2, 0)})), ADD_GOOD[1]])
    with pytest.raises(TypeError, match=r"capsule named 'x\\x9d'"):
        ADD([Producer(make_capsule({"name": b"x\x9d"})), ADD_GOOD[1]])
    with pytest.raises(ValueError, match="rank 129"):
        ADD([Producer(make_capsule({"ndim": 129, "shape": (2, 3)})), ADD_GOOD[1]])
    assert_close(ADD(ADD_GOOD)[0], ADD_OUT[0])
    out = ADD([Producer(make_capsule({})), Producer(make_capsule({"versioned": False}))])
    np.testing.assert_array_equal(out[0].numpy(), 2 * np.arange(6, dtype=np.float32).reshape(2, 3))
