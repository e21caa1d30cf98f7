#!/usr/bin/env python3
"""Cross-check precis's image decoding and preprocessing (src/io/image.c) on
real photos against Python: PIL for decoding, NumPy for the bilinear resize
(half-pixel centres, clamped, no antialias: torch's interpolate with
align_corners=False, antialias=False), torchvision's resize/centre-crop
size rules, and PIL's own BILINEAR where it is meant to agree (enlarging).

The C side runs through the unit test's test mode:
    test_calib_data --prep IMAGE SPEC OUT.npy

Usage: python3 tests/io/check_image_prep.py [--bin build/tests/test_calib_data]
                                            [--photos DIR]
Photos default to $PRECIS_CACHE/data/efficientnet/photos (fetched by
scripts/fetch_models.sh); with none there the check is skipped (exit 0).
Exit status 1 when any comparison is out of tolerance.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_c(binary, image, spec):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.npy")
        r = subprocess.run([binary, "--prep", image, spec, out], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{binary} --prep {image} '{spec}': {r.stderr.strip()}")
        return np.load(out)


def coords(n_out, n_in):
    s = (np.arange(n_out, dtype=np.float64) + 0.5) * n_in / n_out - 0.5
    s = np.maximum(s, 0.0)
    i0 = np.minimum(np.floor(s).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, s - i0


def bilinear(img, oh, ow):
    """img: H x W x 3 float64 -> oh x ow x 3, half-pixel, clamped, no antialias."""
    y0, y1, fy = coords(oh, img.shape[0])
    x0, x1, fx = coords(ow, img.shape[1])
    fx = fx[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bot = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy[:, None, None]) + bot * fy[:, None, None]


def short_side(h, w, s):
    """torchvision: shorter side to s, longer int(s * long / short)."""
    return (s, int(s * w / h)) if h <= w else (int(s * h / w), s)


def centre_crop(img, ch, cw):
    top = int(round((img.shape[0] - ch) / 2.0))
    left = int(round((img.shape[1] - cw) / 2.0))
    return img[top:top + ch, left:left + cw]


def to_layout(x, bgr, nhwc):
    if bgr:
        x = x[:, :, ::-1]
    return x[None] if nhwc else x.transpose(2, 0, 1)[None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "tests", "test_calib_data"))
    cache = os.environ.get("PRECIS_CACHE", os.path.expanduser("~/.cache/precis"))
    ap.add_argument("--photos", default=os.path.join(cache, "data", "efficientnet", "photos"))
    a = ap.parse_args()
    photos = sorted(glob.glob(os.path.join(a.photos, "*.jpg")) +
                    glob.glob(os.path.join(a.photos, "*.png")))
    if not photos:
        print(f"check_image_prep: skipped (no photos in {a.photos})")
        return 0
    if not os.access(a.bin, os.X_OK):
        print(f"check_image_prep: {a.bin} not built (cmake --build build --target test_calib_data)")
        return 1
    mean = np.array([0.485, 0.456, 0.406])
    std = np.array([0.229, 0.224, 0.225])
    imagenet = "mean=0.485:0.456:0.406,std=0.229:0.224:0.225"
    failed = 0

    def report(name, got, want, tol):
        nonlocal failed
        if got.shape != want.shape:
            print(f"  FAIL {name}: shape {got.shape} vs {want.shape}")
            failed += 1
            return
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        ok = err <= tol
        failed += not ok
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: max |diff| {err:.3g} (tolerance {tol:.3g})")

    for path in photos:
        pil = Image.open(path).convert("RGB")
        px = np.asarray(pil).astype(np.float64)
        h, w = px.shape[:2]
        print(f"{os.path.basename(path)} ({w}x{h})")
        # 1. decoding: pixels exactly as PIL's
        got = run_c(a.bin, path, "scale=1,layout=nhwc")
        report("decode == PIL", got[0], px, 0.0)
        # 2. ImageNet eval pipeline (shrinks): NumPy reference, and how far PIL's
        #    antialiased BILINEAR is (informational)
        rh, rw = short_side(h, w, 256)
        ref = centre_crop(bilinear(px, rh, rw), 224, 224) / 255.0
        got = run_c(a.bin, path, "resize=256,crop=224," + imagenet)
        report("resize=256,crop=224 vs NumPy", got, to_layout((ref - mean) / std, False, False), 2e-5)
        pil_aa = np.asarray(pil.resize((rw, rh), Image.BILINEAR)).astype(np.float64)
        pil_aa = centre_crop(pil_aa, 224, 224) / 255.0
        d = np.abs(got - to_layout((pil_aa - mean) / std, False, False))
        print(f"       (PIL BILINEAR antialiases when shrinking: mean |diff| {d.mean():.3g}, "
              f"max {d.max():.3g}; not checked)")
        # 3. enlarging to odd sizes: PIL BILINEAR agrees up to its 8-bit rounding
        oh, ow = h * 3 // 2 + 1, w * 5 // 4 + 3
        got = run_c(a.bin, path, f"resize={oh}x{ow}")
        ref = bilinear(px, oh, ow)
        report("enlarge vs NumPy", got, to_layout(ref / 255.0, False, False), 2e-6)
        pil_up = np.asarray(pil.resize((ow, oh), Image.BILINEAR)).astype(np.float64)
        report("enlarge vs PIL BILINEAR", got, to_layout(pil_up / 255.0, False, False), 1.01 / 255)
        # 4. Caffe style: BGR, NHWC, 0..255 with BGR means, shorter side up, odd crop
        spec = "resize=300,crop=257x255,scale=1,mean=103.94:116.78:123.68,order=bgr,layout=nhwc"
        rh, rw = short_side(h, w, 300)
        ref = centre_crop(bilinear(px, rh, rw), 257, 255)
        ref = to_layout(ref, True, True) - np.array([103.94, 116.78, 123.68])
        report("bgr nhwc 0..255", run_c(a.bin, path, spec), ref, 5e-4)
    print(f"check_image_prep: {'FAILED ' + str(failed) if failed else 'all ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
