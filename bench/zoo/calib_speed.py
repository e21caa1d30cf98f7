#!/usr/bin/env python3
"""How long INT8 calibration takes and how much memory it needs: EfficientNet-Lite0
calibrated on N JPEG images (default 500) through precis's own image pipeline
(`--calib-data DIR --calib-preprocess ...`: decode, shorter side to 256, centre
crop 224, (x-127)/128 — the model's own preprocessing, bilinear instead of PIL's
bicubic), the whole `precis build --precision int8` timed and its peak RSS read
by /usr/bin/time-style getrusage of the child.

The images are random crops (40-100% of the shorter side), mirrored half of the
time, of the photos the zoo ships (bench/zoo/zoo.py), written as JPEGs at most
400 px on the longer side into a temporary folder.

    python3 bench/zoo/calib_speed.py [--precis build/precis] [--images 500]
                                     [--threads 2] [--out bench/results/calib_speed.json]
"""
import argparse
import glob
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("PRECIS_CACHE", os.path.expanduser("~/.cache/precis"))
SPEC = "resize=256,crop=224,scale=1,mean=127:127:127,std=128:128:128"


def make_images(n, d, seed=0):
    import numpy as np
    from PIL import Image
    src = sorted(glob.glob(os.path.join(CACHE, "data", "efficientnet", "photos", "*")) +
                 glob.glob(os.path.join(CACHE, "data", "detector", "*.png")) +
                 glob.glob(os.path.join(CACHE, "data", "detector", "*.jpg")))
    if not src:
        raise SystemExit("no photos: run `make data` first")
    photos = [Image.open(p).convert("RGB") for p in src]
    rng = np.random.default_rng(seed)
    for i in range(n):
        im = photos[i % len(photos)]
        w, h = im.size
        s = int(min(w, h) * rng.uniform(0.4, 1.0))
        x, y = int(rng.integers(0, w - s + 1)), int(rng.integers(0, h - s + 1))
        c = im.crop((x, y, x + s, y + s))
        if rng.random() < 0.5:
            c = c.transpose(Image.FLIP_LEFT_RIGHT)
        if s > 400:
            c = c.resize((400, 400), Image.BILINEAR)
        c.save(os.path.join(d, f"{i:04d}.jpg"), quality=90)
    return len(src)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "calib_speed.json"))
    a = ap.parse_args()
    model = os.path.join(CACHE, "models", "efficientnet", "efficientnet_lite0.onnx")
    res = {"command": "python3 bench/zoo/calib_speed.py " + " ".join(sys.argv[1:]),
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "threads": a.threads, "model": "efficientnet_lite0", "images": a.images,
           "preprocess": SPEC, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="precis-calib-") as tmp:
        d = os.path.join(tmp, "images")
        os.makedirs(d)
        res["photos"] = make_images(a.images, d)
        res["image_bytes"] = sum(os.path.getsize(p) for p in glob.glob(os.path.join(d, "*")))
        cache = os.path.join(tmp, "calib.cache")
        for run, extra in (("calibrate", []), ("from_cache_minmax", ["--calibrator", "minmax"])):
            cmd = [a.precis, "build", model, "-o", os.path.join(tmp, "m.plan"), "--precision", "int8",
                   "--threads", str(a.threads), "--calib-data", d, "--calib-preprocess", SPEC,
                   "--calib-cache", cache] + extra
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            secs = time.time() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                raise SystemExit(f"{run}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
            res["runs"][run] = {"seconds": secs, "peak_rss_mb": after.ru_maxrss / 1024,
                                "cpu_seconds": (after.ru_utime + after.ru_stime) -
                                (before.ru_utime + before.ru_stime), "stdout": r.stdout.strip()}
            print(f"{run}: {secs:.1f} s wall, peak RSS {after.ru_maxrss / 1024:.0f} MB", flush=True)
        res["cache_bytes"] = os.path.getsize(cache)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
