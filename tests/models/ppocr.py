"""PP-OCR models on real data: shared by prep_data.py, test_ppocr.py and demo.py.

Files live in $PRECIS_CACHE (default ~/.cache/precis), fetched by
scripts/fetch_models.sh:  models/*.onnx, models/ppocr_keys.txt, data/page.png.
prep_data.py writes data/<case>.npy and data/truth.json there.

Preprocessing follows RapidOCR 1.4.4 (the wheel the models come from):
BGR channel order, x/255, then (x - 0.5) / 0.5 for all three models; rec and cls
resize to height 48 keeping the aspect ratio and pad with zeros on the right.
(Pillow's bilinear resize stands in for cv2.resize.)
"""
import json
import math
import os
import re
import subprocess
import time

import numpy as np

CACHE = os.environ.get("PRECIS_CACHE") or os.path.expanduser("~/.cache/precis")
MODELS = os.path.join(CACHE, "models")
DATA = os.path.join(CACHE, "data")

MODEL_FILES = {
    "det": "ch_PP-OCRv4_det_infer.onnx",
    "rec": "ch_PP-OCRv4_rec_infer.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
}
# (case name = input file data/<case>.npy, model)
CASES = [
    ("det_page", "det"),     # the scanned page, 768x384
    ("rec_lines", "rec"),    # 8 text lines rendered with DejaVu fonts, 48x320
    ("rec_page", "rec"),     # the 7 text lines cropped from the scanned page
    ("cls_lines", "cls"),    # rendered + page lines, upright and rotated 180 degrees
]
CLS_LABELS = ["0", "180"]
DET_THRESH = 0.3


def model_path(model):
    return os.path.join(MODELS, MODEL_FILES[model])


def input_path(case):
    return os.path.join(DATA, case + ".npy")


def missing_files():
    need = [model_path(m) for m in MODEL_FILES] + [os.path.join(MODELS, "ppocr_keys.txt")]
    need += [input_path(c) for c, _ in CASES] + [os.path.join(DATA, "truth.json")]
    return [p for p in need if not os.path.exists(p)]


def load_truth():
    with open(os.path.join(DATA, "truth.json"), encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- preprocessing

def normalize(img_bgr_u8):
    """HxWx3 uint8 -> 3xHxW float32, (x/255 - 0.5) / 0.5."""
    x = img_bgr_u8.astype(np.float32).transpose(2, 0, 1) / 255.0
    return (x - 0.5) / 0.5


def resize(img_u8, w, h):
    from PIL import Image
    return np.asarray(Image.fromarray(img_u8).resize((w, h), Image.BILINEAR))


def resize_norm_line(img_bgr_u8, width, height=48):
    """RapidOCR's resize_norm_img for rec and cls: keep aspect, pad to width."""
    h, w = img_bgr_u8.shape[:2]
    rw = min(width, int(math.ceil(height * w / float(h))))
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :rw] = normalize(resize(img_bgr_u8, rw, height))
    return out


def rec_batch(lines_bgr, min_width=320, height=48):
    """RapidOCR's rec batching: width = height * max(320/48, widest w/h ratio)."""
    ratio = max([min_width / height] + [im.shape[1] / im.shape[0] for im in lines_bgr])
    width = int(height * ratio)
    return np.stack([resize_norm_line(im, width, height) for im in lines_bgr])


# ---------------------------------------------------------------- running

def output_file_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


class Ort:
    """One ONNX Runtime CPU session (default thread count)."""

    def __init__(self, model):
        import onnxruntime as ort
        self.sess = ort.InferenceSession(model_path(model), providers=["CPUExecutionProvider"])
        self.input = self.sess.get_inputs()[0].name
        self.outputs = [o.name for o in self.sess.get_outputs()]

    def run(self, x, repeat=3):
        """Returns ({name: array}, best wall seconds of `repeat` runs)."""
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            ys = self.sess.run(self.outputs, {self.input: x})
            best = min(best, time.perf_counter() - t)
        return dict(zip(self.outputs, ys)), best


def run_precis(precis, model, case, input_name, output_names, out_dir):
    """Runs `precis run` once. Returns ({name: array}, run seconds, CLI wall seconds).
    Run seconds: what the CLI reports ("ran in X ms"), None if it reports nothing."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [precis, "run", model_path(model), "--input", f"{input_name}={input_path(case)}",
           "--output-dir", out_dir]
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {p.returncode}:\n{p.stdout[-4000:]}")
    outs = {}
    for name in output_names:
        path = os.path.join(out_dir, output_file_name(name))
        if not os.path.exists(path):
            raise RuntimeError(f"precis wrote no {path} for output '{name}'")
        outs[name] = np.load(path)
    m = re.search(r"ran in ([0-9.]+) ms", p.stdout)
    return outs, (float(m.group(1)) / 1e3 if m else None), wall


def compare(got, ref):
    """(max abs diff, cosine similarity) over all elements, in float64."""
    a = np.asarray(got, np.float64).ravel()
    b = np.asarray(ref, np.float64).ravel()
    if a.shape != b.shape:
        return float("inf"), float("nan")
    if a.size == 0:
        return 0.0, 1.0
    diff = float(np.max(np.abs(a - b)))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        cos = 1.0 if na == nb else 0.0
    else:
        cos = float(np.dot(a, b) / (na * nb))
    return diff, cos


def fmt_cos(cos):
    """Cosine for people: 0.999876 as is, values within 1e-6 of 1 as 1-2.3e-11."""
    return f"{cos:.6f}" if not cos > 0.999999 else f"1-{max(1.0 - cos, 0.0):.1e}"


# ---------------------------------------------------------------- postprocessing

def load_keys():
    """CTC classes: blank, then the characters of ppocr_keys.txt, then space."""
    with open(os.path.join(MODELS, "ppocr_keys.txt"), encoding="utf-8") as f:
        chars = f.read().split("\n")[:-1]
    return ["<blank>"] + chars + [" "]


def ctc_greedy(probs, keys):
    """probs: T x C for one line. Argmax per step, merge repeats, drop blanks."""
    idx = probs.argmax(axis=-1)
    out, prev = [], -1
    for i in idx:
        if i != prev and i != 0:
            out.append(keys[i])
        prev = i
    return "".join(out)


def count_boxes(prob_map, thresh=DET_THRESH, min_pixels=20):
    """Connected components (4-neighbour) of prob_map > thresh with >= min_pixels."""
    fg = prob_map > thresh
    h, w = fg.shape
    seen = np.zeros_like(fg)
    sizes = []
    for y0, x0 in zip(*np.nonzero(fg)):
        if seen[y0, x0]:
            continue
        seen[y0, x0] = True
        stack, n = [(y0, x0)], 0
        while stack:
            y, x = stack.pop()
            n += 1
            for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                if 0 <= ny < h and 0 <= nx < w and fg[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    stack.append((ny, nx))
        sizes.append(n)
    return sum(1 for s in sizes if s >= min_pixels)


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
