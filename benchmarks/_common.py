"""Shared helpers for the pterun benchmarks (models.py, call_overhead.py).

Nothing here is part of pterun: fixture loading, the interleaved timer, the
executorch-numpy-runtime worker client, ONNX export of the fixture modules,
and table printing.
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
ONNX_CACHE = REPO / "build" / "bench-onnx"
# executorch-numpy-runtime (PyPI) ships only cp312-abi3 wheels, while the
# export venv is Python 3.11: it runs in a Python >= 3.12 venv of its own,
# driven over a pipe by the benchmark process (see _enr_worker.py).
DEFAULT_ENR_PYTHON = REPO / "build" / "bench-enr-venv" / "bin" / "python"


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


def fixture_pte(name: str) -> Path:
    return FIXTURES / f"{name}.pte"


def fixture_io(name: str, call: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Inputs and torch-eager expected outputs of call `call` of fixture `name`."""
    with np.load(FIXTURES / f"{name}.npz") as d:
        keys = list(d.keys())

        def pick(side: str) -> list[np.ndarray]:
            pre = f"c{call}_{side}"
            ks = sorted((k for k in keys if k.startswith(pre)), key=lambda k: int(k[len(pre):]))
            return [np.ascontiguousarray(d[k]) for k in ks]

        return pick("in"), pick("out")


XNNPACK_FIXTURES = FIXTURES / "xnnpack"
PLAIN_CACHE = REPO / "build" / "bench-xnnpack"


def xnnpack_pte(name: str) -> Path:
    """The XNNPACK-delegated fixture `name` (tests/fixtures/xnnpack/)."""
    return XNNPACK_FIXTURES / f"{name}.pte"


