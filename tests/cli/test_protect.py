#!/usr/bin/env python3
"""precis build --protect auto (issue 7, automatic protection) on a small model with two
planted sensitive layers.

usage: test_protect.py PATH/TO/precis

The model: x[N,4,8,8] -> conv1..conv8 (3x3, 8 channels, each + Relu) -> GlobalAveragePool
-> Flatten -> Gemm fc -> logits[N,10]. conv2 and conv5 put 1000 on their channel 0 (bias),
which conv3 and conv6 ignore (zero weights): int8 per-tensor activations at conv3's and
conv6's inputs take their scale from that outlier channel and crush the other channels.
So conv3 and conv6 are the sensitive layers: all-int8 misses a cosine budget, protecting
both meets it, and either alone does not. Checks the chosen set, the rules file (and that
`precis build --rules` with it gives the same outputs as the plan --protect built), the
report (JSON baselines, Pareto SVG xml-parsed, Markdown table), --metric-cmd with a tiny
script, and the errors: budget unreachable within the layer budget, a failing metric
command, bad options.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from clicheck import PRECIS, check, expect_error, finish, run, samples

SENSITIVE = ["conv3", "conv6"]
OUTLIER = float(os.environ.get("OUTLIER", "1000"))


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def model(path):
    rng = np.random.default_rng(7)
    nodes, inits, x = [], [], "x"
    cin = 4
    for i in range(1, 9):
        w = rng.normal(0, 0.6 / np.sqrt(cin), (8, cin, 3, 3))
        b = np.zeros(8)
        if i in (2, 5):
            b[0] = OUTLIER  # the outlier channel
        if i in (3, 6):
            w[:, 0] = 0.0  # ignored: the layer depends on the small channels only
        inits += [init(f"w{i}", w), init(f"b{i}", b)]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1],
                                   name=f"conv{i}"),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x, cin = f"r{i}", 8
    inits.append(init("wf", rng.normal(0, 0.5, (10, 8))))
    nodes += [helper.make_node("GlobalAveragePool", [x], ["p"], name="pool"),
              helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
              helper.make_node("Gemm", ["f", "wf"], ["logits"], transB=1, name="fc")]
    g = helper.make_graph(nodes, "prot", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 4, 8, 8])],
                          [helper.make_tensor_value_info("logits", TP.FLOAT, ["N", 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def run_plan(plan, ev, out):
    """The plan's logits for every eval sample (precis run)."""
    res = []
    for f in sorted(os.listdir(ev)):
        od = f"{out}/{f[:-4]}"
        rc, so, se = run("run", plan, "--input", f"x={ev}/{f}", "--output-dir", od)
        if rc != 0:
            return None, se
        res.append(np.load(f"{od}/logits.npy"))
    return res, ""


def cosine_min(a, b):
    return min(float(np.dot(x.ravel(), y.ravel()) / (np.linalg.norm(x) * np.linalg.norm(y)))
               for x, y in zip(a, b))


