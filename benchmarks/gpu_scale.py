"""The larger GPU benchmark (issue 19, item 4): pterun beside torch eager,
torch replaying a CUDA graph and torch.compile, on the gpt and llama_block
networks at batch 1, 8 and 32 and sequence 128 and 512 and on the
MobileNet-like and ResNet-like CNNs at batch 1 and 32 on 224x224 images,
each in float32 and bfloat16 (_gpu_scale_models.py lists them).

The programs and data come from gpu_scale_export.py (build/gpu-scale/,
made on a machine with ExecuTorch and carried over). For each
configuration the torch module is rebuilt from tests/fixtures/models.py,
given the weights stored in NAME.npz and moved to the device in the
config's dtype. The input is on the device before timing and every output
stays there; each call is complete before the next starts (pterun's call
waits for the device itself; torch's calls are followed by
torch.cuda.synchronize()). The peers:

- pterun: NAME.pte loaded with load_method("forward", device="cuda"),
  CUDA graphs on (the default), called with the torch CUDA tensor;
- torch eager;
- torch CUDA graph: the eager forward captured once with
  torch.cuda.CUDAGraph and replayed;
- torch.compile (default mode): compiled when its configuration comes up,
  timed as eager is. Failures become a note, never an exit. Compiling takes
  tens of seconds per configuration: --no-compile skips it,
  --compile-only SUBSTRING limits it, and once --compile-budget seconds
  have gone into compiling, later configurations skip it.

Before timing, every peer's output is checked against NAME.npz's expected
output (torch eager on the CPU, in the config's dtype, for the stored batch
rows) and, in full, against torch eager on the device. The check passes
where |got - expected| <= tol * |expected| + tol * max|expected|, with
tol = 1e-3 for float32 (5e-3 with --tf32) and 3e-2 for bfloat16; a peer
that fails is reported as "wrong result" and not timed. By default
float32 runs without TF32 on both sides (torch.backends.cuda.matmul and
cudnn allow_tf32 off, pterun allow_tf32=False); --tf32 turns it on for
both.

Rounds are interleaved and shuffled (_common.run_interleaved); the table
gives the median per call and the ratio of the fastest torch variant to
pterun (above 1: pterun is faster); notes below it give each failure and
each compile time. The exit status is 1 when pterun, torch eager or the
CUDA graph gave an error or a wrong result. On the GPU machine, with
pterun built into build/gpu (as for benchmarks/gpu.py) and build/gpu-scale/
carried over:

    PYTHONPATH=build/gpu/python_pkg python3 benchmarks/gpu_scale.py --markdown

--device cpu runs the same checks (and timings, without the CUDA graph
peer) with pterun's CPU backend, e.g. with a CPU build:

    PYTHONPATH=build/dev-py/python_pkg /work/venvs/export/bin/python \\
        benchmarks/gpu_scale.py --device cpu --configs _b1_t128 --check-only
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import _gpu_scale_models as S  # noqa: E402

PEERS = ["pterun", "torch eager", "torch CUDA graph", "torch.compile"]
TORCH_PEERS = PEERS[1:]


@dataclass
class Case:
    """One configuration's data from NAME.npz."""

    cfg: S.Config
    pte: Path
    weights: dict
    x: object  # CPU torch tensor
    expected: np.ndarray  # float32, the rows in `rows`
    rows: list[int]


@dataclass
class Outcome:
    """What one configuration gave, per peer name (the peers themselves,
    which hold the device memory, are dropped once timed)."""

    cfg: S.Config
    status: dict[str, str] = field(default_factory=dict)  # "ok", "wrong result", "error", "skipped"
    median_ns: dict[str, float] = field(default_factory=dict)
    diffs: dict[str, float] = field(default_factory=dict)  # max |diff| / max |expected|
    notes: list[str] = field(default_factory=list)


def load_case(cfg: S.Config, folder: Path) -> Case:
    with np.load(folder / f"{cfg.name}.npz") as d:
        meta = json.loads(str(d["meta"]))
        bf16 = set(meta["bf16_bits"])
        weights = {k[2:]: S.from_numpy(d[k], k in bf16) for k in d.files if k.startswith("w.")}
        expected = S.from_numpy(d["expected"], "expected" in bf16).float().numpy()
        return Case(cfg, folder / f"{cfg.name}.pte", weights, S.input_tensor(d, cfg), expected,
                    d["expected_rows"].tolist())


def tolerance(cfg: S.Config, tf32: bool) -> float:
    if cfg.dtype == "bf16":
        return 3e-2
    return 5e-3 if tf32 else 1e-3


