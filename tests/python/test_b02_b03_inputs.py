"""B2 (kinds of input accepted) and B3 (numbers must match the declared kind
and the exported value)."""

import array
import ctypes

import numpy as np
import pytest

import pterun
from behaviour_util import (
    assert_close,
    bf16_tensor_bits,
    call_inputs,
    call_outputs,
    float_to_bf16_bits,
    method,
    rng,
)

# --- a buffer exporter with any struct format -------------------------------


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_from_buffer = ctypes.pythonapi.PyMemoryView_FromBuffer
_from_buffer.restype = ctypes.py_object
_from_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_KEEP = []  # format strings and arrays the memoryviews point into


def memoryview_with_format(arr, fmt, shape=None, itemsize=None):
    """A read-only memoryview of `arr`'s memory that reports struct format `fmt`
    (for prefixes such as '=' and '!' that no Python exporter produces).
    `shape` and `itemsize` default to the array's; contiguous."""
    arr = np.ascontiguousarray(arr)
    itemsize = itemsize or arr.itemsize
    shape = tuple(shape or arr.shape)
    assert int(np.prod(shape)) * itemsize == arr.nbytes
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    fmt_buf = ctypes.create_string_buffer(fmt.encode())
    c_shape = (ctypes.c_ssize_t * len(shape))(*shape)
    c_strides = (ctypes.c_ssize_t * len(shape))(*strides)
    view = _PyBuffer(
        arr.ctypes.data, None, arr.nbytes, itemsize, 1, len(shape),
        ctypes.cast(fmt_buf, ctypes.c_char_p), c_shape, c_strides, None, None,
    )
    mv = _from_buffer(ctypes.byref(view))
    _KEEP.append((arr, fmt_buf))
    assert mv.format == fmt and mv.shape == shape
    return mv


def _add_inputs(seed=0):
    r = rng(seed)
    return (
        r.standard_normal((2, 3)).astype(np.float32),
        r.standard_normal((2, 3)).astype(np.float32),
    )


# --- B2 (a): the buffer protocol ---------------------------------------------

FORMAT_DTYPES = [
    ("?", 1, "bool"),
    ("b", 1, "int8"),
    ("B", 1, "uint8"),
    ("h", 2, "int16"),
    ("H", 2, "uint16"),
    ("i", 4, "int32"),
    ("I", 4, "uint32"),
    ("l", 8, "int64"),  # 'l' is 8 bytes on Linux: by kind and size, not letter
    ("L", 8, "uint64"),
    ("q", 8, "int64"),
    ("Q", 8, "uint64"),
    ("e", 2, "float16"),
    ("f", 4, "float32"),
    ("d", 8, "float64"),
    ("Zf", 8, "complex64"),
    ("Zd", 16, "complex128"),
]


@pytest.mark.parametrize("fmt,itemsize,name", FORMAT_DTYPES)
@pytest.mark.parametrize("prefix", ["", "@", "=", "<"])
def test_b02_buffer_formats_map_by_kind_and_size(fmt, itemsize, name, prefix):
    raw = np.arange(6 * itemsize, dtype=np.uint8) % 2  # valid bools too
    raw[::itemsize] = np.arange(6) % 2
    mv = memoryview_with_format(raw, prefix + fmt, shape=(2, 3), itemsize=itemsize)
    t = pterun.Tensor.from_host(mv, "cpu")
    assert t.dtype_name == name
    assert t.shape == (2, 3)
    assert t.nbytes == 6 * itemsize
    assert np.asarray(t).tobytes() == raw.tobytes()


@pytest.mark.parametrize("prefix", [">", "!"])
def test_b02_non_native_byte_order_is_type_error(prefix):
    x, y = _add_inputs()
    mv = memoryview_with_format(x, prefix + "f")
    m = method("add")
    with pytest.raises(TypeError):
        m([mv, y])
    with pytest.raises(TypeError):
        pterun.Tensor.from_host(mv, "cpu")


def test_b02_big_endian_numpy_array_is_type_error():
    x, y = _add_inputs()
    m = method("add")
    with pytest.raises(TypeError, match="input 0 of method 'forward': "):
        m([x.astype(">f4"), y])
    with pytest.raises(TypeError, match="input 1 of method 'forward': "):
        m([x, y.astype(">f4")])


