"""Worker for benchmarks/llm.py: everything that needs torch or ExecuTorch,
run under a Python that has them (the exporter venv on the dev VM; the
GPU host's torch for the CUDA peers), so that the benchmark process itself
imports neither.

    python _llm_worker.py export  CONFIG.json OUT_DIR      # checkpoint + .pte files
    python _llm_worker.py serve                            # JSON lines on stdin/stdout

Requests of `serve`, one JSON object per line:
    {"op": "load", "key": K, "kind": "executorch", "pte": PATH, "threads": N}
    {"op": "load", "key": K, "kind": "torch", "config": PATH,
     "device": "cuda" | "cpu", "dtype": "bf16" | "fp32", "graphs": bool}
    {"op": "generate", "key": K, "prompt": [...], "new": N}
        -> {"prefill_s", "decode_s" (per token, median of the steps), "tokens"}
    {"op": "quit"}

`torch` runs the same llama (ExecuTorch's weight names and RoPE layout) in
eager mode with a static KV cache, or with each decode step replayed as a
CUDA graph (positions held in device tensors, so one graph serves every
step).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from _worker_channel import open_channel  # a sibling of this script

reply = open_channel()


# ---- weights ----------------------------------------------------------------------------------


def weight_shapes(params):
    """ExecuTorch's llama weight names and shapes, in a fixed order."""
    d, v, h = params["dim"], params["vocab_size"], params["hidden_dim"]
    kv = d // params["n_heads"] * params.get("n_kv_heads", params["n_heads"])
    shapes = [("tok_embeddings.weight", (v, d))]
    for i in range(params["n_layers"]):
        p = f"layers.{i}."
        shapes += [(p + "attention.wq.weight", (d, d)), (p + "attention.wk.weight", (kv, d)),
                   (p + "attention.wv.weight", (kv, d)), (p + "attention.wo.weight", (d, d)),
                   (p + "feed_forward.w1.weight", (h, d)), (p + "feed_forward.w2.weight", (d, h)),
                   (p + "feed_forward.w3.weight", (h, d)), (p + "attention_norm.weight", (d,)),
                   (p + "ffn_norm.weight", (d,))]
    return shapes + [("norm.weight", (d,)), ("output.weight", (v, d))]


def make_weights(params):
    """Random weights from a fixed seed (the same on every machine, so the
    GPU host's torch peers need no checkpoint file): norms near 1, matrices
    scaled by 1/sqrt(fan-in)."""
    import torch

    g = torch.Generator().manual_seed(7)
    weights = {}
    for name, shape in weight_shapes(params):
        if len(shape) == 1:
            weights[name] = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            weights[name] = torch.randn(shape, generator=g) / shape[-1] ** 0.5
    return weights


# ---- export ---------------------------------------------------------------------------------


def export(config_path: str, out_dir: str) -> None:
    """Random weights (a fixed seed) saved as a checkpoint, then one
    export_llama run per variant in the config."""
    import subprocess

    import torch

    cfg = json.load(open(config_path))
    params = cfg["params"]
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    params_path = os.path.join(out_dir, "params.json")
    ckpt = os.path.join(out_dir, "ckpt.pth")
    json.dump(params, open(params_path, "w"))
    if not os.path.exists(ckpt):
        torch.save(make_weights(params), ckpt)
    for name, flags in cfg["variants"].items():
        pte = os.path.join(out_dir, f"{name}.pte")
        if os.path.exists(pte):
            continue
        cmd = [sys.executable, "-m", "executorch.examples.models.llama.export_llama", "-c", ckpt,
               "-p", params_path, "--max_seq_length", str(cfg["max_seq_len"]),
               "--max_context_length", str(cfg["context"]), "-o", out_dir, "-n", f"{name}.pte",
               *flags]
        subprocess.run(cmd, check=True, cwd=out_dir, stdout=subprocess.DEVNULL)
        print(f"exported {name}", file=sys.stderr)


# ---- runners ----------------------------------------------------------------------------------


class ExecuTorchRunner:
    def __init__(self, pte: str, threads: int):
        import torch

        import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
        import executorch.kernels.quantized  # noqa: F401
        from executorch.extension.pybindings.portable_lib import _unsafe_reset_threadpool
        from executorch.runtime import Runtime

        _unsafe_reset_threadpool(threads)
        torch.set_num_threads(threads)
        self.torch = torch
        self.method = Runtime.get().load_program(pte).load_method("forward")

    def generate(self, prompt, new):
        torch = self.torch
        t0 = time.perf_counter()
        out = self.method.execute([torch.tensor([prompt]), torch.tensor([0])])[0]
        token = int(out.float().argmax())
        prefill = time.perf_counter() - t0
        tokens, steps, pos = [token], [], len(prompt)
        for _ in range(new - 1):
            t0 = time.perf_counter()
            out = self.method.execute([torch.tensor([[token]]), torch.tensor([pos])])[0]
            token = int(out.float().argmax())
            steps.append(time.perf_counter() - t0)
            tokens.append(token)
            pos += 1
        return prefill, steps, tokens