def xnnpack_io(name: str, call: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Inputs and ExecuTorch + XNNPACK outputs of call `call` of XNNPACK
    fixture `name`."""
    with np.load(XNNPACK_FIXTURES / f"{name}.npz") as d:
        def pick(side: str) -> list[np.ndarray]:
            pre = f"c{call}_{side}"
            ks = sorted((k for k in d.keys() if k.startswith(pre) and k[len(pre):].isdigit()),
                        key=lambda k: int(k[len(pre):]))
            return [np.ascontiguousarray(d[k]) for k in ks]

        return pick("in"), pick("out")


def plain_twin(name: str, log=print, export_if_missing: bool = True) -> Path | None:
    """A plain (not delegated) export of XNNPACK fixture `name` with the same
    weights: `to_edge(export(module)).to_executorch()` of the module
    tests/fixtures/models.py builds for it. Exported on first use (needs
    ExecuTorch; None without it, or without `export_if_missing`) and cached
    under build/bench-xnnpack/, keyed by the hash of models.py."""
    import hashlib

    h = hashlib.sha256((FIXTURES / "models.py").read_bytes()).hexdigest()[:12]
    path = PLAIN_CACHE / f"{name}-plain-{h}.pte"
    if path.exists():
        return path
    if not export_if_missing:
        return None
    try:
        import executorch  # noqa: F401
    except ImportError:
        return None
    import torch
    from executorch.exir import to_edge
    from torch.export import export

    log(f"  exporting the plain twin of {name} ({path.relative_to(REPO)}) ...")
    models = fixture_models()
    module, _ = models.build_xnnpack(name)
    ins, _ = xnnpack_io(name)
    example = tuple(torch.from_numpy(a.copy()) for a in ins)
    pte = to_edge(export(module, example, strict=False)).to_executorch().buffer
    PLAIN_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pte)
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------
# Checking outputs
# --------------------------------------------------------------------------


def compare(got: list, ref: list, rtol: float, atol: float) -> tuple[bool, float, str]:
    """(all close, max abs diff, problem text) for two lists of arrays."""
    if len(got) != len(ref):
        return False, math.inf, f"{len(got)} outputs, expected {len(ref)}"
    worst = 0.0
    for i, (g, r) in enumerate(zip(got, ref)):
        g = np.asarray(g)
        r = np.asarray(r)
        if g.shape != r.shape:
            return False, math.inf, f"output {i}: shape {g.shape}, expected {r.shape}"
        if g.size == 0:
            continue
        d = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
        worst = max(worst, d)
        if not np.allclose(g, r, rtol=rtol, atol=atol):
            return False, worst, f"output {i}: max abs diff {d:.3g}"
    return True, worst, ""


# --------------------------------------------------------------------------
# Interleaved timing
# --------------------------------------------------------------------------


@dataclass
class Peer:
    """One runtime variant to time. `batch(n)` makes n calls and returns the
    elapsed nanoseconds (measured with time.perf_counter_ns around the loop,
    in whichever process runs the calls)."""

    name: str
    batch: Callable[[int], int] | None
    status: str = "ok"  # "ok" or a reason it is not timed ("missing kernel", ...)
    detail: str = ""
    n: int = 0  # calls per batch, after calibration
    samples: list[float] = field(default_factory=list)  # ns per call, one per round

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.batch is not None

    def median_ns(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    def min_ns(self) -> float:
        return min(self.samples) if self.samples else math.nan

    def spread(self) -> tuple[float, float]:
        """(25th, 75th) percentile of the per-round samples, ns per call."""
        if len(self.samples) < 4:
            return (min(self.samples, default=math.nan), max(self.samples, default=math.nan))
        q = statistics.quantiles(self.samples, n=4)
        return q[0], q[2]


def calibrate(peer: Peer, target_s: float, max_n: int, min_n: int = 1) -> None:
    """Pick calls-per-batch so one batch takes about target_s. The per-call
    estimate is the best of three batches, so one batch that another job on
    the machine interrupted does not shrink the batch size."""
    n = 1
    while True:
        t = peer.batch(n) / 1e9
        if t >= target_s / 4 or n >= max_n:
            break
        n = min(max_n, n * 4 if t < target_s / 40 else n * 2)
    t = min([t] + [peer.batch(n) / 1e9 for _ in range(2)])
    per = max(t / n, 1e-9)
    peer.n = int(max(min_n, min(max_n, round(target_s / per))))


def _running_threads() -> int:
    """How many threads of this process, the caller's aside, are running or
    runnable (state R in /proc/self/task/*/stat): spinning pool workers
    are; workers asleep on a futex are not."""
    me, running = threading.get_native_id(), 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread exited
        running += state == b"R"
    return running


def settle(poll_s: float = 0.0005, limit_s: float = 0.25) -> float:
    """Wait until no other thread of this process runs (twice in a row,
    `poll_s` apart; at most `limit_s`) and return the seconds waited.
    Thread pools spin after a run: ONNX Runtime's intra-op workers for
    about 40 ms (session.intra_op.allow_spinning, on by default), XNNPACK's
    pthreadpool about 1 ms, pterun's 200 µs; on a 2-core machine a peer
    timed while another's workers spin loses its second core to them.
    (Process CPU time cannot tell: other threads' time is only added up at
    the 4 ms scheduler ticks.)"""
    start = time.perf_counter()
    quiet = 0
    while quiet < 2 and time.perf_counter() - start < limit_s:
        quiet = quiet + 1 if _running_threads() == 0 else 0
        time.sleep(poll_s)
    return time.perf_counter() - start


def run_interleaved(
    peers: list[Peer],
    rounds: int,
    *,
    target_s: float,
    max_n: int,
    min_n: int = 1,
    warmup_rounds: int = 2,
    pause_s: float = 0.002,
    seed: int = 0,
    warm: bool = True,
) -> None:
    """Time every ok peer `rounds` times, one batch per peer per round, in a
    freshly shuffled order each round so slow drift (other jobs on the
    machine, frequency changes) hits all peers alike. After each batch the
    harness waits until the process is idle (settle: the worker threads
    that spin after a run, ONNX Runtime's for about 40 ms, have gone to
    sleep), then `pause_s` more, so no peer's batch shares the cores with
    another's spinning workers. With `warm`, an untimed batch of the same
    peer runs right before each timed one: after that idle wait a pool's
    workers, woken, may share the caller's core until the scheduler
    spreads them, milliseconds later (ExecuTorch + XNNPACK's mobilenet_224
    at 2 threads: median 1.88-1.94 ms without, 0.87-0.89 ms with), and
    caches are cold; each runtime is timed in its steady state."""
    live = [p for p in peers if p.ok]
    for p in live:
        p.batch(max(1, min_n))  # first call: lazy init, page faults
        calibrate(p, target_s, max_n, min_n)
        settle()
    rng = random.Random(seed)
    for r in range(warmup_rounds + rounds):
        order = live[:]
        rng.shuffle(order)
        for p in order:
            if warm:
                p.batch(p.n)
            ns = p.batch(p.n)
            if r >= warmup_rounds:
                p.samples.append(ns / p.n)
            settle()
            if pause_s:
                time.sleep(pause_s)


# --------------------------------------------------------------------------
# executorch-numpy-runtime, in a worker process
# --------------------------------------------------------------------------


class EnrWorker:
    """Client for _enr_worker.py running under a Python that has
    executorch-numpy-runtime. Requests and replies are JSON lines; the worker
    times its own loops, so the pipe is not in the measurement."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).with_name("_enr_worker.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # ExecuTorch's own log lines
            text=True,
            bufsize=1,
        )
        self.info = self.request(op="info")

    def request(self, **msg) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("executorch-numpy-runtime worker died")
        return json.loads(line)

    def load(self, key: str, pte: Path, inputs: list[np.ndarray], tmpdir: Path) -> dict:
        path = tmpdir / f"enr_in_{key}.npz"
        np.savez(path, *inputs)
        return self.request(op="load", key=key, pte=str(pte), inputs=str(path))

    def outputs(self, key: str, tmpdir: Path) -> list[np.ndarray]:
        path = tmpdir / f"enr_out_{key}.npz"
        rep = self.request(op="outputs", key=key, path=str(path))
        if not rep.get("ok"):
            raise RuntimeError(rep.get("error"))
        with np.load(path) as d:
            return [d[f"arr_{i}"] for i in range(rep["n"])]

    def batch_fn(self, key: str) -> Callable[[int], int]:
        def run(n: int) -> int:
            rep = self.request(op="time", key=key, n=n)
            if not rep.get("ok"):
                raise RuntimeError(rep.get("error"))
            return rep["ns"]

        return run

    def close(self) -> None:
        try:
            self.request(op="quit")
        except Exception:
            pass
        self.proc.wait(timeout=10)


def start_enr(python: str | None) -> tuple[EnrWorker | None, str]:
    """(worker, note). note says why there is no worker when there is none."""
    if python == "":
        return None, "disabled (--enr-python '')"
    if python:
        import shutil

        py = Path(shutil.which(python) or python)
    elif DEFAULT_ENR_PYTHON.exists():
        py = DEFAULT_ENR_PYTHON
    else:
        import importlib.util

        # this interpreter, where it has the package itself (Python >= 3.12)
        py = Path(sys.executable) if importlib.util.find_spec("executorch_numpy_runtime") else DEFAULT_ENR_PYTHON
    if not py.exists():
        return None, (
            f"not available: {py} missing (executorch-numpy-runtime needs Python >= 3.12; "
            "see docs/performance.md for the venv)"
        )
    try:
        w = EnrWorker(str(py))
    except Exception as exc:  # noqa: BLE001
        return None, f"not available: worker failed to start ({exc})"
    if not w.info.get("ok"):
        w.close()
        return None, f"not available: {w.info.get('error')}"
    return w, ""


# --------------------------------------------------------------------------
# ONNX export of the fixture modules (same classes, same seeds / weights)
# --------------------------------------------------------------------------


def _pte_constants(pte: Path) -> list:
    """Constant tensors of the .pte's forward plan, in value-table order."""
    import torch
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import Tensor as SchemaTensor

    dtypes = {6: torch.float32, 4: torch.int64}
    program = deserialize_pte_binary(pte.read_bytes()).program
    plan = program.execution_plan[0]
    out = []
    for v in plan.values:
        t = v.val
        if isinstance(t, SchemaTensor) and t.data_buffer_idx > 0:
            raw = bytes(program.constant_buffer[t.data_buffer_idx].storage)
            dt = dtypes[int(t.scalar_type)]
            out.append(torch.frombuffer(bytearray(raw), dtype=dt).reshape(list(t.sizes)).clone())
    return out


def fixture_models():
    """tests/fixtures/models.py: the fixtures' torch modules (needs torch only)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pterun_fixture_models", FIXTURES / "models.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def build_torch_module(name: str):
    """The torch module behind fixture `name`, with the fixture's weights
    (tests/fixtures/models.py); the trained digits_cnn takes its weights from
    the .pte's constants instead of re-training."""
    m = fixture_models().build(name)
    if name == "digits_cnn":
        consts = _pte_constants(fixture_pte(name))
        params = list(m.state_dict().items())
        assert len(consts) == len(params), (len(consts), len(params))
        sd = {}
        for (k, p), c in zip(params, consts):
            assert tuple(p.shape) == tuple(c.shape), (k, p.shape, c.shape)
            sd[k] = c
        m.load_state_dict(sd)
    return m


def onnx_model(name: str, inputs: list[np.ndarray], expected: list[np.ndarray], log=print) -> Path:
    """Path of a cached ONNX export of fixture `name` (exported on first use).

    The cache key includes the hash of the .pte and of export.py, so a changed
    fixture gets a new export. Before exporting, the rebuilt torch module is
    checked against the fixture's expected outputs."""
    import hashlib

    h = hashlib.sha256()
    h.update(fixture_pte(name).read_bytes())
    h.update((FIXTURES / "export.py").read_bytes())
    h.update((FIXTURES / "models.py").read_bytes())
    path = ONNX_CACHE / f"{name}-{h.hexdigest()[:12]}.onnx"
    if path.exists():
        return path
    import io
    import warnings

    import torch

    log(f"  exporting {name} to ONNX ({path.relative_to(REPO)}) ...")
    module = build_torch_module(name)
    targs = tuple(torch.from_numpy(a.copy()) for a in inputs)
    with torch.no_grad():
        got = module(*targs)
    got = [t.numpy() for t in (got if isinstance(got, (tuple, list)) else [got])]
    ok, diff, why = compare(got, expected, rtol=1e-4, atol=1e-5)
    if not ok:
        raise RuntimeError(f"rebuilt torch module for {name} does not reproduce the fixture: {why}")
    ONNX_CACHE.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            targs,
            buf,
            dynamo=False,  # the dynamo exporter needs onnxscript, absent here
            opset_version=17,
            input_names=[f"in{i}" for i in range(len(targs))],
            output_names=[f"out{i}" for i in range(len(expected))],
            do_constant_folding=True,
        )
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)
    return path


def ort_session(path: Path, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


# --------------------------------------------------------------------------
# ExecuTorch 1.5.1 (pip) runtime
# --------------------------------------------------------------------------


def et_set_threads(n: int) -> str:
    """Size ExecuTorch's CPU threadpool (used by its optimized kernels)."""
    try:
        from executorch.extension.pybindings import portable_lib as pl

        pl._unsafe_reset_threadpool(n)
        return str(pl._threadpool_get_thread_count())
    except Exception as exc:  # noqa: BLE001
        return f"? ({exc})"


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def fmt_us(ns: float) -> str:
    if ns is None or math.isnan(ns):
        return "-"
    us = ns / 1000.0
    if us >= 1000:
        return f"{us:,.0f}"
    if us >= 100:
        return f"{us:.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_ratio(num: float, den: float) -> str:
    if num is None or den is None or math.isnan(num) or math.isnan(den) or den <= 0:
        return "-"
    return f"{num / den:.2f}x"


def print_table(headers: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip() or "unknown"
    except Exception:  # noqa: BLE001
        return "unknown"


def optional_torch():
    """torch, or None where it is not installed (then the ExecuTorch peers are
    skipped and ONNX files must already be in the cache)."""
    try:
        import torch

        return torch
    except ImportError:
        return None


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def environment_lines(enr: EnrWorker | None, enr_note: str) -> list[str]:
    import onnxruntime

    import pterun

    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    lines = [
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs ({usable} usable), load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        f"python {platform.python_version()}, numpy {np.__version__}, torch {_dist_version('torch')}, "
        f"executorch {_dist_version('executorch')}, onnxruntime {onnxruntime.__version__}",
        f"pterun from {Path(pterun.__file__).parent} (source tree {git_revision()})",
    ]
    if enr is not None:
        i = enr.info
        lines.append(
            f"executorch-numpy-runtime {i.get('version')} (ExecuTorch {i.get('et_version')}, "
            f"kernel libs {','.join(i.get('kernel_libs', []))}) on python {i.get('python')}"
        )
    else:
        lines.append(f"executorch-numpy-runtime: {enr_note}")
    return lines


def import_pterun():
    try:
        import pterun  # noqa: F401
    except ImportError as exc:
        sys.exit(
            f"cannot import pterun ({exc}); build it and set PYTHONPATH, e.g.\n"
            "  PYTHONPATH=build/bench/python_pkg /work/.venv-export/bin/python benchmarks/..."
        )
    return pterun