def test_b02_native_prefixes_run_a_program():
    x, y = _add_inputs(1)
    m = method("add")
    for prefix in ["@", "=", "<"]:
        got = m([memoryview_with_format(x, prefix + "f"), y])[0].numpy()
        np.testing.assert_array_equal(got, x + y, err_msg=prefix)
    little = x.astype("<f4")  # NumPy's explicit little-endian dtype
    np.testing.assert_array_equal(m([little, y])[0].numpy(), x + y)


def test_b02_memoryview_array_array_and_bytes():
    x, y = _add_inputs(2)
    m = method("add")
    expected = x + y
    # memoryview of a NumPy array
    np.testing.assert_array_equal(m([memoryview(x), y])[0].numpy(), expected)
    # array.array, shaped through a memoryview cast
    arr = array.array("f", x.reshape(-1).tolist())
    shaped = memoryview(arr).cast("B").cast("f", (2, 3))
    np.testing.assert_array_equal(m([shaped, y])[0].numpy(), expected)
    # bytes (read-only) and bytearray
    shaped = memoryview(x.tobytes()).cast("f", (2, 3))
    assert shaped.readonly
    np.testing.assert_array_equal(m([shaped, y])[0].numpy(), expected)
    shaped = memoryview(bytearray(y.tobytes())).cast("f", (2, 3))
    np.testing.assert_array_equal(m([x, shaped])[0].numpy(), expected)


def test_b02_bytes_like_objects_are_uint8():
    for src in [b"\x01\x02\x03", bytearray(b"\x01\x02\x03"), memoryview(b"\x01\x02\x03")]:
        t = pterun.Tensor.from_host(src, "cpu")
        assert t.dtype_name == "uint8"
        assert t.shape == (3,)
        assert t.tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    "code,name",
    [("b", "int8"), ("B", "uint8"), ("h", "int16"), ("H", "uint16"), ("i", "int32"),
     ("I", "uint32"), ("l", "int64"), ("L", "uint64"), ("q", "int64"), ("Q", "uint64"),
     ("f", "float32"), ("d", "float64")],
)
def test_b02_array_array_codes(code, name):
    a = array.array(code, [1, 2, 3])
    t = pterun.Tensor.from_host(a, "cpu")
    assert t.dtype_name == name
    assert t.tolist() == [1, 2, 3]


def test_b02_numpy_dtypes_map_to_program_dtypes():
    cases = {
        np.bool_: "bool", np.int8: "int8", np.uint8: "uint8", np.int16: "int16",
        np.uint16: "uint16", np.int32: "int32", np.uint32: "uint32", np.int64: "int64",
        np.uint64: "uint64", np.float16: "float16", np.float32: "float32",
        np.float64: "float64", np.complex64: "complex64", np.complex128: "complex128",
        np.longlong: "int64", np.intc: "int32",
    }
    for np_type, name in cases.items():
        a = np.arange(4).astype(np_type)
        t = pterun.Tensor.from_host(a, "cpu")
        assert t.dtype_name == name, np_type
        np.testing.assert_array_equal(np.asarray(t), a)


def test_b02_complex_values_round_trip():
    a = (np.arange(4) + 1j * np.arange(4, 8)).astype(np.complex64)
    t = pterun.Tensor.from_host(a, "cpu")
    assert t.dtype_name == "complex64"
    np.testing.assert_array_equal(t.numpy(), a)


def test_b02_int64_and_float16_and_int32_program_inputs():
    # multi_method.encode takes float32 and int64; int_ops int64/int32; fp16_add float16.
    got = method("multi_method", "encode")(call_inputs("multi_method", 1))
    for g, e in zip(got, call_outputs("multi_method", 1)):
        assert_close(g, e, "int64" if g.dtype_name == "int64" else "float32")
    got = method("fp16_add")(call_inputs("fp16_add", 0))
    for g, e in zip(got, call_outputs("fp16_add", 0)):
        assert g.dtype_name == "float16"
        assert_close(g, e, "float16")


# --- B2 (b): DLPack ----------------------------------------------------------


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


class LegacyDLPack:
    """Only DLPack (no buffer protocol); an old producer: no keyword arguments,
    unversioned capsules."""

    def __init__(self, source):
        self.source = source
        self.names = []

    def __dlpack__(self, stream=None):
        capsule = self.source.__dlpack__()
        self.names.append(_capsule_name(capsule))
        return capsule

    def __dlpack_device__(self):
        return self.source.__dlpack_device__()


