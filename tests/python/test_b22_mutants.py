"""B22 for every fixture: mutants (truncations, bit flips, overwritten words
and byte ranges, most of them inside the flatbuffer) are loaded, every
method they have is loaded, and each one that loads is run on inputs of its
declared shapes and dtypes. The only exceptions allowed are ProgramError,
NotImplementedError, MemoryError and the ValueError of a missing .ptd;
nothing may crash or hang. Each fixture runs in a child process, so that a
crash fails its test instead of the session.

100 mutants per file by default (a few seconds per fixture);
PTERUN_MUTANTS=N sets another count (a longer sweep)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES, REPO, fixture_names

MUTANTS = int(os.environ.get("PTERUN_MUTANTS", "100"))

CHILD = textwrap.dedent(
    r"""
    import json, random, re, struct, sys, time
    import numpy as np
    import pterun
    sys.path.insert(0, sys.argv[4])
    from behaviour_util import MANIFEST, call_inputs

    name, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    entry = MANIFEST[name]
    pte = open(f"{sys.argv[5]}/{entry['files']['pte']}", "rb").read()
    ptd = open(f"{sys.argv[5]}/{entry['files']['ptd']}", "rb").read() if "ptd" in entry["files"] else None
    raw = pte if target == "pte" else ptd
    # The flatbuffer's extent, where damage changes meaning rather than weights.
    fb_end = len(raw)
    if target == "pte" and raw[8:12] == b"eh00":
        fb_end = min(len(raw), struct.unpack_from("<Q", raw, 16)[0])
    elif target == "ptd":
        fb_end = min(len(raw), sum(struct.unpack_from("<QQ", raw, 16)))

    NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
          "int32": np.int32, "int64": np.int64, "float16": np.float16, "float32": np.float32,
          "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128,
          "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}
    BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

    def recorded(method):
        for k, c in enumerate(entry["calls"]):
            if c["method"] == method:
                return call_inputs(name, k)
        return None

    def fits(value, info):
        if isinstance(value, pterun.Tensor):
            return value.dtype_name == info.dtype_name and value.shape == info.sizes
        a = np.asarray(value)
        if a.dtype.name != info.dtype_name or a.ndim != len(info.sizes):
            return False
        if info.shape_dynamism == "static":
            return a.shape == info.sizes
        return all(0 <= s <= b for s, b in zip(a.shape, info.sizes))

    def ones(info):
        if info.dtype_name in NP:
            return np.ones(info.sizes, NP[info.dtype_name])
        if info.dtype_name == "bfloat16":
            return pterun.Tensor.from_host(np.full(info.sizes, 0x3F80, np.uint16), "cpu",
                                           dtype="bfloat16")
        n = 1
        for s in info.sizes:
            n *= s
        size = info.nbytes // n if n else 1
        return pterun.Tensor.from_host(np.zeros(info.sizes, BITS[size]), "cpu",
                                       dtype=info.dtype_name)

    def inputs_for(m, method):
        meta = m.method_meta()
        old = recorded(method)
        out = []
        for i in range(meta.num_inputs):
            tag = meta.input_tag(i)
            have = old[i] if old is not None and i < len(old) else None
            if tag == "Tensor":
                info = meta.input_tensor_meta(i)
                if info.nbytes > 64 << 20:
                    return None
                out.append(have if have is not None and fits(have, info) else ones(info))
            elif tag == "None":
                out.append(None)
            elif tag in ("Int", "Double", "Bool"):
                out.append(have if have is not None and not isinstance(have, np.ndarray) else
                           {"Int": 1, "Double": 1.0, "Bool": True}[tag])
            else:
                return None
        return out

    def allowed(e):
        if isinstance(e, (pterun.ProgramError, NotImplementedError, MemoryError)):
            return True
        return type(e) is ValueError and "needs external data (.ptd)" in str(e)

    def call(m, inputs):
        # A number input whose baked-in value the damage changed: pass the
        # value the program was exported with (the ValueError names it).
        for _ in range(len(inputs) + 1):
            try:
                return m(inputs)
            except ValueError as e:
                found = re.search(r"input (\d+) .*exported with the value (\S+) and got", str(e))
                if not found or allowed(e):
                    raise
                i, text = int(found.group(1)), found.group(2)
                tag = m.method_meta().input_tag(i)
                inputs[i] = {"Int": int, "Double": float, "Bool": lambda t: t == "True"}[tag](text)
        return m(inputs)

    rng = random.Random(f"{name}/{target}")
    tally = {"rejected": 0, "loaded": 0, "methods_run": 0, "method_errors": 0, "unusable": 0}
    bad = []
    slowest = 0.0
    for trial in range(count):
        b = bytearray(raw)
        inside = rng.random() < 0.75
        at = lambda width=1: rng.randrange(0, max(1, (fb_end if inside else len(b)) - width))
        kind = trial % 4
        if kind == 0:
            b = b[: rng.randrange(len(b))]
        elif kind == 1:
            for _ in range(rng.randint(1, 8)):
                b[at()] ^= 1 << rng.randrange(8)
        elif kind == 2:
            p = at(4) & ~3
            word = rng.choice([0, 1, 2, 3, 0x7F, 0x80, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                               len(b), rng.getrandbits(32)])
            b[p : p + 4] = word.to_bytes(4, "little")
        else:
            width = rng.randint(1, 64)
            p = at(width)
            fillb = rng.choice([b"\0", b"\xff", None])
            b[p : p + width] = (fillb * width) if fillb else bytes(rng.getrandbits(8) for _ in range(width))
        start = time.monotonic()
        what = f"{name}.{target} mutant {trial} (kind {kind})"
        try:
            if target == "pte":
                program = pterun.load_program(bytes(b), data=ptd)
            else:
                program = pterun.load_program(pte, data=bytes(b))
        except Exception as e:
            if not allowed(e):
                bad.append(f"{what}: load_program raised {type(e).__name__}: {e}")
            tally["rejected"] += 1
            continue
        tally["loaded"] += 1
        for method in program.method_names:
            try:
                m = program.load_method(method)
                inputs = inputs_for(m, method)
                if inputs is None:
                    tally["unusable"] += 1
                    continue
                for out in call(m, inputs):
                    if isinstance(out, pterun.Tensor) and out.nbytes <= 1 << 20:
                        out.tolist()
                tally["methods_run"] += 1
            except Exception as e:
                tally["method_errors"] += 1
                if not allowed(e):
                    bad.append(f"{what}, method {method!r}: {type(e).__name__}: {e}")
        slowest = max(slowest, time.monotonic() - start)
    print(json.dumps({"tally": tally, "bad": bad[:20], "num_bad": len(bad),
                      "slowest_s": round(slowest, 3)}))
    """
)


def targets():
    out = []
    for name in fixture_names():
        out.append((name, "pte"))
        if name == "external_weights":
            out.append((name, "ptd"))
    return out


@pytest.mark.parametrize("name,target", targets())
def test_b22_mutants_raise_only_documented_errors(name, target):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, name, target, str(MUTANTS), str(REPO / "tests" / "python"),
             str(FIXTURES)],
            capture_output=True, text=True, timeout=900, cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"mutants of {name}.{target} hung (no result in 900 s)")
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode} (a crash?)\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["num_bad"] == 0, "\n".join(report["bad"])
    tally = report["tally"]
    assert tally["rejected"] > 0 and tally["loaded"] > 0, tally