def check(out, case: Case, tol: float, reference=None) -> tuple[str, float]:
    """('', largest difference from the expected rows over max|expected|)
    when `out` (a torch tensor or pterun.Tensor) matches the expected rows
    and, given a `reference` torch tensor, all of it; else (the problem, nan)."""
    import torch

    got = torch.from_dlpack(out) if not isinstance(out, torch.Tensor) else out
    got = got.float().cpu().numpy()
    scale = max(float(np.abs(case.expected).max()), 1e-6)
    if got.shape[0] != case.cfg.batch:
        return f"output shape {got.shape}, batch {case.cfg.batch} expected", math.nan
    ok, diff, why = C.compare([got[case.rows]], [case.expected], rtol=tol, atol=tol * scale)
    if not ok:
        return f"vs torch eager on the CPU: {why} (scale {scale:.3g})", math.nan
    if reference is not None:
        ref = reference.float().cpu().numpy()
        ok, _, why = C.compare([got], [ref], rtol=tol, atol=tol * scale)
        if not ok:
            return f"vs torch eager on the device: {why} (scale {scale:.3g})", math.nan
    return "", diff / scale


def timed(call, sync):
    """A Peer batch function: n calls of `call`, each followed by `sync`;
    each result is kept until the next call returns."""

    def batch(n: int) -> int:
        out = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            out = call()
            sync()
        elapsed = time.perf_counter_ns() - t0
        del out
        return elapsed

    return batch


def failed(name: str, status: str, detail: str) -> C.Peer:
    return C.Peer(name, None, status, detail[:300])


def checked(name, out, case: Case, tol: float, reference, batch, diffs: dict, detail: str = "") -> C.Peer:
    """A peer timed by `batch` when its first output `out` passes check();
    its relative difference goes into `diffs`."""
    why, rel = check(out, case, tol, reference)
    if why:
        return failed(name, "wrong result", why)
    diffs[name] = rel
    return C.Peer(name, batch, detail=detail)


def pterun_peer(pterun, case: Case, x, device: str, tol: float, reference, tf32: bool, diffs) -> C.Peer:
    try:
        method = pterun.load_program(str(case.pte)).load_method("forward", device=device,
                                                                allow_tf32=tf32)
        out = method([x])[0]
    except Exception as exc:  # noqa: BLE001
        return failed("pterun", "error", f"{type(exc).__name__}: {exc}")
    # pterun's call has waited for the device: nothing to synchronise.
    return checked("pterun", out, case, tol, reference, timed(lambda: method([x])[0], lambda: None), diffs)


def eager_peer(torch, module, x, case: Case, tol: float, sync, diffs):
    """(peer, its output on the device; None when it failed)."""
    try:
        y = module(x)
        sync()
    except Exception as exc:  # noqa: BLE001
        return failed("torch eager", "error", f"{type(exc).__name__}: {exc}"), None
    peer = checked("torch eager", y, case, tol, None, timed(lambda: module(x), sync), diffs)
    return peer, (y if peer.ok else None)


def graph_peer(torch, module, x, case: Case, tol: float, reference, diffs) -> C.Peer:
    name = "torch CUDA graph"
    try:
        static_x = x.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                module(static_x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = module(static_x)
        graph.replay()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        return failed(name, "error", f"{type(exc).__name__}: {exc}")

    def replay():
        # The graph reads static_x and writes static_out: both must stay alive.
        graph.replay()
        return static_x, static_out

    return checked(name, static_out, case, tol, reference, timed(replay, torch.cuda.synchronize), diffs)


def compile_peer(torch, module, x, case: Case, tol: float, reference, sync, diffs) -> tuple[C.Peer, float]:
    """(peer, seconds spent compiling)."""
    name = "torch.compile"
    torch._dynamo.reset()  # a fresh cache: the recompile limit would otherwise fall back to eager
    t0 = time.perf_counter()
    try:
        compiled = torch.compile(module)
        y = compiled(x)
        sync()
    except Exception as exc:  # noqa: BLE001
        first_line = (str(exc).splitlines() or [""])[0]
        return failed(name, "error", f"{type(exc).__name__}: {first_line}"), time.perf_counter() - t0
    took = time.perf_counter() - t0
    peer = checked(name, y, case, tol, reference, timed(lambda: compiled(x), sync), diffs,
                   detail=f"compiled in {took:.0f} s")
    return peer, took


class CompileBudget:
    def __init__(self, enabled: bool, only: str, budget_s: float) -> None:
        self.enabled, self.only, self.left = enabled, [s for s in only.split(",") if s], budget_s

    def skip_reason(self, cfg: S.Config) -> str:
        if not self.enabled:
            return "skipped (--no-compile)"
        if self.only and not any(s in cfg.name for s in self.only):
            return "skipped (--compile-only)"
        if self.left <= 0:
            return "skipped (--compile-budget spent)"
        return ""


def run_config(pterun, torch, case: Case, args, budget: CompileBudget) -> Outcome:
    cfg = case.cfg
    outcome = Outcome(cfg)
    cuda = args.device == "cuda"
    device = "cuda:0" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    tol = tolerance(cfg, args.tf32)

    module = S.build_module(cfg).to(cfg.torch_dtype)
    module.load_state_dict(case.weights)
    module = module.to(device).eval()
    x = case.x.to(device)

    diffs = outcome.diffs
    eager, reference = eager_peer(torch, module, x, case, tol, sync, diffs)
    peers = [pterun_peer(pterun, case, x, device, tol, reference, args.tf32, diffs), eager]
    if cuda:
        peers.append(graph_peer(torch, module, x, case, tol, reference, diffs))
    skip = budget.skip_reason(cfg)
    if skip:
        peers.append(failed("torch.compile", "skipped", skip))
    else:
        peer, took = compile_peer(torch, module, x, case, tol, reference, sync, diffs)
        budget.left -= took
        peers.append(peer)

    if not args.check_only:
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1e3, max_n=100000)
    for p in peers:
        outcome.status[p.name] = "ok" if p.ok else p.status
        outcome.median_ns[p.name] = p.median_ns()
        if p.status != "skipped" and p.detail:
            outcome.notes.append(f"{cfg.name} / {p.name}: {p.status}: {p.detail}")
    del peers, eager, reference, module, x
    torch._dynamo.reset()
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return outcome


