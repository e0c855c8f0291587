"""Worker that runs executorch-numpy-runtime for the pterun benchmarks.

executorch-numpy-runtime publishes only cp312-abi3 wheels, so it cannot be
imported into the Python 3.11 venv that has torch and executorch; the
benchmark process starts this script under a Python >= 3.12 that has it and
talks JSON lines over stdin/stdout. Timing loops run here, with
time.perf_counter_ns, exactly like the in-process peers' loops:

    for _ in range(n):
        outs = method(inputs)      # list of fresh NumPy arrays

Requests: {"op": "info"} | {"op": "load", "key", "pte", "inputs"} |
{"op": "outputs", "key", "path"} | {"op": "time", "key", "n"} | {"op": "quit"}.
"""

import json
import platform
import sys
import time

from _worker_channel import open_channel  # a sibling of this script

reply = open_channel()


def main():
    try:
        import numpy as np
        import executorch_numpy_runtime as en
    except Exception as exc:  # noqa: BLE001
        reply(ok=False, error=f"{type(exc).__name__}: {exc}")
        return
    methods = {}
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "info":
                info = en.runtime_info()
                reply(
                    ok=True,
                    version=en.__version__,
                    et_version=info.get("executorch_version"),
                    kernel_libs=info.get("kernel_libs", []),
                    python=platform.python_version(),
                )
            elif op == "load":
                prog = en.Runtime.get().load_program(req["pte"])
                m = prog.load_method("forward")
                with np.load(req["inputs"]) as d:
                    ins = [np.ascontiguousarray(d[f"arr_{i}"]) for i in range(len(d.files))]
                outs = m(ins)  # first call: fails here if the file cannot run
                methods[req["key"]] = (m, ins, outs)
                reply(ok=True)
            elif op == "outputs":
                m, ins, _ = methods[req["key"]]
                outs = m(ins)
                np.savez(req["path"], *[np.asarray(o) for o in outs])
                reply(ok=True, n=len(outs))
            elif op == "time":
                m, ins, _ = methods[req["key"]]
                n = int(req["n"])
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    m(ins)
                reply(ok=True, ns=time.perf_counter_ns() - t0)
            elif op == "quit":
                reply(ok=True)
                return
            else:
                reply(ok=False, error=f"unknown op {op!r}")
        except Exception as exc:  # noqa: BLE001
            reply(ok=False, error=f"{type(exc).__name__}: {exc}"[:500], kind=type(exc).__name__)


if __name__ == "__main__":
    main()
