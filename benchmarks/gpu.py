"""pterun on a GPU beside torch eager and torch CUDA-graph replay, in one run.

Two tables:

pterun runs each method as a CUDA graph once it has seen its tensors'
addresses repeat (the default); "no CUDA graph" rows run the same method
with cuda_graphs=False, kernel by kernel.

- models: forward of the `gpt`, `llama_block` and `cnn` fixtures (batch 1)
  with the input already on the GPU and the output left there; every call
  is complete before the next starts (pterun's call waits for the device
  once, B19; torch's is followed by torch.cuda.synchronize()). A second row
  per model gives the full host round trip: NumPy in, NumPy out.
- xnnpack: the XNNPACK-delegated fixtures (tests/fixtures/xnnpack/, --xnnpack)
  on the GPU: the delegated file beside its plain twin (the same weights
  exported without a partitioner: build/bench-xnnpack/, made by
  benchmarks/models.py or here when ExecuTorch is installed; carry that
  folder to a machine without it) and torch, device input and output.
- calls: per-call cost of `out = m([x])[0]` on `chain8` (Method and Module),
  `scale_256` and `scale_2048` with x a torch CUDA tensor (and, as the floor
  of pterun's own cost, a pterun.Tensor on the GPU), the loop of
  docs/python-api.md B18, beside torch doing the same work eagerly and replaying
  it as a CUDA graph.

Outputs are checked against the fixture's expected outputs (pterun and
torch, rtol = atol = 1e-4) before timing. Rounds are interleaved and
shuffled (benchmarks/_common.py); medians over rounds and ratios
(peer / pterun: above 1 means pterun is faster; NumPy round trips are
compared with pterun's NumPy round trip) are printed.

    PYTHONPATH=build/gpu/python_pkg python3 benchmarks/gpu.py [--markdown]

Needs torch with CUDA (the torch modules are tests/fixtures/models.py's).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

MODELS = ["gpt", "llama_block", "cnn"]
XNNPACK = ["mobilenet", "resnet", "transformer", "lstm", "mlp"]
CALLS = ["chain8", "scale_256", "scale_2048"]


def timed(call):
    """A Peer batch function: n calls of `call`, elapsed ns. Each result is
    kept until the next call returns, as in an `out = m([x])[0]` loop."""

    def batch(n: int) -> int:
        out = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            out = call()
        elapsed = time.perf_counter_ns() - t0
        del out
        return elapsed

    return batch


def check(label, got, expected):
    ok, diff, why = C.compare(got, expected, rtol=1e-4, atol=1e-4)
    if not ok:
        raise RuntimeError(f"{label}: outputs differ from the fixture's: {why}")


def torch_module(torch, name, xnnpack=False):
    """The fixture's torch module on the GPU (chain8/scale from models.py;
    `scale_*` are Scale at two sizes; `xnnpack`: an XNNPACK fixture's)."""
    models = C.fixture_models()
    if xnnpack:
        module = models.build_xnnpack(name)[0]
    else:
        module = models.Scale().eval() if name.startswith("scale_") else models.build(name)
    return module.to("cuda")


