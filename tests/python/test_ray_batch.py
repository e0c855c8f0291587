"""pterun.ray.Predictor on Ray Data: map_batches over a local Ray cluster
gives the results of direct pterun calls on the same rows; columns map to
inputs and outputs; the program is loaded once per actor."""

import shutil
import threading

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from cuda_util import needs_cuda
from ray_util import import_pterun_ray

pr = import_pterun_ray()

DIGITS = FIXTURES / "digits_cnn.pte"
BATCH = 256


@pytest.fixture(scope="module")
def digits():
    held_out = np.load(FIXTURES / "digits_cnn_heldout.npz")
    return held_out["images"], held_out["labels"]


@pytest.fixture
def ordered(ray_cluster):
    """Ray Data keeps the rows in order (for comparing row by row)."""
    context = ray_cluster.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    yield ray_cluster
    context.execution_options.preserve_order = before


def direct(program, arrays, rows):
    """Direct pterun calls, ``rows`` rows at a time: the reference."""
    method = pterun.load_program(program).load_method("forward")
    parts = [method([a[i:i + rows] for a in arrays]) for i in range(0, len(arrays[0]), rows)]
    return [np.concatenate([p[j].numpy() for p in parts]) for j in range(len(parts[0]))]


def test_map_batches_equals_direct_calls_on_the_same_rows(ordered, digits):
    ray = ordered
    images = np.concatenate([digits[0]] * 3)  # 1077 rows: four batches of 256, one of 53
    # One block per batch of 256 rows, so that each Ray batch is exactly the
    # rows of one direct call below (results of a row can differ in the last
    # bits between batch sizes: another kernel blocking).
    blocks = [images[i:i + BATCH] for i in range(0, len(images), BATCH)]
    ds = ray.data.from_numpy(blocks)
    out = pr.predict(ds, str(DIGITS), batch_size=BATCH, concurrency=2).take_batch(len(images))
    assert sorted(out) == ["output"]
    (expected,) = direct(DIGITS, [images], BATCH)
    np.testing.assert_array_equal(out["output"], expected)
    labels = np.concatenate([digits[1]] * 3)
    assert (out["output"].argmax(axis=1) == labels).mean() > 0.95


