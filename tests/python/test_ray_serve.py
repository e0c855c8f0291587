"""pterun.ray's Serve deployment over HTTP on loopback: concurrent requests
answered correctly (and joined into batches), bad input refused with a 4xx
of its own, readiness, methods by name, and a replica killed mid-load is
replaced with no request answered wrongly."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pterun
from conftest import FIXTURES
from ray_util import free_port, http, import_pterun_ray, json_tensor, npy, npz, post_json

pr = import_pterun_ray()
from pterun.ray import _http  # noqa: E402
from pterun.ray._serve import BATCH_HEADER, _Call  # noqa: E402
from pterun.ray._signature import InputError  # noqa: E402

DIGITS = FIXTURES / "digits_cnn.pte"
MULTI = FIXTURES / "multi_method.pte"


@pytest.fixture(scope="module")
def images():
    return np.load(FIXTURES / "digits_cnn_heldout.npz")["images"]


@pytest.fixture(scope="module")
def server(ray_cluster):
    """Two applications on one loopback port: /digits (digits_cnn, two
    replicas, from a path) and /multi (multi_method, from bytes)."""
    from ray import serve

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(pr.deployment(str(DIGITS), num_replicas=2, num_cpus=0.5, max_batch_size=16,
                            batch_wait_timeout_s=0.05),
              name="digits", route_prefix="/digits")
    serve.run(pr.deployment(MULTI.read_bytes(), num_cpus=0.25), name="multi",
              route_prefix="/multi")
    yield f"http://127.0.0.1:{port}"
    serve.shutdown()


def digits_direct(x):
    """The reference: a direct pterun call on the same rows."""
    method = pterun.load_program(DIGITS).load_method("forward")
    return method([x])[0].numpy()


def assert_digits_answer(answer, x):
    assert answer.status == 200, answer.body
    if answer.headers["content-type"] == "application/json":
        (output,) = answer.json()["outputs"]
        got = json_tensor(output)
    else:
        got = answer.array()
    expected = digits_direct(x)
    assert got.shape == expected.shape and got.dtype == np.float32
    # A request joined with others runs in a larger call, whose kernels may
    # round the last bits differently (a few 1e-6 at most on these logits).
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got.argmax(axis=1), expected.argmax(axis=1))


def send_digits(url, x, kind):
    if kind == "json":
        return post_json(url + "/digits/forward", [x.tolist()])
    return http(url + "/digits", npy(x), "application/x-npy")


def test_readiness_and_description(server):
    answer = http(server + "/digits/healthz")
    assert answer.status == 200
    ready = answer.json()
    assert ready["status"] == "ready" and ready["methods"] == ["forward"]
    assert ready["device"] == "cpu" and ready["pterun"] == pterun.__version__
    described = http(server + "/multi").json()
    assert sorted(described["methods"]) == ["encode", "forward"]
    encode = http(server + "/multi/encode").json()
    assert [i["dtype"] for i in encode["inputs"]] == ["float32", "int64"]
    assert encode["batched"] is False  # static shapes: each request runs alone


def test_concurrent_requests_are_answered_correctly_and_batched(server, images):
    rng = np.random.default_rng(2)
    requests = []
    for k in range(64):
        rows = int(rng.integers(1, 9))
        x = images[rng.choice(len(images), rows)] + rng.normal(0, 0.05, (rows, 1, 8, 8))
        requests.append((x.astype(np.float32), "json" if k % 2 else "npy"))
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda r: send_digits(server, *r), requests))
    for (x, kind), answer in zip(requests, answers):
        assert answer.headers["content-type"] == (
            "application/json" if kind == "json" else "application/x-npy")
        assert_digits_answer(answer, x)
    joined = [int(a.headers[BATCH_HEADER]) for a in answers]
    assert max(joined) > 1, "no two requests were run in one call"


def test_bad_input_is_refused_with_a_4xx_of_its_own(server, images):
    x = images[:3]
    cases = [
        # (answer, status, words in the message)
        (post_json(server + "/digits/predict", [x.tolist()]), 404, "no method 'predict'"),
        (post_json(server + "/digits/forward", [x[0].tolist()]), 422, "rank 3"),
        (http(server + "/digits", npy(x.astype(np.float64)), "application/x-npy"), 422,
         "dtype float64, expected float32"),
        (http(server + "/digits", npy(np.zeros((1025, 1, 8, 8), np.float32)),
              "application/x-npy"), 422, "over the bound"),
        (http(server + "/digits", npy(np.zeros((2, 1, 9, 8), np.float32)),
              "application/x-npy"), 422, "dimension 2"),
        (post_json(server + "/digits/forward", [x.tolist(), x.tolist()]), 422,
         "takes 1 inputs, got 2"),
        (post_json(server + "/multi/encode", [[1.5, 2, 3], [1.0, 2.0, 3.0]]), 422,
         "expected int64, JSON gave numbers with fractions"),
        (post_json(server + "/multi/encode", [[1, 2, 3], [1, 2, 3]]), 200, ""),
        (post_json(server + "/multi/forward", [[[1, 2, 3, 4]]]), 422, "shape [1, 4]"),
        (http(server + "/digits/forward", b"{not json"), 400, "not JSON"),
        (http(server + "/digits/forward", b'{"inputs": [[[1, 2], [3]]]}'), 400, "rectangular"),
        (http(server + "/digits/forward", b"\x93NUMPY garbage", "application/x-npy"), 400,
         "not a readable .npy"),
        (http(server + "/digits/forward", b"1,2,3", "text/csv"), 415, "text/csv"),
        (http(server + "/digits/forward", b"", method="PUT"), 405, "PUT"),
    ]
    for answer, status, words in cases:
        assert answer.status == status, (answer.status, answer.body)
        if status != 200:
            assert words in answer.json()["error"], answer.json()


def test_bad_requests_do_not_spoil_the_batch_they_share(server, images):
    rng = np.random.default_rng(3)
    good = [images[rng.choice(len(images), 4)] for _ in range(24)]
    bad = [npy(np.zeros((2, 1, 8, 8), np.float64)) for _ in range(8)]
    with ThreadPoolExecutor(16) as pool:
        goods = [pool.submit(send_digits, server, x, "npy") for x in good]
        bads = [pool.submit(http, server + "/digits", b, "application/x-npy") for b in bad]
        for x, f in zip(good, goods):
            assert_digits_answer(f.result(), x)
        for f in bads:
            assert f.result().status == 422


def test_methods_by_name_with_json_npz_and_accept(server):
    program = pterun.load_program(MULTI)
    a = np.array([0.5, -1.0, 2.0], np.float32)
    b = np.array([3, -4, 5], np.int64)
    expected = [t.numpy() for t in program.load_method("encode")([a, b])]
    answer = post_json(server + "/multi/encode", [a.tolist(), b.tolist()])
    assert answer.status == 200
    got = [json_tensor(o) for o in answer.json()["outputs"]]
    assert [g.dtype for g in got] == [np.float32, np.int64]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    # Two inputs as .npz (arr_0, arr_1); two outputs come back as .npz.
    answer = http(server + "/multi/encode", npz(a, b), "application/x-npz")
    assert answer.status == 200 and answer.headers["content-type"] == "application/x-npz"
    with answer.array() as outputs:
        for j, e in enumerate(expected):
            np.testing.assert_array_equal(outputs[f"arr_{j}"], e)
    # Accept chooses the answer's format.
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    expected = program.load_method("forward")([x])[0].numpy()
    answer = post_json(server + "/multi/forward", [x.tolist()], accept="application/x-npy")
    np.testing.assert_array_equal(answer.array(), expected)
    answer = http(server + "/multi/forward", npy(x), "application/x-npy",
                  accept="application/json")
    np.testing.assert_array_equal(json_tensor(answer.json()["outputs"][0]), expected)


def test_python_handle(server, images):
    from ray import serve

    handle = serve.get_app_handle("digits")
    x = images[:5]
    (got,) = handle.run.remote("forward", [x]).result()
    np.testing.assert_allclose(got, digits_direct(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="dtype float64"):
        handle.run.remote("forward", [x.astype(np.float64)]).result()


def test_joining_packs_requests_within_the_bound():
    """In process, without Serve: the server's batch step joins requests for
    a dynamic method up to its bound (dynamic_mlp: 64 rows) and gives each
    its own rows; a static method runs one request per call."""
    server = pr.Server(str(FIXTURES / "dynamic_mlp.pte"))
    method = pterun.load_program(FIXTURES / "dynamic_mlp.pte").load_method("forward")
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((20, 32)).astype(np.float32) for _ in range(5)]
    results = server._execute([_Call("forward", [x]) for x in xs])
    assert [r.joined for r in results] == [3, 3, 3, 2, 2]  # 60 rows, then 40
    for x, r in zip(xs, results):
        assert r.error is None
        np.testing.assert_allclose(r.outputs[0], method([x])[0].numpy(), rtol=1e-5, atol=1e-6)
    # Other trailing shapes are not joined with these.
    narrow = rng.standard_normal((3, 16)).astype(np.float32)
    results = server._execute([_Call("forward", [xs[0]]), _Call("forward", [narrow])])
    assert results[0].joined == 1 and isinstance(results[1].error, InputError)
    static = pr.Server(str(MULTI))
    x = np.ones((2, 4), np.float32)
    results = static._execute([_Call("forward", [x]), _Call("forward", [x])])
    assert [r.joined for r in results] == [1, 1]


def test_number_inputs_from_json_and_npz():
    """scalars.pte takes a tensor, an Int, a Double and a Bool; the values
    must be the exported ones (3, 0.5, True), as pterun checks."""
    server = pr.Server(str(FIXTURES / "scalars.pte"))
    sig = server._signatures["forward"]
    ref = np.load(FIXTURES / "scalars.npz")
    x = ref["c0_in0"]
    body = json.dumps({"inputs": [x.tolist(), 3, 0.5, True]}).encode()
    kind, inputs = _http.decode(body, "application/json", sig)
    sig.check(inputs)
    (result,) = server._execute([_Call("forward", inputs)])
    tensor, number, double, flag = result.outputs
    np.testing.assert_allclose(tensor, ref["c0_out0"], rtol=1e-6)
    assert (number, double, flag) == (4, 1.0, False)
    answer = json.loads(_http.encode(result.outputs, "json")[0])["outputs"]
    assert answer[1:] == [4, 1.0, False] and answer[0]["dtype"] == "float32"
    # .npz: 0-dimensional arrays stand for numbers.
    import io

    buffer = io.BytesIO()
    np.savez(buffer, x, np.array(3), np.array(0.5), np.array(True))
    _, inputs = _http.decode(buffer.getvalue(), "application/x-npz", sig)
    (result,) = server._execute([_Call("forward", inputs)])
    assert result.outputs[1:] == [4, 1.0, False]
    # A number of the wrong kind is refused before the run; a value other
    # than the exported one by pterun's run, also as a 422.
    with pytest.raises(InputError, match="input 1 of method 'forward': expected Int") as error:
        _http.decode(json.dumps({"inputs": [x.tolist(), 3.0, 0.5, True]}).encode(),
                     "application/json", sig)
    assert error.value.status == 422
    (result,) = server._execute([_Call("forward", [x, 7, 0.5, True])])
    assert isinstance(result.error, InputError) and result.error.status == 422
    assert "7" in str(result.error) and "3" in str(result.error)


def digits_replicas(ray):
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["name"].startswith("SERVE_REPLICA::digits#"))


def test_killed_replica_is_replaced_and_no_answer_is_wrong(server, ray_cluster, images):
    from ray import serve

    ray = ray_cluster
    before = digits_replicas(ray)
    assert len(before) == 2, before
    stop = threading.Event()
    log = []  # (status or exception name, rows sent, answer)

    def load(seed):
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            x = images[rng.choice(len(images), int(rng.integers(1, 6)))]
            try:
                answer = http(server + "/digits", npy(x), "application/x-npy", timeout=60)
            except OSError as error:  # a connection dropped with the replica
                log.append((type(error).__name__, x, None))
                continue
            log.append((answer.status, x, answer))

    threads = [threading.Thread(target=load, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        ray.kill(ray.get_actor(before[0], namespace="serve"), no_restart=True)
        deadline = time.monotonic() + 180
        while True:
            now = digits_replicas(ray)
            states = serve.status().applications["digits"].deployments["pterun"].replica_states
            if before[0] not in now and len(now) == 2 and states.get("RUNNING") == 2:
                break
            assert time.monotonic() < deadline, f"no replacement replica: {now}, {states}"
            time.sleep(0.5)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    answered = [(x, a) for status, x, a in log if status == 200]
    failed = [status for status, _, _ in log if status != 200]
    for x, answer in answered:
        assert_digits_answer(answer, x)
    # Requests caught in the killed replica may fail, never with a 4xx (the
    # input was fine) and never answered wrongly (checked above).
    assert all(not (isinstance(s, int) and 400 <= s < 500) for s in failed), failed
    assert len(answered) > 20 and len(failed) <= 16, (len(answered), failed)
    # After the replacement every request is answered.
    rng = np.random.default_rng(9)
    xs = [images[rng.choice(len(images), 3)] for _ in range(16)]
    with ThreadPoolExecutor(8) as pool:
        for x, answer in zip(xs, pool.map(lambda x: send_digits(server, x, "npy"), xs)):
            assert_digits_answer(answer, x)
