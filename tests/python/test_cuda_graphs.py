"""CUDA graphs: a GPU method with static shapes and no control flow is
captured once its tensors' addresses repeat and then replayed, one graph
launch per call (stats "graph_launches"). Replays must give what running
the kernels one by one gives, see new input values, advance state, and keep
B18's two output buffers taking turns; cuda_graphs=False and methods that
cannot be captured run without graphs."""

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from cuda_util import host, needs_cuda, stat, torch  # noqa: F401 - torch is a fixture
from test_cuda_fixtures import as_input, check_output

pytestmark = needs_cuda


def program(name):
    return pterun.load_program(FIXTURES / f"{name}.pte")


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt", "llama_block", "chain8", "linear_3d",
                                  "bf16_mlp", "int_ops"])
def test_replays_match_eager_runs_and_the_exporter(manifest, name):
    entry = manifest["fixtures"][name]
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    p = program(name)
    graphed = p.load_method("forward", device="cuda:0")
    eager = p.load_method("forward", device="cuda:0", cuda_graphs=False)
    for k, call in enumerate(entry["calls"]):
        inputs = [as_input(arrays, spec) for spec in call["inputs"]]
        before = stat("graph_launches")
        expected = [host(t) for t in eager(inputs)]
        assert stat("graph_launches") == before
        for rep in range(4):
            got = graphed(inputs)
            for i, (g, spec) in enumerate(zip(got, call["outputs"])):
                where = f"{name} call {k} repetition {rep} output {i}"
                check_output(g, spec, arrays, where)
                np.testing.assert_array_equal(host(g), expected[i], err_msg=where)
        assert stat("graph_launches") > before, "the repeated calls never replayed a graph"


def test_replays_read_new_host_inputs():
    m = program("add").load_method("forward", device="cuda:0")
    rng = np.random.default_rng(3)
    before = stat("graph_launches")
    for _ in range(8):
        x, y = rng.standard_normal((2, 3), np.float32), rng.standard_normal((2, 3), np.float32)
        np.testing.assert_array_equal(host(m([x, y])[0]), x + y)
    assert stat("graph_launches") - before >= 4


def test_replays_advance_state_like_the_cpu():
    cpu = program("stateful").load_method("forward")
    gpu = program("stateful").load_method("forward", device="cuda:0")
    before = stat("graph_launches")
    for k in range(8):
        x = np.full(4, k + 0.5, np.float32)
        np.testing.assert_array_equal(host(gpu([x])[0]), cpu([x])[0].numpy(), err_msg=f"call {k}")
    assert stat("graph_launches") > before


def test_b18_output_buffers_still_take_turns():
    m = program("scale_256").load_method("forward", device="cuda:0")
    x = np.random.default_rng(4).standard_normal((256, 256), np.float32)
    pointers, allocs = [], []
    before = stat("graph_launches")
    out = None
    for _ in range(10):
        out = m([x])[0]
        pointers.append(out.data_ptr)
        allocs.append(stat("device_allocs"))
    np.testing.assert_allclose(host(out), x * 2 + 1, rtol=1e-6)
    assert len(set(pointers[2:])) == 2 and pointers[2] != pointers[3]
    assert allocs[-1] == allocs[2]
    assert stat("graph_launches") - before >= 5


def test_cuda_graphs_false_never_launches_graphs():
    x = np.ones((8, 32), np.float32)
    m = program("mlp").load_method("forward", device="cuda:0", cuda_graphs=False)
    module = pterun.Module(FIXTURES / "mlp.pte", device="cuda:0", cuda_graphs=False)
    before = stat("graph_launches")
    for _ in range(6):
        a, b = m([x])[0], module.forward([x])[0]
        np.testing.assert_array_equal(host(a), host(b))
    assert stat("graph_launches") == before


def run_fixture_calls(manifest, name, rounds):
    entry = manifest["fixtures"][name]
    arrays = np.load(FIXTURES / entry["files"]["npz"])
    m = program(name).load_method("forward", device="cuda:0")
    for r in range(rounds):
        for k, call in enumerate(entry["calls"]):
            got = m([as_input(arrays, spec) for spec in call["inputs"]])
            for i, (g, spec) in enumerate(zip(got, call["outputs"])):
                check_output(g, spec, arrays, f"{name} round {r} call {k} output {i}")
    return len(entry["calls"])


def test_methods_that_cannot_be_captured_run_without_graphs(manifest):
    # control_flow jumps between instructions: no graph can stand for it.
    before = stat("graph_launches")
    run_fixture_calls(manifest, "control_flow", 3)
    assert stat("graph_launches") == before


def test_dynamic_shapes_replay_one_graph_per_shape_set(manifest):
    # dynamic_mlp's calls take turns between input shapes: each shape set is
    # captured once it comes again, and a replay restores the outputs'
    # shapes (every output is checked against ExecuTorch's, every round).
    before = stat("graph_launches")
    calls = run_fixture_calls(manifest, "dynamic_mlp", 4)
    assert calls >= 2
    assert stat("graph_launches") - before >= calls


def test_inputs_at_new_addresses_each_call(torch):
    m = program("add").load_method("forward", device="cuda:0")
    rng = np.random.default_rng(5)
    for _ in range(12):
        x, y = rng.standard_normal((2, 3), np.float32), rng.standard_normal((2, 3), np.float32)
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        np.testing.assert_array_equal(host(m([tx, ty])[0]), x + y)
