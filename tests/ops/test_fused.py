"""Fused elementwise programs (pterun::fused_elementwise.out, ops/fused.h)
against the operators they replace, run one by one on the same device:
every step kind and op code the executor emits, float32 / float16 /
bfloat16 with each step rounded to its dtype, broadcasting, dim orders,
single elements, empty outputs, and damaged programs (ValueError, never a
crash).

The step encoding is ops/fused.h's: 7 numbers per step, {kind, fn, a, b,
round dtype, s0, s1}; the op codes are those of ops/elementwise.h (listed
below, in declaration order)."""

import re

import numpy as np
import pytest

from harness import BF16, Out, check_error, rand, run_on, tensor

FUSED = "pterun::fused_elementwise.out"

KIND = {"unary": 0, "activation": 1, "binary": 2, "scalar": 3, "clamp": 4, "cast": 5}
UNARY = {name: i for i, name in enumerate(
    ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
     "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
     "sigmoid", "logit", "logit_eps", "neg", "abs"])}
ACTIVATION = {"relu": 0, "silu": 1, "hardsigmoid": 2, "hardswish": 3, "gelu": 4, "gelu_tanh": 5}
BINARY = {"add": 0, "add_alpha": 1, "sub": 2, "sub_alpha": 3, "mul": 4, "div": 5, "pow": 10,
          "maximum": 11, "minimum": 12}
SCALAR = {"add": 0, "sub": 1, "rsub": 2, "mul": 3, "div": 4, "pow": 9, "pow_square": 10,
          "pow_cube": 11, "pow_identity": 12, "pow_sqrt": 13, "pow_reciprocal": 14}
ROUND = {np.float32: 6, np.float16: 5, BF16: 15}
FLOATS = [np.float32, np.float16, BF16]


def step(kind, fn, a, b=0, round=np.float32, s0=0.0, s1=0.0):
    return [float(KIND[kind]), float(fn), float(a), float(b), float(ROUND[round]), float(s0),
            float(s1)]


# ---- chains: each op is (operator, operand refs and scalars, fused step) ------------------------
#
# An operand ref "xK" is input K, "tK" the result of op K. The step is
# (kind, fn code, s0, s1); its registers come from the refs.

def unary_op(name, src):
    return (f"aten::{name}.out", [src], ("unary", UNARY[name], 0, 0))


def act_op(name, src):
    return (f"aten::{name}.out", [src], ("activation", ACTIVATION[name], 0, 0))


def gelu_op(approx, src):
    code = ACTIVATION["gelu_tanh" if approx == "tanh" else "gelu"]
    return ("aten::gelu.out", [src, approx], ("activation", code, 0, 0))


def bin_op(name, a, b, alpha=None):
    if name in ("add", "sub"):
        code = BINARY[name if alpha in (None, 1) else name + "_alpha"]
        return (f"aten::{name}.out", [a, b, 1 if alpha is None else alpha],
                ("binary", code, 0 if alpha is None else alpha, 0))
    op = "aten::pow.Tensor_Tensor_out" if name == "pow" else f"aten::{name}.out"
    return (op, [a, b], ("binary", BINARY[name], 0, 0))


def scalar_op(name, a, s, alpha=None):
    if name in ("add", "sub", "rsub"):
        al = 1 if alpha is None else alpha
        return (f"aten::{name}.Scalar_out", [a, s, al], ("scalar", SCALAR[name], s, al))
    if name == "pow":
        code = {2: "pow_square", 3: "pow_cube", 1: "pow_identity", 0.5: "pow_sqrt",
                -1: "pow_reciprocal"}.get(s, "pow")
        return ("aten::pow.Tensor_Scalar_out", [a, s], ("scalar", SCALAR[code], s, 1))
    return (f"aten::{name}.Scalar_out", [a, s], ("scalar", SCALAR[name], s, 1))


