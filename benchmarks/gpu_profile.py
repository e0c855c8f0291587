"""Where a configuration of benchmarks/gpu_scale.py spends its GPU time:
the kernels of one call of pterun (kernel by kernel, cuda_graphs=False, so
each launch is traced) beside torch eager's (the kernels its CUDA graph
replays), from torch.profiler, as a table per side: kernel, launches a
call, µs a call, share. On the GPU machine, with build/gpu-scale/ carried:

    PYTHONPATH=build/gpu/python_pkg python3 benchmarks/gpu_profile.py \\
        --configs gpt_b32_t512_bf16,llama_block_b32_t512_f32 [--calls 20] [--top 25]

Kernel names are shortened to their first 90 characters; launches that
share a shortened name are summed. The sums are GPU time, not a call's
wall time (gaps between kernels are not counted).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _gpu_scale_models as S  # noqa: E402
import gpu_scale as G  # noqa: E402


def kernel_table(torch, call, calls: int) -> dict[str, list[float]]:
    """{kernel name: [launches, µs]} summed over `calls` calls of `call`."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for ev in prof.events():
        if ev.device_type != torch.autograd.DeviceType.CUDA:
            continue
        rows[ev.name[:90]][0] += 1
        us = getattr(ev, "device_time_total", None)
        rows[ev.name[:90]][1] += us if us is not None else ev.cuda_time_total
    return rows


def print_table(title: str, rows: dict[str, list[float]], calls: int, top: int) -> None:
    total = sum(r[1] for r in rows.values()) / calls
    launches = sum(r[0] for r in rows.values()) / calls
    print(f"\n{title}: {total:.1f} µs of kernels a call, {launches:.0f} launches a call")
    print(f"{'µs/call':>9} {'n/call':>7} {'share':>6}  kernel")
    for name, (n, us) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{us / calls:9.2f} {n / calls:7.1f} {100 * us / calls / max(total, 1e-9):5.1f}%  {name}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True, help="comma-separated substrings of config names")
    ap.add_argument("--dir", type=Path, default=S.REPO / "build" / "gpu-scale")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    import pterun
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for cfg in S.select(args.configs):
        if not (args.dir / f"{cfg.name}.pte").exists():
            print(f"{cfg.name}: no program in {args.dir}")
            continue
        case = G.load_case(cfg, args.dir)
        module = S.build_module(cfg).to(cfg.torch_dtype)
        module.load_state_dict(case.weights)
        module = module.to("cuda").eval()
        x = case.x.to("cuda")
        method = pterun.load_program(str(case.pte)).load_method("forward", device="cuda:0",
                                                                cuda_graphs=False)
        print(f"\n## {cfg.name}")
        with torch.inference_mode():
            print_table("pterun (no CUDA graph)", kernel_table(torch, lambda: method([x])[0], args.calls),
                        args.calls, args.top)
            print_table("torch eager", kernel_table(torch, lambda: module(x), args.calls), args.calls,
                        args.top)
        del method, module, x
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
