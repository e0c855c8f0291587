"""pterun.runtime follows executorch.runtime: the examples of its
documentation (rewritten here, the same calls) run with one import changed,
on NumPy inputs."""

import io
import pathlib

import numpy as np
import pytest

import pterun
from conftest import FIXTURES, fixture_paths
from pterun.runtime import Method, MethodMeta, Program, Runtime, TensorInfo, Verification


def test_doc_example_load_and_execute(tmp_path):
    # executorch.runtime's first example: load a program from a Path, list
    # its methods, load forward and execute it on two tensors.
    path = tmp_path / "program.pte"
    path.write_bytes((FIXTURES / "add.pte").read_bytes())
    et_runtime: Runtime = Runtime.get()
    program: Program = et_runtime.load_program(pathlib.Path(path))
    assert program.method_names == {"forward"}
    forward: Method = program.load_method("forward")
    inputs = (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    outputs = forward.execute(inputs)
    assert len(outputs) == 1 and isinstance(outputs[0], pterun.Tensor)
    np.testing.assert_array_equal(outputs[0].numpy(), np.full((2, 3), 2, np.float32))


def test_doc_example_etdump_is_refused_clearly():
    # The ETDump example: pterun records no traces and says so.
    with pytest.raises(NotImplementedError, match="ETDump"):
        Runtime.get().load_program(FIXTURES / "add.pte", enable_etdump=True,
                                   debug_buffer_size=int(1e7))
    program = Runtime.get().load_program(FIXTURES / "add.pte")
    with pytest.raises(NotImplementedError, match="ETDump"):
        program.write_etdump_result_to_file("/tmp/etdump.etdp", "/tmp/debug.bin")


def test_doc_example_backend_and_operator_introspection():
    runtime = Runtime.get()
    backends = runtime.backend_registry.registered_backend_names
    assert backends == ["XnnpackBackend"]  # expanded into pterun's kernels at load
    assert runtime.backend_registry.is_available("XnnpackBackend")
    assert not runtime.backend_registry.is_available("CoreMLBackend")
    operators = runtime.operator_registry.operator_names
    assert "aten::add.out" in operators and "aten::convolution.out" in operators
    assert len(operators) == len(pterun.operator_names("cpu")) > 50


def test_runtime_is_a_singleton():
    assert Runtime.get() is Runtime.get()


def test_load_program_accepts_paths_bytes_and_files():
    data = (FIXTURES / "add.pte").read_bytes()
    rt = Runtime.get()
    for src in (str(FIXTURES / "add.pte"), FIXTURES / "add.pte", data, bytearray(data),
                memoryview(data), io.BytesIO(data)):
        assert rt.load_program(src).method_names == {"forward"}, type(src)
    with open(FIXTURES / "add.pte", "rb") as f:
        assert rt.load_program(f).method_names == {"forward"}
    for level in (Verification.Minimal, Verification.InternalConsistency):
        assert rt.load_program(data, verification=level).method_names == {"forward"}
    with pytest.raises(TypeError, match="Verification"):
        rt.load_program(data, verification="minimal")
    with pytest.raises(TypeError):
        rt.load_program(12)
    with pytest.raises(pterun.ProgramError):
        rt.load_program(b"not a program")


def test_data_path_for_external_weights(manifest):
    entry = manifest["fixtures"]["external_weights"]
    pte, ptd = fixture_paths(entry)
    expected = np.load(FIXTURES / entry["files"]["npz"])
    for data_path in (ptd, str(ptd), ptd.read_bytes()):
        program = Runtime.get().load_program(pte, data_path=data_path)
        (out,) = program.load_method("forward").execute([expected["c0_in0"]])
        np.testing.assert_allclose(out.numpy(), expected["c0_out0"], rtol=1e-5, atol=1e-6)


def test_method_meta_and_tensor_info_accessors_are_executorch_methods(manifest):
    program = Runtime.get().load_program(FIXTURES / "multi_method.pte")
    assert program.method_names == {"forward", "encode"}
    meta: MethodMeta = program.metadata("encode")
    want = manifest["fixtures"]["multi_method"]["methods"]["encode"]
    assert meta.name() == "encode"
    assert meta.num_inputs() == len(want["inputs"]) == 2
    assert meta.num_outputs() == len(want["outputs"])
    assert meta.num_attributes() == 0
    info: TensorInfo = meta.input_tensor_meta(1)
    assert info.sizes() == tuple(want["inputs"][1]["sizes"])
    assert info.dtype() == pterun.dtype.int64 == 4  # ExecuTorch's ScalarType number
    assert info.is_memory_planned() is want["inputs"][1]["is_memory_planned"]
    assert info.nbytes() == want["inputs"][1]["nbytes"]
    assert info.dtype_name == "int64" and info.dim_order == (0,)  # pterun's extras
    assert meta.output_tensor_meta(0).sizes() == tuple(want["outputs"][0]["sizes"])
    assert meta.num_memory_planned_buffers() == len(want["memory_planned_buffer_sizes"])
    assert meta.memory_planned_buffer_size(0) == want["memory_planned_buffer_sizes"][0]
    for bad in (-1, 2):
        with pytest.raises(IndexError):
            meta.input_tensor_meta(bad)
    assert "TensorInfo(sizes=(3,)" in repr(info)
    # pterun's names work too.
    assert program.method_meta("encode").name() == "encode"


def test_method_metadata_and_loading_once():
    program = Runtime.get().load_program(FIXTURES / "mlp.pte")
    m = program.load_method("forward")
    assert program.load_method("forward") is m
    assert m.metadata.name() == "forward" == m.method_meta().name()
    assert m.metadata.input_tensor_meta(0).sizes() == (8, 32)
    assert isinstance(m.pterun_method, pterun.Method)
    with pytest.raises(ValueError, match="no method named 'backward'"):
        program.load_method("backward")


def test_inputs_from_numpy_dlpack_and_lists(manifest):
    data = np.load(FIXTURES / "add.npz")
    forward = Runtime.get().load_program(FIXTURES / "add.pte").load_method("forward")
    x, y = data["c1_in0"], data["c1_in1"]
    for inputs in ([x, y], (x, y), [pterun.Tensor.from_host(x, "cpu"), y]):
        (out,) = forward.execute(inputs)
        np.testing.assert_array_equal(np.from_dlpack(out), data["c1_out0"])
    (out,) = forward(iter([x, y]))  # any sequence, as ExecuTorch's
    np.testing.assert_array_equal(out.numpy(), data["c1_out0"])
    # A single array is not a sequence of its rows.
    with pytest.raises(TypeError):
        forward.execute(np.stack([x, y]))


def test_bundled_program_runs_through_load_program():
    program = Runtime.get().load_program(FIXTURES / "bundled_add.bpte")
    case = pterun.load_bundled_program(FIXTURES / "bundled_add.bpte").test_cases("forward")[2]
    (out,) = program.load_method("forward").execute(case.inputs)
    np.testing.assert_allclose(out.numpy(), case.expected_outputs[0].numpy(), rtol=1e-6)
