"""Per-call overhead of a full Python call, pterun against its peers, in one run.

    PYTHONPATH=build/bench/python_pkg /work/.venv-export/bin/python benchmarks/call_overhead.py \
        [--threads 2] [--models add,mlp,chain8] [--repeat 40]

A "call" is what a user writes: NumPy arrays in, the results read back as
NumPy. Every variant is checked against pterun's outputs first.

  pterun Method.__call__      [o.numpy() for o in method([x, y])]
  pterun Module.forward       [o.numpy() for o in module.forward([x, y])]
  ET runtime execute          executorch.runtime Method.execute([tx, ty]), torch inputs
                              made once (as ExecuTorch requires torch), outputs .numpy()
  ET runtime execute(np)      the same, torch.from_numpy(x) inside the call
  ET portable_lib forward     portable_lib._load_for_executorch(pte).forward((tx, ty)), .numpy()
  executorch-numpy-runtime    method([x, y]) in a Python 3.12 worker (fresh NumPy outputs)
  ORT run                     sess.run(None, {"in0": x, ...}) (NumPy in and out)
  ORT IOBinding               bind_cpu_input per call, outputs pre-bound to NumPy arrays,
                              sess.run_with_iobinding(io)
  ORT IOBinding (all bound)   inputs and outputs bound once; the call is run_with_iobinding only
                              (takes no new inputs: a lower bound, left out of "fastest peer")

Each round times one batch per variant (shuffled order, ~--batch-ms (5 ms) of calls:
a few hundred to a few thousand calls of `add`, so 100 rounds time 20k-500k
calls), per-call time = batch time / calls; the figure is the median over
rounds (a second table gives the best batch, which other jobs on a shared
machine disturb less). Ratios are variant / pterun Method.__call__.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _common as C  # noqa: E402

MODELS = ["add", "mlp", "chain8"]
RTOL, ATOL = 1e-4, 1e-4
GOAL_US = 2.0
GOAL_X = 3.0


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(fn):
    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        return time.perf_counter_ns() - t0

    return batch


def checked(label, outs_fn, ref, make_batch) -> C.Peer:
    """Run once, compare with ref, and return a Peer (untimed on mismatch or error)."""
    try:
        outs = outs_fn()
    except NotImplementedError as exc:
        return C.Peer(label, None, "missing kernel", str(exc))
    except Exception as exc:  # noqa: BLE001
        return C.Peer(label, None, "error", f"{type(exc).__name__}: {exc}"[:300])
    if ref is not None:
        ok, diff, why = C.compare(outs, ref, RTOL, ATOL)
        if not ok:
            return C.Peer(label, None, "mismatch", why)
    return C.Peer(label, make_batch())


def variants(name, pterun, enr, enr_note, threads, tmpdir) -> list[C.Peer]:
    pte = C.fixture_pte(name)
    ins, expected = C.fixture_io(name, 0)
    peers: list[C.Peer] = []

    # ---- pterun (checked against the fixture's torch-eager outputs)
    ref = expected
    try:
        meth = pterun.load_program(str(pte)).load_method("forward")
        p1 = checked("pterun Method.__call__", lambda: [o.numpy() for o in meth(ins)], expected,
                     lambda: timed(lambda: [o.numpy() for o in meth(ins)]))
        if p1.ok:  # the other variants are checked against pterun's outputs
            ref = [o.numpy().copy() for o in meth(ins)]
    except NotImplementedError as exc:
        p1 = C.Peer("pterun Method.__call__", None, "missing kernel", str(exc))
    except Exception as exc:  # noqa: BLE001
        p1 = C.Peer("pterun Method.__call__", None, "error", f"{type(exc).__name__}: {exc}"[:300])
    try:
        mod = pterun.Module(str(pte))
        p2 = checked("pterun Module.forward", lambda: [o.numpy() for o in mod.forward(ins)], expected,
                     lambda: timed(lambda: [o.numpy() for o in mod.forward(ins)]))
    except Exception as exc:  # noqa: BLE001
        p2 = C.Peer("pterun Module.forward", None, "error", f"{type(exc).__name__}: {exc}"[:300])
    peers += [p1, p2]

    # ---- ExecuTorch 1.5.1 Python bindings (torch tensors in)
    et_labels = ["ET runtime execute", "ET runtime execute(np)", "ET portable_lib forward"]
    try:
        import torch
        from executorch.extension.pybindings import portable_lib
        from executorch.runtime import Runtime
    except ImportError as exc:
        peers += [C.Peer(lab, None, "n/a", f"not installed ({exc})") for lab in et_labels]
    else:
        tin = [torch.from_numpy(a) for a in ins]
        try:
            em = Runtime.get().load_program(str(pte)).load_method("forward")
            peers.append(checked(et_labels[0], lambda: [o.numpy() for o in em.execute(tin)], ref,
                                 lambda: timed(lambda: [o.numpy() for o in em.execute(tin)])))
            peers.append(checked(
                et_labels[1],
                lambda: [o.numpy() for o in em.execute([torch.from_numpy(a) for a in ins])], ref,
                lambda: timed(lambda: [o.numpy() for o in em.execute([torch.from_numpy(a) for a in ins])])))
        except Exception as exc:  # noqa: BLE001
            peers.append(C.Peer(et_labels[0], None, "error", str(exc)[:300]))
            peers.append(C.Peer(et_labels[1], None, "error", str(exc)[:300]))
        try:
            pm = portable_lib._load_for_executorch(str(pte))
            targs = tuple(tin)
            peers.append(checked(et_labels[2], lambda: [o.numpy() for o in pm.forward(targs)], ref,
                                 lambda: timed(lambda: [o.numpy() for o in pm.forward(targs)])))
        except Exception as exc:  # noqa: BLE001
            peers.append(C.Peer(et_labels[2], None, "error", str(exc)[:300]))

    # ---- executorch-numpy-runtime (worker process)
    if enr is None:
        peers.append(C.Peer("executorch-numpy-runtime", None, "n/a", enr_note))
    else:
        rep = enr.load(name, pte, ins, tmpdir)
        if not rep.get("ok"):
            peers.append(C.Peer("executorch-numpy-runtime", None, "cannot read file", str(rep.get("error"))))
        else:
            outs = enr.outputs(name, tmpdir)
            ok, _, why = C.compare(outs, ref, RTOL, ATOL)
            peers.append(C.Peer("executorch-numpy-runtime", enr.batch_fn(name)) if ok
                         else C.Peer("executorch-numpy-runtime", None, "mismatch", why))

    # ---- ONNX Runtime
    try:
        onnx_path = C.onnx_model(name, ins, expected, log=log)
    except Exception as exc:  # noqa: BLE001
        log(f"  ONNX export failed: {type(exc).__name__}: {exc}")
        onnx_path = None
    ort_threads = [threads] if threads == 1 else [threads, 1]
    if onnx_path is None:
        peers.append(C.Peer("ORT run", None, "no onnx", ""))
    else:
        for t in ort_threads:
            sess = C.ort_session(onnx_path, t)
            feed = {i.name: a for i, a in zip(sess.get_inputs(), ins)}
            peers.append(checked(f"ORT run ({t}t)", lambda s=sess, f=feed: s.run(None, f), ref,
                                 lambda s=sess, f=feed: timed(lambda: s.run(None, f))))
        # IOBinding on the single-thread session (the faster setting for graphs this small)
        sess = C.ort_session(onnx_path, 1)
        in_names = [i.name for i in sess.get_inputs()]
        out_names = [o.name for o in sess.get_outputs()]
        first = sess.run(None, dict(zip(in_names, ins)))
        out_arrays = [np.empty_like(a) for a in first]

        def binding():
            io = sess.io_binding()
            for n_, a in zip(out_names, out_arrays):
                io.bind_output(n_, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
            return io

        io1 = binding()

        def rebind_call():
            for n_, a in zip(in_names, ins):
                io1.bind_cpu_input(n_, a)
            sess.run_with_iobinding(io1)
            return out_arrays

        io2 = binding()
        for n_, a in zip(in_names, ins):
            io2.bind_cpu_input(n_, a)

        def bound_call():
            sess.run_with_iobinding(io2)
            return out_arrays

        peers.append(checked("ORT IOBinding (1t)", rebind_call, ref, lambda: timed(rebind_call)))
        bound = checked("ORT IOBinding all bound (1t)", bound_call, ref, lambda: timed(bound_call))
        bound.full_call = False  # takes no new inputs: a lower bound, not a comparable call
        peers.append(bound)
    return peers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2,
                    help="pterun.set_num_threads, ORT intra-op threads, torch and ExecuTorch threadpool (default 2)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeat", type=int, default=100, help="timed rounds (default 100)")
    ap.add_argument("--batch-ms", type=float, default=5.0, help="target time of one batch (default 5 ms)")
    ap.add_argument("--enr-python", default=None,
                    help="Python that has executorch-numpy-runtime (default build/bench-enr-venv/bin/python; '' to skip)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    pterun = C.import_pterun()
    torch = C.optional_torch()

    N = args.threads
    pterun.set_num_threads(N)
    if torch is not None:
        torch.set_num_threads(N)
    et_threads = C.et_set_threads(N)
    enr, enr_note = C.start_enr(args.enr_python)
    for line in C.environment_lines(enr, enr_note):
        print("# " + line)
    print(f"# threads: pterun {pterun.get_num_threads()}, torch {torch.get_num_threads() if torch else '-'}, "
          f"ExecuTorch threadpool {et_threads}; {args.repeat} rounds, ~{args.batch_ms:g} ms batches")

    models = [m for m in args.models.split(",") if m]
    tmp = tempfile.TemporaryDirectory(prefix="pterun-bench-")
    results: dict[str, list[C.Peer]] = {}
    for name in models:
        log(f"== {name}")
        peers = variants(name, pterun, enr, enr_note, N, Path(tmp.name))
        for p in peers:
            log(f"  {p.name:30s} {p.status:14s} {p.detail[:200]}")
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1000, max_n=200_000, min_n=10)
        results[name] = peers
    if enr is not None:
        enr.close()

    labels: list[str] = []
    for peers in results.values():
        for p in peers:
            if p.name not in labels:
                labels.append(p.name)
    headers = ["variant"]
    for m in results:
        headers += [f"{m} µs", f"{m} ratio"]

    def table(stat) -> list[list[str]]:
        rows = []
        for lab in labels:
            cells = [lab]
            for m, peers in results.items():
                base = peers[0]
                p = next((q for q in peers if q.name == lab), None)
                if p is None:
                    cells += ["-", "-"]
                elif not p.ok:
                    cells += [p.status, "-"]
                else:
                    cells += [C.fmt_us(stat(p)), C.fmt_ratio(stat(p), stat(base)) if base.ok else "-"]
            rows.append(cells)
        return rows

    print()
    print(f"Median per-call time (µs), threads={N}; ratio = variant / pterun Method.__call__ (>1: pterun faster)")
    C.print_table(headers, table(C.Peer.median_ns), args.markdown)
    print()
    print("Best batch (minimum over rounds of the per-call mean, µs): less sensitive to other jobs on the machine")
    C.print_table(headers, table(C.Peer.min_ns), args.markdown)

    print()
    print("Spread over rounds: 25th-75th percentile of the per-batch means (µs per call); calls per batch:")
    srows = []
    for lab in labels:
        cells = [lab]
        for m, peers in results.items():
            p = next((q for q in peers if q.name == lab), None)
            if p is None or not p.ok:
                cells.append("-")
            else:
                lo, hi = p.spread()
                cells.append(f"{C.fmt_us(lo)}-{C.fmt_us(hi)} ({p.n}/batch)")
        srows.append(cells)
    C.print_table(["variant"] + list(results), srows, args.markdown)

    print()
    for m, peers in results.items():
        base = peers[0]
        others = [p for p in peers if p.ok and not p.name.startswith("pterun")
                  and getattr(p, "full_call", True)]
        if not others:
            continue
        best = min(others, key=lambda p: p.median_ns())
        line = f"{m}: fastest peer (full call, new inputs) {best.name} {C.fmt_us(best.median_ns())} µs"
        if base.ok:
            speedup = best.median_ns() / base.median_ns()
            line += (f"; pterun {C.fmt_us(base.median_ns())} µs = "
                     + (f"{speedup:.2f}x faster" if speedup >= 1 else f"{1 / speedup:.2f}x slower"))
            if m == "add":
                us = base.median_ns() / 1000
                line += (f"; goal (< {GOAL_US:g} µs and >= {GOAL_X:g}x): "
                         f"{'met' if us < GOAL_US and speedup >= GOAL_X else 'NOT met'}"
                         f" ({'<' if us < GOAL_US else '>='} {GOAL_US:g} µs, {speedup:.2f}x)")
        else:
            line += f"; pterun: {base.status}"
        print(line)

    notes = [f"{m} / {p.name}: {p.status}: {p.detail[:400]}"
             for m, peers in results.items() for p in peers if not p.ok and p.status != "n/a"]
    if notes:
        print()
        print("Not timed:")
        for n in notes:
            print("  - " + n)
    print()
    print("# load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
