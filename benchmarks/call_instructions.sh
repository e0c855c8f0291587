#!/usr/bin/env bash
# Instructions per full Python call of `add` (m([x, y])[0].numpy()), from
# callgrind: two runs of N and 2N calls, so that start-up and import cancel.
#
#   benchmarks/call_instructions.sh [BUILD_DIR] [N]
#
# BUILD_DIR (default build/cg) must be configured with -DPTERUN_NATIVE=OFF:
# valgrind 3.19 cannot run the AVX-512 code -march=native gives on this
# machine. The real interpreter is used, not a pyenv shim (valgrind would
# count the shim's bash).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cg}
n=${2:-2000}
python=${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python3.11}
out=$(mktemp -d)
cat > "$out/loop.py" <<'PY'
import sys
import numpy as np
import pterun
m = pterun.load_program("tests/fixtures/add.pte").load_method("forward")
d = np.load("tests/fixtures/add.npz")
x, y = d["c0_in0"], d["c0_in1"]
for _ in range(200 + int(sys.argv[1])):
    m([x, y])[0].numpy()
PY
total() {
  # Fixed hash seed and one OpenBLAS thread: imports and NumPy's idle
  # threads then cost the same in both runs.
  PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 PYTHONPATH="$build/python_pkg" \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" "$python" "$out/loop.py" "$1" \
    > "$out/log.$1" 2>&1
  grep -m1 '^summary:' "$out/cg.$1" | awk '{print $2}'
}
a=$(total "$n")
b=$(total $((2 * n)))
echo "instructions per call: $(((b - a) / n)) (callgrind files in $out)"
