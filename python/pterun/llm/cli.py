"""``pterun generate``: text from an LLM program, printed as it comes.

The ``pterun`` command (C++) hands its ``generate`` subcommand to this
module (``python -m pterun.llm``), since tokenizers are Python packages.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from pterun.llm.config import GenerationConfig


def _parser() -> argparse.ArgumentParser:
    defaults = GenerationConfig()
    p = argparse.ArgumentParser(
        prog="pterun generate",
        description="Generate text with an LLM program exported by ExecuTorch; the text is "
        "printed as it comes, prefill and decode rates at the end (on stderr).")
    p.add_argument("file", help="the .pte program")
    p.add_argument("--tokenizer", required=True,
                   help="tokenizer.json (HF), or a tiktoken or SentencePiece model")
    p.add_argument("--prompt", required=True, help="the prompt text")
    p.add_argument("--data", help="a .ptd file with the program's external data")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: %(default)s)")
    p.add_argument("--max-new-tokens", type=int, default=defaults.max_new_tokens,
                   help="new tokens at most; -1: until the context is full (default: %(default)s)")
    p.add_argument("--seq-len", type=int, default=defaults.seq_len,
                   help="total tokens at most, prompt included; -1: no limit")
    p.add_argument("--temperature", type=float, default=defaults.temperature,
                   help="0: greedy; default: %(default)s")
    p.add_argument("--top-p", type=float, default=defaults.top_p,
                   help="nucleus sampling threshold (default: %(default)s)")
    p.add_argument("--seed", type=int, help="seed for sampling (default: random)")
    p.add_argument("--stop", action="append", default=[],
                   help="a string that ends the text (repeatable)")
    p.add_argument("--num-bos", type=int, default=defaults.num_bos,
                   help="BOS tokens before the prompt (default: %(default)s)")
    p.add_argument("--num-eos", type=int, default=defaults.num_eos,
                   help="EOS tokens after the prompt (default: %(default)s)")
    p.add_argument("--ignore-eos", action="store_true", help="keep going past EOS tokens")
    p.add_argument("--no-echo", action="store_true", help="do not print the prompt first")
    p.add_argument("--threads", type=int, help="CPU threads (default: PTERUN_NUM_THREADS or all)")
    p.add_argument("--warmup", action="store_true",
                   help="run the generation once unprinted first, so the rates leave out "
                   "first-call costs")
    p.add_argument("--stats-json", action="store_true",
                   help="print the stats as one JSON line instead of the two-line report")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        import pterun
        from pterun.llm.runner import TextLLMRunner

        if args.threads is not None:
            pterun.set_num_threads(args.threads)
        runner = TextLLMRunner(args.file, args.tokenizer, args.data, device=args.device)
        config = GenerationConfig(
            echo=not args.no_echo, max_new_tokens=args.max_new_tokens, seq_len=args.seq_len,
            temperature=args.temperature, num_bos=args.num_bos, num_eos=args.num_eos,
            top_p=args.top_p, seed=args.seed, stop=tuple(args.stop), ignore_eos=args.ignore_eos)
        if args.warmup:
            runner.generate(args.prompt, config, echo=False, warming=True)
        out = sys.stdout
        for piece in runner.stream(args.prompt, config):
            out.write(piece)
            out.flush()
        out.write("\n")
        out.flush()
        stats = runner.stats
        print(stats.to_json_string() if args.stats_json else stats.report(), file=sys.stderr)
        return 0
    except FileNotFoundError as e:
        print(f"pterun: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\npterun: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every other failure is reported, never a traceback
        print(f"pterun: error ({type(e).__name__}): {e}", file=sys.stderr)
        return 1
