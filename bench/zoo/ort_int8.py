#!/usr/bin/env python3
"""ONNX Runtime's own INT8 on every zoo model (bench/zoo/zoo.py): the bar precis INT8
has to beat, accuracy and speed, side by side with ORT FP32 on the same inputs and
threads. (Its PP-OCR part replaces an earlier ort_int8_ppocr.py, same data and results.)

    python3 bench/zoo/ort_int8.py [--threads 2] [--calib 32] [--models a,b]
                                  [--methods minmax,entropy,percentile]
                                  [--out bench/results/zoo_ort_int8.json]

Quantization, as ORT's docs prescribe: models below opset 13 are first converted to
opset 13 with onnx.version_converter (DequantizeLinear has no per-channel axis
before 13), initializers listed as graph inputs (CenterFace) are dropped from the
inputs, then quant_pre_process (skip_symbolic_shape) and quantize_static: QDQ format,
per-channel int8 weights, int8 activations, calibrators MinMax, Entropy and
Percentile (99.999), all fed the same calibration samples (zoo.py's calibration
set, at most --calib of them, evenly spaced; never the evaluation samples).
Metrics: the model's task metric of INT8 against ORT FP32 (and truth where known),
per output SQNR and cosine against ORT FP32, batch-1 median latency of INT8 and FP32
(intra-op threads --threads). ORT failures are recorded per model and calibrator
in the JSON, never hidden. Writes the JSON and a Markdown table next to it.
"""
import argparse
import json
import os
import platform
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import zoo  # noqa: E402
from eval import fmt, ort_session, run_ort  # noqa: E402

ort.set_default_logger_severity(3)  # the quantizer's own sessions warn per unused initializer

METHODS = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
           "percentile": CalibrationMethod.Percentile}


class Reader(CalibrationDataReader):
    def __init__(self, samples):
        self.it = iter(samples)

    def get_next(self):
        return next(self.it, None)


def err(e):
    return f"{type(e).__name__}: {e}"[:400]


def prepare(m, tmp, info):
    """opset >= 13, no initializers among the inputs, quant_pre_process. -> path."""
    model = onnx.load(m.path)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:
        model = version_converter.convert_version(model, 13)
        info["converted_from_opset"] = opset
    inits = {i.name for i in model.graph.initializer}
    extra = [i for i in model.graph.input if i.name in inits]
    if extra:
        keep = [i for i in model.graph.input if i.name not in inits]
        del model.graph.input[:]
        model.graph.input.extend(keep)
        info["initializer_inputs_dropped"] = len(extra)
    up = os.path.join(tmp, m.name + ".op13.onnx")
    onnx.save(model, up)
    pre = os.path.join(tmp, m.name + ".pre.onnx")
    try:
        quant_pre_process(up, pre, skip_symbolic_shape=True)
    except Exception as e:  # noqa: BLE001 - recorded; quantize without it
        info["pre_process_error"] = err(e)
        return up
    return pre


def quantize(src, dst, calib, method):
    extra = {"CalibPercentile": 99.999} if method == CalibrationMethod.Percentile else {}
    quantize_static(src, dst, Reader(calib), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=method, extra_options=extra)


def pick(samples, n):
    if len(samples) <= n:
        return list(samples)
    step = len(samples) / n
    return [samples[int(i * step)] for i in range(n)]


def summary(task):
    """The few task numbers worth a table column, per model kind."""
    keys = ["cer_vs_truth", "cer_vs_fp32", "accuracy", "agreement_with_fp32", "mask_iou_vs_fp32_mean",
            "regions_same_count_as_fp32", "regions_equal_truth", "embedding_cosine_min",
            "nn_agreement_with_fp32", "nn_is_paraphrase", "top1_agreement_with_fp32", "top5_overlap_with_fp32",
            "known_labels_correct", "boxes", "boxes_fp32", "fp32_boxes_matched", "boxes_matched_in_fp32",
            "fp32_boxes_matched_at_0.05", "boxes_matched_in_fp32_at_0.05"]
    return "; ".join(f"{k} {fmt(task[k])}" for k in keys if k in task)


def fp32_summary(task):
    keys = ["fp32_cer_vs_truth", "fp32_accuracy", "fp32_regions_equal_truth", "fp32_nn_is_paraphrase",
            "fp32_known_labels_correct", "boxes_fp32", "boxes_fp32_at_0.05"]
    return "; ".join(f"{k[5:] if k.startswith('fp32_') else k} {fmt(task[k])}" for k in keys if k in task)