def table_row(o: Outcome, check_only: bool) -> list[str]:
    cells = [o.cfg.name]
    for name in PEERS:
        status = o.status.get(name, "-")
        if status != "ok":
            cells.append(status)
        else:
            cells.append(f"ok {o.diffs[name]:.1e}" if check_only else C.fmt_us(o.median_ns[name]))
    if check_only:
        return cells
    timed_torch = [n for n in TORCH_PEERS if o.status.get(n) == "ok"]
    if o.status.get("pterun") != "ok" or not timed_torch:
        return cells + ["-", "-"]
    best = min(timed_torch, key=o.median_ns.__getitem__)
    return cells + [best.removeprefix("torch ").removeprefix("torch."),
                    C.fmt_ratio(o.median_ns[best], o.median_ns["pterun"])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="", help="comma-separated substrings of config names")
    ap.add_argument("--dir", type=Path, default=S.REPO / "build" / "gpu-scale",
                    help="where gpu_scale_export.py put the files")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-only", default="", help="compile only configs containing a substring")
    ap.add_argument("--compile-budget", type=float, default=900.0,
                    help="seconds of compiling after which later configs skip torch.compile")
    ap.add_argument("--tf32", action="store_true", help="float32 products in TF32, torch and pterun")
    ap.add_argument("--check-only", action="store_true", help="check outputs, time nothing")
    ap.add_argument("--repeat", type=int, default=30, help="timed rounds")
    ap.add_argument("--batch-ms", type=float, default=20.0, help="target time of one batch")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    pterun = C.import_pterun()
    import torch

    if args.device == "cuda":
        if not torch.cuda.is_available() or pterun.cuda_device_count() == 0:
            print("no CUDA device: nothing to measure (--device cpu runs on the CPU)")
            return 0
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        where = torch.cuda.get_device_name(0)
    else:
        where = f"CPU ({C.cpu_model()})"
    configs = S.select(args.configs)
    if not configs:
        ap.error(f"no config name contains {args.configs!r}")
    print(f"{where}; torch {torch.__version__}; pterun from {Path(pterun.__file__).parent} "
          f"(source tree {C.git_revision()}); TF32 {'on' if args.tf32 else 'off'}", flush=True)

    budget = CompileBudget(not args.no_compile, args.compile_only, args.compile_budget)
    outcomes, missing = [], []
    for cfg in configs:
        if not ((args.dir / f"{cfg.name}.pte").exists() and (args.dir / f"{cfg.name}.npz").exists()):
            missing.append(cfg.name)
            continue
        t0 = time.perf_counter()
        with torch.inference_mode():
            o = run_config(pterun, torch, load_case(cfg, args.dir), args, budget)
        outcomes.append(o)
        print(f"  {cfg.name}: {time.perf_counter() - t0:.0f} s; "
              + ", ".join(f"{n} {status}" + (f" ({o.diffs[n]:.1e})" if n in o.diffs else "")
                          for n, status in o.status.items()), flush=True)

    headers = ["config"] + [f"{n} {'check' if args.check_only else 'µs'}" for n in PEERS]
    if args.check_only:
        print("\ncheck: 'ok' and the largest |difference| from the expected rows over max |expected|")
    else:
        headers += ["fastest torch", "torch / pterun"]
        print("\nmedian per call (µs); torch / pterun: the fastest torch variant's time over "
              "pterun's (above 1: pterun is faster)")
    print()
    C.print_table(headers, [table_row(o, args.check_only) for o in outcomes], args.markdown)
    notes = [n for o in outcomes for n in o.notes]
    if missing:
        notes.append(f"missing from {args.dir} (run gpu_scale_export.py): {', '.join(missing)}")
    if notes:
        print("\nnotes:")
        for n in notes:
            print(f"- {n}")
    wrong = any(status in ("wrong result", "error") for o in outcomes for n, status in o.status.items()
                if n != "torch.compile")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