class TorchLlama:
    """The exported llama's computation in torch: RMSNorm, RoPE on
    interleaved pairs, grouped-query attention over a static cache, SwiGLU."""

    def __init__(self, cfg, device, dtype):
        import torch

        self.torch = torch
        p = cfg["params"]
        self.dim, self.layers = p["dim"], p["n_layers"]
        self.heads, self.kv_heads = p["n_heads"], p.get("n_kv_heads", p["n_heads"])
        self.head_dim = self.dim // self.heads
        self.eps = p.get("norm_eps", 1e-5)
        self.context = cfg["context"]
        self.device, self.dtype = device, dtype
        self.w = {k: v.to(device=device, dtype=dtype) for k, v in make_weights(p).items()}
        theta = p.get("rope_theta", 10000.0)
        freqs = 1.0 / theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        angles = torch.outer(torch.arange(self.context).float(), freqs)
        self.cos = angles.cos().to(device=device, dtype=dtype)
        self.sin = angles.sin().to(device=device, dtype=dtype)
        shape = (self.layers, 1, self.kv_heads, self.context, self.head_dim)
        self.k_cache = torch.zeros(shape, device=device, dtype=dtype)
        self.v_cache = torch.zeros(shape, device=device, dtype=dtype)

    def norm(self, x, weight):
        torch = self.torch
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * weight

    def rope(self, x, positions):
        cos = self.cos[positions][None, :, None, :]
        sin = self.sin[positions][None, :, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return self.torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)

    def forward(self, tokens, positions):
        """tokens [1, S] and positions [S] (device tensors); the logits of the last token."""
        torch, F = self.torch, self.torch.nn.functional
        w = self.w
        s = tokens.shape[1]
        x = w["tok_embeddings.weight"][tokens]
        keys = torch.arange(self.context, device=self.device)
        allowed = keys[None, :] <= positions[:, None]  # [S, context]
        reps = self.heads // self.kv_heads
        for i in range(self.layers):
            pre = f"layers.{i}."
            h = self.norm(x, w[pre + "attention_norm.weight"])
            q = F.linear(h, w[pre + "attention.wq.weight"]).view(1, s, self.heads, self.head_dim)
            k = F.linear(h, w[pre + "attention.wk.weight"]).view(1, s, self.kv_heads, self.head_dim)
            v = F.linear(h, w[pre + "attention.wv.weight"]).view(1, s, self.kv_heads, self.head_dim)
            q, k = self.rope(q, positions), self.rope(k, positions)
            self.k_cache[i].index_copy_(2, positions, k.transpose(1, 2))
            self.v_cache[i].index_copy_(2, positions, v.transpose(1, 2))
            kk = self.k_cache[i].repeat_interleave(reps, dim=1)
            vv = self.v_cache[i].repeat_interleave(reps, dim=1)
            a = F.scaled_dot_product_attention(q.transpose(1, 2), kk, vv, attn_mask=allowed)
            x = x + F.linear(a.transpose(1, 2).reshape(1, s, self.dim), w[pre + "attention.wo.weight"])
            h = self.norm(x, w[pre + "ffn_norm.weight"])
            g = F.silu(F.linear(h, w[pre + "feed_forward.w1.weight"]))
            x = x + F.linear(g * F.linear(h, w[pre + "feed_forward.w3.weight"]),
                             w[pre + "feed_forward.w2.weight"])
        x = self.norm(x[:, -1], w["norm.weight"])
        return F.linear(x, w["output.weight"])


class TorchRunner:
    def __init__(self, config, device, dtype, graphs):
        import torch

        cfg = json.load(open(config))
        self.torch = torch
        self.model = TorchLlama(cfg, device, torch.bfloat16 if dtype == "bf16" else torch.float32)
        self.device = device
        self.graphs = graphs and device == "cuda"
        self.graph = None

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def decode_graph(self):
        torch = self.torch
        self.static_token = torch.zeros((1, 1), dtype=torch.long, device="cuda")
        self.static_pos = torch.zeros((1,), dtype=torch.long, device="cuda")
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.inference_mode():
            for _ in range(3):
                self.model.forward(self.static_token, self.static_pos)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.inference_mode():
            self.static_out = self.model.forward(self.static_token, self.static_pos)
        return graph

    def generate(self, prompt, new):
        torch = self.torch
        dev = self.device
        with torch.inference_mode():
            if self.graphs and self.graph is None:
                self.graph = self.decode_graph()
            self.sync()
            t0 = time.perf_counter()
            tokens_t = torch.tensor([prompt], device=dev)
            out = self.model.forward(tokens_t, torch.arange(len(prompt), device=dev))
            token = int(out.float().argmax())
            prefill = time.perf_counter() - t0
            tokens, steps, pos = [token], [], len(prompt)
            for _ in range(new - 1):
                t0 = time.perf_counter()
                if self.graphs:
                    self.static_token.fill_(token)
                    self.static_pos.fill_(pos)
                    self.graph.replay()
                    out = self.static_out
                else:
                    out = self.model.forward(torch.tensor([[token]], device=dev),
                                             torch.tensor([pos], device=dev))
                token = int(out.float().argmax())
                steps.append(time.perf_counter() - t0)
                tokens.append(token)
                pos += 1
        return prefill, steps, tokens


def serve() -> None:
    runners = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "quit":
                reply(ok=True)
                return
            if req["op"] == "load":
                if req["kind"] == "executorch":
                    runners[req["key"]] = ExecuTorchRunner(req["pte"], req["threads"])
                else:
                    runners[req["key"]] = TorchRunner(req["config"], req["device"], req["dtype"],
                                                      req["graphs"])
                reply(ok=True)
            elif req["op"] == "generate":
                prefill, steps, tokens = runners[req["key"]].generate(req["prompt"], req["new"])
                reply(ok=True, prefill_s=prefill, decode_s=statistics.median(steps),
                      tokens=tokens)
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            reply(ok=False, error=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3])
    else:
        serve()
