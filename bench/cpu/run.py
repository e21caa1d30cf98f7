#!/usr/bin/env python3
"""CPU speed benchmark: precis FP32/BF16/FP16 engines against ONNX Runtime FP32 on
every zoo model plus a ResNet-50-shaped model (random weights), batch 1 and 8,
1 and 2 threads, side by side in one run (`precis bench --vs-ort`: same model, same
random inputs, same thread count, ORT timed by the same process tree right after).

    python3 bench/cpu/run.py [--precis build/precis] [--models a,b] [--threads 1,2]
                             [--batches 1,8] [--precisions fp32,bf16,fp16]
                             [--rounds 3] [--out bench/results/cpu_fast.json]

Each configuration is measured --rounds times (default 3), the rounds taken in turn over
all configurations so that a burst of load on the machine hits one round of many rather
than every round of one; reported: the median over rounds of each round's median latency
(precis and ORT separately; the ratio of those medians). Writes the JSON (with the command
that made it) and a Markdown table next to it. A benchmark, not a test: the
numbers depend on the machine's load.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("PRECIS_CACHE", os.path.expanduser("~/.cache/precis"))
M = os.path.join(CACHE, "models")

# name: (onnx path, {input: dims with B for the batch}, iterations at batch 1)
MODELS = {
    "resnet50": (os.path.join(M, "resnet50_random.onnx"), {"input": "Bx3x224x224"}, 20),
    "efficientnet_lite0": (os.path.join(M, "efficientnet", "efficientnet_lite0.onnx"),
                           {"input": "Bx3x224x224"}, 40),
    "ppocr_v4_det": (os.path.join(M, "ch_PP-OCRv4_det_infer.onnx"), {"x": "Bx3x640x640"}, 10),
    "ppocr_v4_rec": (os.path.join(M, "ch_PP-OCRv4_rec_infer.onnx"), {"x": "Bx3x48x320"}, 40),
    "ppocr_v2_cls": (os.path.join(M, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), {"x": "Bx3x48x192"}, 60),
    "minilm_l6_v2": (os.path.join(M, "minilm", "all-MiniLM-L6-v2.onnx"),
                     {"input_ids": "Bx128", "attention_mask": "Bx128", "token_type_ids": "Bx128"}, 40),
    "yolov8n": (os.path.join(M, "detector", "320n.onnx"), {"images": "Bx3x320x320"}, 40),
    "centerface": (os.path.join(M, "detector", "centerface_dyn.onnx"), {"input.1": "Bx3x320x320"}, 40),
}


def bench(precis, path, shapes, precision, threads, iters, vs_ort):
    cmd = [precis, "bench", path, "--precision", precision, "--threads", str(threads),
           "--warmup", "3", "--iterations", str(iters), "--json"]
    for n, d in shapes.items():
        cmd += ["--shape", f"{n}={d}"]
    if vs_ort:
        cmd += ["--vs-ort"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-300:]}
    return json.loads(r.stdout)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def merge_rounds(runs):
    """One result from several rounds: the last good round's fields, p50 = the median of
    the rounds' p50s (ORT's likewise), the ratio of those medians."""
    ok = [v for v in runs if "latency_ms" in v]
    if not ok:
        return runs[-1]
    v = dict(ok[-1])
    v["latency_ms"] = dict(v["latency_ms"], p50=median([r["latency_ms"]["p50"] for r in ok]))
    v["rounds_p50_ms"] = [r["latency_ms"]["p50"] for r in ok]
    ort = [r["ort"]["latency_ms_p50"] for r in ok if "latency_ms_p50" in r.get("ort", {})]
    if ort:
        v["ort"] = dict(v["ort"] if "latency_ms_p50" in v.get("ort", {}) else
                        next(r["ort"] for r in ok if "latency_ms_p50" in r.get("ort", {})),
                        latency_ms_p50=median(ort), rounds_p50_ms=ort)
        v["ort"]["ratio"] = v["latency_ms"]["p50"] / v["ort"]["latency_ms_p50"]
    return v


def markdown(res):
    out = [f"# precis CPU engines vs ONNX Runtime {res.get('onnxruntime', '?')} FP32", "",
           f"`{res['command']}` — {res['machine']}, {res['cpus']} cores; median latency in ms "
           f"(`precis bench`, {res['note']}); ratio = precis / ORT (≤ 1: precis faster); "
           f"speed-up = precis FP32 / precis BF16 or FP16. Total {res['seconds']:.0f} s.", "",
           "| model | batch | threads | ORT fp32 | precis fp32 | ratio | precis bf16 | bf16 speed-up | precis fp16 | fp16 speed-up |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        def ms(p):
            v = r.get(p, {})
            return f"{v['latency_ms']['p50']:.2f}" if "latency_ms" in v else ("error" if v else "")
        fp = r.get("fp32", {})
        ort = fp.get("ort", {})
        ort_ms = f"{ort['latency_ms_p50']:.2f}" if "latency_ms_p50" in ort else "error"
        ratio = f"{ort['ratio']:.2f}" if "ratio" in ort else ""

        def sp(p):
            a, b = r.get("fp32", {}), r.get(p, {})
            if "latency_ms" in a and "latency_ms" in b:
                return f"{a['latency_ms']['p50'] / b['latency_ms']['p50']:.2f}×"
            return ""
        out.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {ort_ms} | {ms('fp32')} | {ratio} | "
                   f"{ms('bf16')} | {sp('bf16')} | {ms('fp16')} | {sp('fp16')} |")
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--precisions", default="fp32,bf16,fp16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cpu_fast.json"))
    args = ap.parse_args()
    r50 = MODELS["resnet50"][0]
    if not os.path.exists(r50):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cpu", "make_resnet50.py"), r50],
                       check=True)
    try:
        import onnxruntime
        ort_ver = onnxruntime.__version__
    except ImportError:
        ort_ver = "?"
    t0 = time.time()
    res = {"command": "python3 bench/cpu/run.py " + " ".join(sys.argv[1:]),
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "onnxruntime": ort_ver, "rounds": args.rounds,
           "note": f"median of {args.rounds} rounds' medians; each round 3 warm-up runs, 40 iterations at batch 1 (10-60 by model), "
           "a quarter of that at batch 8", "rows": []}
    configs = []
    for name in args.models.split(","):
        path, shapes, iters = MODELS[name]
        if not os.path.exists(path):
            print(f"{name}: missing {path} (run scripts/fetch_models.sh)", flush=True)
            continue
        for batch in [int(b) for b in args.batches.split(",")]:
            sh = {n: d.replace("B", str(batch)) for n, d in shapes.items()}
            it = iters if batch == 1 else max(4, iters // 4)
            for th in [int(t) for t in args.threads.split(",")]:
                row = {"model": name, "batch": batch, "threads": th, "shapes": sh}
                res["rows"].append(row)
                configs.append((row, path, it))
    for rnd in range(args.rounds):
        for row, path, it in configs:
            for p in args.precisions.split(","):
                v = bench(args.precis, path, row["shapes"], p, row["threads"], it, p == "fp32")
                row.setdefault("rounds", {}).setdefault(p, []).append(v)
                msg = (f"{v['latency_ms']['p50']:.2f} ms" if "latency_ms" in v else f"ERROR {v.get('error')}")
                if p == "fp32" and "ort" in v:
                    o = v["ort"]
                    msg += (f" (ORT {o['latency_ms_p50']:.2f} ms, ratio {o['ratio']:.2f})"
                            if "ratio" in o else f" (ORT error {o.get('error')})")
                print(f"[{rnd + 1}/{args.rounds}] {row['model']} b{row['batch']} t{row['threads']} {p}: {msg}",
                      flush=True)
    for row, _, _ in configs:
        for p, runs in row["rounds"].items():
            row[p] = merge_rounds(runs)
    res["seconds"] = time.time() - t0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(markdown(res))
    print(f"wrote {args.out} and {md} ({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
