#!/usr/bin/env python3
"""precis INT8 against ONNX Runtime's own INT8 on every zoo model, accuracy and speed
side by side in one run, both calibrated on the same samples (zoo.py's calibration
set, at most --calib, picked as ort_int8.py picks them; never the evaluation samples).

    python3 bench/zoo/int8.py [--precis build/precis] [--threads 2] [--calib 32]
                              [--models a,b] [--batches 1,8] [--rounds 5]
                              [--out bench/results/zoo_int8.json]

Per model:
  - ORT FP32 on the evaluation set: the reference outputs;
  - ORT quantize_static (QDQ, per-channel int8 weights, int8 activations) with MinMax,
    Entropy and Percentile 99.999 (ort_int8.py's recipe): task metric vs ORT FP32;
  - precis `build --precision int8` with each calibrator (entropy, minmax,
    percentile 99.99, mse; the data runs once, the other calibrators re-derive
    their scales from the calibration cache): the same task metric;
  - speed (`precis bench`, 2 threads by default, batch 1 and 8): precis FP32 plan,
    precis INT8 plan (the calibrator with the best metric) and ORT INT8 (the best
    of its calibrators; `--vs-ort` on the same inputs in the same run), --rounds
    rounds in turn (default 5), medians of the rounds' p50s, and the speed-up as the median of
    each round's FP32 / INT8 (timed back to back); plus plan sizes. A measurement
    runs the model's iteration count (bench/cpu/run.py; a quarter at batch 8) or enough
    iterations for --min-seconds (default 0.3) at precis FP32's speed, whichever is more.
    The "no protection yet" INT8: every Conv/MatMul/Gemm quantized.
Writes the JSON (with the command that made it) and a Markdown table next to it.
A benchmark: numbers depend on the machine's load.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "cpu"))
import zoo  # noqa: E402
from eval import fmt, ort_session, run_ort, run_precis  # noqa: E402
from ort_int8 import METHODS, err, pick, prepare, quantize, summary  # noqa: E402
from run import MODELS as SPEED_SHAPES  # noqa: E402

CALIBRATORS = ["entropy", "minmax", "percentile", "mse"]

# The one number per model kind that decides "more accurate" (higher is better,
# except CER), and how to read it from the task dict.
PRIMARY = [("cer_vs_fp32", False), ("agreement_with_fp32", True), ("mask_iou_vs_fp32_mean", True),
           ("embedding_cosine_min", True), ("nn_agreement_with_fp32", True),
           ("top1_agreement_with_fp32", True), ("fp32_boxes_matched", True)]


def primary(task):
    for k, hi in PRIMARY:
        if k in task and isinstance(task[k], (int, float)):
            return k, float(task[k]), hi
    return None, None, True


def better(a, b, hi):
    """a, b: (primary value, min output cosine); ties on the metric go to the cosine."""
    if a[0] != b[0]:
        return a[0] > b[0] if hi else a[0] < b[0]
    return a[1] > b[1]


def rank(entry):
    return (entry["primary"], min(o["cosine"] for o in entry["outputs"].values()))


def safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def dump_calib(samples, d):
    for i, s in enumerate(samples):
        for name, x in s.items():
            sub = d if len(s) == 1 else os.path.join(d, safe(name))
            os.makedirs(sub, exist_ok=True)
            np.save(os.path.join(sub, f"{i:04d}.npy"), np.ascontiguousarray(x))


def precis_build(precis, m, plan, threads, calib_dir, cache, calibrator):
    cmd = [precis, "build", m.path, "-o", plan, "--precision", "int8", "--threads", str(threads),
           "--calib-cache", cache, "--calibrator", calibrator, "--calib-data", calib_dir]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    return time.time() - t


def bench(precis, target, shapes, threads, iters, ort_model=None):
    cmd = [precis, "bench", target, "--threads", str(threads), "--warmup", "3",
           "--iterations", str(iters), "--json"]
    for n, d in shapes.items():
        cmd += ["--shape", f"{n}={d}"]
    if ort_model:
        cmd += ["--vs-ort", ort_model]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-300:]}
    return json.loads(r.stdout)


def markdown(res):
    out = [f"# precis INT8 vs ONNX Runtime {res['onnxruntime']} INT8 on the zoo", "",
           f"`{res['command']}` — {res['machine']}, {res['cpus']} cores, {res['threads']} threads; "
           f"calibration: at most {res['calib']} samples per model (the same for both); metric = the "
           f"model's task metric against ORT FP32 over its evaluation set (best calibrator of each "
           f"side; all are in the JSON); ms = `precis bench` p50 at batch 1 / 8, median of {res.get('rounds', 1)} "
           f"rounds in turn (ORT INT8 timed by `--vs-ort` on the same inputs); speed-up = median over the "
           f"rounds of each round's FP32 p50 / INT8 p50 (timed back to back). No protection: every Conv/MatMul/Gemm in INT8. "
           f"Total {res['seconds']:.0f} s.", "",
           "| model | metric | FP32 ms b1 / b8 | INT8 ms b1 / b8 | speed-up b1 / b8 | plan MB FP32 / INT8 | "
           "precis INT8 metric (calibrator) | ORT INT8 ms b1 / b8 | ORT INT8 metric (calibrator) | precis / ORT INT8 time b1 / b8 |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        if "error" in r and "precis" not in r:
            out.append(f"| {name} | | | | | | **error**: {r['error']} | | | |")
            continue
        sp = r.get("speed", {})

        def ms(kind):
            return " / ".join(f"{sp[b][kind]:.2f}" if isinstance(sp.get(b, {}).get(kind), float)
                              else "–" for b in sorted(sp))

        def speedup():
            return " / ".join(f"{sp[k]['speedup']:.2f}" if isinstance(sp.get(k, {}).get("speedup"), float)
                              else (f"{sp[k]['fp32'] / sp[k]['int8']:.2f}"
                                    if isinstance(sp.get(k, {}).get("int8"), float) else "–")
                              for k in sorted(sp))

        def ratio(a, b):
            return " / ".join(f"{sp[k][a] / sp[k][b]:.2f}" if isinstance(sp.get(k, {}).get(a), float)
                              and isinstance(sp.get(k, {}).get(b), float) else "–" for k in sorted(sp))
        pb, ob = r.get("precis_best"), r.get("ort_best")
        key = r.get("metric", "")
        pm = f"{fmt(r['precis'][pb]['primary'])} ({pb})" if pb else "error"
        om = f"{fmt(r['ort'][ob]['primary'])} ({ob})" if ob else "failed"
        size = (f"{r['plan_mb']['fp32']:.1f} / {r['plan_mb']['int8']:.1f}" if "plan_mb" in r else "")
        out.append(f"| {name} | {key} | {ms('fp32')} | {ms('int8')} | {speedup()} | {size} | "
                   f"{pm} | {ms('ort_int8')} | {om} | {ratio('int8', 'ort_int8')} |")
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calib", type=int, default=32)
    ap.add_argument("--models", help="comma-separated subset of: " + ",".join(zoo.NAMES))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--calibrators", default=",".join(CALIBRATORS))
    ap.add_argument("--ort-methods", default="minmax,entropy,percentile")
    ap.add_argument("--rounds", type=int, default=5,
                    help="speed rounds in turn per model and batch (medians)")
    ap.add_argument("--min-seconds", type=float, default=0.3,
                    help="each speed measurement runs at least this long at FP32's speed")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "zoo_int8.json"))
    a = ap.parse_args()
    import onnxruntime as ort
    t0 = time.time()
    res = {"command": "python3 bench/zoo/int8.py " + " ".join(sys.argv[1:]),
           "onnxruntime": ort.__version__, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "threads": a.threads, "calib": a.calib, "rounds": a.rounds,
           "min_seconds": a.min_seconds,
           "models": {}}
    md_path = os.path.splitext(a.out)[0] + ".md"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)

    def save():
        res["seconds"] = time.time() - t0
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
        with open(md_path, "w") as f:
            f.write(markdown(res))

    with tempfile.TemporaryDirectory(prefix="precis-int8-") as tmp:
        for m in zoo.models(a.models.split(",") if a.models else None):
            r = {"samples": len(m.eval), "precis": {}, "ort": {}}
            res["models"][m.name] = r
            try:
                ref, ref_ms = run_ort(ort_session(m.path, a.threads), m.eval, m.outputs)
                r["fp32_task"] = m.metric(ref, ref)
                calib = pick(m.calib, a.calib)
                r["calibration_samples"] = len(calib)
                cdir = os.path.join(tmp, m.name + "_calib")
                dump_calib(calib, cdir)
            except Exception as e:  # noqa: BLE001
                r["error"] = err(e)
                print(f"{m.name}: ERROR {r['error']}", flush=True)
                save()
                continue
            print(f"{m.name}: {len(calib)} calibration samples, {len(m.eval)} eval", flush=True)
            cache = os.path.join(tmp, m.name + ".calib")
            best = None
            for cal in a.calibrators.split(","):
                plan = os.path.join(tmp, f"{m.name}.{cal}.plan")
                try:
                    secs = precis_build(a.precis, m, plan, a.threads, cdir, cache, cal)
                    out, ms = run_precis(a.precis, m, m.eval, a.threads, tmp, plan)
                    task = m.metric(out, ref)
                    key, val, hi = primary(task)
                    r["metric"] = key
                    r["precis"][cal] = {"build_s": secs, "ms": ms, "task": task, "primary": val,
                                        "outputs": zoo.output_stats(out, ref, m.outputs),
                                        "plan": plan}
                    if val is not None and (best is None or better(rank(r["precis"][cal]),
                                                                   rank(r["precis"][best]), hi)):
                        best = cal
                    print(f"  precis {cal}: built in {secs:.1f} s; {summary(task)}", flush=True)
                except Exception as e:  # noqa: BLE001
                    r["precis"][cal] = {"error": err(e)}
                    print(f"  precis {cal}: ERROR {err(e)}", flush=True)
            r["precis_best"] = best
            obest = None
            try:
                src = prepare(m, tmp, r)
                for meth in a.ort_methods.split(","):
                    q = os.path.join(tmp, f"{m.name}_ort_{meth}.onnx")
                    try:
                        quantize(src, q, calib, METHODS[meth])
                        out, ms = run_ort(ort_session(q, a.threads), m.eval, m.outputs)
                        task = m.metric(out, ref)
                        key, val, hi = primary(task)
                        r["ort"][meth] = {"ms": ms, "task": task, "primary": val, "model": q,
                                          "outputs": zoo.output_stats(out, ref, m.outputs)}
                        if val is not None and (obest is None or better(rank(r["ort"][meth]),
                                                                         rank(r["ort"][obest]), hi)):
                            obest = meth
                        print(f"  ORT {meth}: {summary(task)}", flush=True)
                    except Exception as e:  # noqa: BLE001
                        r["ort"][meth] = {"error": err(e)}
                        print(f"  ORT {meth}: FAILED {err(e)}", flush=True)
            except Exception as e:  # noqa: BLE001
                r["ort_error"] = err(e)
            r["ort_best"] = obest
            # speed
            if m.name in SPEED_SHAPES and best:
                _, shapes, iters = SPEED_SHAPES[m.name]
                fplan = os.path.join(tmp, m.name + ".fp32.plan")
                subprocess.run([a.precis, "build", m.path, "-o", fplan, "--precision", "fp32",
                                "--threads", str(a.threads)], capture_output=True)
                iplan = r["precis"][best]["plan"]
                r["plan_mb"] = {"fp32": os.path.getsize(fplan) / 1e6, "int8": os.path.getsize(iplan) / 1e6}
                r["speed"] = {}
                for b in [int(x) for x in a.batches.split(",")]:
                    sh = {n: d.replace("B", str(b)) for n, d in shapes.items()}
                    it = iters if b == 1 else max(4, iters // 4)
                    # at least ~--min-seconds of precis FP32 a measurement (a p50 of 10-15
                    # sub-millisecond runs moved +-10% between runs on these VMs)
                    probe = bench(a.precis, fplan, sh, a.threads, 5).get("latency_ms", {}).get("p50")
                    if isinstance(probe, float) and probe > 0:
                        it = max(it, min(1000, int(1e3 * a.min_seconds / probe + 0.5)))
                    # rounds in turn (FP32, then INT8 with ORT INT8 beside it):
                    # medians of the per-round p50s, every round kept
                    s = {"rounds": [], "iterations": it}
                    for _ in range(a.rounds):
                        f = bench(a.precis, fplan, sh, a.threads, it)
                        q = bench(a.precis, iplan, sh, a.threads, it,
                                  r["ort"][obest]["model"] if obest else None)
                        s["rounds"].append({"raw_fp32": f, "raw_int8": q})
                    for key, get in (("fp32", lambda x: x["raw_fp32"].get("latency_ms", {}).get("p50")),
                                     ("int8", lambda x: x["raw_int8"].get("latency_ms", {}).get("p50")),
                                     ("ort_int8", lambda x: x["raw_int8"].get("ort", {}).get("latency_ms_p50"))):
                        v = sorted(x for x in (get(rd) for rd in s["rounds"]) if isinstance(x, float))
                        if v:
                            s[key] = statistics.median(v)
                    # FP32 / INT8 of each round (timed back to back): the speed-up, their
                    # median -- drifts of the VM over a run cancel within a round
                    rr = sorted(f / q for f, q in ((rd["raw_fp32"].get("latency_ms", {}).get("p50"),
                                                     rd["raw_int8"].get("latency_ms", {}).get("p50"))
                                                    for rd in s["rounds"])
                                if isinstance(f, float) and isinstance(q, float) and q > 0)
                    if rr:
                        s["speedup_rounds"] = rr
                        s["speedup"] = statistics.median(rr)
                    r["speed"][f"b{b}"] = s
                    print(f"  speed b{b}: fp32 {s.get('fp32')} int8 {s.get('int8')} ORT int8 "
                          f"{s.get('ort_int8')} ms", flush=True)
            for v in list(r["precis"].values()) + list(r["ort"].values()):
                v.pop("plan", None)
                v.pop("model", None)
            save()
    save()
    print(f"wrote {a.out} and {md_path} ({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
