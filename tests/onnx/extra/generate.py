#!/usr/bin/env python3
"""Writes the extra ONNX node-test cases for precis_conformance.

usage: generate.py OUTDIR [--perf]

OUTDIR is emptied first. --perf adds two large Resize cases for timing runs.
Deterministic (fixed seeds); needs python3 with numpy, onnx (>= 1.16) and onnxruntime.
"""
import os
import shutil
import sys
import warnings

import numpy as np

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import casegen  # noqa: E402
import conv_cases  # noqa: E402
import elem_cases  # noqa: E402
import linalg_cases  # noqa: E402
import node_cases  # noqa: E402
import tensor_cases  # noqa: E402


def perf_cases(w):
    x = np.random.default_rng(1).standard_normal((1, 256, 160, 160)).astype(np.float32)
    e, sc = np.zeros(0, np.float32), np.array([1, 1, 2, 2], np.float32)
    w.case("perf_resize_nearest_x2", "Resize", [x, e, sc], [x.repeat(2, 2).repeat(2, 3)],
           attrs=dict(mode="nearest"), opset=11)
    y = x
    for ax in (2, 3):  # half_pixel linear x2: source coordinate (i + 0.5) / 2 - 0.5, clamped
        n = x.shape[ax]
        s = np.clip((np.arange(2 * n) + 0.5) / 2 - 0.5, 0, n - 1)
        i0 = np.floor(s).astype(int)
        r = (s - i0).astype(np.float32)
        r = r.reshape(-1, 1) if ax == 2 else r
        y = np.take(y, i0, axis=ax) * (1 - r) + np.take(y, np.minimum(i0 + 1, n - 1), axis=ax) * r
    w.case("perf_resize_linear_x2", "Resize", [x, e, sc], [y], attrs=dict(mode="linear"), opset=11)


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--perf"]):
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")
    w = casegen.Writer(out)
    for m in (elem_cases, tensor_cases, node_cases, conv_cases, linalg_cases):
        m.build(w)
    if sys.argv[2:] == ["--perf"]:
        perf_cases(w)
    src = ", ".join(f"{k} {v}" for k, v in sorted(w.sources.items()))
    print(f"generated {w.count} cases in {out} (expected values from oracles: {src})")


if __name__ == "__main__":
    main()
