"""Serving a program's methods over HTTP with Ray Serve.

Each replica loads the program and its methods once. Requests are checked
alone (so that a bad one is refused with a 4xx of its own), then queued for
``serve.batch``: requests for the same method whose rows have the same
trailing shape are joined along dimension 0 into one call (up to the
method's bound), and each gets its own rows of the results back.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import pterun
from pterun.ray import _http, _program
from pterun.ray._signature import InputError, MethodSignature

logger = logging.getLogger("pterun.ray")


@dataclass
class _Call:
    method: str
    inputs: List[Any]

    @property
    def rows(self) -> int:
        return len(self.inputs[0])


@dataclass
class _Result:
    outputs: Optional[List[Any]] = None
    error: Optional[BaseException] = None
    joined: int = 1  # requests answered by the same call


# Response header: how many requests the call that answered this one served.
BATCH_HEADER = "x-pterun-batched-requests"


class Server:
    """A Ray Serve deployment class serving methods of one program.

    HTTP, below the application's route prefix:

    - ``POST /<method>`` (``POST /`` runs ``default_method``): inputs as
      JSON ``{"inputs": [...]}``, an ``.npy`` body (one input) or an
      ``.npz`` body (``arr_0``, ``arr_1`` ...). The answer has the request's
      format unless ``Accept`` asks for the other.
    - ``GET /healthz``: 200 ``{"status": "ready", ...}`` once the replica
      has loaded the program (the readiness check).
    - ``GET /`` and ``GET /<method>``: what the methods take and give.

    Bad input is a 4xx with ``{"error": message}``: 400 a body that cannot
    be read, 404 no such method, 415 another body type, 422 inputs that do
    not fit the method (count, dtype, rank, shape, a number's value).

    From Python, a ``DeploymentHandle`` calls ``run(method, inputs)``.
    Use :func:`deployment` to make the application.
    """

    def __init__(self, program: Any, *, data: Any = None,
                 methods: Optional[Sequence[str]] = None, default_method: str = "forward",
                 device: Optional[str] = None, num_threads: Optional[int] = None,
                 max_batch_size: int = 32, batch_wait_timeout_s: float = 0.002,
                 cuda_graphs: bool = True, allow_tf32: bool = False) -> None:
        _program.set_threads(num_threads)
        self._program = _program.load(program, data)
        self.device = _program.choose_device(device)
        names = list(methods) if methods is not None else self._program.method_names
        self._methods = {n: self._program.load_method(n, device=self.device,
                                                      cuda_graphs=cuda_graphs,
                                                      allow_tf32=allow_tf32) for n in names}
        self._signatures = {n: MethodSignature(self._program.method_meta(n)) for n in names}
        self._default_method = default_method
        self._run_batch.set_max_batch_size(max_batch_size)
        self._run_batch.set_batch_wait_timeout_s(batch_wait_timeout_s)

    # --- readiness -------------------------------------------------------

    def check_health(self) -> None:
        """Ray Serve's periodic check: a replica whose methods are gone is
        replaced."""
        if not self._methods or any(m is None for m in self._methods.values()):
            raise RuntimeError("pterun.ray.Server: the program's methods are not loaded")

    def _ready(self) -> dict:
        return {"status": "ready", "device": self.device, "methods": list(self._methods),
                "pterun": pterun.__version__}

    # --- HTTP ------------------------------------------------------------

    async def __call__(self, request: Request) -> Response:
        try:
            route = _route(request)
            if request.method == "GET":
                return JSONResponse(self._describe(route))
            if request.method != "POST":
                raise InputError(405, f"{request.method} is not served: POST /<method> runs "
                                 "a method, GET /healthz checks readiness")
            name = route or self._default_method
            sig = self._signature(name)
            kind, inputs = _http.decode(await request.body(),
                                        request.headers.get("content-type"), sig)
            result = await self._submit(name, inputs)
            body, media = _http.encode(result.outputs, _http.response_kind(
                request.headers.get("accept"), kind))
            return Response(body, media_type=media, headers={BATCH_HEADER: str(result.joined)})
        except InputError as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        except Exception as error:  # a failure of the run itself, not of the input
            logger.exception("pterun.ray.Server: request failed")
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)

    def _describe(self, route: str) -> dict:
        if route == "healthz":
            return self._ready()
        if route:
            return {"method": route, **self._signature(route).describe()}
        return {"device": self.device, "default_method": self._default_method,
                "methods": {n: s.describe() for n, s in self._signatures.items()}}

    def _signature(self, name: str) -> MethodSignature:
        sig = self._signatures.get(name)
        if sig is None:
            raise InputError(404, f"no method '{name}': this server runs "
                             f"{sorted(self._signatures)}")
        return sig

    # --- running -----------------------------------------------------------

    async def run(self, method: str, inputs: List[Any]) -> List[Any]:
        """Runs ``method`` on ``inputs`` (NumPy arrays, or host arrays NumPy
        can view, and numbers) through the same checks and batching as HTTP
        requests; returns NumPy arrays and numbers. Bad input raises
        InputError (a ValueError)."""
        self._signature(method)
        inputs = [np.asarray(v) if hasattr(v, "__array__") and not isinstance(v, np.ndarray)
                  else v for v in inputs]
        return (await self._submit(method, inputs)).outputs

    async def _submit(self, method: str, inputs: List[Any]) -> _Result:
        self._signatures[method].check(inputs)
        result = await self._run_batch(_Call(method, inputs))
        if result.error is not None:
            raise result.error
        return result

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _run_batch(self, calls: List[_Call]) -> List[_Result]:
        # pterun releases the GIL while it runs; the event loop stays free
        # for new requests and health checks.
        return await asyncio.to_thread(self._execute, calls)

    def _execute(self, calls: List[_Call]) -> List[_Result]:
        results: List[Optional[_Result]] = [None] * len(calls)
        groups: Dict[Any, List[int]] = defaultdict(list)
        for i, call in enumerate(calls):
            if self._signatures[call.method].batchable:
                key = (call.method, tuple((a.shape[1:], a.dtype.str) for a in call.inputs))
            else:
                key = ("alone", i)
            groups[key].append(i)
        for indices in groups.values():
            sig = self._signatures[calls[indices[0]].method]
            for pack in _packs(indices, [calls[i].rows if sig.batchable else 1
                                         for i in indices], sig.max_rows):
                if len(pack) == 1:
                    results[pack[0]] = self._run_one(calls[pack[0]])
                else:
                    for i, r in zip(pack, self._run_joined([calls[i] for i in pack])):
                        results[i] = r
        return results

    def _run_one(self, call: _Call) -> _Result:
        try:
            values = self._methods[call.method](call.inputs)
        except (TypeError, ValueError, OverflowError) as error:  # the input did not fit
            return _Result(error=InputError(422, str(error)))
        except Exception as error:
            return _Result(error=error)
        try:
            return _Result(outputs=[_host(v) for v in values])
        except Exception as error:  # an output NumPy cannot hold: the server's fault
            return _Result(error=error)

    def _run_joined(self, calls: List[_Call]) -> List[_Result]:
        """One call on the joined rows; each request gets its rows back.
        Should the joined call fail, each request runs alone, so that the
        failure is reported to the request that caused it."""
        method = calls[0].method
        total = sum(c.rows for c in calls)
        try:
            joined = [np.concatenate([c.inputs[k] for c in calls])
                      for k in range(len(calls[0].inputs))]
            outputs = [_host(v) for v in self._methods[method](joined)]
        except Exception:
            return [self._run_one(c) for c in calls]
        if any(o.ndim == 0 or o.shape[0] != total for o in outputs):
            return [self._run_one(c) for c in calls]  # not one output row per input row
        results, start = [], 0
        for c in calls:
            results.append(_Result(outputs=[o[start:start + c.rows] for o in outputs],
                                   joined=len(calls)))
            start += c.rows
        return results


def _packs(indices: List[int], rows: List[int], max_rows: int) -> List[List[int]]:
    """Consecutive runs of requests whose rows add up to at most
    ``max_rows`` (a request over it on its own goes alone, and its run
    reports the error)."""
    packs: List[List[int]] = []
    current: List[int] = []
    total = 0
    for index, n in zip(indices, rows):
        if current and total + n > max_rows:
            packs.append(current)
            current, total = [], 0
        current.append(index)
        total += n
    if current:
        packs.append(current)
    return packs


def _host(value: Any) -> Any:
    """A method output as NumPy (host memory) or a Python value."""
    if isinstance(value, pterun.Tensor):
        return value.numpy()
    return value


def _route(request: Request) -> str:
    """The request's path below the application's route prefix, without
    slashes at either end."""
    path = request.scope.get("path", "")
    root = request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path.strip("/")


def deployment(program: Any, *, data: Any = None, methods: Optional[Sequence[str]] = None,
               default_method: str = "forward", device: Optional[str] = None,
               num_replicas: int = 1, num_cpus: float = 1, num_gpus: float = 0,
               num_threads: Optional[int] = None, max_batch_size: int = 32,
               batch_wait_timeout_s: float = 0.002, max_ongoing_requests: Optional[int] = None,
               name: str = "pterun", cuda_graphs: bool = True, allow_tf32: bool = False,
               **options: Any) -> "serve.Application":
    """A Ray Serve application serving ``program`` (a path every node can
    read, or bytes) with :class:`Server`; start it with ``serve.run(app,
    route_prefix=...)``.

    Each of ``num_replicas`` replicas reserves ``num_cpus`` CPUs (pterun
    uses that many threads unless ``num_threads`` says otherwise) and
    ``num_gpus`` GPUs (with a GPU it runs on ``cuda``). ``max_batch_size``
    requests, waiting at most ``batch_wait_timeout_s`` for one another,
    are joined into one call. ``max_ongoing_requests`` (default twice the
    batch size, so that a batch can fill) and other ``options`` go to
    ``serve.deployment``.
    """
    if isinstance(program, ray.ObjectRef) or isinstance(data, ray.ObjectRef):
        raise TypeError("pterun.ray.deployment: a Serve deployment outlives the process that "
                        "started it, and an object reference dies with that process: pass a "
                        "path or bytes")
    options.setdefault("max_ongoing_requests", max_ongoing_requests or 2 * max_batch_size)
    app = serve.deployment(Server).options(
        name=name, num_replicas=num_replicas,
        ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus}, **options)
    return app.bind(program, data=data, methods=methods, default_method=default_method,
                    device=device, num_threads=num_threads, max_batch_size=max_batch_size,
                    batch_wait_timeout_s=batch_wait_timeout_s, cuda_graphs=cuda_graphs,
                    allow_tf32=allow_tf32)
