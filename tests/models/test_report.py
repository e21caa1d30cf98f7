"""`precis inspect` tells the truth about every node of every zoo model (issue 6).

For each zoo model and each precision (fp32, bf16, fp16, int8 calibrated on two of the
zoo's calibration samples), build a plan, read `inspect --json` back from the saved plan
and check the per-node report against the plan's own steps:
  - the rows are exactly the original ONNX nodes, in order, once each;
  - a row's step lists the node among what it covers, and every node a step covers has a
    row naming that step (no node runs in two steps, none is lost); folded rows name none;
  - the reported compute type is the step's: its output dtype, or for the int8 kernels
    (QConv, QMatMul, QBinary, QPool) the int8/uint8 operand type; a Softmax inside an
    Attention step computes float32 (the kernel's softmax);
  - a node whose output leaves its step passes on the step's output dtype (no requests
    here, so no casts);
  - with no rules every row is honored and names no rule;
  - int8 rows carry the scales they run with (an input scale, and w for QConv/QMatMul);
    float rows carry none.

    python3 tests/models/test_report.py --precis build/precis [--models a,b]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
import zoo  # noqa: E402
from int8 import dump_calib  # noqa: E402
from checks import Checks  # noqa: E402

SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "int8",
         "uint8": "uint8", "int32": "int32", "int64": "int64", "bool": "bool"}
Q_OPS = ("QConv", "QMatMul", "QBinary", "QPool")
check = Checks("test_report")


def check_report(tag, js, names):
    nodes, steps = js["nodes"], js["steps"]
    # unnamed ONNX nodes get precis names (OP@k): compare the named ones
    got = [n["name"] for n in nodes]
    in_order = len(got) == len(names) and all(not w or g == w for g, w in zip(got, names))
    check(in_order and len(set(got)) == len(got), f"{tag}: one row per original node, in order",
          f"{len(nodes)} rows for {len(names)} nodes")
    covered = {}
    for s in steps:
        for o in s["origins"]:
            check(o not in covered, f"{tag}: '{o}' covered once", f"steps {covered.get(o)} and {s['step']}")
            covered[o] = s["step"]
    bad = []
    for n in nodes:
        k = n["step"]
        if k < 0:
            if n["name"] in covered:
                bad.append(f"{n['name']}: folded but step {covered[n['name']]} covers it")
            continue
        s = steps[k]
        if covered.get(n["name"]) != k:
            bad.append(f"{n['name']}: row says step {k}, step {covered.get(n['name'])} covers it")
            continue
        act = n["actual"]
        sdt = SHORT.get(s["dtype"], s["dtype"])
        if s["op"] in Q_OPS:
            want = ("int8", "uint8")
        elif s["op"] == "Attention" and n["op"] == "Softmax":
            want = ("fp32",)
        else:
            want = (sdt,)
        if act["compute"] not in want:
            bad.append(f"{n['name']}: compute {act['compute']}, step {k} ({s['op']}) {want}")
        if not act["output_in_kernel"] and act["output"] != sdt:
            bad.append(f"{n['name']}: passes on {act['output']}, step {k} outputs {sdt}")
        if not n["honored"] or n["rules"]:
            bad.append(f"{n['name']}: honored {n['honored']} rules '{n['rules']}'")
        sc = n.get("scales", {})
        if act["compute"] in ("int8", "uint8"):
            if not any(x in sc for x in ("x", "a", "b")):
                bad.append(f"{n['name']}: int8 without an input scale {sc}")
            if s["op"] in ("QConv", "QMatMul") and not ("w" in sc or "b" in sc):
                bad.append(f"{n['name']}: {s['op']} without weight scales {sc}")
        elif sc:
            bad.append(f"{n['name']}: float row with scales {sc}")
    check(not bad, f"{tag}: rows agree with the steps", "; ".join(bad[:4]) + f" ({len(bad)} rows)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    ap.add_argument("--models", help="comma-separated subset of: " + ",".join(zoo.NAMES))
    ap.add_argument("--precisions", default="fp32,bf16,fp16,int8")
    a = ap.parse_args()
    only = a.models.split(",") if a.models else None
    with tempfile.TemporaryDirectory() as tmp:
        for m in zoo.models(only):
            names = [n.name for n in onnx.load(m.path, load_external_data=False).graph.node]
            cal = os.path.join(tmp, m.name + "_calib")
            dump_calib(m.calib[:2], cal)
            for prec in a.precisions.split(","):
                tag = f"{m.name} {prec}"
                plan = os.path.join(tmp, f"{m.name}_{prec}.plan")
                cmd = [a.precis, "build", m.path, "-o", plan, "--precision", prec]
                if prec == "int8":
                    cmd += ["--calib-data", cal]
                r = subprocess.run(cmd, capture_output=True, text=True)
                check(r.returncode == 0, f"{tag}: build", r.stderr.strip()[-300:])
                if r.returncode:
                    continue
                r = subprocess.run([a.precis, "inspect", plan, "--json"], capture_output=True,
                                   text=True)
                check(r.returncode == 0, f"{tag}: inspect", r.stderr.strip()[-300:])
                if r.returncode == 0:
                    check_report(tag, json.loads(r.stdout), names)
                print(f"{tag}: checked", flush=True)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
