#!/usr/bin/env python3
"""Invalid or unrunnable one-node models must fail cleanly, never crash.

usage: bad_models.py PATH/TO/precis

Each case is built in a temporary folder and checked with `precis inspect` and
`precis run` (its inputs passed as .npy files): the exit status must be the
expected one (0 for inspect when the fault only shows with the input data), and
a failing command must print exactly one stderr line, 'precis: error: ...',
naming the fault. Exit statuses: 2 invalid input, 5 unsupported, 6 inconsistent
shapes, 7 too big (see tools/precis/main.c). Under an ASan/UBSan build a report
changes the status or adds stderr lines, so the same checks catch those.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import casegen  # noqa: E402

A, I64 = np.array, (lambda *v: np.array(v, np.int64))
F = np.arange(12, dtype=np.float32).reshape(3, 4)
f32, f64, i32, i8, u8 = np.float32, np.float64, np.int32, np.int8, np.uint8
ONE = A([1], f32)
T = lambda *shape, dt=f32: np.ones(shape, dt)  # noqa: E731 - placeholder data of a shape
QLC = lambda xz, ws: [T(1, 2, 5, 5, dt=u8), A(1, f32), xz, T(3, 2, 3, 3, dt=u8), ws, A([0, 0, 0], u8), A(1, f32), A(0, u8)]  # noqa: E731

# name, op, inputs, attrs, opset, dummy outputs (their dtypes matter), inspect/run status, message part
CASES = [
    # data-dependent faults: inspect passes, run fails
    ("gather_oob", "Gather", [F, I64(0, 3)], dict(axis=0), 13, [ONE], 0, 2, "index 3"),
    ("gather_oob_neg", "Gather", [F, A([-5], i32)], dict(axis=1), 13, [ONE], 0, 2, "index -5"),
    ("gatherel_oob", "GatherElements", [F, A([[0, 9]], np.int64)], dict(axis=1), 13, [ONE], 0, 2, "index 9"),
    ("gathernd_oob", "GatherND", [F, I64(1, -5)], {}, 13, [ONE], 0, 2, "index -5"),
    ("scatterel_oob", "ScatterElements", [F, A([[4]], np.int64), A([[1]], f32)], dict(axis=0), 13, [ONE], 0, 2, "index 4"),
    ("scatter_oob", "Scatter", [F, A([[0, -9]], np.int64), A([[1, 2]], f32)], dict(axis=1), 10, [ONE], 0, 2, "index -9"),
    ("scatternd_oob", "ScatterND", [F, A([[3]], np.int64), np.ones((1, 4), f32)], {}, 13, [ONE], 0, 2, "index 3"),
    ("reshape_bad", "Reshape", [F, I64(5, -1)], {}, 13, [ONE], 0, 6, "cannot reshape"),
    ("reshape_two_neg", "Reshape", [F, I64(-1, -1)], {}, 13, [ONE], 0, 6, "more than one -1"),
    ("split_bad", "Split", [F, I64(1, 1)], dict(axis=1), 13, [ONE, ONE], 0, 6, "sums to 2"),
    ("squeeze_bad", "Squeeze", [F, I64(1)], {}, 13, [ONE], 0, 6, "cannot squeeze axis 1"),
    ("unsqueeze_dup", "Unsqueeze", [F, I64(0, 0)], {}, 13, [ONE], 0, 6, "more than once"),
    ("slice_step0", "Slice", [F, I64(0), I64(2), I64(0), I64(0)], {}, 13, [ONE], 0, 6, "step for axis 0 is 0"),
    ("slice_ends_2d", "Slice", [F, I64(0), A([[2]], np.int64)], {}, 13, [ONE], 6, 6, "ends must be 1-D"),
    ("expand_bad", "Expand", [F, I64(2, 4)], {}, 13, [ONE], 0, 6, "cannot broadcast"),
    ("tile_bad", "Tile", [F, I64(2)], {}, 13, [ONE], 0, 6, "repeats [2]"),
    ("pad_bad", "Pad", [F, I64(1, 1)], {}, 13, [ONE], 0, 6, "pads [1,1]"),
    ("pad_toocrop", "Pad", [F, I64(-2, 0, -2, 0)], {}, 13, [ONE], 0, 6, "invalid for axis 0"),
    ("cos_neg", "ConstantOfShape", [I64(2, -1)], {}, 9, [ONE], 0, 6, "negative dim"),
    ("range_zero_delta", "Range", [A(1, np.int64), A(5, np.int64), A(0, np.int64)], {}, 11, [I64(1)], 0, 6, "delta is 0"),
    ("huge_range", "Range", [A(0, np.int64), A(2**62, np.int64), A(1, np.int64)], {}, 11, [I64(1)], 0, 7, "too many elements"),
    ("huge_expand", "Expand", [F[:1, :1], I64(2**31, 2**31)], {}, 13, [ONE], 0, 7, "too many elements"),
    ("dropout_train_random", "Dropout", [F, A(0.5, f32), A(True)], {}, 13, [ONE, A([True])], 0, 5, "training_mode"),
    ("dropout_train_default_ratio", "Dropout", [F, None, A(True)], {}, 13, [ONE], 0, 5, "training_mode"),
    ("conv_4d", "Conv", [T(1, 1, 3, 3, 3, 3), T(1, 1, 2, 2, 2, 2)], {}, 17, [ONE], 0, 5, "4 spatial dims"),
    ("reduce_axis", "ReduceSum", [F, I64(2)], {}, 13, [ONE], 0, 6, "axis 2 out of range"),
    ("topk_k", "TopK", [F, I64(5)], {}, 11, [ONE, I64(1)], 0, 6, "k = 5 is larger"),
    ("topk_kneg", "TopK", [F, I64(-1)], {}, 11, [ONE, I64(1)], 0, 6, "k must be >= 0"),
    ("cumsum_axis", "CumSum", [F, A(5, np.int64)], {}, 14, [ONE], 0, 6, "axis 5 out of range"),
    # faults visible in the model alone: inspect fails too
    ("concat_bad", "Concat", [F, np.zeros((2, 3), f32)], dict(axis=0), 13, [ONE], 6, 6, "does not match"),
    ("d2s_bad", "DepthToSpace", [np.zeros((1, 3, 2, 2), f32)], dict(blocksize=2), 13, [ONE], 6, 6, "not divisible"),
    ("transpose_bad", "Transpose", [F], dict(perm=[0, 0]), 13, [ONE], 6, 6, "not a permutation"),
    ("resize_both", "Resize", [F, None, A([1, 2], f32), I64(3, 8)], {}, 13, [ONE], 6, 6, "only one of"),
    ("resize_neither", "Resize", [F], {}, 13, [ONE], 6, 6, "must be given"),
    ("resize_badmode", "Resize", [F, None, A([1, 2], f32)], dict(mode="bogus"), 13, [ONE], 6, 6, "'bogus'"),
    ("scatter_reduction", "Scatter", [F, A([[0]], np.int64), A([[1]], f32)], dict(reduction="add"), 10, [ONE], 6, 6, "reduction"),
    ("add_mixed", "Add", [ONE, A([1], i32)], {}, 17, [ONE], 6, 6, "dtype int32"),
    ("add_shape", "Add", [A([1, 2], f32), A([1, 2, 3], f32)], {}, 17, [ONE], 6, 6, "cannot broadcast"),
    ("legacy_bcast_bad", "Add", [A([[1, 2]], f32), A([1, 2, 3], f32)], dict(broadcast=1), 6, [ONE], 6, 6, "does not match"),
    ("mod_float_fmod0", "Mod", [ONE, ONE], {}, 17, [ONE], 6, 6, "fmod must be 1"),
    ("bitshift_dir", "BitShift", [A([1], u8), A([1], u8)], dict(direction="UP"), 17, [A([1], u8)], 6, 6, '"UP"'),
    ("sqrt_int", "Sqrt", [A([1], i32)], {}, 17, [A([1], i32)], 6, 6, "dtype int32"),
    ("clip_vec", "Clip", [A([1, 2], f32), A([1, 2], f32)], {}, 17, [ONE], 6, 6, "must be a scalar"),
    ("where_cond", "Where", [ONE, ONE, ONE], {}, 17, [ONE], 6, 6, "expected one of: bool"),
    ("quantize_axis", "QuantizeLinear", [A([[1, 2]], f32), A([1, 2, 3], f32)], {}, 17, [A([[1, 2]], u8)], 6, 6, "per-axis scale"),
    ("cast_bad", "Cast", [ONE], dict(to=99), 17, [ONE], 6, 6, "data type 99"),
    ("gelu_bad", "Gelu", [ONE], dict(approximate="fast"), 20, [ONE], 6, 6, "'fast'"),
    # conv family
    ("conv_wc", "Conv", [T(1, 3, 5, 5), T(2, 4, 3, 3)], {}, 17, [ONE], 6, 6, "input has 3 channels"),
    ("conv_group", "Conv", [T(1, 4, 5, 5), T(3, 2, 3, 3)], dict(group=2), 17, [ONE], 6, 6, "not divisible by group"),
    ("conv_pads_len", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3)], dict(pads=[1, 1]), 17, [ONE], 6, 6, "pads has 2 values"),
    ("conv_pads_neg", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3)], dict(pads=[-1, 0, 0, 0]), 17, [ONE], 6, 6, "pads[0] = -1"),
    ("conv_kbig", "Conv", [T(1, 3, 2, 2), T(2, 3, 3, 3)], {}, 17, [ONE], 6, 6, "kernel extent 3 exceeds"),
    ("conv_autopad", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3)], dict(auto_pad="FOO"), 17, [ONE], 6, 6, "'FOO'"),
    ("conv_rank", "Conv", [T(1, 3, 5, 5), T(2, 3, 3)], {}, 17, [ONE], 6, 6, "weights rank 3"),
    ("conv_rank2", "Conv", [T(3, 5), T(2, 5)], {}, 17, [ONE], 6, 6, "rank >= 3"),
    ("conv_bias", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3), T(3)], {}, 17, [ONE], 6, 6, "bias B has 3 entries"),
    ("conv_stride0", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3)], dict(strides=[0, 1]), 17, [ONE], 6, 6, "strides[0] = 0"),
    ("conv_ks_mismatch", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3)], dict(kernel_shape=[2, 2]), 17, [ONE], 6, 6, "kernel_shape[0] = 2"),
    ("conv_int", "Conv", [T(1, 3, 5, 5, dt=i32), T(2, 3, 3, 3, dt=i32)], {}, 17, [ONE], 6, 6, "got int32"),
    ("conv_mixed", "Conv", [T(1, 3, 5, 5), T(2, 3, 3, 3, dt=f64)], {}, 17, [ONE], 6, 6, "W (float64)"),
    ("conv_hugedil", "Conv", [T(1, 1, 5, 5), T(1, 1, 3, 3)], dict(dilations=[1 << 40, 1]), 17, [ONE], 6, 6, "dilations[0] = 1099511627776"),
    ("ct_wc", "ConvTranspose", [T(1, 3, 5, 5), T(2, 3, 3, 3)], {}, 17, [ONE], 6, 6, "input channels (3)"),
    ("ct_oshape", "ConvTranspose", [T(1, 3, 5, 5), T(3, 3, 3, 3)], dict(output_shape=[1, 2, 3]), 17, [ONE], 6, 6, "output_shape has 3 values"),
    ("ct_neg", "ConvTranspose", [T(1, 3, 1, 1), T(3, 3, 1, 1)], dict(pads=[2, 2, 2, 2]), 17, [ONE], 6, 6, "negative output size"),
    ("maxpool_noks", "MaxPool", [T(1, 3, 5, 5)], {}, 17, [ONE], 6, 6, "kernel_shape is required"),
    ("maxpool_rank", "MaxPool", [T(3, 5)], dict(kernel_shape=[2]), 17, [ONE], 6, 6, "rank >= 3"),
    ("maxpool_int32", "MaxPool", [T(1, 3, 5, 5, dt=i32)], dict(kernel_shape=[2, 2]), 17, [ONE], 6, 6, "int32"),
    ("maxpool_ceil2", "MaxPool", [T(1, 3, 5, 5)], dict(kernel_shape=[2, 2], ceil_mode=2), 17, [ONE], 6, 6, "ceil_mode"),
    ("avgpool_kbig", "AveragePool", [T(1, 3, 2, 2)], dict(kernel_shape=[3, 3]), 17, [ONE], 6, 6, "kernel extent 3 exceeds"),
    ("lppool_p0", "LpPool", [T(1, 3, 5, 5)], dict(kernel_shape=[2, 2], p=0), 11, [ONE], 6, 6, "p must be a positive"),
    ("gap_rank", "GlobalAveragePool", [T(3, 5)], {}, 17, [ONE], 6, 6, "rank >= 3"),
    ("lrn_nosize", "LRN", [T(1, 3, 5, 5)], {}, 17, [ONE], 6, 6, "size"),
    ("layernorm_axis", "LayerNormalization", [T(2, 3), T(3)], dict(axis=2), 17, [ONE], 6, 6, "axis 2 out of range"),
    ("layernorm_scale", "LayerNormalization", [T(2, 3), T(4)], {}, 17, [ONE], 6, 6, "Scale does not broadcast"),
    ("batchnorm_c", "BatchNormalization", [T(2, 3, 4), T(4), T(3), T(3), T(3)], {}, 17, [ONE], 6, 6, "scale has 4 entries"),
    ("batchnorm_missing", "BatchNormalization", [T(2, 3, 4), T(3), T(3)], {}, 17, [ONE], 6, 6, "input_mean"),
    ("instnorm_c", "InstanceNormalization", [T(2, 3, 4), T(4), T(3)], {}, 17, [ONE], 6, 6, "scale has 4 entries"),
    ("lpnorm_p3", "LpNormalization", [T(2, 3)], dict(p=3), 1, [ONE], 6, 6, "got 3"),
    ("qlinearconv_ws", "QLinearConv", QLC(A(0, u8), T(2)), {}, 10, [A([1], u8)], 6, 6, "w_scale has 2 entries"),
    ("qlinearconv_xz", "QLinearConv", QLC(A(0, i8), T(3)), {}, 10, [A([1], u8)], 6, 6, "x_zero_point (int8)"),
    ("convint_f32", "ConvInteger", [T(1, 2, 5, 5), T(3, 2, 3, 3, dt=u8)], {}, 10, [A([1], i32)], 6, 6, "got float32"),
    ("convint_wz", "ConvInteger", [T(1, 2, 5, 5, dt=u8), T(3, 2, 3, 3, dt=u8), A(0, u8), T(2, dt=u8)], {}, 10, [A([1], i32)], 6, 6, "w_zero_point has 2 entries"),
    # linalg family
    ("matmul_inner", "MatMul", [T(2, 3), T(4, 5)], {}, 13, [ONE], 6, 6, "inner dimensions differ"),
    ("matmul_batch", "MatMul", [T(2, 2, 3), T(3, 3, 5)], {}, 13, [ONE], 6, 6, "batch dimensions cannot be broadcast"),
    ("matmul_dtype", "MatMul", [T(2, 3), T(3, 5, dt=f64)], {}, 13, [ONE], 6, 6, "'B' (float64)"),
    ("matmul_scalar", "MatMul", [A(1, f32), T(3)], {}, 13, [ONE], 6, 6, "rank >= 1"),
    ("gemm_c", "Gemm", [T(2, 3), T(3, 5), T(3, 5)], {}, 13, [ONE], 6, 6, "cannot be broadcast to the output [2,5]"),
    ("gemm_rank", "Gemm", [T(2, 3, 1), T(3, 5)], {}, 13, [ONE], 6, 6, "A must be 2-D"),
    ("gemm_noc_o9", "Gemm", [T(2, 3), T(3, 5)], {}, 9, [ONE], 6, 6, "input C is required"),
    ("reduce_dup", "ReduceMean", [F], dict(axes=[1, -1]), 13, [ONE], 6, 6, "given twice"),
    ("reduce_attr_o18", "ReduceMean", [F], dict(axes=[1]), 18, [ONE], 6, 6, "'axes' is not allowed"),
    ("softmax_axis", "Softmax", [F], dict(axis=2), 13, [ONE], 6, 6, "axis 2 out of range"),
    ("softmax_int", "Softmax", [T(2, 3, dt=i32)], {}, 13, [ONE], 6, 6, "dtype int32"),
    ("einsum_label", "Einsum", [T(2, 3), T(3, 4)], dict(equation="ij,jk->iz"), 12, [ONE], 6, 6, "label 'z'"),
    ("einsum_size", "Einsum", [T(2, 3), T(4, 4)], dict(equation="ij,jk->ik"), 12, [ONE], 6, 6, "label 'j' has size 3"),
    ("einsum_terms", "Einsum", [T(2, 3)], dict(equation="ij,jk->ik"), 12, [ONE], 6, 6, "more terms"),
    ("einsum_rank", "Einsum", [T(2, 3)], dict(equation="ijk->i"), 12, [ONE], 6, 6, "3 labels"),
    ("argmax_axis", "ArgMax", [F], dict(axis=-3), 13, [I64(1)], 6, 6, "axis -3 out of range"),
    ("argmax_empty", "ArgMax", [T(2, 0)], dict(axis=1), 13, [I64(1)], 6, 6, "empty axis 1"),
    ("matmulint_zp", "MatMulInteger", [T(2, 3, dt=u8), T(3, 4, dt=u8), T(5, dt=u8)], {}, 10, [A([1], i32)], 6, 6, "a_zero_point uint8[5]"),
    ("qlinearmatmul_scale", "QLinearMatMul", [T(2, 3, dt=u8), A([1], f32), A([0], u8), T(3, 4, dt=u8), T(7), A([0], u8), A([1], f32), A([0], u8)],
     {}, 10, [A([1], u8)], 6, 6, "b_scale float32[7]"),
]


def check(precis, cmd, want, needle):
    """None when `precis cmd` behaves, else what went wrong."""
    try:
        p = subprocess.run([precis, *cmd], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "timed out"
    lines = p.stderr.splitlines()
    if p.returncode != want:
        return f"exit {p.returncode}, want {want}; stderr {p.stderr[-2000:]!r}"
    if want == 0:
        return f"stderr {p.stderr[-2000:]!r}" if p.stderr else None
    if len(lines) != 1 or not lines[0].startswith("precis: error:") or needle not in lines[0]:
        return f"want one 'precis: error:' line naming {needle!r}; stderr {p.stderr[-2000:]!r}"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    precis = os.path.abspath(sys.argv[1])
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        w = casegen.Writer(tmp)
        for name, op, inputs, attrs, opset, outs, want_inspect, want_run, needle in CASES:
            d, feeds = w.case(name, op, inputs, outs, attrs, opset, out_shapes=False)
            model, args = os.path.join(d, "model.onnx"), []
            for n, v in feeds.items():
                np.save(os.path.join(d, n + ".npy"), v)
                args += ["--input", f"{n}={os.path.join(d, n + '.npy')}"]
            errs = [f"{c}: {e}" for c, e in (
                ("inspect", check(precis, ["inspect", model], want_inspect, needle)),
                ("run", check(precis, ["run", model, "--quiet", *args], want_run, needle))) if e]
            if errs:
                failed += 1
                print(f"FAIL {name}: " + "; ".join(errs))
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
