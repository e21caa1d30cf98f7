#!/usr/bin/env python3
"""INT8 builds are reproducible: the same model, calibration data and calibrator give the same
calibration cache (byte for byte) and plans whose outputs are identical, however the machine's
timings fall. YOLOv8n (3x3 convolutions: the FP32 engine times Winograd against direct per
shape) and CenterFace, minmax at 2 threads, two builds each. The calibration engine takes no
timed choice (runtime/engine.h, untimed): before, two builds of YOLOv8n differed in 46108 of
its 46200 output values.

usage: test_int8_repro.py --precis build/precis
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

CASES = [("yolov8n", "images", (1, 3, 320, 320)), ("centerface", "input.1", (1, 3, 640, 640))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    a = ap.parse_args()
    check = Checks("test_int8_repro")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="precis-repro-") as d:
        ms = {m.name: m for m in zoo.models([c[0] for c in CASES])}
        for name, inp, shape in CASES:
            # the zoo's calibration samples (bench/zoo/zoo.py: 7 photos x 3 views), 8 of them
            m = ms[name]
            model, calib = m.path, os.path.join(d, name + "_calib")
            if not check(os.path.isfile(model), f"{name}: model", f"missing {model} (make data)"):
                continue
            dump_calib(m.calib[:8], calib)
            x = os.path.join(d, "x.npy")
            np.save(x, rng.random(shape, dtype=np.float32))
            caches, outs = [], []
            for i in range(2):
                plan, cache = os.path.join(d, f"{name}{i}.plan"), os.path.join(d, f"{name}{i}.calib")
                shp = "x".join(map(str, shape))
                r = subprocess.run([a.precis, "build", model, "-o", plan, "--precision", "int8",
                                    "--calib-data", calib, "--calibrator", "minmax",
                                    "--calib-cache", cache, "--threads", "2",
                                    "--shapes", f"{inp}:{shp}/{shp}/{shp}"],
                                   capture_output=True, text=True)
                if not check(r.returncode == 0, f"{name} build {i}", r.stderr.strip()[-300:]):
                    break
                o = os.path.join(d, f"out{i}")
                r = subprocess.run([a.precis, "run", plan, "--input", f"{inp}={x}",
                                    "--output-dir", o, "--quiet", "--threads", "2"],
                                   capture_output=True, text=True)
                if not check(r.returncode == 0, f"{name} run {i}", r.stderr.strip()[-300:]):
                    break
                with open(cache, "rb") as f:
                    caches.append(f.read())
                outs.append({os.path.basename(p): np.load(p) for p in glob.glob(o + "/*.npy")})
            if len(outs) < 2:
                continue
            check(caches[0] == caches[1], f"{name}: the two calibration caches are identical")
            same = outs[0].keys() == outs[1].keys() and len(outs[0]) > 0 and all(
                np.array_equal(outs[0][k], outs[1][k]) for k in outs[0])
            diff = sum(int(np.sum(outs[0][k] != outs[1].get(k, outs[0][k]))) for k in outs[0])
            check(same, f"{name}: the two plans' outputs are identical", f"{diff} values differ")
            print(f"{name}: caches {'identical' if caches[0] == caches[1] else 'DIFFER'}, "
                  f"outputs {'identical' if same else f'differ in {diff} values'}", flush=True)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
