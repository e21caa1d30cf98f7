#!/usr/bin/env python3
"""Mixed-precision builds on the zoo (issue 6): the sensitive ops kept float32 by
precision rules, the rest INT8, next to all-INT8 and all-FP32, accuracy and speed.

    python3 bench/zoo/mixed.py [--precis build/precis] [--threads 2] [--calib 32]
                               [--models minilm_l6_v2,ppocr_v4_rec] [--rounds 3]
                               [--out bench/results/zoo_mixed.json]

Per model: ORT FP32 outputs on the evaluation set are the reference; precis builds
  fp32 | int8 (no rules) | int8 + the model's rules (MIXED below)
with the same calibration samples and calibrator, then the task metric against ORT
FP32 and `precis bench` latency at batch 1 (median of --rounds rounds taken in turn).
Writes the JSON (with the command that made it) and a Markdown table next to it.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "cpu"))
import zoo  # noqa: E402
from eval import fmt, ort_session, run_ort, run_precis  # noqa: E402
from int8 import dump_calib, primary  # noqa: E402
from ort_int8 import pick  # noqa: E402
from run import MODELS as SPEED_SHAPES  # noqa: E402

SOFT_LN = ["--layer-precision", "op:Softmax:fp32", "--layer-precision", "op:LayerNormalization:fp32"]
# model: (calibrator, {build name: rules}); precis's int8 already keeps Softmax (inside
# Attention) and LayerNorm float, so the first rule set shows they cost nothing; the
# second also keeps the FFN down-projections (reading GELU outputs) float32
MIXED = {
    "minilm_l6_v2": ("percentile", {
        "int8 + Softmax/LN fp32": SOFT_LN,
        "int8 + Softmax/LN/FFN-out fp32": SOFT_LN + ["--layer-precision", "re:/output/dense/:fp32"]}),
    "ppocr_v4_rec": ("percentile", {"int8 + Softmax/LN fp32": SOFT_LN}),
}


def build(precis, m, plan, threads, extra):
    r = subprocess.run([precis, "build", m.path, "-o", plan, "--threads", str(threads), *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def bench_ms(precis, plan, shapes, threads, iters=40):
    cmd = [precis, "bench", plan, "--threads", str(threads), "--warmup", "3", "--iterations",
           str(iters), "--json"]
    for n, d in shapes.items():
        cmd += ["--shape", f"{n}={d.replace('B', '1')}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return json.loads(r.stdout)["latency_ms"]["p50"] if r.returncode == 0 else float("nan")


def markdown(res):
    out = [f"# Mixed precision on the zoo: sensitive ops float32 by rule, the rest INT8", "",
           f"`{res['command']}` — {res['machine']}, {res['cpus']} cores, {res['threads']} threads; "
           f"metric against ORT FP32 over the model's evaluation set; ms = `precis bench` batch 1, "
           f"median of {res['rounds']} rounds. Total {res['seconds']:.0f} s.", "",
           "| model | metric | build | rules | metric value | ms b1 | speed-up vs FP32 |",
           "|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        if "error" in r:
            out.append(f"| {name} | | | | **error**: {r['error']} | | |")
            continue
        f32 = r["builds"]["fp32"]["ms"]
        for b, v in r["builds"].items():
            out.append(f"| {name} | {r['metric']} | {b} | {' '.join(v['rules'][1::2]) or '–'} | "
                       f"{fmt(v['primary'])} | {v['ms']:.2f} | {f32 / v['ms']:.2f}× |")
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calib", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default=",".join(MIXED))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "zoo_mixed.json"))
    a = ap.parse_args()
    t0 = time.time()
    res = {"command": "python3 bench/zoo/mixed.py " + " ".join(sys.argv[1:]),
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "threads": a.threads, "rounds": a.rounds, "models": {}}
    with tempfile.TemporaryDirectory(prefix="precis-mixed-") as tmp:
        plans = []
        for m in zoo.models(a.models.split(",")):
            cal, rules = MIXED[m.name]
            r = {"builds": {}}
            res["models"][m.name] = r
            try:
                ref, _ = run_ort(ort_session(m.path, a.threads), m.eval, m.outputs)
                cdir = os.path.join(tmp, m.name + "_calib")
                dump_calib(pick(m.calib, a.calib), cdir)
                # no shared calibration cache: a cache is keyed by the optimized graph,
                # which rules that keep nodes apart change
                q = ["--precision", "int8", "--calib-data", cdir, "--calibrator", cal]
                builds = [("fp32", ["--precision", "fp32"], []), ("int8", q, [])]
                builds += [(b, q + rl, rl) for b, rl in rules.items()]
                for b, extra, rl in builds:
                    plan = os.path.join(tmp, f"{m.name}.{len(plans)}.plan")
                    log = build(a.precis, m, plan, a.threads, extra)
                    out, _ = run_precis(a.precis, m, m.eval, a.threads, tmp, plan)
                    key, val, _ = primary(m.metric(out, ref))
                    r["metric"] = key
                    r["builds"][b] = {"rules": rl, "primary": val, "build_log": log.strip(),
                                      "rounds_ms": []}
                    plans.append((r["builds"][b], plan, SPEED_SHAPES[m.name][1]))
                    print(f"{m.name} {b}: {key} {fmt(val)}", flush=True)
            except Exception as e:  # noqa: BLE001
                r["error"] = str(e)[-400:]
                print(f"{m.name}: ERROR {r['error']}", flush=True)
        for _ in range(a.rounds):
            for v, plan, shapes in plans:
                v["rounds_ms"].append(bench_ms(a.precis, plan, shapes, a.threads))
        for v, _, _ in plans:
            v["ms"] = statistics.median(v["rounds_ms"])
    res["seconds"] = time.time() - t0
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    md = os.path.splitext(a.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(markdown(res))
    print(f"wrote {a.out} and {md} ({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
