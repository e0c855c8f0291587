"""B22: names and strings of a program that are not valid UTF-8 are a
ProgramError whose message shows the bytes escaped (\\xNN), never a
UnicodeDecodeError; valid but unprintable text (control characters) loads,
and every message quoting it escapes it."""

import re

import numpy as np
import pytest

import pterun
from conftest import FIXTURES


def patched(name, old, new, suffix="pte"):
    raw = (FIXTURES / f"{name}.{suffix}").read_bytes()
    assert len(old) == len(new) and raw.count(old) == 1, (name, old)
    return raw.replace(old, new)


def expect_program_error(src, text, data=None):
    with pytest.raises(pterun.ProgramError) as info:
        pterun.load_program(src, data=data)
    assert text in str(info.value), str(info.value)
    return str(info.value)


def test_b22_method_name_not_utf8():
    raw = patched("add", b"forward", b"forw\x9drd")
    expect_program_error(raw, r"method 0: name 'forw\x9drd' is not valid UTF-8")


def test_b22_operator_name_not_utf8():
    raw = patched("add", b"aten::add", b"aten::\xffdd")
    expect_program_error(raw, r"method 'forward', operator 0: name 'aten::\xffdd' is not valid UTF-8")


def test_b22_string_value_not_utf8():
    raw = patched("int_ops", b"floor", b"fl\xc3or")  # \xc3 starts a sequence 'o' cannot continue
    msg = expect_program_error(raw, r"String 'fl\xc3or' is not valid UTF-8")
    assert re.search(r"method 'forward', value \d+: String", msg), msg


def test_b22_tensor_name_not_utf8():
    raw = (FIXTURES / "shared_state.pte").read_bytes().replace(b"m.state", b"m.st\xedte", 1)
    expect_program_error(raw, r"fully_qualified_name 'm.st\xedte' is not valid UTF-8")


def test_b22_data_file_key_not_utf8():
    raw = patched("external_weights", b"net.0.bias", b"net.\x80.bias", suffix="ptd")
    expect_program_error(FIXTURES / "external_weights.pte",
                         r"'net.\x80.bias' is not valid UTF-8", data=raw)


def test_b22_format_version_bytes_escaped():
    raw = bytearray((FIXTURES / "add.pte").read_bytes())
    raw[6:8] = b"\x9d\x00"
    expect_program_error(bytes(raw), r"format version 'ET\x9d\x00' (expected 'ET12')")


def test_b22_control_characters_load_and_are_escaped_in_messages():
    raw = patched("add", b"forward", b"forw\nrd")
    program = pterun.load_program(raw)
    assert program.method_names == ["forw\nrd"]
    assert "forw\\x0ard" in repr(program)
    with pytest.raises(ValueError, match=re.escape(r"(it has 'forw\x0ard')")):
        program.load_method("forward")
    method = program.load_method("forw\nrd")
    out = method([np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])[0]
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2, np.float32))
    with pytest.raises(ValueError, match=re.escape(r"method 'forw\x0ard' takes 2 inputs")):
        method([np.ones((2, 3), np.float32)] * 3)


def test_b22_non_ascii_utf8_names_are_kept():
    raw = patched("add", b"forward", "förwar".encode())
    program = pterun.load_program(raw)
    assert program.method_names == ["förwar"]
    assert program.load_method("förwar").name == "förwar"


def test_b23_operator_with_control_character_is_named_escaped():
    raw = patched("add", b"aten::add", b"aten::a\x1bd")
    program = pterun.load_program(raw)
    with pytest.raises(NotImplementedError, match=re.escape(r"aten::a\x1bd.out")):
        program.load_method("forward")
