"""A wheel is compiled for one x86-64 level (x86-64-v3: AVX2, FMA, ...).
On an older CPU its code would stop the process with an illegal
instruction, so the import fails first, saying what is missing."""

from __future__ import annotations

import platform

# The CPU flags (as Linux names them in /proc/cpuinfo) each level needs.
_LEVEL_FLAGS = {
    "x86-64-v2": {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
    "x86-64-v3": {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2",
                  "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
}
_LEVEL_FLAGS["x86-64-v4"] = _LEVEL_FLAGS["x86-64-v3"] | {
    "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


def missing_flags(level: str, cpuinfo: str) -> list[str]:
    """Flags that `level` needs and the first processor in `cpuinfo` lacks."""
    needed = _LEVEL_FLAGS.get(level)
    if not needed:
        return []
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            have = set(line.partition(":")[2].split())
            return sorted(needed - have)
    return []  # unknown format: do not guess


def check_cpu() -> None:
    try:
        from pterun._build import ARCH
    except ImportError:  # a build tree without the generated file
        return
    if platform.system() != "Linux" or ARCH not in _LEVEL_FLAGS:
        return
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    except OSError:
        return
    missing = missing_flags(ARCH, cpuinfo)
    if missing:
        raise ImportError(
            f"pterun: this build needs an {ARCH} CPU, and this one lacks {', '.join(missing)}; "
            "build pterun from source on this machine instead (pip install --no-binary pterun "
            "pterun, or pip install . in a checkout)"
        )
