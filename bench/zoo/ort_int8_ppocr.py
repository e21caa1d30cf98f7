#!/usr/bin/env python3
"""ONNX Runtime's own INT8 on PP-OCRv4 recognition and the direction classifier:
the bar precis INT8 has to beat (accuracy and speed), measured side by side with
ORT FP32 on the same inputs and threads.

    python3 bench/zoo/ort_int8_ppocr.py [--threads 2] [--out bench/results/ort_int8_ppocr.json]

Data (deterministic, disjoint): text lines rendered with Debian's DejaVu fonts
from sentences of /usr/share/common-licenses (base-files): the first licence
texts feed calibration, later ones evaluation; plus the 7 real lines of the
photographed page (evaluation only). Every line is preprocessed as RapidOCR does
(BGR, (x/255-0.5)/0.5, height 48) at a fixed width of 640 so that every
calibrator sees one shape.

Quantization: onnxruntime.quantization.quantize_static after quant_pre_process,
QDQ format, per-channel symmetric int8 weights, int8 activations, calibrators
MinMax and Entropy (and Percentile 99.999), the same calibration lines for all.
Metrics: character error rate (CER) against ground truth and against FP32's
text, classifier accuracy on upright / 180-degree-rotated lines, median latency
per line (batch 1) over the evaluation set.
"""
import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import ppocr  # noqa: E402
import prep_data  # noqa: E402

FONTS = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf",
         "DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf"]
WIDTH = 640  # fixed (ORT's calibrators want one shape); fits the longest line unsquashed
LICENSES = "/usr/share/common-licenses"


def sentences(names, count, seed):
    """Short lines (3..7 words) cut from licence texts, deterministic."""
    words = []
    for n in names:
        with open(os.path.join(LICENSES, n), encoding="utf-8", errors="replace") as f:
            words += re.findall(r"[A-Za-z0-9][A-Za-z0-9,.;:()'\-]*", f.read())
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        i = int(rng.integers(0, len(words) - 8))
        line = " ".join(words[i:i + int(rng.integers(3, 8))])
        if 8 <= len(line) <= 28:
            out.append(line)
    return out


def render_lines(texts, seed):
    rng = np.random.default_rng(seed)
    imgs = []
    for i, t in enumerate(texts):
        ink, paper = int(rng.integers(0, 70)), int(rng.integers(215, 256))
        imgs.append(prep_data.to_bgr(prep_data.render(t, FONTS[i % len(FONTS)], ink, paper)))
    return imgs


def rec_inputs(imgs):
    return [ppocr.resize_norm_line(im, WIDTH)[None] for im in imgs]


def cls_inputs(imgs):
    ups = [ppocr.resize_norm_line(im, 192)[None] for im in imgs]
    downs = [ppocr.resize_norm_line(np.ascontiguousarray(im[::-1, ::-1]), 192)[None] for im in imgs]
    return ups + downs, [0] * len(ups) + [1] * len(downs)


class Reader(CalibrationDataReader):
    def __init__(self, name, batches):
        self.name, self.it = name, iter(batches)

    def get_next(self):
        x = next(self.it, None)
        return None if x is None else {self.name: x}


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_all(sess, xs):
    name = sess.get_inputs()[0].name
    outs, times = [], []
    sess.run(None, {name: xs[0]})  # warm-up
    for x in xs:
        t = time.perf_counter()
        outs.append(sess.run(None, {name: x})[0])
        times.append(time.perf_counter() - t)
    return outs, statistics.median(times) * 1e3


def cer(hyps, refs):
    errs = sum(ppocr.edit_distance(h, r) for h, r in zip(hyps, refs))
    return errs / max(1, sum(len(r) for r in refs))


