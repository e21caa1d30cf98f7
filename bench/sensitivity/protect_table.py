#!/usr/bin/env python3
"""The README's summary table of automatic protection on the zoo, from
bench/results/protect/<name>/protect.json and time.txt. usage: protect_table.py [RESULTS_DIR]"""
import json
import os
import sys

R = sys.argv[1] if len(sys.argv) > 1 else "bench/results/protect"
ORDER = ["efficientnet_lite0", "ppocr_v4_rec", "minilm_l6_v2", "yolov8n", "efficientnet_lite0_cosine",
         "ppocr_v4_rec_top1"]


def pct(b):
    return b["metric"] in ("top1", "user")  # top-1, CER and agreements read as percentages


def fmt(b, v):
    return "-" if v is None else f"{100 * v:.2f}%" if pct(b) else f"{v:.4f}"


def thr(b):
    return fmt(b, b["threshold"])


def val(b, c):
    key = "user" if b["metric"] == "user" else {"sqnr": "sqnr_db"}.get(b["metric"], b["metric"])
    return fmt(b, c["metrics"][key])


def cell(js, c):
    vals = ", ".join(val(b, c) for b in js["budget"])
    return f"{c['num_layers']}: {vals}, {c['latency_ms']:.2f} ms"


print("| run | budget | layers | all-INT8 | auto: protected, score, latency | op-type baseline | "
      "block baseline | all-FP32 latency | met | wall |")
print("|---|---|---:|---|---|---|---|---:|---|---:|")
for n in ORDER:
    p = os.path.join(R, n, "protect.json")
    if not os.path.exists(p):
        continue
    js = json.load(open(p))
    bud = ", ".join(f"{b['name']} {'>=' if b['kind'] == 'min' else '<='} {thr(b)}" for b in js["budget"])
    bl = js["baselines"]
    c8, ch = bl["all_int8"], js["chosen"]
    wall = open(os.path.join(R, n, "time.txt")).read().split()[1]
    i8 = ", ".join(val(b, c8) for b in js["budget"]) + f", {c8['latency_ms']:.2f} ms"
    print(f"| {n} | {bud} | {js['layers']} | {i8} | **{cell(js, ch)}** | {cell(js, bl['op_type'])} | "
          f"{cell(js, bl['block'])} | {bl['all_fp32']['latency_ms']:.2f} ms | "
          f"{'yes' if js['met'] else '**no**'} | {wall} s |")
