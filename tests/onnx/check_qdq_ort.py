#!/usr/bin/env python3
"""`precis export-qdq` writes standard QDQ ONNX that ONNX Runtime runs, and ORT's
result agrees with precis's own INT8 engine built from the same calibration.

    check_qdq_ort.py PRECIS MODEL.onnx INPUT=DIMS[,INPUT=DIMS...] [--models-dir DIR]
                     [--calib-dir DIR] [--min-cos 0.999]

Random calibration samples (8, seeded) are written when --calib-dir is not given
(one-input models only); the same data builds the plan and the QDQ file. Every
output of ORT(QDQ) is compared with precis int8 (cosine) and with ORT on the
original FP32 model (reported). Exit 0 on agreement, 1 otherwise, 77 when
onnxruntime or the model is missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def cos(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na and nb else float(na == nb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("precis")
    ap.add_argument("model")
    ap.add_argument("inputs", help="NAME=DIMS,... e.g. input=1x3x16x16")
    ap.add_argument("--calib-dir")
    ap.add_argument("--calibrator", default="entropy")
    ap.add_argument("--min-cos", type=float, default=0.999)
    a = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime missing: skipped")
        return 77
    if not os.path.exists(a.model):
        print(f"{a.model} missing: skipped")
        return 77
    shapes = {}
    for item in a.inputs.split(","):
        n, d = item.split("=")
        shapes[n] = [int(x) for x in d.split("x")]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="precis-qdq-") as tmp:
        calib = a.calib_dir
        if not calib:
            if len(shapes) != 1:
                print("--calib-dir is needed for several inputs")
                return 1
            calib = os.path.join(tmp, "calib")
            os.makedirs(calib)
            (name, dims), = shapes.items()
            for i in range(8):
                np.save(os.path.join(calib, f"{i:03d}.npy"), rng.standard_normal(dims).astype(np.float32))
        qdq, plan = os.path.join(tmp, "m.qdq.onnx"), os.path.join(tmp, "m.plan")
        common = ["--calib-data", calib, "--calibrator", a.calibrator, "--threads", "1"]
        for cmd in ([a.precis, "export-qdq", a.model, "-o", qdq] + common,
                    [a.precis, "build", a.model, "-o", plan, "--precision", "int8"] + common):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
                return 1
        feeds = {}
        for n, d in shapes.items():  # a calibration folder per input: its last sample
            sub = os.path.join(calib, n)
            files = sorted(f for f in os.listdir(sub) if f.endswith(".npy")) if os.path.isdir(sub) else []
            feeds[n] = np.load(os.path.join(sub, files[-1])) if files else \
                rng.standard_normal(d).astype(np.float32)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sq = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])
        sf = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sq.get_outputs()]
        oq = sq.run(names, feeds)
        of = sf.run(names, feeds)
        out_dir = os.path.join(tmp, "out")
        os.makedirs(out_dir)
        cmd = [a.precis, "run", plan, "--output-dir", out_dir]
        for n, x in feeds.items():
            p = os.path.join(tmp, f"in{len(cmd)}.npy")
            np.save(p, x)
            cmd += ["--input", f"{n}={p}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"precis run: exit {r.returncode}\n{r.stderr}")
            return 1
        ok = True
        import re
        for n, q, f in zip(names, oq, of):
            p = np.load(os.path.join(out_dir, re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy"))
            c, cf = cos(p, q), cos(q, f)
            print(f"{n}: cos(precis int8, ORT QDQ) {c:.6f}; cos(ORT QDQ, ORT FP32) {cf:.5f}")
            ok &= c >= a.min_cos
        qops = sum(1 for nd in __import__("onnx").load(qdq).graph.node if nd.op_type == "QuantizeLinear")
        print(f"{os.path.basename(a.model)}: {qops} QuantizeLinear nodes; {'OK' if ok else 'FAILED'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
