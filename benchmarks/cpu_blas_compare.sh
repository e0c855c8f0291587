#!/usr/bin/env bash
# Builds and runs benchmarks/cpu_blas_compare.cpp: oneDNN matmul vs
# OpenBLAS sgemm (docs/cpu-blas.md). Debian's OpenBLAS (OpenMP build) is
# unpacked into a temporary folder with `apt-get download` + `dpkg -x`, so
# nothing is installed and pterun never links it.
#
#   benchmarks/cpu_blas_compare.sh [ROUNDS]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && apt-get download -q libopenblas-dev libopenblas-openmp-dev libopenblas0-openmp \
  libgfortran5 >/dev/null 2>&1)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
blas_inc="$work/root/usr/include/x86_64-linux-gnu/openblas-openmp"
blas_lib="$work/root/usr/lib/x86_64-linux-gnu/openblas-openmp"
gfortran_lib="$work/root/usr/lib/x86_64-linux-gnu"

g++ -O2 -std=c++17 -fopenmp -I"$blas_inc" "$here/cpu_blas_compare.cpp" -o "$work/cpu_blas_compare" \
  -L"$blas_lib" -l:libopenblas.so.0 -ldnnl -Wl,--disable-new-dtags,-rpath,"$blas_lib:$gfortran_lib"

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs;" \
  "oneDNN $(dpkg-query -W -f='${Version}' libdnnl2 2>/dev/null || echo '?')," \
  "OpenBLAS 0.3.21 (Debian, OpenMP); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/cpu_blas_compare" "${1:-21}"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