def observed_predictor():
    """A Predictor class that adds, to each row of its result, what its
    batch looked like in the actor: the batch's rows, whether its input
    column was writable (Ray hands it over without a copy, read-only), and
    whether the call ran on the thread that made the Predictor. (Made in a
    function, so that Ray sends the class itself to the actors: they cannot
    import this test module.)"""

    class Observed(pr.Predictor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._thread = threading.get_ident()

        def __call__(self, batch):
            out = super().__call__(batch)
            rows = len(batch["data"])
            out["batch_rows"] = np.full(rows, rows)
            out["writable"] = np.full(rows, batch["data"].flags.writeable)
            out["same_thread"] = np.full(rows, threading.get_ident() == self._thread)
            return out

    return Observed


def test_predict_default_batches_are_large_views_on_the_actor_thread(ordered, digits):
    """predict() without batch_size: Ray batches of 16384 rows for digits_cnn
    (16 MiB of inputs and outputs would be more rows; 16384 is the most),
    each a read-only view of its block, run on the actor's own thread, in
    pterun calls of rows_per_call rows: the outputs of direct calls of 256
    rows."""
    ray = ordered
    images = np.tile(digits[0], (92, 1, 1, 1))[:2 * 16384]
    ds = ray.data.from_numpy([images[:16384], images[16384:]])
    out = pr.predict(ds, str(DIGITS), rows_per_call=BATCH, predictor_class=observed_predictor(),
                     concurrency=2).take_batch(len(images))
    assert sorted(out) == ["batch_rows", "output", "same_thread", "writable"]
    np.testing.assert_array_equal(out["batch_rows"], 16384)
    assert not out["writable"].any()
    assert out["same_thread"].all()
    (expected,) = direct(DIGITS, [images], BATCH)
    np.testing.assert_array_equal(out["output"], expected)


def test_default_batch_rows_follow_the_size_of_a_row():
    """Ray batches of about 16 MiB of a method's inputs and outputs (at
    their bounds), at most 16384 rows, a whole number of pterun calls; 4096
    where the driver cannot read the program."""
    from pterun.ray._batch import batch_rows, _signature_here

    digits = _signature_here(str(DIGITS), "forward")  # 256 + 40 bytes a row, 1024 a call
    assert batch_rows(digits) == 16384
    assert batch_rows(digits, BATCH) == 16384
    assert batch_rows(digits, 1000) == 16000  # 16 calls of 1000 rows
    cnn = _signature_here(str(FIXTURES / "cnn.pte"), "forward")  # (1, 3, 32, 32) in, (1, 10) out
    row = 3 * 32 * 32 * 4 + 10 * 4
    assert batch_rows(cnn) == 16 * 2**20 // row
    static = _signature_here(str(FIXTURES / "mlp.pte"), "forward")  # exactly 8 rows a call
    assert batch_rows(static) == 16384 and batch_rows(static) % 8 == 0
    with pytest.raises(ValueError, match="exactly 8 rows a call"):
        batch_rows(static, 4)
    assert _signature_here("/no/such/dir/model.pte", "forward") is None
    with pytest.raises(TypeError, match="subclass of it"):
        pr.predict(None, str(DIGITS), predictor_class=dict)


def test_columns_map_to_inputs_and_outputs_with_padding(ordered):
    """add_mul takes two static (4, 4) inputs: batches of 10 rows run as
    4 + 4 + 2 rows padded to 4; kept columns come back unchanged."""
    ray = ordered
    rng = np.random.default_rng(1)
    a = rng.standard_normal((30, 4)).astype(np.float32)
    b = rng.standard_normal((30, 4)).astype(np.float32)
    ids = np.arange(30)
    ds = ray.data.from_items([{"x": a[i], "y": b[i], "id": ids[i]} for i in range(30)])
    out = ds.map_batches(
        pr.Predictor, batch_size=10, batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=1),
        fn_constructor_kwargs={"program": str(FIXTURES / "add_mul.pte"),
                               "input_columns": ["x", "y"],
                               "output_columns": ["sum", "product"],
                               "keep_columns": ["id"]}).take_batch(30)
    assert sorted(out) == ["id", "product", "sum"]
    np.testing.assert_array_equal(out["id"], ids)
    np.testing.assert_array_equal(out["sum"], a + b)
    np.testing.assert_array_equal(out["product"], a * b)


def test_program_as_bytes_and_as_object_reference(ordered, digits):
    ray = ordered
    images = digits[0][:BATCH]
    (expected,) = direct(DIGITS, [images], BATCH)
    ds = ray.data.from_numpy(images)
    # Bytes: predict() puts them into the object store once.
    out = pr.predict(ds, DIGITS.read_bytes(), batch_size=BATCH).take_batch(BATCH)
    np.testing.assert_array_equal(out["output"], expected)
    # A reference made by put_program, given straight to map_batches.
    ref = pr.put_program(DIGITS)
    out = ds.map_batches(pr.Predictor, batch_size=BATCH, batch_format="numpy",
                         compute=ray.data.ActorPoolStrategy(size=1),
                         fn_constructor_kwargs={"program": ref}).take_batch(BATCH)
    np.testing.assert_array_equal(out["output"], expected)


def test_program_is_read_once_not_per_batch(tmp_path, monkeypatch, digits):
    images = digits[0]
    (expected,) = direct(DIGITS, [images], 64)
    path = tmp_path / "digits_cnn.pte"
    shutil.copy(DIGITS, path)
    loads = []
    real_load = pterun.load_program
    monkeypatch.setattr(pterun, "load_program",
                        lambda *a, **k: loads.append(a) or real_load(*a, **k))
    predictor = pr.Predictor(str(path))
    path.unlink()  # later batches must not need the file
    for start in range(0, len(images), 64):
        out = predictor({"data": images[start:start + 64]})
        np.testing.assert_array_equal(out["output"], expected[start:start + 64])
    assert loads == [(str(path),)]


