"""Helpers of the pterun.ray tests: importing it (or skipping without Ray),
and a small HTTP client on loopback (the standard library's; no extra
package)."""

import io
import json
import os
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest


def import_pterun_ray():
    """pterun.ray, or a skip of the whole module when Ray is not installed
    (a failure instead under PTERUN_REQUIRE_RAY=1, as in CI)."""
    try:
        import pterun.ray
    except ImportError as error:
        if os.environ.get("PTERUN_REQUIRE_RAY") == "1":
            raise
        pytest.skip(f"Ray is not installed (pip install 'pterun[ray]'): {error}",
                    allow_module_level=True)
    return pterun.ray


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npz(*arrays):
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    return buffer.getvalue()


class Answer:
    """Status, headers and body of one HTTP answer."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    def array(self):
        return np.load(io.BytesIO(self.body), allow_pickle=False)


def http(url, body=None, content_type="application/json", accept=None, method=None,
         timeout=60):
    headers = {"Content-Type": content_type}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as f:
            return Answer(f.status, f.headers, f.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


def post_json(url, inputs, **kwargs):
    return http(url, json.dumps({"inputs": inputs}).encode(), **kwargs)


def json_tensor(output):
    """An output of a JSON answer as an array of its dtype and shape."""
    array = np.array(output["data"], dtype=output["dtype"])
    assert list(array.shape) == output["shape"]
    return array
