#!/usr/bin/env python3
"""precis sensitivity (issue 7, slice 1) on a small model with one layer made sensitive.

usage: test_sensitivity.py PATH/TO/precis

The model: x[N,4,8,8] -> conv1+Relu -> conv2+Relu -> conv3+Relu -> GlobalAveragePool ->
Flatten -> Gemm -> logits[N,10] -> Softmax -> prob[N,10]. conv2's bias puts 1000 on its
channel 0, which conv3 ignores (zero weights): int8 per-tensor activations at conv3's
input take their scale from that outlier channel and crush the other channels (~1) to
zero. So conv3 is the sensitive layer: alone in int8 it wrecks the outputs, keeping it
fp32 in an otherwise int8 model repairs them, and its own output has the worst local
SQNR. Checks the ranking by SQNR and by KL (prob is a probability output, logits is
rank 2: top-1), the baselines, the report files (JSON parsed, SVG xml-parsed, Markdown
table) and the errors (missing or mismatched eval data, a model with no int8 layer, bad
options): one line and a non-zero exit.
"""
import json
import math
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from clicheck import check, expect_error, finish, run, samples


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def model(path):
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, 0.3, (8, 4, 3, 3))
    w2 = rng.normal(0, 0.3, (8, 8, 3, 3))
    b2 = np.zeros(8)
    b2[0] = 1000.0  # the outlier channel
    w3 = rng.normal(0, 0.3, (8, 8, 3, 3))
    w3[:, 0] = 0.0  # conv3 ignores it: its output depends on the small channels only
    wf = rng.normal(0, 0.5, (10, 8))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], name="conv3"),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1, name="softmax"),
    ]
    g = helper.make_graph(nodes, "sens", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 4, 8, 8])],
                          [helper.make_tensor_value_info("logits", TP.FLOAT, ["N", 10]),
                           helper.make_tensor_value_info("prob", TP.FLOAT, ["N", 10])],
                          [init("w1", w1), init("w2", w2), init("b2", b2), init("w3", w3),
                           init("wf", wf)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def no_int8_model(path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "plain", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [1, 4, 8, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def by_name(js, name):
    return next(l for l in js["layers"] if l["name"] == name)


def main():
    with tempfile.TemporaryDirectory() as d:
        m = model(f"{d}/sens.onnx")
        calib = samples(f"{d}/calib", 4, 1)
        ev = samples(f"{d}/eval", 3, 2)
        out = f"{d}/report"
        rc, so, se = run("sensitivity", m, "--calib-data", calib, "--eval-data", ev, "--report",
                         out, "--threads", "1")
        check("sensitivity runs", rc == 0, se)
        if rc != 0:
            return finish("test_sensitivity: ")
        check("stderr quiet without a terminal", se.strip() == "", se)
        lines = so.splitlines()
        check("top 10 printed, conv3 first", len(lines) > 2 and "conv3" in lines[2], so)
        js = json.load(open(f"{out}/sensitivity.json"))
        names = [l["name"] for l in js["layers"]]
        check("four layers", sorted(names) == ["conv1", "conv2", "conv3", "fc"], names)
        check("command recorded", js["command"].startswith("precis sensitivity ") and
              "--eval-data" in js["command"], js["command"])
        check("outputs", js["outputs"] == ["logits", "prob"], js["outputs"])
        check("eval samples", js["eval_samples"] == 3 and js["eval_batches"] == 3, js)
        L = {n: by_name(js, n) for n in names}
        s3 = L["conv3"]
        check("conv3 ranks first by SQNR", names[0] == "conv3", names)
        others = [L[n] for n in names if n != "conv3"]
        check("conv3 alone: the worst SQNR and cosine",
              all(s3["int8_alone"]["sqnr_db"] < o["int8_alone"]["sqnr_db"] - 10 and
                  s3["int8_alone"]["cosine"] < o["int8_alone"]["cosine"] for o in others),
              [(l["name"], l["int8_alone"]) for l in js["layers"]])
        check("conv3 fp32 in int8: the best all-but SQNR",
              all(s3["all_int8_but_this"]["sqnr_db"] > o["all_int8_but_this"]["sqnr_db"] + 10
                  for o in others), [(l["name"], l["all_int8_but_this"]) for l in js["layers"]])
        local = {n: L[n]["local_sqnr_db"] for n in names}
        check("local SQNR measured for every layer", all(v is not None for v in local.values()),
              local)
        if all(v is not None for v in local.values()):
            check("conv3 has the worst local SQNR", min(local, key=local.get) == "conv3", local)
        check("conv3 ran int8 alone", s3["ran_int8_alone"] and "relu3" in s3["fused"], s3)
        b8, b32 = js["baselines"]["int8"], js["baselines"]["fp32"]
        check("fp32 baseline is the reference", b32["cosine"] == 1 and b32["sqnr_db"] is None
              and b32["top1"] == 1, b32)
        check("all-int8 worse than keeping conv3 fp32",
              b8["sqnr_db"] < s3["all_int8_but_this"]["sqnr_db"] - 10, (b8, s3))
        check("all-int8 no better than conv3 alone", b8["sqnr_db"] <= s3["int8_alone"]["sqnr_db"] + 3,
              (b8, s3))
        check("KL for the probability output only",
              b8["kl"] is not None and
              js["baselines"]["int8_outputs"][0]["metrics"]["kl"] is None and
              js["baselines"]["int8_outputs"][1]["metrics"]["kl"] is not None, js["baselines"])
        check("top-1 for both rank-2 outputs",
              all(o["metrics"]["top1"] is not None for o in js["baselines"]["int8_outputs"]), b8)
        for l in js["layers"]:
            for k in ("int8_alone", "all_int8_but_this"):
                mt = l[k]
                ok = 0.0 <= mt["top1"] <= 1.0 and -1.0 <= mt["cosine"] <= 1.0 and mt["rel_l2"] >= 0
                check(f"{l['name']} {k}: metrics in range", ok, mt)
        # the report files
        try:
            root = ET.parse(f"{out}/sensitivity.svg").getroot()
            rows = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "layer"]
            check("svg: one row per layer", len(rows) == 4, len(rows))
            title = rows[0].find("{http://www.w3.org/2000/svg}title").text if rows else ""
            check("svg: the first row is conv3", title.startswith("#1 conv3"), title)
        except ET.ParseError as e:
            check("svg parses", False, str(e))
        md = open(f"{out}/sensitivity.md").read()
        table = [l for l in md.splitlines() if l.startswith("| ")]
        check("md: header + 4 rows", len(table) == 5 and table[1].startswith("| 1 | conv3 |"), table)
        check("md: picture link", "(sensitivity.svg)" in md, md[-200:])
        check("calibration cache kept in the report folder", os.path.getsize(f"{out}/calib.cache") > 0)
        # ranking by KL, the cache reused
        rc, so, se = run("sensitivity", m, "--calib-data", calib, "--eval-data", ev, "--report",
                         out, "--threads", "1", "--metric", "kl", "--eval-batches", "2")
        check("--metric kl runs", rc == 0, se)
        if rc == 0:
            js2 = json.load(open(f"{out}/sensitivity.json"))
            check("kl: conv3 first", js2["metric"] == "kl" and js2["layers"][0]["name"] == "conv3",
                  [l["name"] for l in js2["layers"]])
            check("--eval-batches 2", js2["eval_batches"] == 2, js2["eval_batches"])
        rc, so, se = run("sensitivity", m, "--calib-data", calib, "--eval-data", ev, "--report",
                         f"{d}/report2", "--threads", "1", "--progress", "--eval-batches", "1")
        check("--progress draws the bar", rc == 0 and "candidates" in se and "left" in se, se)

        rc, so, se = run("sensitivity", m, "--calib-data", calib, "--eval-data", ev, "--report",
                         f"{d}/report3", "--shape", "x=1x4x8x8", "--eval-batches", "1")
        check("--shape fixes the input", rc == 0, se)

        # errors: one line, non-zero exit
        base = ["sensitivity", m, "--calib-data", calib, "--report", f"{d}/r3"]
        expect_error("missing eval data", 3, base + ["--eval-data", f"{d}/nope"], "--eval-data",
                     f"{d}/nope")
        bad = samples(f"{d}/bad_eval", 2, 3, shape=(1, 3, 8, 8))
        expect_error("eval data shape mismatch", 2, base + ["--eval-data", bad], "--eval-data",
                     "000.npy")
        plain = no_int8_model(f"{d}/plain.onnx")
        expect_error("no int8 layer", 5, ["sensitivity", plain, "--calib-data", calib,
                                          "--eval-data", ev, "--report", f"{d}/r4"],
                     "no layer runs in int8")
        expect_error("--shape of no input", 2, base + ["--eval-data", ev, "--shape", "y=1x4x8x8"],
                     "'y' is not an input")
        expect_error("bad metric", 1, base + ["--eval-data", ev, "--metric", "f1"], "--metric",
                     "f1")
        rc, so, se = run("sensitivity", m, "--calib-data", calib, "--report", f"{d}/r5")
        check("missing --eval-data is a usage error", rc == 1 and "--eval-data" in se, se)
        rc, so, se = run("sensitivity", m, "--eval-data", ev, "--calib-data", calib)
        check("missing --report is a usage error", rc == 1 and "--report" in se, se)
        expect_error("missing model", 3, ["sensitivity", f"{d}/none.onnx", "--calib-data", calib,
                                          "--eval-data", ev, "--report", f"{d}/r6"], "none.onnx")
    return finish("test_sensitivity: ")


if __name__ == "__main__":
    sys.exit(main())