def test_batch_forms_numpy_dict_pandas(digits):
    images, labels = digits
    predictor = pr.Predictor(str(DIGITS))
    (expected,) = direct(DIGITS, [images], len(images))
    # A bare array (a method with one input): only the output comes back.
    out = predictor(images)
    assert sorted(out) == ["output"]
    np.testing.assert_array_equal(out["output"], expected)
    # A dict: other columns are kept by default.
    out = predictor({"data": images, "label": labels})
    np.testing.assert_array_equal(out["label"], labels)
    np.testing.assert_array_equal(out["output"], expected)
    # A pandas DataFrame whose column holds one array per row.
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"data": list(images), "label": labels})
    out = predictor(frame)
    np.testing.assert_array_equal(out["output"], expected)
    np.testing.assert_array_equal(out["label"], labels)
    # An empty batch gives empty columns of the declared dtype and trailing shape.
    out = predictor({"data": images[:0]})
    assert out["output"].shape == (0, 10) and out["output"].dtype == np.float32


def test_large_batch_runs_in_several_calls_within_the_bound(digits):
    """digits_cnn takes at most 1024 rows a call; 1436 rows run as 1024 + 412."""
    images = np.concatenate([digits[0]] * 4)
    out = pr.Predictor(str(DIGITS))({"data": images})
    (expected,) = direct(DIGITS, [images], 1024)
    np.testing.assert_array_equal(out["output"], expected)


def test_load_options_reach_the_method(digits):
    # allow_tf32 and cuda_graphs go to load_method; on the CPU neither
    # changes a result.
    images = digits[0]
    out = pr.Predictor(str(DIGITS), allow_tf32=True, cuda_graphs=False)({"data": images})
    (expected,) = direct(DIGITS, [images], 1024)
    np.testing.assert_array_equal(out["output"], expected)


def test_rows_per_call_splits_a_batch(digits):
    images = np.concatenate([digits[0]] * 3)
    out = pr.Predictor(str(DIGITS), rows_per_call=BATCH)({"data": images})
    (expected,) = direct(DIGITS, [images], BATCH)
    np.testing.assert_array_equal(out["output"], expected)
    with pytest.raises(ValueError, match="at least 1"):
        pr.Predictor(str(DIGITS), rows_per_call=0)
    with pytest.raises(ValueError, match="exactly 8 rows a call"):
        pr.Predictor(str(FIXTURES / "mlp.pte"), rows_per_call=4)


def test_refusals_name_the_problem(digits):
    images = digits[0][:8]
    predictor = pr.Predictor(str(DIGITS))
    with pytest.raises(TypeError, match="input 0 of method 'forward'.*float64"):
        predictor({"data": images.astype(np.float64)})  # never cast
    with pytest.raises(KeyError, match="no column.*'pixels'.*input_columns"):
        pr.Predictor(str(DIGITS), input_columns=["pixels"])({"data": images})
    with pytest.raises(ValueError, match="takes 2 inputs; name a column"):
        pr.Predictor(str(FIXTURES / "add_mul.pte"))
    with pytest.raises(ValueError, match="input 1 is not a tensor with rows"):
        pr.Predictor(str(FIXTURES / "scalars.pte"), input_columns=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="output column 'data' is also a kept column"):
        pr.Predictor(str(DIGITS), input_columns=["x"], output_columns=["data"])(
            {"x": images, "data": images})
    with pytest.raises(ValueError, match="no method"):
        pr.Predictor(str(DIGITS), method="encode")
    with pytest.raises(pterun.ProgramError):
        pr.put_program(b"not a program")


@needs_cuda
def test_predictor_on_a_gpu(digits):
    images = digits[0]
    predictor = pr.Predictor(str(DIGITS), device="cuda")
    assert predictor.device == "cuda"
    (expected,) = direct(DIGITS, [images], len(images))
    np.testing.assert_allclose(predictor({"data": images})["output"], expected,
                               rtol=1e-4, atol=1e-4)


@needs_cuda
def test_actor_given_a_gpu_runs_on_it(ray_cluster, digits):
    ray = ray_cluster
    if ray.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("the local Ray cluster has no GPU")
    actor = ray.remote(num_gpus=1)(pr.Predictor).remote(str(DIGITS))
    assert ray.get(actor.__ray_call__.remote(lambda self: self.device)) == "cuda"
    images = digits[0]
    out = ray.get(actor.__call__.remote({"data": images}))
    (expected,) = direct(DIGITS, [images], len(images))
    np.testing.assert_allclose(out["output"], expected, rtol=1e-4, atol=1e-4)
