#!/usr/bin/env python3
"""precis FP32 (ref backend) against ONNX Runtime FP32 over every zoo model's
evaluation set (bench/zoo/zoo.py): per output SQNR, cosine and max abs diff, the
model's task metric (precis as candidate, ORT as the FP32 reference), and median
batch-1 latency of both.

    python3 bench/zoo/eval.py [--precis build/precis] [--threads 2] [--models a,b]
                              [--out bench/results/zoo_fp32.json]

Every evaluation sample is run on its own (batch 1): ORT through one session
(intra-op threads = --threads, one warm-up run first), precis through one
`precis run --threads N` process per sample; its latency is the "ran in" figure the
CLI prints (the run alone: no process start, model load or .npy I/O).
Writes the JSON (with the command that made it) and a Markdown table next to it.
Fails (exit 1) if any output's cosine is below --min-cosine (default 0.99999).
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
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import zoo  # noqa: E402


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # CenterFace lists its initializers as inputs: ORT warns per tensor
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_ort(sess, samples, outputs):
    sess.run(outputs, samples[0])  # warm-up
    outs, ms = [], []
    for s in samples:
        t = time.perf_counter()
        outs.append(sess.run(outputs, s))
        ms.append((time.perf_counter() - t) * 1e3)
    return outs, statistics.median(ms)


def build_plan(precis, m, precision, threads, tmp):
    """`precis build` once per model; the samples then run the plan."""
    plan = os.path.join(tmp, f"{m.name}.{precision}.plan")
    r = subprocess.run([precis, "build", m.path, "-o", plan, "--precision", precision,
                        "--threads", str(threads)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    return plan


def run_precis(precis, m, samples, threads, tmp, plan=None):
    outs, ms = [], []
    for i, s in enumerate(samples):
        d = os.path.join(tmp, m.name, str(i))
        os.makedirs(d, exist_ok=True)
        cmd = [precis, "run", plan or m.path, "--output-dir", d, "--threads", str(threads)]
        for n, a in s.items():
            p = os.path.join(d, f"in_{re.sub(r'[^A-Za-z0-9._-]', '_', n)}.npy")
            np.save(p, a)
            cmd += ["--input", f"{n}={p}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
        hit = re.search(r"ran in ([0-9.]+) ms", r.stdout)
        ms.append(float(hit.group(1)) if hit else float("nan"))
        outs.append([np.load(os.path.join(d, re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy"))
                     for n in m.outputs])
    return outs, statistics.median(ms)


def fmt(v):
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return f"{v:.4g}"
    if isinstance(v, list):
        return "[" + ",".join(fmt(x) for x in v) + "]"
    return str(v)


def fmt_cos(c):
    return f"{c:.6f}" if not c > 0.999999 else f"1−{max(1 - c, 0):.1e}"


def markdown(res):
    what = f"precis engine {res['engine']}" if res.get("engine") else "precis FP32 (ref)"
    lines = [f"# {what} vs ONNX Runtime {res['onnxruntime']} FP32, zoo evaluation sets", "",
             f"`{res['command']}` — {res['machine']}, precis `--threads {res['threads']}`, "
             f"ORT intra-op threads {res['threads']}, batch 1, median over the evaluation set; "
             f"total {res['seconds']:.0f} s.", "",
             "| model | samples | output | SQNR dB | cosine | max abs diff | precis ms | ORT ms | task metric (precis vs ORT FP32 / truth) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        if "error" in r:
            lines.append(f"| {name} | | | | | | | | **error**: {r['error']} |")
            continue
        first = True
        for o, s in r["outputs"].items():
            task = "; ".join(f"{k} {fmt(v)}" for k, v in r["task"].items()) if first else ""
            lines.append(f"| {name if first else ''} | {r['samples'] if first else ''} | `{o}` | "
                         f"{fmt(s['sqnr_db'])} | {fmt_cos(s['cosine'])} | {s['max_abs_diff']:.2e} | "
                         f"{fmt(r['precis_ms']) if first else ''} | {fmt(r['ort_ms']) if first else ''} | {task} |")
            first = False
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", help="comma-separated subset of: " + ",".join(zoo.NAMES))
    ap.add_argument("--engine", choices=["fp32", "bf16", "fp16"],
                    help="run a plan built by `precis build --precision P` instead of the ref backend")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "zoo_fp32.json"))
    args = ap.parse_args()
    t0 = time.time()
    res = {"command": "python3 bench/zoo/eval.py " + " ".join(sys.argv[1:]),
           "onnxruntime": ort.__version__, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "threads": args.threads, "engine": args.engine, "models": {}}
    bad = []
    with tempfile.TemporaryDirectory(prefix="precis-zoo-") as tmp:
        for m in zoo.models(args.models.split(",") if args.models else None):
            t = time.time()
            try:
                ref, ort_ms = run_ort(ort_session(m.path, args.threads), m.eval, m.outputs)
                plan = build_plan(args.precis, m, args.engine, args.threads, tmp) if args.engine else None
                got, p_ms = run_precis(args.precis, m, m.eval, args.threads, tmp, plan)
            except Exception as e:  # noqa: BLE001 - recorded, and fails the run
                res["models"][m.name] = {"error": f"{type(e).__name__}: {e}"[:400]}
                bad.append(f"{m.name}: {e}")
                print(f"{m.name}: ERROR {e}", flush=True)
                continue
            stats = zoo.output_stats(got, ref, m.outputs)
            r = {"samples": len(m.eval), "data": m.note, "outputs": stats, "task": m.metric(got, ref),
                 "precis_ms": p_ms, "ort_ms": ort_ms, "seconds": time.time() - t}
            res["models"][m.name] = r
            for o, s in stats.items():
                if not s.get("cosine", 0) >= args.min_cosine:
                    bad.append(f"{m.name} {o}: cosine {s.get('cosine')}")
            print(f"{m.name}: {len(m.eval)} samples, precis {p_ms:.1f} ms, ORT {ort_ms:.1f} ms, "
                  + ", ".join(f"{o} cos {fmt_cos(s['cosine'])} sqnr {fmt(s['sqnr_db'])}" for o, s in stats.items())
                  + f" ({r['seconds']:.0f} s)", flush=True)
            print("   " + ", ".join(f"{k}={fmt(v)}" for k, v in r["task"].items()), flush=True)
    res["seconds"] = time.time() - t0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(markdown(res))
    print(f"wrote {args.out} and {md} ({res['seconds']:.0f} s)")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
