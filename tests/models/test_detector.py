#!/usr/bin/env python3
"""Oracle test: precis (CLI, ref backend) against ONNX Runtime on two real detectors,
real photos (see models/detector/README.md):
  yolov8n     NudeNet's YOLOv8n, 320x320 (Conv/SiLU/Split/Concat/MaxPool/Resize/Softmax,
              plus the shape arithmetic of a dynamic-shape export), opset 17
  centerface  CenterFace (MobileNetV2 + FPN: Conv/Relu/ConvTranspose/BN), 640x640, opset 9
For every model x image: per output max abs diff and cosine (>= --min-cosine), then the
model's standard post-processing (threshold + NMS, numpy) on both and box-level
agreement: every detection of one side must have a partner of the same class with
IoU >= 0.9 on the other (a detection within 0.01 of the score threshold may lack one).
Prints the detections in original-image pixels for a human to judge, and the
single-thread run times of both (precis: its own 'ran in' figure, min of --repeat
runs; ORT: min of --repeat session.run calls after one warm-up). Also requires
`precis inspect` to mark no op type unsupported. Fails (does not skip) when files are missing: run
models/detector/fetch.py first.

usage: test_detector.py --precis build/precis [--all] [--models yolov8n,centerface]
                        [--repeat N] [--out DIR] [--min-cosine 0.99999]
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("PRECIS_CACHE") or os.path.expanduser("~/.cache/precis")
MDIR = os.path.join(CACHE, "models", "detector")
DDIR = os.path.join(CACHE, "data", "detector")
DEFAULT_IMAGES = ["astronaut", "camera"]
ALL_IMAGES = ["astronaut", "camera", "person"]

YOLO_CONF, YOLO_IOU = 0.25, 0.45   # NudeNet's and Ultralytics' defaults
CF_CONF, CF_IOU = 0.5, 0.3         # CenterFace's demo: heatmap threshold, NMS IoU
MATCH_IOU, BORDER = 0.9, 0.01
LOW = {"yolov8n": 0.05, "centerface": 0.05}  # second, looser check: many more boxes


def iou(a, b):
    """a: [4], b: [M,4] as x1,y1,x2,y2 -> [M]"""
    import numpy as np
    x1 = np.maximum(a[0], b[:, 0]); y1 = np.maximum(a[1], b[:, 1])
    x2 = np.minimum(a[2], b[:, 2]); y2 = np.minimum(a[3], b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda r: (r[..., 2] - r[..., 0]) * (r[..., 3] - r[..., 1])
    return inter / np.maximum(area(a) + area(b) - inter, 1e-9)


def nms(boxes, scores, thr):
    import numpy as np
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        order = order[1:][iou(boxes[i], boxes[order[1:]]) <= thr]
    return keep


def post_yolo(outs, names, conf=YOLO_CONF):
    """output0 [1, 4+C, N]: cx, cy, w, h, class scores (already sigmoid). Class-agnostic NMS."""
    import numpy as np
    p = outs[0][0].T
    cls = p[:, 4:].argmax(1)
    score = p[:, 4:].max(1)
    m = score >= conf
    p, cls, score = p[m], cls[m], score[m]
    b = np.stack([p[:, 0] - p[:, 2] / 2, p[:, 1] - p[:, 3] / 2,
                  p[:, 0] + p[:, 2] / 2, p[:, 1] + p[:, 3] / 2], 1)
    k = nms(b, score, YOLO_IOU)
    return [(names.get(int(cls[i]), str(cls[i])), float(score[i]), b[i]) for i in k]


def post_centerface(outs, names, conf=CF_CONF):
    """heatmap [1,1,H/4,W/4], scale [1,2,..] (log h, log w), offset [1,2,..] (dy, dx)."""
    import numpy as np
    heat, scale, off = outs[0][0, 0], outs[1][0], outs[2][0]
    H, W = heat.shape[0] * 4, heat.shape[1] * 4
    ys, xs = np.where(heat > conf)
    boxes, scores = [], []
    for y, x in zip(ys, xs):
        s0, s1 = np.exp(scale[0, y, x]) * 4, np.exp(scale[1, y, x]) * 4
        x1 = max(0.0, (x + off[1, y, x] + 0.5) * 4 - s1 / 2)
        y1 = max(0.0, (y + off[0, y, x] + 0.5) * 4 - s0 / 2)
        x1, y1 = min(x1, W), min(y1, H)
        boxes.append([x1, y1, min(x1 + s1, W), min(y1 + s0, H)])
        scores.append(heat[y, x])
    if not boxes:
        return []
    boxes, scores = np.array(boxes, np.float64), np.array(scores, np.float64)
    return [("face", float(scores[i]), boxes[i]) for i in nms(boxes, scores, CF_IOU)]


MODELS = {
    # name: (file, input, data prefix, post-processing, score threshold)
    "yolov8n": ("320n.onnx", "images", "yolo320", post_yolo, YOLO_CONF),
    "centerface": ("centerface_dyn.onnx", "input.1", "cf640", post_centerface, CF_CONF),
}


def match(a, b, thr):
    """Detections of a lacking a same-class partner in b with IoU >= MATCH_IOU,
    ignoring those within BORDER of the threshold. Returns (unmatched, min IoU of matches)."""
    import numpy as np
    bad, worst = [], 1.0
    for cls, s, box in a:
        cand = [d[2] for d in b if d[0] == cls]
        best = float(iou(box, np.array(cand)).max()) if cand else 0.0
        if best >= MATCH_IOU:
            worst = min(worst, best)
        elif s - thr > BORDER:
            bad.append((cls, s, best))
    return bad, worst


def run_precis(precis, model, inp, x_path, out_dir, repeat):
    ms = []
    for _ in range(repeat):
        r = subprocess.run([precis, "run", model, "--input", f"{inp}={x_path}",
                            "--output-dir", out_dir, "--threads", "1"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
        m = re.search(r"ran in ([0-9.]+) ms", r.stdout)
        if m:
            ms.append(float(m.group(1)))
    return min(ms) if ms else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True, help="path to the precis CLI")
    ap.add_argument("--all", action="store_true", help="all images: " + ",".join(ALL_IMAGES))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per side for timing (min)")
    ap.add_argument("--out", help="directory for precis outputs (default: a temp dir)")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    args = ap.parse_args()
    models = args.models.split(",")
    if set(models) - set(MODELS):
        ap.error("unknown model(s): " + ", ".join(sorted(set(models) - set(MODELS))))
    images = ALL_IMAGES if args.all else DEFAULT_IMAGES

    need = [os.path.join(MDIR, MODELS[m][0]) for m in models]
    need += [os.path.join(DDIR, f"{MODELS[m][2]}_{i}.npy") for m in models for i in images]
    need.append(os.path.join(DDIR, "letterbox.json"))
    missing = [p for p in need if not os.path.isfile(p)]
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        print("      run models/detector/fetch.py first")
        print("0 passed, 1 failed")
        return 1
    if not os.access(args.precis, os.X_OK):
        print(f"FAIL: no precis CLI at {args.precis}")
        print("0 passed, 1 failed")
        return 1

    import numpy as np
    import onnxruntime as ort
    with open(os.path.join(DDIR, "letterbox.json")) as f:
        letterbox = json.load(f)
    out_root = args.out or tempfile.mkdtemp(prefix="precis-detector-")
    passed, failed = 0, 0
    t0 = time.time()
    for mname in models:
        fname, inp, prefix, post, thr = MODELS[mname]
        path = os.path.join(MDIR, fname)
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        so.log_severity_level = 3  # CenterFace lists its initializers as inputs: ORT warns per tensor
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        meta = sess.get_modelmeta().custom_metadata_map
        names = ast.literal_eval(meta["names"]) if "names" in meta else {}
        onames = [o.name for o in sess.get_outputs()]
        r = subprocess.run([args.precis, "inspect", path], capture_output=True, text=True)
        bad_ops = [l.split()[1] for l in r.stdout.splitlines() if l.startswith("  ! ")]
        if r.returncode != 0 or bad_ops:
            print(f"FAIL {mname}: precis inspect: exit {r.returncode}, unsupported ops: "
                  f"{', '.join(bad_ops) or '-'}")
            failed += 1
        else:
            print(f"== {mname}: precis inspect: all op types supported")
        for img in images:
            case = f"{mname}/{img}"
            errs = []
            x_path = os.path.join(DDIR, f"{prefix}_{img}.npy")
            x = np.load(x_path)
            ref = sess.run(None, {inp: x})
            ort_ms = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                sess.run(None, {inp: x})
                ort_ms.append((time.perf_counter() - t) * 1e3)
            out_dir = os.path.join(out_root, mname, img)
            try:
                p_ms = run_precis(args.precis, path, inp, x_path, out_dir, args.repeat)
                got = [np.load(os.path.join(out_dir, re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy"))
                       for n in onames]
            except (RuntimeError, OSError) as e:
                print(f"FAIL {case}: precis: {e}")
                failed += 1
                continue
            print(f"== {case}  input {list(x.shape)}  precis {p_ms:.1f} ms, "
                  f"ORT {min(ort_ms):.1f} ms (1 thread)")
            for n, r, g in zip(onames, ref, got):
                if r.shape != g.shape:
                    errs.append(f"{n}: shape {list(g.shape)} != ORT {list(r.shape)}")
                    continue
                r64, g64 = r.astype(np.float64).ravel(), g.astype(np.float64).ravel()
                cos = float(r64 @ g64 / max(np.linalg.norm(r64) * np.linalg.norm(g64), 1e-300))
                mad = float(np.abs(r64 - g64).max())
                print(f"   output {n:<8} {str(list(r.shape)):<18} max abs diff {mad:.3g}  "
                      f"cosine {cos:.9f} (1-cos {1 - cos:.1e})")
                if not cos >= args.min_cosine:
                    errs.append(f"{n}: cosine {cos:.9f} < {args.min_cosine}")
            if not errs:
                d_ref, d_got = post(ref, names), post(got, names)
                lb = letterbox[img][prefix]
                for cls, s, b in d_got:
                    ob = [(b[0] - lb["pad_x"]) / lb["scale"], (b[1] - lb["pad_y"]) / lb["scale"],
                          (b[2] - lb["pad_x"]) / lb["scale"], (b[3] - lb["pad_y"]) / lb["scale"]]
                    print(f"   {cls:<26} {s:.3f}  box x1,y1,x2,y2 = "
                          + ",".join(f"{v:.0f}" for v in ob) + f"  (of {lb['w']}x{lb['h']})")
                miss_a, w1 = match(d_ref, d_got, thr)
                miss_b, w2 = match(d_got, d_ref, thr)
                print(f"   boxes: ORT {len(d_ref)}, precis {len(d_got)}, "
                      f"min IoU of matched pairs {min(w1, w2):.4f}")
                for cls, s, best in miss_a:
                    errs.append(f"ORT box {cls} {s:.3f} unmatched in precis (best IoU {best:.3f})")
                for cls, s, best in miss_b:
                    errs.append(f"precis box {cls} {s:.3f} unmatched in ORT (best IoU {best:.3f})")
                lo = LOW[mname]
                l_ref, l_got = post(ref, names, lo), post(got, names, lo)
                la, w1 = match(l_ref, l_got, lo)
                lb_, w2 = match(l_got, l_ref, lo)
                print(f"   boxes at threshold {lo}: ORT {len(l_ref)}, precis {len(l_got)}, "
                      f"unmatched {len(la)} + {len(lb_)}, min IoU of matched pairs "
                      f"{min(w1, w2):.4f}")
                if len(la) + len(lb_) > max(1, 0.05 * len(l_ref)):
                    errs.append(f"threshold {lo}: {len(la) + len(lb_)} boxes unmatched")
            if errs:
                failed += 1
                for e in errs:
                    print(f"   FAIL {e}")
            else:
                passed += 1
    print(f"({time.time() - t0:.1f} s) {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
