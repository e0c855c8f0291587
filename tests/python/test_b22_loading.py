"""B22 and B14: sources, missing files, damaged files."""

import gc
import mmap
import random

import pytest

import pterun
from conftest import FIXTURES


def test_b22_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        pterun.load_program(tmp_path / "nope.pte")
    with pytest.raises(FileNotFoundError):
        pterun.load_program(FIXTURES / "add.pte", data=tmp_path / "nope.ptd")


def test_b22_program_error_is_a_value_error():
    assert issubclass(pterun.ProgramError, ValueError)


def test_sources_path_str_bytes_bytearray_memoryview_mmap():
    path = FIXTURES / "add.pte"
    raw = path.read_bytes()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sources = [path, str(path), raw, bytearray(raw), memoryview(raw), mm]
        for src in sources:
            assert pterun.load_program(src).method_names == ["forward"]


def test_unreadable_source_is_type_error():
    with pytest.raises(TypeError):
        pterun.load_program(42)
    with pytest.raises(TypeError):
        pterun.load_program([1, 2, 3])
    with pytest.raises(TypeError):
        pterun.load_program(FIXTURES / "add.pte", data=object())


def test_b14_program_keeps_its_bytes_alive():
    raw = bytes((FIXTURES / "mlp.pte").read_bytes())
    program = pterun.load_program(raw)
    del raw
    gc.collect()
    meta = program.method_meta("forward")
    assert meta.input_tensor_meta(0).sizes == (8, 32)


def test_writable_source_is_copied_so_later_writes_cannot_break_it():
    buf = bytearray((FIXTURES / "add.pte").read_bytes())
    program = pterun.load_program(buf)
    buf[:] = b"\xff" * len(buf)
    assert program.method_meta("forward").num_inputs == 2


def test_b22_not_a_program():
    for junk in [b"", b"ET12", b"hello world, this is not a program" * 10, b"\0" * 4096]:
        with pytest.raises(pterun.ProgramError):
            pterun.load_program(junk)


def test_b22_other_format_version():
    raw = bytearray((FIXTURES / "add.pte").read_bytes())
    raw[4:8] = b"ET13"
    with pytest.raises(pterun.ProgramError, match="format version"):
        pterun.load_program(bytes(raw))


def test_b22_truncated_segments_named():
    raw = (FIXTURES / "mlp.pte").read_bytes()
    with pytest.raises(pterun.ProgramError, match="truncated"):
        pterun.load_program(raw[: len(raw) - 100])


def test_b22_damaged_data_file():
    raw = (FIXTURES / "external_weights.ptd").read_bytes()
    with pytest.raises(pterun.ProgramError, match="data file"):
        pterun.load_program(FIXTURES / "external_weights.pte", data=raw[:200])
    with pytest.raises(pterun.ProgramError):
        pterun.load_program(FIXTURES / "external_weights.pte", data=FIXTURES / "add.pte")


@pytest.mark.parametrize("name", ["add", "cnn", "shared_state", "xnnpack_mlp", "control_flow"])
def test_b22_random_damage_never_crashes(name):
    """Random truncations, flips and overwritten words: ProgramError or a
    clean load (the format has no checksums), never anything else. The C++
    suite sweeps every byte exhaustively under AddressSanitizer."""
    raw = (FIXTURES / f"{name}.pte").read_bytes()
    rng = random.Random(name)
    outcomes = {"loaded": 0, "rejected": 0}
    for trial in range(600):
        b = bytearray(raw)
        kind = trial % 3
        if kind == 0:
            b = b[: rng.randrange(len(b))]
        elif kind == 1:
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(min(len(b), 8192))] ^= 1 << rng.randrange(8)
        else:
            at = rng.randrange(0, min(len(b), 8192) - 4) & ~3
            b[at : at + 4] = rng.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, len(b)]).to_bytes(4, "little")
        try:
            program = pterun.load_program(bytes(b))
            for m in program.method_names:
                meta = program.method_meta(m)
                for i in range(meta.num_inputs):
                    if meta.input_tag(i) == "Tensor":
                        meta.input_tensor_meta(i)
            outcomes["loaded"] += 1
        except (pterun.ProgramError, NotImplementedError, MemoryError):
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 0