def clamp_op(a, lo, hi, hardtanh=False):
    name = "aten::hardtanh.out" if hardtanh else "aten::clamp.out"
    inf = float("inf")
    return (name, [a, lo, hi], ("clamp", 0, -inf if lo is None else lo, inf if hi is None else hi))


CHAINS = {
    # RMSNorm after its mean: x * rsqrt(mean + eps) * weight.
    "rms_norm": ([(4, 64), (4, 1), (64,)],
                 [scalar_op("add", "x1", 1e-5), unary_op("rsqrt", "t0"), bin_op("mul", "x0", "t1"),
                  bin_op("mul", "t2", "x2")]),
    # SwiGLU: silu(gate) * up, silu written out.
    "swiglu": ([(8, 32), (8, 32)],
               [unary_op("sigmoid", "x0"), bin_op("mul", "x0", "t0"), bin_op("mul", "t1", "x1")]),
    # torch's tanh-gelu written out.
    "gelu_tanh_decomposed": ([(6, 40)],
                             [scalar_op("mul", "x0", 0.5), scalar_op("pow", "x0", 3),
                              scalar_op("mul", "t1", 0.044715), bin_op("add", "x0", "t2"),
                              scalar_op("mul", "t3", 0.7978845608028654), unary_op("tanh", "t4"),
                              scalar_op("add", "t5", 1.0), bin_op("mul", "t0", "t6")]),
    # rotary embedding halves: x * cos + r * sin
    "rope": ([(2, 4, 16), (4, 16), (2, 4, 16), (4, 16)],
             [bin_op("mul", "x0", "x1"), bin_op("mul", "x2", "x3"), bin_op("add", "t0", "t1")]),
    "activations": ([(5, 24)],
                    [act_op("relu", "x0"), act_op("silu", "x0"), bin_op("add", "t0", "t1"),
                     gelu_op("none", "t2"), gelu_op("tanh", "t3"), act_op("hardswish", "t4"),
                     act_op("hardsigmoid", "t5"), clamp_op("t6", -0.25, 0.75, hardtanh=True),
                     clamp_op("t7", None, 0.5), clamp_op("t8", 0.1, None)]),
    "unary": ([(3, 33)],
              [unary_op("abs", "x0"), scalar_op("add", "t0", 0.5), unary_op("log", "t1"),
               unary_op("exp", "t2"), unary_op("sqrt", "t3"), unary_op("neg", "t4"),
               unary_op("sin", "t5"), unary_op("cos", "t6"), unary_op("erf", "t7"),
               unary_op("expm1", "t8"), unary_op("log1p", "t0"), bin_op("add", "t9", "t10"),
               unary_op("reciprocal", "t1"), bin_op("mul", "t11", "t12")]),
    "binary": ([(2, 3, 8), (3, 1), (8,)],
               [bin_op("sub", "x0", "x1", alpha=2.5), bin_op("add", "t0", "x2", alpha=-0.5),
                bin_op("maximum", "t1", "x1"), bin_op("minimum", "t2", "x2"),
                bin_op("div", "t3", "x0"), scalar_op("rsub", "t4", 2.0, alpha=0.25),
                scalar_op("sub", "t5", 1.5, alpha=3), scalar_op("div", "t6", 3.0),
                scalar_op("pow", "t7", 2), scalar_op("pow", "t8", -1), bin_op("mul", "t9", "x0")]),
    "pow": ([(4, 16), (4, 16)],
            [unary_op("abs", "x0"), scalar_op("add", "t0", 0.25), scalar_op("pow", "t1", 0.5),
             scalar_op("pow", "t2", 1.7), bin_op("pow", "t3", "x1"), scalar_op("pow", "t4", 1)]),
    "scalar_input": ([(5, 7), ()],
                     [bin_op("mul", "x0", "x1"), scalar_op("add", "t0", 3), unary_op("tanh", "t1")]),
}

ORDERS = {"rope": {0: (0, 2, 1)}}  # input 0 read through a transposed dim order


