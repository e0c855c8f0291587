"""Program and MethodMeta report what ExecuTorch's own deserializer read from
each fixture (recorded by tests/fixtures/export.py in manifest.json)."""

import pytest

import pterun
from conftest import FIXTURES, VECTORS, fixture_names, fixture_paths, requires_vectors


def check_io(meta, i, expected, is_input):
    tag = meta.input_tag(i) if is_input else meta.output_tag(i)
    assert tag == expected["tag"]
    if tag != "Tensor":
        return
    info = meta.input_tensor_meta(i) if is_input else meta.output_tensor_meta(i)
    assert info.dtype_name == expected["dtype"]
    assert int(info.dtype) == expected["scalar_type"]
    assert info.dtype == pterun.dtype(expected["scalar_type"])
    assert info.sizes == tuple(expected["sizes"])
    assert info.dim_order == tuple(expected["dim_order"])
    assert info.shape_dynamism == expected["shape_dynamism"]
    assert info.is_memory_planned == expected["is_memory_planned"]
    assert info.nbytes == expected["nbytes"]
    assert info.name == expected.get("name")


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_metadata_matches_exporter(manifest, name):
    entry = manifest["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    program = pterun.load_program(str(pte), data=ptd)
    assert sorted(program.method_names) == sorted(entry["methods"])
    for method, expected in entry["methods"].items():
        meta = program.method_meta(method)
        assert meta.name == method
        assert meta.num_inputs == len(expected["inputs"])
        assert meta.num_outputs == len(expected["outputs"])
        for i, e in enumerate(expected["inputs"]):
            check_io(meta, i, e, True)
        for i, e in enumerate(expected["outputs"]):
            check_io(meta, i, e, False)
        assert meta.memory_planned_buffer_sizes == tuple(expected["memory_planned_buffer_sizes"])
        assert meta.backends == tuple(expected["delegates"])


def test_method_names_in_file_order():
    program = pterun.load_program(FIXTURES / "shared_state.pte")
    assert program.method_names == sorted(program.method_names)  # the writer sorts them
    assert set(program.method_names) == {"forward", "get_state", "set_state"}


def test_attributes_are_named_tensors(manifest):
    program = pterun.load_program(FIXTURES / "stateful.pte")
    meta = program.method_meta("forward")
    assert meta.num_attributes >= 1
    names = [meta.attribute_tensor_meta(i).name for i in range(meta.num_attributes)]
    assert any("count" in n for n in names)
    with pytest.raises(IndexError):
        meta.attribute_tensor_meta(meta.num_attributes)


def test_delegated_method_reports_backend():
    meta = pterun.load_program(FIXTURES / "xnnpack_mlp.pte").method_meta("forward")
    assert meta.backends == ("XnnpackBackend",)
    assert "XnnpackBackend" in repr(meta)


def test_dtype_enum_uses_scalar_type_numbers():
    assert pterun.dtype.float32 == 6
    assert pterun.dtype.bfloat16 == 15
    assert pterun.dtype.bool == 11
    assert pterun.dtype.int64 == 4
    assert pterun.dtype.complex64 == 9


def test_reprs_are_readable():
    program = pterun.load_program(FIXTURES / "add.pte")
    assert repr(program) == "Program(methods=['forward'])"
    meta = program.method_meta("forward")
    assert repr(meta) == (
        "MethodMeta(name='forward', inputs=[float32[2, 3], float32[2, 3]], "
        "outputs=[float32[2, 3]], backends=())"
    )
    assert repr(meta.input_tensor_meta(0)) == (
        "TensorInfo(sizes=(2, 3), dtype=float32, dim_order=(0, 1), "
        "shape_dynamism='static', is_memory_planned=True, nbytes=24)"
    )


def test_tags_and_index_errors():
    meta = pterun.load_program(FIXTURES / "scalars.pte").method_meta("forward")
    assert [meta.input_tag(i) for i in range(meta.num_inputs)] == ["Tensor", "Int", "Double", "Bool"]
    with pytest.raises(IndexError):
        meta.input_tag(meta.num_inputs)
    with pytest.raises(ValueError):
        meta.input_tensor_meta(1)  # an Int input has no tensor metadata


def test_missing_method_is_value_error():
    program = pterun.load_program(FIXTURES / "multi_method.pte")
    with pytest.raises(ValueError, match="no method named 'decode'.*'encode'"):
        program.method_meta("decode")


@requires_vectors
def test_reference_vectors_load():
    for name, sizes in [
        ("et_add_no_extended_header.pte", (1,)),
        ("et_add_one.pte", (3,)),
        ("et_inline_constant_buffer.pte", (2, 2)),
    ]:
        meta = pterun.load_program(VECTORS / name).method_meta("forward")
        assert meta.input_tensor_meta(0).sizes == sizes
        assert meta.output_tensor_meta(0).dtype == pterun.dtype.float32