def main():
    with tempfile.TemporaryDirectory() as d:
        m = model(f"{d}/prot.onnx")
        calib = samples(f"{d}/calib", 4, 1)
        ev = samples(f"{d}/eval", 3, 2)
        base = ["build", m, "--precision", "int8", "--calib-data", calib, "--eval-data", ev,
                "--threads", "1", "--protect", "auto", "--latency-runs", "3"]
        rep = f"{d}/report"
        plan = f"{d}/prot.plan"
        rc, so, se = run(*base, "--min-cosine", "0.9999", "--max-protected", "2",
                         "--protect-report", rep, "-o", plan)
        check("protect auto runs", rc == 0, so + se)
        if rc != 0:
            return finish("test_protect: ")
        js = json.load(open(f"{rep}/protect.json"))
        ch = js["chosen"]
        check("chosen: exactly the two planted layers", sorted(ch["layers"]) == SENSITIVE, ch)
        check("budget met", js["met"] and ch["meets"] and ch["metrics"]["cosine"] >= 0.9999, ch)
        b = js["baselines"]
        check("all-int8 misses the budget", not b["all_int8"]["meets"] and
              b["all_int8"]["metrics"]["cosine"] < 0.9999, b["all_int8"])
        check("baselines in the JSON", b["op_type"] is not None and b["block"] is not None and
              b["all_fp32"]["metrics"]["cosine"] == 1, b)
        check("op-type baseline: first and last layer",
              sorted(b["op_type"]["layers"]) == ["conv1", "fc"], b["op_type"])
        blk = b["block"]["layers"]
        check("block baseline: contiguous, covering both", blk and "conv3" in blk and "conv6" in blk
              and b["block"]["meets"], blk)
        singles = [c for c in js["candidates"] if len(c["layers"]) == 1 and c["layers"][0] in SENSITIVE]
        check("one sensitive layer alone does not meet it", all(not c["meets"] for c in singles),
              singles)
        check("every candidate has metrics and a latency",
              all(c["latency_ms"] is not None and c["latency_ms"] > 0 and
                  c["metrics"]["cosine"] is not None for c in js["candidates"]), js["candidates"][:3])
        check("command recorded", js["command"].startswith("precis build ") and
              "--protect" in js["command"], js["command"])
        check("summary printed", "auto (chosen)" in so and "op-type" in so, so)
        # report files
        try:
            root = ET.parse(f"{rep}/protect.svg").getroot()
            ns = "{http://www.w3.org/2000/svg}"
            check("svg: budget line and Pareto front",
                  any(e.get("class") == "budget" for e in root.iter(ns + "line")) and
                  any(e.get("class") == "pareto" for e in root.iter(ns + "polyline")))
            check("svg: a point per candidate",
                  len([g for g in root.iter(ns + "g") if g.get("class") in ("role", "candidate")])
                  == len(js["candidates"]))
        except ET.ParseError as e:
            check("protect.svg parses", False, str(e))
        try:
            root = ET.parse(f"{rep}/sensitivity.svg").getroot()
            marks = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")
                     if r.get("class") == "protected"]
            check("sensitivity.svg marks the chosen layers", len(marks) == 2, len(marks))
        except ET.ParseError as e:
            check("sensitivity.svg parses", False, str(e))
        md = open(f"{rep}/protect.md").read()
        check("md: summary table", "| **auto (chosen)** |" in md and "| op-type |" in md and
              "| contiguous block |" in md, md[:800])
        # the rules file round-trips
        rules = json.load(open(f"{plan}.rules.json"))
        sel = sorted(r["select"] for r in rules["rules"])
        check("rules file: the nodes of the two layers", sel == ["conv3", "conv6", "relu3", "relu6"]
              and all(r["precision"] == "fp32" for r in rules["rules"]), rules)
        check("rules copied into the report", os.path.exists(f"{rep}/protect.rules.json"))
        plan2 = f"{d}/rules.plan"
        rc, so2, se2 = run("build", m, "--precision", "int8", "--calib-cache", f"{rep}/calib.cache",
                           "--threads", "1", "--rules", f"{plan}.rules.json", "-o", plan2)
        check("build --rules with the rules file", rc == 0, se2)
        fp = f"{d}/fp32.plan"
        run("build", m, "--threads", "1", "-o", fp)
        a, e1 = run_plan(plan, ev, f"{d}/o1")
        bb, e2 = run_plan(plan2, ev, f"{d}/o2")
        r, e3 = run_plan(fp, ev, f"{d}/o3")
        if a and bb and r:
            check("same outputs from both plans", all(np.array_equal(x, y) for x, y in zip(a, bb)))
            check("same metric as the report", abs(cosine_min(bb, r) - ch["metrics"]["cosine"]) < 1e-5,
                  (cosine_min(bb, r), ch["metrics"]["cosine"]))
        else:
            check("precis run on the plans", False, e1 + e2 + e3)

        # protect in bf16 (the CPU has bf16 kernels: honoured, no note)
        rc, so, se = run(*base, "--min-cosine", "0.9999", "--max-protected", "2", "--protect-to",
                         "bf16", "-o", f"{d}/bf.plan")
        rb = json.load(open(f"{d}/bf.plan.rules.json"))["rules"] if rc == 0 else []
        check("--protect-to bf16", rc == 0 and "note" not in se and
              sorted(r["select"] for r in rb) == ["conv3", "conv6", "relu3", "relu6"] and
              all(r["precision"] == "bf16" for r in rb), se + str(rb))

        # budget unreachable within the layer budget: one line, exit 9, no plan
        expect_error("budget unreachable", 9, base + ["--min-cosine", "0.9999", "--max-protected",
                                                       "1", "-o", f"{d}/no.plan"],
                     "budget not met within 1 protected layer", "best set found")
        check("no plan when not met", not os.path.exists(f"{d}/no.plan"))
        rc, so, se = run(*base, "--min-cosine", "0.9999", "--max-protected", "1", "--allow-exceed",
                         "-o", f"{d}/ex.plan")
        check("--allow-exceed builds", rc == 0 and os.path.exists(f"{d}/ex.plan"), se)

        # a metric command: the worst cosine over samples of {dir} against {ref}
        script = f"{d}/metric.py"
        with open(script, "w") as f:
            f.write("import sys, glob, numpy as np\n"
                    "c = [np.load(p) for p in sorted(glob.glob(sys.argv[1] + '/out0/*.npy'))]\n"
                    "r = [np.load(p) for p in sorted(glob.glob(sys.argv[2] + '/out0/*.npy'))]\n"
                    "assert len(c) == len(r) == 3\n"
                    "cs = [float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))"
                    " for a, b in zip(c, r)]\n"
                    "print('worst cosine'); print(min(cs))\n")
        rc, so, se = run(*base, "--metric-cmd", f"{sys.executable} {script} {{dir}} {{ref}}",
                         "--max-drop", "0.01%", "--max-protected", "2", "--protect-report",
                         f"{d}/rep2", "-o", f"{d}/m.plan")
        check("--metric-cmd runs", rc == 0, se)
        if rc == 0:
            j2 = json.load(open(f"{d}/rep2/protect.json"))
            check("user budget relative to fp32", j2["budget"][0]["metric"] == "user" and
                  abs(j2["budget"][0]["fp32"] - 1) < 1e-6 and
                  abs(j2["budget"][0]["threshold"] - 0.9999) < 1e-6, j2["budget"])
            check("user metric chooses the two layers", sorted(j2["chosen"]["layers"]) == SENSITIVE,
                  j2["chosen"])
        # lower is better: 1 - the worst cosine, an absolute bound, a name for the report
        with open(f"{d}/dist.py", "w") as f:
            f.write(open(script).read().replace("print(min(cs))", "print(1 - min(cs))"))
        rc, so, se = run(*base, "--metric-cmd", f"{sys.executable} {d}/dist.py {{dir}} {{ref}}",
                         "--metric-goal", "min", "--max-metric", "0.0001", "--metric-name",
                         "1-cos", "--max-protected", "2", "--protect-report", f"{d}/rep3",
                         "-o", f"{d}/m3.plan")
        check("--metric-goal min runs", rc == 0, se)
        if rc == 0:
            j3 = json.load(open(f"{d}/rep3/protect.json"))
            check("min goal: the two layers", sorted(j3["chosen"]["layers"]) == SENSITIVE and
                  j3["budget"][0]["kind"] == "max" and j3["budget"][0]["name"] == "1-cos", j3["budget"])
            try:
                ET.parse(f"{d}/rep3/protect.svg")
                check("svg with a <= budget parses", True)
            except ET.ParseError as e:
                check("svg with a <= budget parses", False, str(e))
            check("md names the metric", "| 1-cos |" in open(f"{d}/rep3/protect.md").read())
        bad = f"{d}/bad.py"
        with open(bad, "w") as f:
            f.write("import sys\nsys.stderr.write('no truth file\\n')\nsys.exit(3)\n")
        expect_error("failing metric command", 3, base + ["--metric-cmd", f"{sys.executable} {bad}",
                                                          "--max-drop", "1%", "-o", f"{d}/b.plan"],
                     "--metric-cmd", "bad.py", "status 3", "no truth file")
        expect_error("metric command printing no number", 4,
                     base + ["--metric-cmd", "echo hello", "--max-drop", "1%", "-o", f"{d}/b.plan"],
                     "--metric-cmd", "not a number")
        # usage errors
        rc, so, se = run(*base[:-4], "--protect", "auto", "-o", f"{d}/u.plan")
        check("no budget is a usage error", rc == 1 and "needs a budget" in se, se)
        rc, so, se = run(*base, "--min-cosine", "x", "-o", f"{d}/u.plan")
        check("bad number is a usage error", rc == 1 and "--min-cosine" in se, se)
        rc, so, se = run(*base, "--min-cosine", "0.9", "--max-protected", "0", "-o", f"{d}/u.plan")
        check("bad --max-protected", rc == 1 and "--max-protected" in se, se)
        expect_error("--protect-to bad type", 2, base + ["--min-cosine", "0.9", "--protect-to", "int4",
                                                         "-o", f"{d}/u.plan"], "--protect-to", "int4")
        expect_error("--metric-output of no output", 2,
                     base + ["--min-cosine", "0.9", "--metric-output", "prob", "-o", f"{d}/u.plan"],
                     "--metric-output", "prob")
        expect_error("missing eval data", 3, base[:7] + [f"{d}/nope"] + base[8:] +
                     ["--min-cosine", "0.9", "-o", f"{d}/u.plan"], "--eval-data", "nope")
    return finish("test_protect: ")


if __name__ == "__main__":
    sys.exit(main())