def is_ref(a):
    return isinstance(a, str) and re.fullmatch(r"[xt][0-9]+", a) is not None


def run_unfused(device, dtype, xs, ops, input_orders):
    """Each operator on `device`, intermediates of `dtype`; the last result.
    Input k has dim order input_orders.get(k)."""
    vals = {f"x{k}": x for k, x in enumerate(xs)}
    orders = {f"x{k}": order for k, order in input_orders.items()}
    for k, (name, args, _) in enumerate(ops):
        shapes = [vals[a].shape for a in args if is_ref(a)]
        call = [tensor(vals[a], dtype, orders.get(a)) if is_ref(a) else a
                for a in args]
        out = Out(dtype, np.broadcast_shapes(*shapes))
        vals[f"t{k}"] = run_on(device, name, *call, out)[0]
    return vals[f"t{len(ops) - 1}"]


def program_of(xs, ops, dtype):
    regs = {f"x{k}": k for k in range(len(xs))}
    program = []
    for k, (_, args, (kind, code, s0, s1)) in enumerate(ops):
        refs = [a for a in args if is_ref(a)]
        b = regs[refs[1]] if len(refs) > 1 else 0
        program += step(kind, code, regs[refs[0]], b, dtype, s0, s1)
        regs[f"t{k}"] = len(xs) + k
    return program


def chain_inputs(shapes, dtype):
    xs = [rand(s, np.float32, -2.0, 2.0) for s in shapes]
    if dtype != BF16:
        xs = [x.astype(dtype).astype(np.float32) for x in xs]
    else:
        xs = [run_on("cpu", "aten::_to_copy.out", tensor(x, np.float32), False, None,
                     Out(BF16, x.shape))[0] for x in xs]
    return xs


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_fused_program_equals_the_operators(device, dtype, chain):
    # Each step rounds to its dtype as the operator's out did, and calls the
    # backend's own per-element function: the fused result is the unfused
    # one, bit for bit, on each device.
    shapes, ops = CHAINS[chain]
    xs = chain_inputs(shapes, dtype)
    orders = ORDERS.get(chain, {})
    expected = run_unfused(device, dtype, xs, ops, orders)
    ins = [tensor(x, dtype, orders.get(k)) for k, x in enumerate(xs)]
    got = run_on(device, FUSED, ins, program_of(xs, ops, dtype), Out(dtype, expected.shape))[0]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_fused_program_casts_between_dtypes(device):
    # x (f32) -> bf16 -> * w (bf16) -> f32 -> + 1: the casts round, the
    # arithmetic runs in each op's dtype.
    x, w = rand((16, 8)), rand((8,))
    w16 = run_on(device, "aten::_to_copy.out", tensor(w, np.float32), False, None,
                 Out(BF16, (8,)))[0]
    t0 = run_on(device, "aten::_to_copy.out", tensor(x, np.float32), False, None,
                Out(BF16, (16, 8)))[0]
    t1 = run_on(device, "aten::mul.out", tensor(t0, BF16), tensor(w16, BF16), Out(BF16, (16, 8)))[0]
    t2 = run_on(device, "aten::_to_copy.out", tensor(t1, BF16), False, None,
                Out(np.float32, (16, 8)))[0]
    expected = run_on(device, "aten::add.Scalar_out", tensor(t2, np.float32), 1.0, 1,
                      Out(np.float32, (16, 8)))[0]
    program = (step("cast", 0, 0, round=BF16) + step("binary", BINARY["mul"], 2, 1, BF16)
               + step("cast", 0, 3, round=np.float32)
               + step("scalar", SCALAR["add"], 4, round=np.float32, s0=1.0, s1=1.0))
    got = run_on(device, FUSED, [tensor(x, np.float32), tensor(w16, BF16)], program,
                 Out(np.float32, (16, 8)))[0]
    np.testing.assert_array_equal(got, expected)


