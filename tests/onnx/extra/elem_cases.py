"""Elementwise edge cases: integer overflow, division and shift edge cases, mixed-type Pow,
legacy (opset 1-6) broadcast, Clip forms, Cast saturation/NaN/rounding, per-axis and dynamic
quantization, 5-D broadcasting, empty and rank-0 tensors, Dropout forms, Gelu.

Expected values are written out or computed with numpy (never with the runtime under test).
"""
import functools
from math import erf

import ml_dtypes
import numpy as np
from onnx import TensorProto as TP


def bf(v):
    """float32 values rounded to bfloat16 (round to nearest even)."""
    return np.asarray(v, np.float32).astype(ml_dtypes.bfloat16)


def build(w):
    case = functools.partial(w.case, opset=17)
    A = np.array
    i8, i16, i32, i64 = np.int8, np.int16, np.int32, np.int64
    u8, u16, u32, u64 = np.uint8, np.uint16, np.uint32, np.uint64
    f16, f32, f64 = np.float16, np.float32, np.float64
    I32MIN, I64MIN = np.iinfo(i32).min, np.iinfo(i64).min
    rng = np.random.default_rng(0)

    def wrap(dt, vals):  # python ints -> dt with two's complement wraparound
        bits = np.iinfo(dt).bits
        return A([((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1)) if np.iinfo(dt).min < 0
                  else v % (1 << bits) for v in vals], dtype=dt)

    # ---- integer arithmetic without UB
    x = A([I32MIN, 7, -7, 5, 0, I32MIN, 9], i32); y = A([-1, 2, 2, 0, 3, 0, -3], i32)
    case('div_int32_edge', 'Div', [x, y], [A([I32MIN, 3, -3, 0, 0, 0, -3], i32)])
    case('div_uint8_zero', 'Div', [A([7, 255, 0], u8), A([0, 2, 0], u8)], [A([0, 127, 0], u8)])
    xi = [2**31 - 1, -2**31, 123456789]; yi = [1, -1, 987654]
    case('add_int32_wrap', 'Add', [A(xi, i32), A(yi, i32)], [wrap(i32, [a + b for a, b in zip(xi, yi)])])
    case('sub_int8_wrap', 'Sub', [A([-128, 127], i8), A([1, -1], i8)], [A([127, -128], i8)])
    xm = [2**62, -2**63, 3]; ym = [4, -1, -5]
    case('mul_int64_wrap', 'Mul', [A(xm, i64), A(ym, i64)], [wrap(i64, [a * b for a, b in zip(xm, ym)])])
    case('mul_uint16_wrap', 'Mul', [A([65535, 300], u16), A([65535, 300], u16)],
         [A([(65535 * 65535) % 65536, (300 * 300) % 65536], u16)])
    case('mul_uint64_wrap', 'Mul', [A([2**63, 3], u64), A([2, 2**63 + 1], u64)],
         [A([0, (3 * (2**63 + 1)) % 2**64], u64)])
    case('neg_int8_min', 'Neg', [A([-128, 5, 0], i8)], [A([-128, -5, 0], i8)])
    case('abs_int64_min', 'Abs', [A([I64MIN, -5, 7], i64)], [A([I64MIN, 5, 7], i64)])
    case('abs_uint8', 'Abs', [A([0, 200], u8)], [A([0, 200], u8)])
    xs = A([-7, 7, -7, 7, -128, -128, 5, 0], i8); ys = A([3, -3, -3, 3, -1, 0, 0, 3], i8)
    case('mod_int8_python', 'Mod', [xs, ys], [A([2, -2, -1, 1, 0, 0, 0, 0], i8)])
    case('mod_int8_fmod', 'Mod', [xs, ys], [A([-1, 1, -1, 1, 0, 0, 0, 0], i8)], attrs={'fmod': 1})
    case('mod_int64_min', 'Mod', [A([I64MIN, I64MIN, -9], i64), A([-1, 7, 4], i64)],
         [A([0, I64MIN % 7, -9 % 4], i64)])
    case('mod_uint32_zero', 'Mod', [A([7, 9], u32), A([0, 4], u32)], [A([0, 1], u32)])
    case('mod_f16_fmod', 'Mod', [A([-4.5, 5.25, 3], f16), A([2, -2, 0.75], f16)],
         [np.fmod(A([-4.5, 5.25, 3], f16), A([2, -2, 0.75], f16))], attrs={'fmod': 1})
    case('bitshift_u8_wide', 'BitShift', [A([1, 255, 3, 128], u8), A([8, 9, 255, 7], u8)],
         [A([0, 0, 0, 0], u8)], attrs={'direction': 'LEFT'})
    case('bitshift_u8_left', 'BitShift', [A([1, 255, 3], u8), A([7, 1, 2], u8)], [A([128, 254, 12], u8)],
         attrs={'direction': 'LEFT'})
    case('bitshift_u64_edge', 'BitShift', [A([2**64 - 1, 2**64 - 1, 5], u64), A([64, 63, 1000], u64)],
         [A([0, 1, 0], u64)], attrs={'direction': 'RIGHT'})
    case('bitshift_u16_bcast', 'BitShift', [A([[65535], [1]], u16), A([0, 15, 16], u16)],
         [A([[65535, 32768, 0], [1, 32768, 0]], u16)], attrs={'direction': 'LEFT'})

    # ---- Pow with mixed types
    case('pow_int32_int32_wrap', 'Pow', [A([3, -2, 2, 1, -1, 5], i32), A([25, 3, 40, -3, -3, -1], i32)],
         [wrap(i32, [3**25, -8, 2**40, 1, -1, 0])])
    case('pow_int64_f32', 'Pow', [A([2, 3, -4], i64), A([0.5, 2.0, 3.0], f32)],
         [A([1, 9, -64], i64)])  # sqrt(2) = 1.41 truncates to 1
    case('pow_f32_int64', 'Pow', [A([1.5, -2.0, 4.0], f32), A([2, 3, -1], i64)], [A([2.25, -8.0, 0.25], f32)])
    case('pow_f16', 'Pow', [A([1.5, 2.0, 4.0], f16), A([2, 0.5, -1], f16)], [A([2.25, 1.4142, 0.25], f16)])
    case('pow_f64_bcast', 'Pow', [A([[1.5], [2.0]], f64), A([2.0, 3.0], f64)],
         [A([[2.25, 3.375], [4.0, 8.0]], f64)])
    case('pow_u8_i64', 'Pow', [A([2, 3, 16], u8), A([7, 5, 2], i64)], [A([128, 243, 0], u8)])

    # ---- legacy broadcast (opset 6) and old Clip
    a = rng.standard_normal((2, 3, 4, 5)).astype(f32); b = rng.standard_normal((3, 4)).astype(f32)
    case('add_legacy_axis', 'Add', [a, b], [a + b.reshape(3, 4, 1)], opset=6, attrs={'broadcast': 1, 'axis': 1})
    b2 = rng.standard_normal((5,)).astype(f32)
    case('mul_legacy_suffix', 'Mul', [a, b2], [a * b2], opset=6, attrs={'broadcast': 1})
    b3 = rng.standard_normal((2,)).astype(f32)
    case('sub_legacy_axis0', 'Sub', [a, b3], [a - b3.reshape(2, 1, 1, 1)], opset=6, attrs={'broadcast': 1, 'axis': 0})
    case('div_legacy_same', 'Div', [a, a + 3], [a / (a + 3)], opset=6)
    case('clip_opset6_attrs', 'Clip', [A([-3, -1, 0, 1, 3, np.nan], f32)], [A([-2, -1, 0, 1, 1.5, np.nan], f32)],
         opset=6, attrs={'min': -2.0, 'max': 1.5})
    case('clip_opset6_min_only', 'Clip', [A([-3, -1, 5], f64)], [A([-2, -1, 5], f64)], opset=6, attrs={'min': -2.0})
    case('clip_opset6_f16', 'Clip', [A([-3, -1, 5], f16)], [A([-2, -1, 4], f16)], opset=6, attrs={'min': -2.0, 'max': 4.0})
    case('clip_int32_min', 'Clip', [A([-5, 0, 5], i32), A(-1, i32)], [A([-1, 0, 5], i32)])
    case('clip_uint64_max_only', 'Clip', [A([1, 2**64 - 1], u64), None, A(7, u64)], [A([1, 7], u64)])
    case('clip_min_gt_max', 'Clip', [A([-5, 0, 5], f32), A(2, f32), A(1, f32)], [A([1, 1, 1], f32)])
    case('clip_none', 'Clip', [A([-5, 0, 5], i8)], [A([-5, 0, 5], i8)])
    case('clip_bf16', 'Clip', [bf([-5, 0.5, 5]), bf(-1.0), bf(2.0)], [bf([-1, 0.5, 2])])

    # ---- Cast
    def cast(name, x, y, to, opset=17):
        case(name, 'Cast', [x], [y], opset=opset, attrs={'to': to})
    cast('cast_f32_int8_sat', A([np.nan, np.inf, -np.inf, 1e10, -1e10, 127.9, -128.9, -0.9], f32),
         A([0, 127, -128, 127, -128, 127, -128, 0], i8), TP.INT8)
    cast('cast_f64_uint64', A([-5.0, 1e30, 3.99, np.nan, 2.0**63], f64),
         A([0, 2**64 - 1, 3, 0, 2**63], u64), TP.UINT64)
    cast('cast_f32_int64', A([np.nan, 1e30, -1e30, -7.9], f32), A([0, 2**63 - 1, -2**63, -7], i64), TP.INT64)
    cast('cast_int64_int8_wrap', A([300, -129, 2**40 + 5], i64), A([44, 127, 5], i8), TP.INT8)
    cast('cast_uint64_int64', A([2**64 - 1, 5], u64), A([-1, 5], i64), TP.INT64)
    cast('cast_int8_uint32', A([-1, 5], i8), A([2**32 - 1, 5], u32), TP.UINT32)
    cast('cast_int64_f32_round', A([2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**24 + 1], i64),
         A([2**60 + 2**37, -(2**60 + 2**37), 2**24], f32), TP.FLOAT)
    dd = A([1.0 + 2**-11 + 2**-40, 1.0 + 2**-11, 65519.99, 65520.0, 1e-8, -3.0000001e-8], f64)
    cast('cast_f64_f16_once', dd, dd.astype(f16), TP.FLOAT16)  # numpy rounds double->half once
    cast('cast_int32_f16', A([2049, 2051, 65519, 65520, -70000], i32),
         A([2048, 2052, 65504, np.inf, -np.inf], f16), TP.FLOAT16)
    cast('cast_f32_bool', A([0.0, -0.0, np.nan, 1e-45, -2], f32), A([False, False, True, True, True]), TP.BOOL)
    cast('cast_bool_f16', A([True, False]), A([1, 0], f16), TP.FLOAT16)
    cast('cast_f16_int32', A([1.5, -2.5, 65504, -np.inf, np.nan], f16), A([1, -2, 65504, I32MIN, 0], i32), TP.INT32)
    cast('cast_bf16_f64', bf([1.5, -3.25, 1e30]), bf([1.5, -3.25, 1e30]).astype(f64), TP.DOUBLE)
    cast('cast_f32_bf16_rne', A([1.00390625, 1.01171875, np.nan, np.inf, 3.4e38], f32),
         bf([1.00390625, 1.01171875, np.nan, np.inf, 3.4e38]), TP.BFLOAT16)
    cast('cast_f16_bf16', A([1.0009765625, 3.0], f16), bf([1.0009765625, 3.0]), TP.BFLOAT16)
    cast('cast_u8_bool', A([0, 1, 255], u8), A([False, True, True]), TP.BOOL)
    cast('cast_opset1_string_to', A([1.5, 2.5], f32), A([1, 2], i32), 'INT32', opset=1)
    case('castlike_i64_u8', 'CastLike', [A([300, -1], i64), A([0], u8)], [A([44, 255], u8)])

    # ---- unary edge cases
    case('round_half_even', 'Round', [A([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999], f32)], [A([0, 2, 2, -0, -2, -2, 2], f32)])
    case('round_f16', 'Round', [A([0.5, 1.5, 2.5], f16)], [A([0, 2, 2], f16)])
    case('sign_nan_int', 'Sign', [A([-3, 0, 4], i16)], [A([-1, 0, 1], i16)])
    case('sign_f64', 'Sign', [A([-3, 0, 4, np.inf], f64)], [A([-1, 0, 1, 1], f64)])
    case('sign_uint8', 'Sign', [A([0, 4], u8)], [A([0, 1], u8)])
    case('relu_int8', 'Relu', [A([-128, 0, 127], i8)], [A([0, 0, 127], i8)])
    case('relu_bf16', 'Relu', [bf([-1, 2.5])], [bf([0, 2.5])])
    case('isinf_pos_only', 'IsInf', [A([np.inf, -np.inf, 1, np.nan], f64)], [A([True, False, False, False])],
         attrs={'detect_negative': 0})
    case('isnan_f16', 'IsNaN', [A([np.nan, 1, np.inf], f16)], [A([True, False, False])])
    xx = A([-100, -20, -1, 0, 1, 20, 100], f32)
    sp = np.where(xx > 0, xx + np.log1p(np.exp(-xx)), np.log1p(np.exp(xx))).astype(f32)
    case('softplus_large', 'Softplus', [xx], [sp])
    case('mish', 'Mish', [xx], [(xx * np.tanh(sp)).astype(f32)], opset=18)
    case('hardswish_f64', 'HardSwish', [xx.astype(f64)], [(xx * np.clip(xx / 6 + 0.5, 0, 1)).astype(f64)])
    case('gelu_none', 'Gelu', [xx / 10], [A([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in xx / 10], f32)], opset=20)
    case('gelu_tanh', 'Gelu', [xx / 10], [A([0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v**3))) for v in xx / 10], f32)],
         opset=20, attrs={'approximate': 'tanh'})
    case('shrink_int8', 'Shrink', [A([-5, -2, -1, 0, 1, 2, 5], i8)], [A([-4, -1, 0, 0, 0, 1, 4], i8)],
         attrs={'lambd': 1.5, 'bias': 1.0})
    case('erf_int32', 'Erf', [A([-3, 0, 2], i32)], [A([0, 0, 0], i32)])
    case('selu_f16', 'Selu', [A([-1, 0, 2], f16)], [A([1.0507 * (1.6733 * np.exp(-1) - 1.6733), 0, 2.1014], f16)])
    case('elu_f64', 'Elu', [A([-1, 0, 2], f64)], [A([0.5 * (np.exp(-1) - 1), 0, 2], f64)], attrs={'alpha': 0.5})
    case('celu_alpha', 'Celu', [A([-1, 0, 2], f32)], [A([2 * (np.exp(-0.5) - 1), 0, 2], f32)], attrs={'alpha': 2.0})
    case('leakyrelu_f16', 'LeakyRelu', [A([-1, 0, 2], f16)], [A([-0.01, 0, 2], f16)])
    case('not_bool', 'Not', [A([[True, False]])], [A([[False, True]])])
    case('neg_bf16', 'Neg', [bf([1.5, -2])], [bf([-1.5, 2])])
    case('sqrt_f64', 'Sqrt', [A([4, 2, 0], f64)], [A([2, np.sqrt(2), 0], f64)])
    case('reciprocal_f16', 'Reciprocal', [A([4, 0.5], f16)], [A([0.25, 2], f16)])

    # ---- binary / broadcast shapes
    a = rng.standard_normal((2, 1, 3, 1, 2)).astype(f32); b = rng.standard_normal((1, 4, 1, 5, 1)).astype(f32)
    case('add_bcast_5d', 'Add', [a, b], [a + b])
    case('sub_scalar_left', 'Sub', [A(3.0, f32), a], [3.0 - a])
    case('mul_rank0', 'Mul', [A(3, i64), A(-4, i64)], [A(-12, i64)])
    case('add_empty', 'Add', [np.zeros((0, 3), f32), A([1, 2, 3], f32)], [np.zeros((0, 3), f32)])
    case('add_f16_bcast', 'Add', [A([[1, 2]], f16), A([[0.5], [0.25]], f16)], [A([[1.5, 2.5], [1.25, 2.25]], f16)])
    case('div_f64', 'Div', [A([1, -1, 0], f64), A([0, 0, 3], f64)], [A([np.inf, -np.inf, 0], f64)])
    case('prelu_int32', 'PRelu', [A([[-3, 4], [5, -6]], i32), A([2, 3], i32)], [A([[-6, 4], [5, -18]], i32)])
    case('prelu_chan', 'PRelu', [a.reshape(2, 3, 2), A([[0.1], [0.2], [0.3]], f32)],
         [np.where(a.reshape(2, 3, 2) < 0, a.reshape(2, 3, 2) * A([[0.1], [0.2], [0.3]], f32), a.reshape(2, 3, 2))])
    case('equal_bool', 'Equal', [A([True, False, True]), A([True])], [A([True, False, True])])
    case('less_uint64', 'Less', [A([2**64 - 1, 0], u64), A([1, 2**63], u64)], [A([False, True])])
    case('gte_f16', 'GreaterOrEqual', [A([1, 2, np.nan], f16), A([2], f16)], [A([False, True, False])])
    case('lte_bf16', 'LessOrEqual', [bf([1, 2, 3]), bf([2])], [A([True, True, False])])
    case('greater_int8_legacy', 'Greater', [A([[1, 5], [3, 3]], i8), A([2, 3], i8)], [A([[False, True], [True, False]])],
         opset=1, attrs={'broadcast': 1})
    case('and_legacy_axis', 'And', [np.ones((2, 3), bool), A([True, False])], [A([[True] * 3, [False] * 3])],
         opset=6, attrs={'broadcast': 1, 'axis': 0})
    case('xor_bcast', 'Xor', [A([[True], [False]]), A([True, False])], [A([[False, True], [True, False]])])

    # ---- variadic
    p, q, r = A([1, 5, np.nan], f32), A([[2], [0]], f32), A(3, f32)
    case('max_3_bcast_nan', 'Max', [p, q, r], [np.maximum(np.maximum(p, q), r)])
    case('min_3_bcast_nan', 'Min', [p, q, r], [np.minimum(np.minimum(p, q), r)])
    case('sum_3_bcast', 'Sum', [A([1, 5, 2], f64), A([[2], [0]], f64), A(3, f64)], [A([1, 5, 2], f64) + A([[2], [0]], f64) + 3])
    case('mean_3_bcast', 'Mean', [A([1, 5, 2], f16), A([[2], [0]], f16), A(3, f16)],
         [((A([1, 5, 2], f32) + A([[2], [0]], f32) + 3) / 3).astype(f16)])
    case('max_int8_4', 'Max', [A([-128, 0], i8), A([5, -1], i8), A([1], i8), A([[-3], [100]], i8)],
         [A([[5, 1], [100, 100]], i8)])
    case('min_uint64', 'Min', [A([2**64 - 1, 3], u64), A([2**63, 4], u64)], [A([2**63, 3], u64)])
    case('sum_one', 'Sum', [A([1.5, 2.5], f32)], [A([1.5, 2.5], f32)])
    case('max_opset6', 'Max', [A([1, 5], f32), A([3, 2], f32)], [A([3, 5], f32)], opset=6)

    # ---- Where
    c = A([[[True]], [[False]]]); wx = A([[1], [2], [3]], i64); wy = A([10, 20, 30, 40], i64)
    case('where_3way_i64', 'Where', [c, wx, wy], [np.where(c, wx, wy)])
    case('where_f16', 'Where', [A([True, False]), A([1, 2], f16), A(7, f16)], [A([1, 7], f16)])
    case('where_bool', 'Where', [A([True, False]), A([True, True]), A([False])], [A([True, False])])
    case('where_u8_scalar_cond', 'Where', [A(False), A([1, 2], u8), A([3, 4], u8)], [A([3, 4], u8)])

    # ---- Dropout
    dx = rng.standard_normal((3, 4)).astype(f32)
    case('dropout_train_ratio0', 'Dropout', [dx, A(0.0, f32), A(True)], [dx, np.ones((3, 4), bool)], opset=13)
    case('dropout_eval_mask', 'Dropout', [dx, A(0.5, f32), A(False)], [dx, np.ones((3, 4), bool)], opset=13)
    case('dropout_opset7_mask', 'Dropout', [dx], [dx, np.ones((3, 4), f32)], opset=7, attrs={'ratio': 0.3})
    case('dropout_opset10_mask', 'Dropout', [dx.astype(f64)], [dx.astype(f64), np.ones((3, 4), bool)], opset=10)
    case('dropout_f16', 'Dropout', [dx.astype(f16)], [dx.astype(f16)], opset=13)

    # ---- quantization
    xq = A([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], [100, -100, 0.2, -0.2, 3, 1e9]], f32)
    def quant(x, s, z, lo, hi, dt):
        return np.clip(np.rint(x / s) + z, lo, hi).astype(dt)
    case('quantize_int8_half_even', 'QuantizeLinear', [xq, A(1.0, f32), A(0, i8)], [quant(xq, 1.0, 0, -128, 127, i8)])
    case('quantize_uint8_nozp_opset10', 'QuantizeLinear', [xq, A(0.5, f32)], [quant(xq, 0.5, 0, 0, 255, u8)], opset=10)
    s_ax = A([0.5, 2.0], f32); z_ax = A([-3, 4], i8)
    case('quantize_axis0_int8', 'QuantizeLinear', [xq, s_ax, z_ax], [quant(xq, s_ax[:, None], z_ax[:, None], -128, 127, i8)],
         attrs={'axis': 0})
    x3 = rng.standard_normal((2, 3, 4)).astype(f32) * 50
    s3 = A([0.5, 1.0, 2.0, 4.0], f32); z3 = A([0, 10, 128, 255], u8)
    case('quantize_axis_neg1_uint8', 'QuantizeLinear', [x3, s3, z3], [quant(x3, s3, z3.astype(f32), 0, 255, u8)],
         attrs={'axis': -1})
    case('quantize_int32_in', 'QuantizeLinear', [A([-1000, 5, 7, 1000], i32), A(2.0, f32), A(1, u8)],
         [A([0, 3, 5, 255], u8)])
    case('dequantize_axis0_int8', 'DequantizeLinear', [A([[-128, 0, 127], [1, 2, 3]], i8), s_ax, z_ax],
         [((A([[-128, 0, 127], [1, 2, 3]], f32) - z_ax[:, None].astype(f32)) * s_ax[:, None]).astype(f32)],
         attrs={'axis': 0})
    case('dequantize_int32', 'DequantizeLinear', [A([-1000, 5, 2**30], i32), A(0.25, f32)], [A([-250, 1.25, 2**28], f32)])
    case('dequantize_uint8_opset10', 'DequantizeLinear', [A([0, 128, 255], u8), A(0.1, f32), A(128, u8)],
         [((A([0, 128, 255], f32) - 128) * f32(0.1)).astype(f32)], opset=10)

    def dql(x):
        mx = f32(max(0, x.max())) ; mn = f32(min(0, x.min()))
        sc = f32(1.0 if mx == mn else (mx - mn)) / f32(255)
        zp = np.rint(np.clip(f32(0) - mn / sc, 0, 255))
        y = np.clip(np.rint(x / sc) + zp, 0, 255).astype(u8)
        return [y, A(sc, f32), A(zp, u8)]
    for nm, xv in [('zeros', np.zeros((2, 3), f32)), ('pos', A([0.5, 1, 2, 3.3], f32)), ('neg', A([-0.5, -1, -2, -3.3], f32)),
                   ('mixed', rng.standard_normal((3, 5)).astype(f32))]:
        case('dynquant_' + nm, 'DynamicQuantizeLinear', [xv], dql(xv))
