"""Text generation speed: prefill tokens/s for a PROMPT-token prompt and
decode tokens/s for NEW new tokens, greedy, on a llama with random weights
exported by ExecuTorch's own exporter, pterun beside its peers in one run.

    python benchmarks/llm.py                      # CPU: 1 and 2 threads
    python benchmarks/llm.py --model gpu --device cuda   # the H200

Peers (all in worker processes: benchmarks/_llm_worker.py, so this process
imports neither torch nor ExecuTorch):
  - CPU: ExecuTorch's runtime (executorch.runtime, the pip wheel: its
    optimized and custom LLM kernels) on the portable export
    (`-kv --use_sdpa_with_kv_cache`), the XNNPACK export (`-X`) and the
    XNNPACK 8da4w export (`-X -qmode 8da4w --group_size 32`: dynamically
    quantized 8-bit activations, 4-bit weights) of the same weights, each
    beside pterun on the same file, at the same thread count (ExecuTorch's
    threadpool and torch's both set to it);
  - CUDA: the same llama in torch eager with a static KV cache, and torch
    with each decode step replayed as a CUDA graph; pterun runs the bfloat16
    export and the 8da4w export of the same weights (its XNNPACK payload
    lowered to pterun's own CUDA kernels), and says how much faster 4-bit
    decode is than bfloat16.
Each runtime drives the method the same way: one prefill call on the
prompt, then one call per new token with input_pos, the next token the
argmax of the logits (so every step ends with the logits on the host).
Runtimes take turns in shuffled order for --rounds rounds; the table shows
medians over rounds (decode: the median step of each round). Tokens are
compared: every runtime must generate what pterun generates (greedy
decoding of the same weights; random weights keep margins small, so a
float16/bfloat16 run may part ways after a near-tie, which is reported).

Models (--model): `cpu` dim 1024, 12 layers, 16 heads (4 key/value
heads), hidden 2048, vocab 16384: 140M parameters, 562 MB in float32, far
beyond any cache, so decode is bound by memory bandwidth; `gpu` dim 512, 4
layers, vocab 4096: 16.8M parameters, 34 MB in bfloat16. Exports are cached
in build/bench-llm/MODEL/ (--cache); the GPU host has no exporter: export
here and carry the .pte files there (build/bench-llm/gpu/*.pte, 51 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "_llm_worker.py"
EXPORT_PYTHON = "/work/venvs/export/bin/python"

MODELS = {
    "cpu": {
        "params": {"dim": 1024, "n_layers": 12, "n_heads": 16, "n_kv_heads": 4,
                   "vocab_size": 16384, "hidden_dim": 2048, "multiple_of": 256,
                   "norm_eps": 1e-5, "rope_theta": 10000.0},
        "context": 512, "max_seq_len": 256,
        "variants": {
            "portable_fp32": ["-d", "fp32", "-kv", "--use_sdpa_with_kv_cache"],
            "xnnpack_fp32": ["-d", "fp32", "-kv", "--use_sdpa_with_kv_cache", "-X"],
            "xnnpack_8da4w": ["-d", "fp32", "-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode",
                              "8da4w", "--group_size", "32"],
        },
    },
    "gpu": {
        "params": {"dim": 512, "n_layers": 4, "n_heads": 8, "n_kv_heads": 4, "vocab_size": 4096,
                   "hidden_dim": 1536, "multiple_of": 256, "norm_eps": 1e-5,
                   "rope_theta": 10000.0},
        "context": 512, "max_seq_len": 256,
        "variants": {
            "portable_bf16": ["-d", "bf16", "-kv", "--use_sdpa_with_kv_cache"],
            # The same weights in 4 bits (XNNPACK's 8da4w), run by pterun on the GPU.
            "xnnpack_8da4w": ["-d", "fp32", "-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode",
                              "8da4w", "--group_size", "32"],
        },
    },
}


class Worker:
    def __init__(self, python: str):
        self.proc = subprocess.Popen([python, str(WORKER), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error"))
        return answer

    def close(self):
        try:
            self.ask(op="quit")
        except Exception:  # noqa: BLE001
            pass
        self.proc.wait(timeout=30)


class PterunRunner:
    def __init__(self, pte: Path, device: str, threads: int):
        import pterun

        self.pterun = pterun
        self.threads = threads
        self.method = pterun.load_program(str(pte)).load_method("forward", device=device)

    def argmax(self, out):
        t = out.to_host() if out.device != "cpu" else out
        if t.dtype_name == "bfloat16":
            bits = np.asarray(self.pterun.Tensor.from_host(t, "cpu", dtype="uint16").numpy())
            return int(np.argmax((bits.astype(np.uint32) << 16).view(np.float32)))
        return int(np.argmax(np.asarray(t.numpy())))

    def generate(self, prompt, new):
        self.pterun.set_num_threads(self.threads)
        m = self.method
        t0 = time.perf_counter()
        token = self.argmax(m([np.array([prompt], np.int64), np.array([0], np.int64)])[0])
        prefill = time.perf_counter() - t0
        tokens, steps, pos = [token], [], len(prompt)
        for _ in range(new - 1):
            t0 = time.perf_counter()
            out = m([np.array([[token]], np.int64), np.array([pos], np.int64)])[0]
            token = self.argmax(out)
            steps.append(time.perf_counter() - t0)
            tokens.append(token)
            pos += 1
        return prefill, statistics.median(steps), tokens


class WorkerRunner:
    def __init__(self, worker: Worker, key: str, **load):
        self.worker, self.key = worker, key
        worker.ask(op="load", key=key, **load)

    def generate(self, prompt, new):
        r = self.worker.ask(op="generate", key=self.key, prompt=prompt, new=new)
        return r["prefill_s"], r["decode_s"], r["tokens"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="cpu")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU peers")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default=str(REPO / "build" / "bench-llm"))
    ap.add_argument("--export-python", default=EXPORT_PYTHON,
                    help="Python with torch + executorch (exports, ExecuTorch runtime)")
    ap.add_argument("--torch-python", default=None,
                    help="Python with CUDA torch for the GPU peers (default: this one)")
    ap.add_argument("--skip", nargs="*", default=[], help="runtimes to leave out")
    args = ap.parse_args()

    cfg = MODELS[args.model]
    folder = Path(args.cache) / args.model
    folder.mkdir(parents=True, exist_ok=True)
    cfg_path = folder / "config.json"
    cfg_path.write_text(json.dumps(cfg))
    if not all((folder / f"{v}.pte").exists() for v in cfg["variants"]):
        # The GPU host has no exporter: export here and carry build/bench-llm/gpu there.
        subprocess.run([args.export_python, str(WORKER), "export", str(cfg_path), str(folder)],
                       check=True)
    load_start = os.getloadavg()[0]
    rng = random.Random(0)
    prompt = [rng.randrange(1, cfg["params"]["vocab_size"]) for _ in range(args.prompt)]
    params = cfg["params"]

    runners: dict[str, object] = {}
    workers: list[Worker] = []
    if args.device == "cpu":
        for t in args.threads:
            for variant in cfg["variants"]:
                name = f"pterun {variant} {t}t"
                if name not in args.skip:
                    runners[name] = PterunRunner(folder / f"{variant}.pte", "cpu", t)
                name = f"ExecuTorch {variant} {t}t"
                if name in args.skip:
                    continue
                w = Worker(args.export_python)
                workers.append(w)
                runners[name] = WorkerRunner(w, name, kind="executorch",
                                             pte=str(folder / f"{variant}.pte"), threads=t)
    else:
        for variant in cfg["variants"]:
            runners[f"pterun {variant}"] = PterunRunner(folder / f"{variant}.pte", args.device, 1)
        torch_python = args.torch_python or sys.executable
        for dtype in ("bf16",):
            for graphs in (False, True):
                name = f"torch {'graph' if graphs else 'eager'} {dtype}"
                if name in args.skip:
                    continue
                w = Worker(torch_python)
                workers.append(w)
                runners[name] = WorkerRunner(w, name, kind="torch", config=str(cfg_path),
                                             device=args.device, dtype=dtype, graphs=graphs)

    results: dict[str, list[tuple[float, float]]] = {k: [] for k in runners}
    tokens: dict[str, list[int]] = {}
    order = list(runners)
    for _ in range(args.rounds + 1):  # the first round warms up
        rng.shuffle(order)
        for name in order:
            prefill, decode, toks = runners[name].generate(prompt, args.new)
            results[name].append((prefill, decode))
            tokens[name] = toks
    for w in workers:
        w.close()

    # Bytes per weight as pterun reads them; 8da4w: 4 bits, and a float32
    # scale per group of 32 (the file's bfloat16 scales widened at load).
    weights_bytes = {"fp32": 4, "bf16": 2, "8da4w": 0.5 + 4 / 32}
    # Weights read per token: every layer's matrices and the output layer
    # (of the embedding, one row).
    d, kv_dim = params["dim"], params["dim"] // params["n_heads"] * params["n_kv_heads"]
    n_params = params["vocab_size"] * d + params["n_layers"] * (
        2 * d * d + 2 * d * kv_dim + 3 * d * params["hidden_dim"])
    print(f"model {args.model}: {n_params / 1e6:.1f}M weights read per token, prompt {args.prompt}, "
          f"{args.new} new tokens, {args.rounds} rounds; load average "
          f"{load_start:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| runtime | prefill tok/s | decode tok/s | decode ms/token | decode vs pterun | "
          "same tokens as pterun |")
    print("|---|---:|---:|---:|---:|---|")

    def group(name):
        """What a runtime is compared with: on the CPU pterun on the same file
        and threads; on a GPU pterun in the same dtype."""
        if args.device == "cpu":
            return " ".join(name.split()[1:])
        return name.split()[-1].split("_")[-1]

    def decode(name):
        return statistics.median(r[1] for r in results[name][1:])

    pteruns = [n for n in runners if n.startswith("pterun")]
    base = {group(n): decode(n) for n in pteruns}
    reference = {group(n): tokens[n] for n in pteruns}
    for name in runners:
        pre = statistics.median(r[0] for r in results[name][1:])
        dec = decode(name)
        ratio = dec / base.get(group(name), dec)
        ref = reference.get(group(name), tokens[name])
        same = tokens[name] == ref
        first = next((i for i, (a, b) in enumerate(zip(tokens[name], ref)) if a != b), None)
        agree = "yes" if same else f"from token {first}"
        print(f"| {name} | {args.prompt / pre:,.1f} | {1 / dec:,.1f} | {dec * 1e3:.2f} | "
              f"{ratio:.2f}x | {agree} |")
    if args.device == "cpu":
        floats = [v for v in cfg["variants"] if v.endswith("fp32")]
        for t in args.threads:
            for variant in cfg["variants"]:
                name = f"pterun {variant} {t}t"
                if variant in floats or name not in runners:
                    continue
                for f in floats:
                    if f"pterun {f} {t}t" in runners:
                        print(f"{name}: decode {decode(f'pterun {f} {t}t') / decode(name):.2f}x as "
                              f"fast as pterun {f} {t}t")
    else:
        for variant in cfg["variants"]:
            name = f"pterun {variant}"
            dec = statistics.median(r[1] for r in results[name][1:])
            nbytes = n_params * weights_bytes[variant.split("_")[1]]
            print(f"{name}: {nbytes / dec / 1e9:.0f} GB/s of weights per token "
                  f"({nbytes / 1e6:.0f} MB per token)")
        if "pterun xnnpack_8da4w" in runners and "pterun portable_bf16" in runners:
            print(f"pterun xnnpack_8da4w: decode "
                  f"{decode('pterun portable_bf16') / decode('pterun xnnpack_8da4w'):.2f}x as fast "
                  f"as pterun portable_bf16")


if __name__ == "__main__":
    main()