def quantize(fp32, out, calib, method, tmp):
    """quantize_static as ORT's docs prescribe. The PP-OCR models are opset 11/12, where
    DequantizeLinear has no per-channel axis: they are first converted to opset 13."""
    pre = os.path.join(tmp, os.path.basename(fp32).replace(".onnx", ".pre.onnx"))
    if not os.path.exists(pre):
        up = os.path.join(tmp, os.path.basename(fp32).replace(".onnx", ".op13.onnx"))
        onnx.save(version_converter.convert_version(onnx.load(fp32), 13), up)
        quant_pre_process(up, pre, skip_symbolic_shape=True)
    name = ort.InferenceSession(pre, providers=["CPUExecutionProvider"]).get_inputs()[0].name
    extra = {"CalibPercentile": 99.999} if method == CalibrationMethod.Percentile else {}
    quantize_static(pre, out, Reader(name, calib), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=method, extra_options=extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calib", type=int, default=32, help="calibration lines")
    ap.add_argument("--eval", type=int, default=64, help="rendered evaluation lines")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "ort_int8_ppocr.json"))
    args = ap.parse_args()

    lic = sorted(n for n in os.listdir(LICENSES) if os.path.isfile(os.path.join(LICENSES, n)))
    calib_txt = sentences(lic[:3], args.calib, seed=1)
    eval_txt = sentences(lic[3:], args.eval, seed=2)
    assert not set(calib_txt) & set(eval_txt)
    page = Image.open(os.path.join(ppocr.DATA, "page.png")).convert("L")
    page_imgs = [prep_data.to_bgr(page.crop(box)) for _, box in prep_data.PAGE_LINES]
    calib_imgs = render_lines(calib_txt, seed=3)
    eval_imgs = render_lines(eval_txt, seed=4) + page_imgs
    truth = eval_txt + [t for t, _ in prep_data.PAGE_LINES]
    keys = ppocr.load_keys()
    methods = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
               "percentile": CalibrationMethod.Percentile}
    result = {
        "command": "python3 bench/zoo/ort_int8_ppocr.py " + " ".join(sys.argv[1:]),
        "onnxruntime": ort.__version__, "machine": platform.processor() or platform.machine(),
        "threads": args.threads, "calibration_lines": len(calib_imgs),
        "evaluation_lines": {"rendered": len(eval_txt), "page": len(page_imgs)},
        "quantization": "quantize_static, QDQ, per-channel int8 weights, int8 activations",
        "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        # recognition
        fp32 = ppocr.model_path("rec")
        xs = rec_inputs(eval_imgs)
        ref_out, ref_ms = run_all(session(fp32, args.threads), xs)
        ref_txt = [ppocr.ctc_greedy(o[0], keys) for o in ref_out]
        rec = {"fp32": {"cer_vs_truth": cer(ref_txt, truth), "median_ms_per_line": ref_ms}}
        for mname, m in methods.items():
            q = os.path.join(tmp, f"rec_{mname}.onnx")
            try:
                quantize(fp32, q, rec_inputs(calib_imgs), m, tmp)
                out, ms = run_all(session(q, args.threads), xs)
            except Exception as e:  # ORT's calibrators are known to fail on some graphs
                rec[f"int8_{mname}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
                continue
            txt = [ppocr.ctc_greedy(o[0], keys) for o in out]
            rec[f"int8_{mname}"] = {"cer_vs_truth": cer(txt, truth), "cer_vs_fp32": cer(txt, ref_txt),
                                    "median_ms_per_line": ms, "speedup_vs_fp32": ref_ms / ms}
        result["models"]["ppocr_v4_rec"] = rec

        # direction classifier
        fp32 = ppocr.model_path("cls")
        xs, labels = cls_inputs(eval_imgs)
        ref_out, ref_ms = run_all(session(fp32, args.threads), xs)
        ref_lab = [int(np.argmax(o)) for o in ref_out]
        acc = lambda p: float(np.mean(np.array(p) == np.array(labels)))  # noqa: E731
        cls = {"fp32": {"accuracy": acc(ref_lab), "median_ms_per_line": ref_ms}}
        for mname, m in methods.items():
            q = os.path.join(tmp, f"cls_{mname}.onnx")
            try:
                quantize(fp32, q, cls_inputs(calib_imgs)[0], m, tmp)
                out, ms = run_all(session(q, args.threads), xs)
            except Exception as e:
                cls[f"int8_{mname}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
                continue
            lab = [int(np.argmax(o)) for o in out]
            cls[f"int8_{mname}"] = {"accuracy": acc(lab),
                                    "agreement_with_fp32": float(np.mean(np.array(lab) == np.array(ref_lab))),
                                    "median_ms_per_line": ms, "speedup_vs_fp32": ref_ms / ms}
        result["models"]["ppocr_v2_cls"] = cls

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    for model, rows in result["models"].items():
        print(model)
        for k, v in rows.items():
            print(f"  {k:18s} " + ", ".join(f"{a}={b:.4g}" if isinstance(b, float) else f"{a}={b}"
                                            for a, b in v.items()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