def torch_peers(torch, name, module, x_dev, expected):
    """torch eager and CUDA-graph peers over a device input."""
    with torch.inference_mode():
        got = module(x_dev)
    outs = got if isinstance(got, (tuple, list)) else [got]
    check(f"torch {name}", [t.cpu().numpy() for t in outs], expected)

    def eager():
        with torch.inference_mode():
            module(x_dev)
        torch.cuda.synchronize()

    static_x = x_dev.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.inference_mode():
        for _ in range(3):
            module(static_x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        static_out = module(static_x)

    def replay():
        # The graph reads static_x and writes static_out: both must stay
        # alive (torch would hand their memory to other tensors otherwise).
        graph.replay()
        torch.cuda.synchronize()
        return static_x, static_out

    return [C.Peer("torch eager", timed(eager)), C.Peer("torch CUDA graph", timed(replay))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--calls", default=",".join(CALLS))
    ap.add_argument("--xnnpack", default=",".join(XNNPACK), help="XNNPACK fixtures ('' to skip)")
    ap.add_argument("--repeat", type=int, default=30, help="timed rounds")
    ap.add_argument("--batch-ms", type=float, default=20.0, help="target time of one batch")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    pterun = C.import_pterun()
    import torch

    if not torch.cuda.is_available() or pterun.cuda_device_count() == 0:
        print("no CUDA device: nothing to measure")
        return 0
    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
          f"pterun from {Path(pterun.__file__).parent} (source tree {C.git_revision()})")
    tables = []

    rows = []
    for name in [n for n in args.xnnpack.split(",") if n]:
        ins, expected = C.xnnpack_io(name)
        x_pt = pterun.Tensor.from_host(ins[0], device="cuda:0")
        peers = []
        plain = C.plain_twin(name, log=print)
        files = [("pterun XNN", C.xnnpack_pte(name))] + ([("pterun plain", plain)] if plain else [])
        for label, path in files:
            program = pterun.load_program(str(path))
            for graphs in (True, False):
                m = program.load_method("forward", device="cuda:0", cuda_graphs=graphs)
                res = m([x_pt])
                check(f"{label} {name}", [r.to_host().numpy() for r in res], expected)
                del res
                peers.append(C.Peer(label + ("" if graphs else ", no CUDA graph"),
                                    timed(lambda m=m: m([x_pt])[0])))
        if plain is None:
            print(f"{name}: no plain twin (build/bench-xnnpack/; needs ExecuTorch to export)")
        module = torch_module(torch, name, xnnpack=True)
        peers += torch_peers(torch, name, module, torch.from_numpy(ins[0].copy()).to("cuda"),
                             expected)
        C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1e3, max_n=100000)
        base = peers[0]
        for p in peers:
            rows.append([name, p.name, C.fmt_us(p.median_ns()), C.fmt_us(p.min_ns()),
                         C.fmt_ratio(p.median_ns(), base.median_ns())])
    if rows:
        tables.append(("xnnpack (ratio to pterun XNN)", rows))

    for section, names in (("models", args.models), ("calls", args.calls)):
        rows = []
        for name in [n for n in names.split(",") if n]:
            ins, expected = C.fixture_io(name)
            x = ins[0]
            module = torch_module(torch, name)
            x_torch = torch.from_numpy(x.copy()).to("cuda")
            peers = []
            program = pterun.load_program(str(C.fixture_pte(name)))
            method = program.load_method("forward", device="cuda:0")
            no_graphs = program.load_method("forward", device="cuda:0", cuda_graphs=False)
            x_pt = pterun.Tensor.from_host(x, device="cuda:0")
            res = method([x_pt])
            check(f"pterun {name}", [r.to_host().numpy() for r in res], expected)
            del res
            if section == "models":
                peers.append(C.Peer("pterun Method", timed(lambda: method([x_pt])[0])))
                peers.append(C.Peer("pterun, no CUDA graph", timed(lambda: no_graphs([x_pt])[0])))
                peers += torch_peers(torch, name, module, x_torch, expected)

                def host_pterun():
                    return method([x])[0].numpy()

                def host_torch():
                    with torch.inference_mode():
                        out = module(torch.from_numpy(x).to("cuda"))
                    return out.cpu().numpy()

                peers.append(C.Peer("pterun NumPy in/out", timed(host_pterun)))
                peers.append(C.Peer("torch NumPy in/out", timed(host_torch)))
            else:
                module_pt = pterun.Module(str(C.fixture_pte(name)), device="cuda:0")
                peers.append(C.Peer("pterun Method", timed(lambda: method([x_torch])[0])))
                peers.append(C.Peer("pterun Method, pterun.Tensor in",
                                    timed(lambda: method([x_pt])[0])))
                peers.append(C.Peer("pterun, no CUDA graph",
                                    timed(lambda: no_graphs([x_torch])[0])))
                if name == "chain8":
                    peers.append(C.Peer("pterun Module", timed(lambda: module_pt.forward([x_torch])[0])))
                peers += torch_peers(torch, name, module, x_torch, expected)
            C.run_interleaved(peers, args.repeat, target_s=args.batch_ms / 1e3, max_n=100000)
            by_name = {p.name: p for p in peers}
            for p in peers:
                # torch's NumPy round trip against pterun's, the rest against
                # pterun's Method with a device input.
                base = by_name["pterun NumPy in/out" if "NumPy" in p.name else "pterun Method"]
                rows.append([name, p.name, C.fmt_us(p.median_ns()), C.fmt_us(p.min_ns()),
                             C.fmt_ratio(p.median_ns(), base.median_ns())])
        tables.append((section, rows))

    for section, rows in tables:
        print(f"\n{section}: median per call (µs), best round (µs), ratio to pterun")
        C.print_table(["model", "runtime", "median µs", "best µs", "ratio"], rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
