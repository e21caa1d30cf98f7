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
f32, i32, u8 = np.float32, np.int32, np.uint8
ONE = A([1], f32)

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
