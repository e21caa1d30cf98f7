#!/usr/bin/env python3
"""EfficientNet-Lite0 (real ImageNet weights) on real photos: ONNX Runtime and precis.

(a) the converted model under ONNX Runtime: prints each photo's top-5 classes and
    probabilities, and requires the expected class at top-1 for the clear cases
    ('top1') and in the top 5 for the plausible ones ('top5'); photos without a
    fitting ImageNet class are only reported.
(b) precis vs ONNX Runtime on the same inputs, all photos as one batch of N and the
    first photo alone as a batch of 1: per output max abs diff and cosine
    (>= 0.99999), and top-1 agreement on every photo.
Fails (does not skip) when the model or the inputs are missing: run
models/efficientnet/fetch_convert.py first (`make test` does).

usage: test_efficientnet.py --precis build/precis [--out DIR] [--min-cosine 0.99999]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("PRECIS_CACHE") or os.path.expanduser("~/.cache/precis")
MODEL = os.path.join(CACHE, "models/efficientnet/efficientnet_lite0.onnx")
DATA = os.path.join(CACHE, "data/efficientnet")


def softmax(y):
    import numpy as np
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def compare(got, ref):
    import numpy as np
    a = np.asarray(got, np.float64).ravel()
    b = np.asarray(ref, np.float64).ravel()
    if a.shape != b.shape:
        return float("inf"), float("nan")
    diff = float(np.max(np.abs(a - b)))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    cos = float(a @ b / (na * nb)) if na and nb else (1.0 if na == nb else 0.0)
    return diff, cos


def run_precis(precis, x, out_dir):
    import numpy as np
    os.makedirs(out_dir, exist_ok=True)
    inp = os.path.join(out_dir, "input.npy")
    np.save(inp, x)
    cmd = [precis, "run", MODEL, "--input", f"input={inp}", "--output-dir", out_dir]
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {p.returncode}:\n{p.stdout[-4000:]}")
    path = os.path.join(out_dir, "logits.npy")
    if not os.path.exists(path):
        raise RuntimeError(f"precis wrote no {path}")
    return np.load(path), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True, help="path to the precis CLI")
    ap.add_argument("--out", help="directory for precis outputs (default: a temp dir)")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    args = ap.parse_args()
    t0 = time.perf_counter()

    need = [MODEL, os.path.join(DATA, "images.json"), os.path.join(DATA, "imagenet_labels.txt")]
    missing = [p for p in need if not os.path.exists(p)]
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        print("      run models/efficientnet/fetch_convert.py (make test does)")
        print("0 passed, 1 failed")
        return 1
    if not os.access(args.precis, os.X_OK):
        print(f"FAIL: no precis CLI at {args.precis}")
        print("0 passed, 1 failed")
        return 1

    import numpy as np
    import onnxruntime as ort
    labels = [line.split(" ", 1)[1].strip() for line in open(os.path.join(DATA, "imagenet_labels.txt"))]
    assert len(labels) == 1000
    images = json.load(open(os.path.join(DATA, "images.json")))
    x = np.concatenate([np.load(os.path.join(DATA, im["npy"])) for im in images]).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"])
    ref = sess.run(["logits"], {"input": x})[0]
    passed, failed = 0, []

    def check(ok, what):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failed.append(what)
        return "ok" if ok else "FAIL"

    # (a) the model itself, under ONNX Runtime
    print("(a) ONNX Runtime: top-5 per photo")
    prob = softmax(ref.astype(np.float64))
    for im, p in zip(images, prob):
        top = np.argsort(-p)[:5]
        tops = ", ".join(f"{labels[i]} {p[i]:.3f}" for i in top)
        exp, kind = im["expect"], im["check"]
        if kind == "top1":
            verdict = check(int(top[0]) in exp, f"{im['name']}: top-1 {labels[top[0]]}")
        elif kind == "top5":
            verdict = check(any(int(i) in exp for i in top), f"{im['name']}: top-5 misses expected")
        else:
            verdict = "(report only)"
        print(f"  {im['name']:<10} {kind or '-':<5} {verdict:<13} {tops}")

    # (b) precis vs ONNX Runtime
    out_root = args.out or tempfile.mkdtemp(prefix="precis-effnet-")
    print(f"(b) precis vs ONNX Runtime (min cosine {args.min_cosine})")
    print(f"  {'case':<10} {'shape':<12} {'max abs diff':>12} {'cosine':>12} {'1 - cosine':>10} {'top-1 agree':>12} {'precis s':>9}")
    for case, xs, rs in (("batch%d" % len(x), x, ref), ("batch1", x[:1], ref[:1])):
        try:
            got, wall = run_precis(args.precis, xs, os.path.join(out_root, case))
        except RuntimeError as e:
            print(f"  {case:<10} precis failed: {e}")
            check(False, f"{case}: precis failed")
            continue
        diff, cos = compare(got, rs)
        agree = int((got.reshape(rs.shape).argmax(-1) == rs.argmax(-1)).sum()) if got.size == rs.size else 0
        ok = got.shape == rs.shape and cos >= args.min_cosine and agree == len(rs)
        verdict = check(ok, f"{case}: shape {got.shape} cosine {cos:.7f} top-1 {agree}/{len(rs)}")
        print(f"  {case:<10} {str(tuple(got.shape)):<12} {diff:>12.3e} {cos:>12.9f} {1 - cos:>10.2e} "
              f"{agree:>7}/{len(rs):<4} {wall:>9.2f}  {verdict}")

    for f in failed:
        print("FAIL: " + f)
    print(f"({time.perf_counter() - t0:.1f} s)")
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