class VersionedDLPack:
    """Only DLPack; a producer that only hands out versioned capsules (refuses
    a request without max_version, as a read-only producer may)."""

    def __init__(self, source):
        self.source = source
        self.names = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if max_version is None or tuple(max_version) < (1, 0):
            raise BufferError("this producer only exports versioned capsules")
        capsule = self.source.__dlpack__(max_version=(1, 0))
        self.names.append(_capsule_name(capsule))
        return capsule

    def __dlpack_device__(self):
        return self.source.__dlpack_device__()


@pytest.mark.parametrize("wrapper", [LegacyDLPack, VersionedDLPack])
def test_b02_dlpack_objects_legacy_and_versioned(wrapper):
    x, y = _add_inputs(3)
    wx, wy = wrapper(x), wrapper(pterun.Tensor.from_host(y, "cpu"))
    got = method("add")([wx, wy])[0].numpy()
    np.testing.assert_array_equal(got, x + y)
    expected_name = "dltensor" if wrapper is LegacyDLPack else "dltensor_versioned"
    assert wx.names and set(wx.names) == {expected_name}
    assert wy.names and set(wy.names) == {expected_name}


@pytest.mark.parametrize("wrapper", [LegacyDLPack, VersionedDLPack])
def test_b02_dlpack_non_contiguous(wrapper):
    x, y = _add_inputs(4)
    got = method("add")([wrapper(np.asfortranarray(x)), wrapper(y[:, ::-1][:, ::-1])])[0]
    np.testing.assert_array_equal(got.numpy(), x + y)


@pytest.mark.parametrize("wrapper", [LegacyDLPack, VersionedDLPack])
def test_b02_dlpack_bfloat16_input(wrapper):
    inputs = call_inputs("bf16_mlp", 0)  # a bfloat16 pterun.Tensor
    expected = call_outputs("bf16_mlp", 0)[0]
    m = method("bf16_mlp")
    direct = m(inputs)[0]
    assert direct.dtype_name == "bfloat16"
    assert_close(direct, expected, "bfloat16")
    through = m([wrapper(inputs[0])])[0]
    assert through.dtype_name == "bfloat16"
    np.testing.assert_array_equal(bf16_tensor_bits(through), bf16_tensor_bits(direct))


def test_b02_dlpack_bfloat16_keeps_dtype_in_from_host():
    bits = float_to_bf16_bits(np.array([1.0, -2.5, 3.0], np.float32))
    t = pterun.Tensor.from_host(bits, "cpu", dtype="bfloat16")
    for wrapper in (LegacyDLPack, VersionedDLPack):
        copy = pterun.Tensor.from_host(wrapper(t), "cpu")
        assert copy.dtype_name == "bfloat16"
        np.testing.assert_array_equal(bf16_tensor_bits(copy), bits)


# --- B2 (c): pterun.Tensor -----------------------------------------------------


def test_b02_pterun_tensor_inputs():
    x, y = _add_inputs(5)
    m = method("add")
    s = m([x, y])[0]
    got = m([s, pterun.Tensor.from_host(y, "cpu")])[0].numpy()
    np.testing.assert_array_equal(got, (x + y) + y)
    # A result fed back into another method of another program.
    mlp_x = call_inputs("mlp", 0)[0]
    t = pterun.Tensor.from_host(mlp_x, "cpu")
    assert_close(method("mlp")([t])[0], call_outputs("mlp", 0)[0])


def test_b02_clone_false_view_as_input():
    x, y = _add_inputs(6)
    m1, m2 = method("add"), method("add")
    view = m1([x, y], clone_outputs=False)[0]
    got = m2([view, y])[0].numpy()
    np.testing.assert_array_equal(got, x + y + y)


# --- B2 (d) and B3: numbers ------------------------------------------------------

X3 = np.array([1.0, -2.0, 4.0], np.float32)


def _scalars(n=3, s=0.5, flag=True, x=X3):
    return [x, n, s, flag]


def _check_scalars_result(out, x=X3):
    assert len(out) == 4
    np.testing.assert_allclose(out[0].numpy(), x * np.float32(0.5) + np.float32(3), rtol=1e-6)
    assert out[1] == 4 and type(out[1]) is int
    assert out[2] == 1.0 and type(out[2]) is float
    assert out[3] is False