def markdown(res):
    lines = [f"# ONNX Runtime {res['onnxruntime']} INT8 (quantize_static) vs its FP32, zoo evaluation sets", "",
             f"`{res['command']}` — {res['machine']}, intra-op threads {res['threads']}, batch 1, median "
             f"ms over the evaluation set; {res['quantization']}; at most {res['calibration_samples']} "
             f"calibration samples per model; total {res['seconds']:.0f} s.", "",
             "| model | variant | min output cosine | min output SQNR dB | ms | speed-up vs FP32 | task metric (vs ORT FP32 / truth) |",
             "|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        if "error" in r:
            lines.append(f"| {name} | | | | | | **error**: {r['error']} |")
            continue
        lines.append(f"| {name} | FP32 | | | {fmt(r['fp32']['ms'])} | 1 | {fp32_summary(r['fp32']['task'])} |")
        for meth in res["methods"]:
            q = r.get("int8_" + meth)
            if q is None:
                continue
            if "error" in q:
                lines.append(f"| | INT8 {meth} | | | | | **ORT failed**: {q['error'][:200]} |")
                continue
            cos = min(s.get("cosine", float("nan")) for s in q["outputs"].values())
            sq = min(s.get("sqnr_db", float("nan")) for s in q["outputs"].values())
            lines.append(f"| | INT8 {meth} | {cos:.5f} | {sq:.1f} | {fmt(q['ms'])} | "
                         f"{q['speedup_vs_fp32']:.2f} | {summary(q['task'])} |")
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calib", type=int, default=32, help="max calibration samples per model")
    ap.add_argument("--models", help="comma-separated subset of: " + ",".join(zoo.NAMES))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "zoo_ort_int8.json"))
    args = ap.parse_args()
    methods = args.methods.split(",")
    t0 = time.time()
    res = {"command": "python3 bench/zoo/ort_int8.py " + " ".join(sys.argv[1:]),
           "onnxruntime": ort.__version__, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "threads": args.threads, "calibration_samples": args.calib,
           "methods": methods,
           "quantization": "quant_pre_process + quantize_static, QDQ, per-channel int8 weights, "
                           "int8 activations (percentile: 99.999)",
           "models": {}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    md_path = os.path.splitext(args.out)[0] + ".md"

    def save():
        res["seconds"] = time.time() - t0
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
        with open(md_path, "w") as f:
            f.write(markdown(res))

    with tempfile.TemporaryDirectory(prefix="precis-ortq-") as tmp:
        for m in zoo.models(args.models.split(",") if args.models else None):
            t = time.time()
            r = {"samples": len(m.eval), "data": m.note}
            res["models"][m.name] = r
            try:
                ref, ref_ms = run_ort(ort_session(m.path, args.threads), m.eval, m.outputs)
                r["fp32"] = {"ms": ref_ms, "task": m.metric(ref, ref)}
                src = prepare(m, tmp, r)
            except Exception as e:  # noqa: BLE001
                r["error"] = err(e)
                print(f"{m.name}: ERROR {r['error']}", flush=True)
                save()
                continue
            calib = pick(m.calib, args.calib)
            r["calibration_samples"] = len(calib)
            print(f"{m.name}: FP32 {ref_ms:.1f} ms; calibrating on {len(calib)}", flush=True)
            for meth in methods:
                tq = time.time()
                q = os.path.join(tmp, f"{m.name}_{meth}.onnx")
                try:
                    quantize(src, q, calib, METHODS[meth])
                    tq = time.time() - tq
                    out, ms = run_ort(ort_session(q, args.threads), m.eval, m.outputs)
                except Exception as e:  # noqa: BLE001 - ORT's failures are part of the result
                    r["int8_" + meth] = {"error": err(e)}
                    print(f"  {meth}: ORT FAILED {err(e)}", flush=True)
                    continue
                r["int8_" + meth] = {"ms": ms, "speedup_vs_fp32": ref_ms / ms, "quantize_s": tq,
                                     "outputs": zoo.output_stats(out, ref, m.outputs),
                                     "task": m.metric(out, ref)}
                print(f"  {meth}: {ms:.1f} ms ({ref_ms / ms:.2f}x), quantized in {tq:.0f} s; "
                      + summary(r["int8_" + meth]["task"]), flush=True)
            r["seconds"] = time.time() - t
            save()
    save()
    print(f"wrote {args.out} and {md_path} ({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