def test_fused_program_empty_and_single(device):
    program = step("unary", UNARY["exp"], 0) + step("binary", BINARY["add"], 2, 1)
    got = run_on(device, FUSED, [tensor(np.zeros((0, 4), np.float32), np.float32),
                                 tensor(np.ones((4,), np.float32), np.float32)], program,
                 Out(np.float32, (0, 4)))[0]
    assert got.shape == (0, 4)
    x = np.array(0.5, np.float32)
    got = run_on(device, FUSED, [tensor(x, np.float32), tensor(x, np.float32)], program,
                 Out(np.float32, ()))[0]
    assert got.shape == () and got == np.float32(np.exp(np.float32(0.5))) + np.float32(0.5)


BAD_PROGRAMS = [
    ([0.0] * 6, "7 numbers per step"),
    (step("unary", UNARY["exp"], 1), "not yet written"),
    (step("binary", BINARY["add"], 0, 5), "not yet written"),
    (step("unary", UNARY["logit"], 0), "unknown operation"),
    (step("binary", 6, 0, 0), "unknown operation"),  # truncating division
    ([9.0] + step("cast", 0, 0)[1:], "unknown operation"),
    ([0.5] + step("cast", 0, 0)[1:], "unknown operation"),
    (step("cast", 0, 0)[:4] + [7.0] + [0.0, 0.0], "rounds to a dtype"),  # float64
    (step("cast", 0, 0)[:4] + [99.0] + [0.0, 0.0], "rounds to a dtype"),
    (step("cast", 0, 0) * 25, "at most 24"),
]


@pytest.mark.parametrize("program,match", BAD_PROGRAMS)
def test_fused_program_damaged(device, program, match):
    x = tensor(rand((4,)), np.float32)
    check_error(device, FUSED, [x], program, Out(np.float32, (4,)), exc=ValueError, match=match)


def test_fused_program_checks_its_tensors(device):
    x = tensor(rand((4,)), np.float32)
    ok = step("unary", UNARY["exp"], 0)
    check_error(device, FUSED, [x], ok, Out(np.float16, (4,)), exc=ValueError,
                match="out must be float32")
    check_error(device, FUSED, [tensor(rand((4,)), np.float64)], ok, Out(np.float32, (4,)),
                exc=ValueError, match="unsupported dtype float64")
    check_error(device, FUSED, [x] * 9, ok, Out(np.float32, (4,)), exc=ValueError,
                match="1 to 8 inputs")
    check_error(device, FUSED, [x, tensor(rand((3,)), np.float32)],
                step("binary", BINARY["add"], 0, 1), Out(np.float32, (4,)), exc=ValueError,
                match="do not broadcast")


def test_fused_program_random_damage_never_crashes(device):
    # Programs of random numbers (kinds, op codes, registers, dtypes, NaN and
    # infinite fields): each call either runs or raises ValueError.
    gen = np.random.default_rng(20261205)
    x = tensor(rand((3, 5)), np.float32)
    fields = [0.0, 1.0, 2.0, 5.0, 6.0, 15.0, 22.0, 26.0, 255.0, 256.0, -1.0, 0.5, np.nan, np.inf]
    ran = 0
    for _ in range(300):
        steps = int(gen.integers(1, 4))
        program = [float(gen.choice(fields)) for _ in range(7 * steps)]
        if gen.random() < 0.5:  # mostly valid kinds and registers, damaged elsewhere
            for k in range(steps):
                program[7 * k] = float(gen.integers(0, 6))
                program[7 * k + 1] = float(gen.integers(0, 3))
                program[7 * k + 2] = float(gen.integers(0, 1 + k))
                program[7 * k + 3] = float(gen.integers(0, 1 + k))
                program[7 * k + 4] = 6.0
        try:
            run_on(device, FUSED, [x], program, Out(np.float32, (3, 5)))
            ran += 1
        except ValueError:
            pass
    assert ran > 0
