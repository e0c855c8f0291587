"""models.py's `networks` suite: the MobileNet-like and ResNet-like CNNs at
two input sizes, the transformer encoder, the MLP and the LSTM, beside
ExecuTorch + XNNPACK and ONNX Runtime, at each thread count in one run.

Files come from export_models.py (exported on first use into
build/bench-models/, never committed): pterun runs NAME.pte (no delegate),
ExecuTorch 1.5.1 runs NAME.xnnpack.pte (the same exported program lowered
with XnnpackPartitioner), ONNX Runtime runs NAME.onnx (the same module and
weights). Every runtime's output is checked against torch eager before
timing. For each thread count the runtimes are set up afresh (ExecuTorch's
delegates keep the threadpool they were loaded with), then timed in
shuffled interleaved rounds (_common.run_interleaved: a warm batch before
each timed one, the process idle after it); the figure is the median per
call.
"""

from __future__ import annotations

import os
import time

import numpy as np

import _common as C
import export_models as X

RTOL, ATOL = 1e-3, 1e-4  # folded batch norms and other kernel orders round differently


def pterun_peer(pterun, paths, x, ref) -> C.Peer:
    try:
        m = pterun.load_program(str(paths["pte"])).load_method("forward")
        out = m([x])[0].numpy()
    except Exception as exc:  # noqa: BLE001
        return C.Peer("pterun", None, "error", f"{type(exc).__name__}: {exc}"[:300])
    ok, diff, why = C.compare([out], [ref], RTOL, ATOL)
    if not ok:
        return C.Peer("pterun", None, "wrong result", f"vs torch eager: {why}")

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            m([x])[0].numpy()
        return time.perf_counter_ns() - t0

    return C.Peer("pterun", batch, detail=f"max |diff| vs torch {diff:.2g}")


def xnnpack_peer(paths, x, ref) -> C.Peer:
    try:
        import torch
        from executorch.runtime import Runtime

        m = Runtime.get().load_program(str(paths["xnnpack"])).load_method("forward")
        tx = torch.from_numpy(x)
        out = m.execute([tx])[0].numpy()
    except Exception as exc:  # noqa: BLE001
        return C.Peer("XNNPACK", None, "error", f"{type(exc).__name__}: {exc}"[:300])
    ok, diff, why = C.compare([out], [ref], RTOL, ATOL)
    if not ok:
        return C.Peer("XNNPACK", None, "wrong result", f"vs torch eager: {why}")

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            m.execute([tx])[0].numpy()
        return time.perf_counter_ns() - t0

    return C.Peer("XNNPACK", batch, detail=f"max |diff| vs torch {diff:.2g}")


def ort_peer(paths, threads, x, ref) -> C.Peer:
    try:
        sess = C.ort_session(paths["onnx"], threads)
        feed = {sess.get_inputs()[0].name: x}
        out = sess.run(None, feed)[0]
    except Exception as exc:  # noqa: BLE001
        return C.Peer("ORT", None, "error", f"{type(exc).__name__}: {exc}"[:300])
    ok, diff, why = C.compare([out], [ref], RTOL, ATOL)
    if not ok:
        return C.Peer("ORT", None, "wrong result", f"vs torch eager: {why}")

    def batch(n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            sess.run(None, feed)
        return time.perf_counter_ns() - t0

    return C.Peer("ORT", batch, detail=f"max |diff| vs torch {diff:.2g}")


def run(args, log) -> int:
    pterun = C.import_pterun()
    names = [n for n in args.models.split(",") if n] if args.models else list(X.NETWORKS)
    unknown = [n for n in names if n not in X.NETWORKS]
    if unknown:
        raise SystemExit(f"unknown networks {unknown}; known: {list(X.NETWORKS)}")
    files = X.ensure(names, log=log)
    threads = [int(t) for t in str(args.threads).split(",")]
    for line in C.environment_lines(None, "not used in this suite")[:3]:
        print("# " + line)
    print(f"# threads {threads}; {args.repeat} rounds, ~{args.batch_ms:g} ms batches; "
          "pterun: no delegate; XNNPACK: ExecuTorch 1.5.1 with the XNNPACK delegate")

    results: dict[tuple[str, int], list[C.Peer]] = {}
    for t in threads:
        pterun.set_num_threads(t)
        et = C.et_set_threads(t)
        log(f"== {t} thread(s) (ExecuTorch threadpool {et})")
        for name in names:
            with np.load(files[name]["npz"]) as d:
                x, ref = np.ascontiguousarray(d["in0"]), d["out0"]
            peers = [pterun_peer(pterun, files[name], x, ref), xnnpack_peer(files[name], x, ref),
                     ort_peer(files[name], t, x, ref)]
            for p in peers:
                log(f"  {name:14s} {p.name:8s} {p.status:12s} {p.detail[:200]}")
            C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1000, max_n=100_000)
            results[(name, t)] = peers

    print()
    print("Median per call (µs); ratio = peer / pterun (> 1: pterun faster)")
    headers = ["model"]
    for t in threads:
        headers += [f"pterun {t}t", f"XNNPACK {t}t", f"ORT {t}t", f"XNNPACK/pterun {t}t",
                    f"ORT/pterun {t}t"]
    if len(threads) > 1:
        headers.append(f"pterun {threads[0]}t/{threads[-1]}t")

    def rows(stat):
        out = []
        for name in names:
            cells = [name]
            for t in threads:
                pt, xn, ort = results[(name, t)]
                for p in (pt, xn, ort):
                    cells.append(C.fmt_us(stat(p)) if p.ok else p.status)
                for p in (xn, ort):
                    cells.append(C.fmt_ratio(stat(p), stat(pt)) if p.ok and pt.ok else "-")
            if len(threads) > 1:
                a, b = results[(name, threads[0])][0], results[(name, threads[-1])][0]
                cells.append(C.fmt_ratio(stat(a), stat(b)) if a.ok and b.ok else "-")
            out.append(cells)
        return out

    C.print_table(headers, rows(C.Peer.median_ns), args.markdown)
    print()
    print("Best batch (µs per call)")
    C.print_table(headers, rows(C.Peer.min_ns), args.markdown)
    notes = [f"{name} {t}t / {p.name}: {p.status}: {p.detail[:300]}"
             for (name, t), peers in results.items() for p in peers if not p.ok]
    if notes:
        print()
        print("Not timed:")
        for n in notes:
            print("  - " + n)
    print()
    print("# load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0