def test_b03_fixture_call_with_saved_numbers():
    m = method("scalars")
    out = m(call_inputs("scalars", 0))
    expected = call_outputs("scalars", 0)
    assert_close(out[0], expected[0])
    assert out[1:] == expected[1:]


@pytest.mark.parametrize(
    "n", [3, np.int64(3), np.int32(3), np.int8(3), np.uint8(3), np.uint64(3), np.intp(3)],
    ids=lambda v: type(v).__name__,
)
def test_b03_int_input_accepts_python_and_numpy_integers(n):
    _check_scalars_result(method("scalars")(_scalars(n=n)))


@pytest.mark.parametrize(
    "n", [True, np.bool_(True), 3.0, np.float64(3.0), np.float32(3.0), "3", None, 3 + 0j,
          np.array([3])],
    ids=lambda v: type(v).__name__,
)
def test_b03_int_input_refuses_other_kinds(n):
    with pytest.raises(TypeError, match="input 1 of method 'forward': "):
        method("scalars")(_scalars(n=n))


@pytest.mark.parametrize(
    "s", [0.5, np.float64(0.5), np.float32(0.5), np.float16(0.5)],
    ids=lambda v: type(v).__name__,
)
def test_b03_double_input_accepts_floats(s):
    _check_scalars_result(method("scalars")(_scalars(s=s)))


@pytest.mark.parametrize("s", [1, np.int64(1), np.uint8(1)], ids=lambda v: type(v).__name__)
def test_b03_double_input_accepts_integers_but_checks_value(s):
    # An int is a valid kind for a Double input: its value (1) differs from
    # the exported 0.5, so this is the ValueError of B3, not a TypeError.
    with pytest.raises(ValueError, match=r"(?s)0\.5.*1|1.*0\.5"):
        method("scalars")(_scalars(s=s))


@pytest.mark.parametrize(
    "s", [True, np.bool_(True), "0.5", None, 0.5 + 0j, np.complex64(0.5)],
    ids=lambda v: type(v).__name__,
)
def test_b03_double_input_refuses_other_kinds(s):
    with pytest.raises(TypeError, match="input 2 of method 'forward': "):
        method("scalars")(_scalars(s=s))


@pytest.mark.parametrize("flag", [True, np.bool_(True)], ids=lambda v: type(v).__name__)
def test_b03_bool_input_accepts_bools(flag):
    _check_scalars_result(method("scalars")(_scalars(flag=flag)))


@pytest.mark.parametrize(
    "flag", [1, 0, np.int64(1), 1.0, "True", None], ids=lambda v: type(v).__name__
)
def test_b03_bool_input_refuses_other_kinds(flag):
    with pytest.raises(TypeError, match="input 3 of method 'forward': "):
        method("scalars")(_scalars(flag=flag))


@pytest.mark.parametrize(
    "index,value,exported,given",
    [(1, 4, "3", "4"), (1, -7, "3", "-7"), (2, 0.25, "0.5", "0.25"), (3, False, "True", "False"),
     (1, np.int64(5), "3", "5"), (3, np.bool_(False), "True", "False")],
)
def test_b03_other_value_than_exported_is_value_error_naming_both(index, value, exported, given):
    inputs = _scalars()
    inputs[index] = value
    with pytest.raises(ValueError) as info:
        method("scalars")(inputs)
    message = str(info.value)
    assert message.startswith(f"input {index} of method 'forward': "), message
    assert exported in message and given in message, message


def test_b03_number_for_a_tensor_and_tensor_for_a_number_are_type_errors():
    m = method("scalars")
    with pytest.raises(TypeError, match="input 0 of method 'forward': "):
        m([1.0, 3, 0.5, True])
    with pytest.raises(TypeError, match="input 1 of method 'forward': "):
        m([X3, np.array([3], np.int64), 0.5, True])
    with pytest.raises(TypeError, match="input 2 of method 'forward': "):
        m([X3, 3, pterun.Tensor.from_host(np.array([0.5]), "cpu"), True])
    with pytest.raises(TypeError, match="input 0 of method 'forward': "):
        method("add")([2.0, np.zeros((2, 3), np.float32)])
