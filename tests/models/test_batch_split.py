#!/usr/bin/env python3
"""Batch splitting on the zoo: every zoo model, built with a dynamic batch and with the
batch fixed, run on a random batch whole (PRECIS_BATCH_SPLIT=0) and split per sample
(PRECIS_BATCH_SPLIT=1); the outputs must agree (1e-5 relative to the output's largest
value) and `precis bench` must report the split. fp32 and int8 for a CNN (int8
calibrated on the zoo's calibration samples, gathered into batches for the fixed plan).

usage: test_batch_split.py --precis build/precis
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

from checks import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
import zoo  # noqa: E402
from int8 import dump_calib  # noqa: E402

CACHE = os.environ.get("PRECIS_CACHE") or os.path.expanduser("~/.cache/precis")
M = os.path.join(CACHE, "models")


def cases(rng):
    f = lambda *s: rng.random(s, dtype=np.float32)
    ids = rng.integers(0, 30000, (3, 128)).astype(np.int64)
    return [
        ("yolov8n", "detector/320n.onnx", {"images": f(3, 3, 320, 320)}, None),
        ("minilm", "minilm/all-MiniLM-L6-v2.onnx",
         {"input_ids": ids, "attention_mask": np.ones((3, 128), np.int64),
          "token_type_ids": np.zeros((3, 128), np.int64)}, None),
        ("ppocr_det", "ch_PP-OCRv4_det_infer.onnx", {"x": f(2, 3, 256, 256)}, None),
        ("ppocr_rec", "ch_PP-OCRv4_rec_infer.onnx", {"x": f(3, 3, 48, 320)}, None),
        ("ppocr_cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": f(3, 3, 48, 192)}, None),
        ("efficientnet", "efficientnet/efficientnet_lite0.onnx", {"input": f(3, 3, 224, 224)},
         "efficientnet_lite0"),
        ("centerface", "detector/centerface_dyn.onnx", {"input.1": f(2, 3, 320, 320)}, None),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    a = ap.parse_args()
    check = Checks()

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        for name, rel, feeds, calib in cases(rng):
            path = os.path.join(M, rel)
            if not os.path.exists(path):
                check(False, f"{name}: missing {path} (make data)")
                continue
            args, shapes, bshape = [], [], []
            for k, v in feeds.items():
                p = os.path.join(d, k.replace(".", "_") + ".npy")
                np.save(p, v)
                args += ["--input", f"{k}={p}"]
                dims = "x".join(map(str, v.shape))
                shapes.append(f"{k}:{dims}/{dims}/{dims}")
                bshape += ["--shape", f"{k}={dims}"]
            builds = [("fp32 dynamic", []), ("fp32 fixed", ["--shapes", ",".join(shapes)])]
            if calib:  # the zoo's calibration samples of that model, 4 of them
                cal = os.path.join(d, calib + "_calib")
                dump_calib(zoo.models([calib])[0].calib[:4], cal)
                builds.append(("int8 fixed", ["--shapes", ",".join(shapes), "--precision", "int8",
                                              "--calib-data", cal]))
            for label, opts in builds:
                plan = os.path.join(d, "t.plan")
                r = subprocess.run([a.precis, "build", path, "-o", plan, "--threads", "2", *opts],
                                   capture_output=True, text=True)
                if r.returncode:
                    check(False, f"{name} {label}: build: {r.stderr.strip()[-300:]}")
                    continue
                outs = {}
                for v in "01":
                    o = os.path.join(d, "o" + v)
                    subprocess.run(["rm", "-rf", o])
                    r = subprocess.run([a.precis, "run", plan, *args, "--output-dir", o, "--quiet"],
                                       env=dict(os.environ, PRECIS_BATCH_SPLIT=v),
                                       capture_output=True, text=True)
                    check(r.returncode == 0, f"{name} {label} split={v}: {r.stderr.strip()[-300:]}")
                    outs[v] = {os.path.basename(f): np.load(f) for f in glob.glob(o + "/*.npy")}
                worst = 0.0
                check(len(outs["0"]) > 0 and outs["0"].keys() == outs["1"].keys(), f"{name} {label}: outputs")
                for k in outs["0"]:
                    x, y = outs["0"][k].astype(np.float64), outs["1"].get(k)
                    if y is None or x.shape != y.shape:
                        check(False, f"{name} {label} {k}: shape")
                        continue
                    worst = max(worst, float(np.abs(x - y).max() / (np.abs(x).max() + 1e-12)))
                check(worst <= 1e-5, f"{name} {label}: split vs whole {worst:.3g}")
                r = subprocess.run([a.precis, "bench", plan, "--iterations", "1", "--warmup", "0", *bshape],
                                   env=dict(os.environ, PRECIS_BATCH_SPLIT="1"), capture_output=True, text=True)
                said = "samples run one by one" in r.stdout
                check(said, f"{name} {label}: bench does not report the split: {r.stdout[-300:]}{r.stderr[-300:]}")
                print(f"  {name:13s} {label:13s} max rel diff split vs whole {worst:.2e}"
                      f"{'' if said else ' (not split)'}")
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
