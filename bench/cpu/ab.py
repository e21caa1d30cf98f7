#!/usr/bin/env python3
"""A/B speed of precis binaries (or env switches) on one zoo model's plans, in turn,
fresh processes each round: the way a kernel change is judged on a noisy 2-core VM.

    python3 bench/cpu/ab.py --model ppocr_v2_cls [--batch 8] [--threads 2] [--rounds 9]
        [--iters N] [--calib 32] [--plans DIR] [--profile]
        NAME=BINARY[:ENV=VAL,ENV=VAL] ...

Builds (once, into --plans, default /tmp/precis-ab/MODEL) an FP32 plan and an INT8 plan
(entropy calibration on zoo.py's calibration samples, as bench/zoo/int8.py does) with
the first binary; then every round runs `precis bench` of each variant on the INT8
plan, and of the first binary on the FP32 plan, and prints min / median of the rounds'
p50s and the INT8/FP32 ratios. --profile instead prints each variant's per-step times
(the minimum over rounds of each run's mean, us) side by side. A benchmark: say the load when you quote it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
sys.path.insert(0, HERE)
import zoo  # noqa: E402
from int8 import dump_calib  # noqa: E402
from ort_int8 import pick  # noqa: E402
from run import MODELS as SPEED_SHAPES  # noqa: E402


def variant(spec):
    name, rest = spec.split("=", 1)
    binary, _, envs = rest.partition(":")
    env = dict(e.split("=", 1) for e in envs.split(",") if e)
    return name, os.path.abspath(binary), env


def bench(binary, env, plan, shapes, threads, iters, profile=False):
    cmd = [binary, "bench", plan, "--threads", str(threads), "--warmup", "3",
           "--iterations", str(iters), "--json"]
    for n, d in shapes.items():
        cmd += ["--shape", f"{n}={d}"]
    if profile:
        cmd += ["--profile", "--profile-out", plan + ".profile.json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if r.returncode:
        sys.exit(f"{binary} bench: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ppocr_v2_cls")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--calib", type=int, default=32)
    ap.add_argument("--plans")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("variants", nargs="+", help="NAME=BINARY[:ENV=VAL,...]")
    a = ap.parse_args()
    vs = [variant(v) for v in a.variants]
    m = zoo.models([a.model])[0]
    d = a.plans or os.path.join("/tmp/precis-ab", a.model)
    os.makedirs(d, exist_ok=True)
    fplan, iplan = os.path.join(d, "fp32.plan"), os.path.join(d, "int8.plan")
    b0 = vs[0][1]
    if not os.path.exists(iplan):
        cdir = os.path.join(d, "calib")
        dump_calib(pick(m.calib, a.calib), cdir)
        for cmd in ([b0, "build", m.path, "-o", fplan, "--precision", "fp32"],
                    [b0, "build", m.path, "-o", iplan, "--precision", "int8", "--calib-data", cdir,
                     "--calibrator", "entropy", "--calib-cache", os.path.join(d, "calib.cache")]):
            subprocess.run(cmd + ["--threads", str(a.threads)], check=True, capture_output=True)
    _, shapes, iters = SPEED_SHAPES[a.model]
    shapes = {n: s.replace("B", str(a.batch)) for n, s in shapes.items()}
    iters = a.iters or (iters if a.batch == 1 else max(4, iters // 4)) * 4
    if a.profile:
        steps = {}
        for _ in range(a.rounds):
            for name, binary, env in vs:
                p = bench(binary, env, iplan, shapes, a.threads, iters, True)
                for s in p["profile"]:
                    key = (s["step"], s["name"])
                    us = 1e3 * s["ms"]
                    cur = steps.setdefault(key, {})
                    cur[name] = min(cur.get(name, float("inf")), us)
        names = [v[0] for v in vs]
        tot = {n: 0.0 for n in names}
        print("step".ljust(60) + "".join(n.rjust(10) for n in names))
        for (i, sname), t in sorted(steps.items()):
            for n in names:
                tot[n] += t.get(n, 0.0)
            print(f"{i:3d} {sname[:56]:56s}" + "".join(f"{t.get(n, 0.0):10.1f}" for n in names))
        print("sum".ljust(60) + "".join(f"{tot[n]:10.1f}" for n in names))
        return
    res = {"fp32": []}
    for _ in range(a.rounds):
        res["fp32"].append(bench(b0, vs[0][2], fplan, shapes, a.threads, iters)["latency_ms"]["p50"])
        for name, binary, env in vs:
            res.setdefault(name, []).append(
                bench(binary, env, iplan, shapes, a.threads, iters)["latency_ms"]["p50"])
    fmin, fmed = min(res["fp32"]), statistics.median(res["fp32"])
    print(f"{a.model} b{a.batch} t{a.threads}, {a.rounds} rounds of {iters} iterations, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"  fp32        min {fmin:.3f}  median {fmed:.3f} ms")
    for name, *_ in vs:
        mn, md = min(res[name]), statistics.median(res[name])
        print(f"  {name:10s}  min {mn:.3f}  median {md:.3f} ms   fp32/int8 {fmin / mn:.2f} / "
              f"{fmed / md:.2f}")


if __name__ == "__main__":
    main()
