"""Model latency: pterun against ExecuTorch's runtime, executorch-numpy-runtime
and ONNX Runtime, side by side in one run.

    PYTHONPATH=build/bench/python_pkg /work/venvs/export/bin/python benchmarks/models.py \
        [--threads 2] [--models mlp,cnn,gpt,llama_block,digits_cnn] [--repeat 40]
    PYTHONPATH=build/bench/python_pkg /work/venvs/export/bin/python benchmarks/models.py \
        --suite networks [--threads 1,2] [--models mobilenet_64,resnet_32,...]

The `networks` suite (_networks.py) runs the MobileNet-like and ResNet-like
CNNs (1x3x64x64 and 1x3x224x224; 2x3x32x32 and 4x3x128x128), the
transformer encoder, the MLP and the LSTM of tests/fixtures/models.py,
exported at benchmark time (export_models.py), beside ExecuTorch + XNNPACK
and ONNX Runtime, at every thread count of --threads in one run. What
follows describes the default `fixtures` suite.

For each model (a fixture in tests/fixtures, input `c0_in*` of its .npz):

- pterun: `method([np_x, ...])`, every output read with `.numpy()`.
- ExecuTorch 1.5.1 (pip): `Runtime.get().load_program(pte).load_method("forward")
  .execute([torch tensors])`, outputs read with `.numpy()`. The pip wheel's
  bindings link libexecutorch_kernels_optimized (optimized kernels where they
  exist - linear, mm, bmm, add, mul, gelu, layer_norm, ... - portable for the
  rest); its threadpool is sized with --threads.
- executorch-numpy-runtime (PyPI, ExecuTorch 1.3.1, portable + optimized
  kernels), in a Python 3.12 worker process (it has no 3.11 wheel), NumPy in
  and out. Its thread count cannot be set.
- ONNX Runtime: the same torch module with the same weights exported to ONNX
  (cached under build/bench-onnx/), CPU provider, sequential execution,
  intra-op threads = --threads and 1, `sess.run(None, feed)` (NumPy in and out).

With --quant, quantized models instead (benchmarks/quant_export.py: the two
static PT2E fixtures of tests/fixtures/quant and two larger models, int8
programs without a delegate and their float twins, exported on first use
into build/bench-quant/): pterun with its integer kernels, pterun running
the program's instructions as written (PTERUN_INTEGER_QUANTIZED=0:
dequantize, float op, quantize), ExecuTorch on the int8 program (its
portable and quantized kernels), and pterun and ExecuTorch on the float
twin. Ratios are peer / pterun int8. With --quant --flow xnnpack-static or
xnnpack-dynamic, the XNNPACK flows (the models quantized with static int8
activations, or dynamic ones for mlp_static and mlp1k, and per-channel
int8 weights, lowered with XnnpackPartitioner; quant_export.ensure_xnnpack):
pterun and ExecuTorch + XNNPACK on that file, then both on its float
XNNPACK twin.

A second table times the XNNPACK-delegated fixtures (tests/fixtures/xnnpack/,
--xnnpack; input `c0_in*`):

- pterun XNN: the delegated file (its delegates expanded into pterun's kernels).
- pterun plain: the plain twin, the same module and weights exported without
  a partitioner (`to_edge(...).to_executorch()`, cached under
  build/bench-xnnpack/).
- ET+XNNPACK: ExecuTorch 1.5.1 running the delegated file with XNNPACK (its
  threadpool sized with --threads).
- ET plain: ExecuTorch running the plain twin (optimized + portable kernels).

Their outputs are checked against ExecuTorch + XNNPACK's saved outputs.

Every peer's outputs are checked against pterun's (and pterun's against the
fixture's torch outputs) before timing. Each round times one batch of calls
per peer, in a shuffled order, each right after an untimed batch of the
same peer and followed by a wait until no other thread of the process
runs (_common.run_interleaved: ONNX Runtime's workers spin about 40 ms
after a run); the figure is the median over rounds of the per-call time
(batch time / calls); a second table gives the best batch. Ratios are
peer / pterun: above 1 means pterun is faster.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


import _common as C  # noqa: E402
import numpy as np  # noqa: E402

MODELS = ["mlp", "cnn", "gpt", "llama_block", "digits_cnn"]
XNNPACK_MODELS = ["mobilenet", "resnet", "transformer", "lstm", "mlp"]
RTOL, ATOL = 1e-4, 1e-4  # peer vs pterun, and pterun vs torch eager


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_pterun_peer(pterun, name, ins, expected, path=None, label="pterun") -> C.Peer:
    path = path or C.fixture_pte(name)
    try:
        m = pterun.load_program(str(path)).load_method("forward")
    except NotImplementedError as exc:
        return C.Peer(label, None, "missing kernel", str(exc))
    except Exception as exc:  # noqa: BLE001
        return C.Peer(label, None, "load error", f"{type(exc).__name__}: {exc}")
    try:
        outs = [o.numpy() for o in m(ins)]
    except NotImplementedError as exc:
        return C.Peer(label, None, "missing kernel", str(exc))
    except Exception as exc:  # noqa: BLE001
        return C.Peer(label, None, "run error", f"{type(exc).__name__}: {exc}")
    ok, diff, why = C.compare(outs, expected, RTOL, ATOL)
    if not ok:
        return C.Peer(label, None, "wrong result", f"vs the expected outputs: {why}")

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            [o.numpy() for o in m(ins)]
        return time.perf_counter_ns() - t0

    p = C.Peer(label, batch, detail=f"max |diff| vs expected {diff:.2g}")
    p.outputs = outs
    return p


def check_peer(p: C.Peer, outs, ref) -> C.Peer:
    ok, diff, why = C.compare(outs, ref, RTOL, ATOL)
    if not ok:
        p.status, p.batch, p.detail = "mismatch", None, why
    else:
        p.detail = f"max |diff| {diff:.2g}"
    return p


def make_et_peer(name, ins, ref, path=None, label="ExecuTorch") -> C.Peer:
    try:
        import torch
        from executorch.runtime import Runtime
    except ImportError as exc:
        return C.Peer(label, None, "n/a", f"not installed ({exc})")
    try:
        m = Runtime.get().load_program(str(path or C.fixture_pte(name))).load_method("forward")
        tin = [torch.from_numpy(a) for a in ins]
        outs = [o.numpy() for o in m.execute(tin)]
    except Exception as exc:  # noqa: BLE001
        return C.Peer(label, None, "error", f"{type(exc).__name__}: {exc}"[:300])

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            [o.numpy() for o in m.execute(tin)]
        return time.perf_counter_ns() - t0

    return check_peer(C.Peer(label, batch), outs, ref)


def make_enr_peer(enr, note, name, ins, ref, tmpdir) -> C.Peer:
    if enr is None:
        return C.Peer("ENR", None, "n/a", note)
    rep = enr.load(name, C.fixture_pte(name), ins, tmpdir)
    if not rep.get("ok"):
        return C.Peer("ENR", None, "cannot read file" if "Load" in str(rep.get("kind")) else "error",
                      str(rep.get("error")))
    outs = enr.outputs(name, tmpdir)
    return check_peer(C.Peer("ENR", enr.batch_fn(name)), outs, ref)


def make_ort_peer(label, onnx_path, threads, ins, ref) -> C.Peer:
    if onnx_path is None:
        return C.Peer(label, None, "no onnx", "")
    try:
        sess = C.ort_session(onnx_path, threads)
        feed = {i.name: a for i, a in zip(sess.get_inputs(), ins)}
        outs = sess.run(None, feed)
    except Exception as exc:  # noqa: BLE001
        return C.Peer(label, None, "error", f"{type(exc).__name__}: {exc}"[:300])

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            sess.run(None, feed)
        return time.perf_counter_ns() - t0

    return check_peer(C.Peer(label, batch), outs, ref)


def make_quant_peers(pterun, name: str, log) -> list[C.Peer]:
    """The peers of one quantized model (see --quant)."""
    import quant_export

    int8, fp32, npz = quant_export.ensure(name, log=log)
    d = np.load(npz)
    ins = [d["x"]]
    step = float(d["step"])
    want = {tag: [d[k] for k in sorted(d.files) if k.startswith(f"{tag}_out")]
            for tag in ("int8", "fp32")}

    def pterun_peer(label, path, tag, integer=True) -> C.Peer:
        old = os.environ.get("PTERUN_INTEGER_QUANTIZED")
        if not integer:
            os.environ["PTERUN_INTEGER_QUANTIZED"] = "0"
        try:
            m = pterun.load_program(str(path)).load_method("forward")
        finally:
            if integer or old is None:
                os.environ.pop("PTERUN_INTEGER_QUANTIZED", None)
            else:
                os.environ["PTERUN_INTEGER_QUANTIZED"] = old
        outs = [o.numpy() for o in m(ins)]
        if tag == "int8":
            diff = max(float(np.abs(a - b).max()) for a, b in zip(outs, want[tag]))
            steps = diff / step if step else math.inf
            p = C.Peer(label, None, "wrong result", f"{steps:.2f} steps from ExecuTorch")
            if steps <= 2:
                p.status = "ok"
        else:
            ok, diff, why = C.compare(outs, want[tag], RTOL, ATOL)
            p = C.Peer(label, None, "ok" if ok else "wrong result",
                       f"max |diff| vs ExecuTorch {diff:.2g}" if ok else why)

        def batch(n: int) -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                [o.numpy() for o in m(ins)]
            return time.perf_counter_ns() - t0

        p.batch = batch
        return p

    def et_peer(label, path, tag) -> C.Peer:
        import torch
        from executorch.runtime import Runtime

        m = Runtime.get().load_program(str(path)).load_method("forward")
        tin = [torch.from_numpy(a) for a in ins]

        def batch(n: int) -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                [o.numpy() for o in m.execute(tin)]
            return time.perf_counter_ns() - t0

        return C.Peer(label, batch, detail="the expected outputs")

    return [pterun_peer("pterun int8", int8, "int8"),
            pterun_peer("pterun as written", int8, "int8", integer=False),
            et_peer("ExecuTorch int8", int8, "int8"),
            pterun_peer("pterun fp32", fp32, "fp32"),
            et_peer("ExecuTorch fp32", fp32, "fp32")]


def make_xnnpack_peers(pterun, name: str, config: str, log) -> list[C.Peer]:
    """The peers of one quantized XNNPACK model (--flow xnnpack-*): pterun
    and ExecuTorch + XNNPACK on the int8 file, then both on its float XNNPACK
    twin. Outputs against ExecuTorch's: within 1e-3 of the largest for int8
    (a static graph's output within a step or two of its grid; a dynamic
    one's the same quantization, sums in another order)."""
    import torch

    import quant_export
    from executorch.runtime import Runtime

    int8, fp32, npz = quant_export.ensure_xnnpack(name, config, log=log)
    d = np.load(npz)
    ins = [d["x"]]
    peers = []
    for tag, path in (("int8", int8), ("fp32", fp32)):
        want = [d[k] for k in sorted(d.files) if k.startswith(f"{tag}_out")]
        m = pterun.load_program(str(path)).load_method("forward")
        outs = [o.numpy() for o in m(ins)]
        scale = max(1.0, max(float(np.abs(w).max()) for w in want))
        tol = (2e-2 if config.startswith("static") else 1e-3) if tag == "int8" else ATOL
        ok, diff, why = C.compare(outs, want, 0.0, tol * scale)
        label = tag
        p = C.Peer(f"pterun {label}", None, "ok" if ok else "wrong result",
                   f"max |diff| vs ExecuTorch {diff:.2g}" if ok else why)

        def batch(n: int, m=m) -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                [o.numpy() for o in m(ins)]
            return time.perf_counter_ns() - t0

        p.batch = batch
        et = Runtime.get().load_program(str(path)).load_method("forward")
        tin = [torch.from_numpy(a) for a in ins]

        def et_batch(n: int, et=et) -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                [o.numpy() for o in et.execute(tin)]
            return time.perf_counter_ns() - t0

        peers += [p, C.Peer(f"ExecuTorch+XNNPACK {label}", et_batch, detail="the expected outputs")]
    return peers


def main_quant(args, pterun) -> int:
    import executorch.kernels.quantized  # noqa: F401  (ExecuTorch's quantized kernels)

    N = args.threads
    et_threads = C.et_set_threads(N)
    print(f"# threads: pterun {pterun.get_num_threads()}, ExecuTorch threadpool {et_threads}; "
          f"{args.repeat} rounds, ~{args.batch_ms:g} ms batches")
    print("# load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    results = {}
    import quant_export

    config = {"xnnpack-static": "static_pc", "xnnpack-dynamic": "dynamic_pc"}.get(args.flow)
    default = "mlp_static,mlp1k" if args.flow == "xnnpack-dynamic" else ",".join(quant_export.MODELS)
    for name in (args.quant_models or default).split(","):
        log(f"== {name}")
        if config is None:
            peers = make_quant_peers(pterun, name, log)
        else:
            peers = make_xnnpack_peers(pterun, name, config, log)
        for p in peers:
            log(f"  {p.name:18s} {p.status:14s} {p.detail[:200]}")
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1000, max_n=100_000)
        results[name] = peers
    names = [p.name for p in next(iter(results.values()))]
    headers = ["model"] + [f"{n} µs" for n in names] + [f"{n}/int8" for n in names[1:]]
    for title, stat in (("Median per-call latency (µs)", C.Peer.median_ns),
                        ("Best batch (µs)", C.Peer.min_ns)):
        rows = []
        for model, peers in results.items():
            pt = peers[0]
            cells = [model] + [C.fmt_us(stat(p)) if p.ok else p.status for p in peers]
            cells += [C.fmt_ratio(stat(p), stat(pt)) if (p.ok and pt.ok) else "-" for p in peers[1:]]
            rows.append(cells)
        print()
        print(f"{title}, threads={N}; ratio = peer time / pterun int8 time (>1: int8 faster)")
        C.print_table(headers, rows, args.markdown)
    print()
    print("# load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["fixtures", "networks"], default="fixtures",
                    help="the fixtures (default), or the CNN / encoder / LSTM / MLP networks beside "
                         "ExecuTorch + XNNPACK (_networks.py)")
    ap.add_argument("--threads", default=None,
                    help="pterun.set_num_threads, ORT intra-op threads, torch and ExecuTorch threadpool "
                         "(default 2; the networks suite takes a list, default 1,2)")
    ap.add_argument("--models", default=None, help="comma-separated fixture (or network) names")
    ap.add_argument("--xnnpack", default=",".join(XNNPACK_MODELS),
                    help="comma-separated XNNPACK fixtures (tests/fixtures/xnnpack/; '' to skip)")
    ap.add_argument("--repeat", type=int, default=40, help="timed rounds per model (default 40)")
    ap.add_argument("--batch-ms", type=float, default=5.0,
                    help="target time of one batch (default 5 ms; a call slower than that is a batch of 1)")
    ap.add_argument("--enr-python", default=None,
                    help="Python that has executorch-numpy-runtime (default build/bench-enr-venv/bin/python; '' to skip)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--quant", action="store_true",
                    help="time the quantized models instead (benchmarks/quant_export.py)")
    ap.add_argument("--flow", choices=["static", "xnnpack-static", "xnnpack-dynamic"],
                    default="static",
                    help="with --quant: the static PT2E programs without a delegate (default), or "
                         "the XNNPACK-lowered static or dynamic int8 ones")
    ap.add_argument("--quant-models", default=None,
                    help="comma-separated quantized models (default: all of quant_export.MODELS)")
    args = ap.parse_args()
    if args.suite == "networks":
        import _networks

        args.threads = args.threads or "1,2"
        return _networks.run(args, log)
    args.threads = int(args.threads or 2)
    args.models = args.models or ",".join(MODELS)

    pterun = C.import_pterun()
    if args.quant:
        pterun.set_num_threads(args.threads)
        return main_quant(args, pterun)
    torch = C.optional_torch()

    N = args.threads
    pterun.set_num_threads(N)
    if torch is not None:
        torch.set_num_threads(N)
    et_threads = C.et_set_threads(N)
    ort_threads = [N] if N == 1 else [N, 1]

    enr, enr_note = C.start_enr(args.enr_python)
    for line in C.environment_lines(enr, enr_note):
        print("# " + line)
    print(f"# threads: pterun {pterun.get_num_threads()}, torch {torch.get_num_threads() if torch else '-'}, "
          f"ExecuTorch threadpool {et_threads}, ORT intra-op {'/'.join(map(str, ort_threads))}; "
          f"{args.repeat} rounds, ~{args.batch_ms:g} ms batches")

    models = [m for m in args.models.split(",") if m]
    results = {}
    tmp = tempfile.TemporaryDirectory(prefix="pterun-bench-")
    tmpdir = Path(tmp.name)
    for name in models:
        log(f"== {name}")
        ins, expected = C.fixture_io(name, 0)
        pt = make_pterun_peer(pterun, name, ins, expected)
        ref = getattr(pt, "outputs", expected)  # peers are checked against pterun when it runs
        try:
            onnx_path = C.onnx_model(name, ins, expected, log=log)
        except Exception as exc:  # noqa: BLE001
            log(f"  ONNX export failed: {type(exc).__name__}: {exc}")
            onnx_path = None
        peers = [pt, make_et_peer(name, ins, ref), make_enr_peer(enr, enr_note, name, ins, ref, tmpdir)]
        for t in ort_threads:
            peers.append(make_ort_peer(f"ORT {t}t", onnx_path, t, ins, ref))
        for p in peers:
            log(f"  {p.name:12s} {p.status:14s} {p.detail[:200]}")
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1000, max_n=100_000)
        results[name] = peers
    if enr is not None:
        enr.close()

    # XNNPACK-delegated fixtures: pterun on the delegated file and on its
    # plain twin, ExecuTorch on both.
    xresults = {}
    for name in [m for m in args.xnnpack.split(",") if m]:
        log(f"== xnnpack/{name}")
        ins, expected = C.xnnpack_io(name, 0)
        try:
            plain = C.plain_twin(name, log=log)
        except Exception as exc:  # noqa: BLE001
            log(f"  plain export failed: {type(exc).__name__}: {exc}")
            plain = None
        delegated = C.xnnpack_pte(name)
        pt = make_pterun_peer(pterun, name, ins, expected, delegated, "pterun XNN")
        ref = getattr(pt, "outputs", expected)
        peers = [pt]
        if plain is not None:
            peers.append(make_pterun_peer(pterun, name, ins, ref, plain, "pterun plain"))
        peers.append(make_et_peer(name, ins, ref, delegated, "ET+XNNPACK"))
        if plain is not None:
            peers.append(make_et_peer(name, ins, ref, plain, "ET plain"))
        for p in peers:
            log(f"  {p.name:12s} {p.status:14s} {p.detail[:200]}")
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1000, max_n=100_000)
        xresults[name] = peers

    report(results, N, args.markdown, "")
    if xresults:
        print()
        print("XNNPACK-delegated fixtures (tests/fixtures/xnnpack/): ratio = peer time / pterun XNN time")
        report(xresults, N, args.markdown, "pterun XNN")
    print()
    print("# load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    tmp.cleanup()
    return 0


def report(results, N, markdown, first) -> None:
    """The median, best-batch and spread tables of one set of results (the
    first peer of each model is the one ratios divide by)."""
    if not results:
        return
    names = [p.name for p in next(iter(results.values()))] if results else []
    headers = ["model"] + [f"{n} µs" for n in names] + [f"{n}/{first or 'pterun'}" for n in names[1:]]

    def table(stat) -> list[list[str]]:
        rows = []
        for model, peers in results.items():
            pt = peers[0]
            cells = [model]
            for p in peers:
                cells.append(C.fmt_us(stat(p)) if p.ok else p.status)
            for p in peers[1:]:
                cells.append(C.fmt_ratio(stat(p), stat(pt)) if (p.ok and pt.ok) else "-")
            rows.append(cells)
        return rows

    print()
    print(f"Median per-call latency (µs), threads={N}; ratio = peer time / {first or 'pterun'} time "
          "(>1: pterun faster)")
    C.print_table(headers, table(C.Peer.median_ns), markdown)
    print()
    print("Best batch (minimum over rounds of the per-call mean, µs): less sensitive to other jobs on the machine")
    C.print_table(headers, table(C.Peer.min_ns), markdown)

    print()
    print("Spread over rounds: 25th-75th percentile of the per-batch means (µs per call); calls per batch:")
    nrows = []
    for model, peers in results.items():
        cells = [model]
        for p in peers:
            if p.ok and p.samples:
                lo, hi = p.spread()
                cells.append(f"{C.fmt_us(lo)}-{C.fmt_us(hi)} ({p.n}/batch)")
            else:
                cells.append("-")
        nrows.append(cells)
    C.print_table(["model"] + names, nrows, markdown)

    notes = []
    for model, peers in results.items():
        for p in peers:
            if not p.ok and p.status != "n/a":
                notes.append(f"{model} / {p.name}: {p.status}: {p.detail[:400]}")
    if notes:
        print()
        print("Not timed:")
        for n in notes:
            print("  - " + n)


if __name__ == "__main__":
    sys.exit(main())
