#!/usr/bin/env python3
"""Per-kernel GPU times of one steady-state run of a precis plan, from Nsight Compute.

usage: ncu_steps.py --precis PATH/precis MODEL.onnx --shapes SPEC [--precision fp16]
                    [--ncu ncu] [--json OUT.json] [-- extra precis bench args]

Runs `precis bench MODEL --device cuda --warmup 0 --iterations 3` without CUDA graphs
under `ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none`
(each kernel serialized, caches kept warm, clocks as they are), finds the period P of
the kernel-name sequence at its end (three identical runs; build-time timing launches
come before them) and prints the last run's kernels in order with their durations,
then the durations summed by kernel name. The sum is the GPU's busy time without the
launch gaps: compare it with the graph-replay time of `precis bench` to see the gaps.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    ap.add_argument("model")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--json", default="")
    ap.add_argument("rest", nargs="*")
    a, more = ap.parse_known_args()  # precis options after "--" (argparse leaves them over)
    a.rest = a.rest + [m for m in more if m != "--"]
    cmd = [a.ncu, "--csv", "--print-units", "base", "--print-kernel-base", "function", "--metrics", "gpu__time_duration.sum",
           "--cache-control", "none", "--clock-control", "none", a.precis, "bench", a.model,
           "--device", "cuda", "--precision", a.precision, "--shapes", a.shapes, "--warmup",
           "0", "--iterations", "3"] + a.rest
    env = dict(os.environ, PRECIS_CUDA_GRAPHS="0")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('"')]
    if p.returncode or not lines:
        print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
        return 1
    seq = []
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        seq.append((r["Kernel Name"], float(r["Metric Value"].replace(",", "")) / 1000.0,
                    r.get("Grid Size", ""), r.get("Block Size", "")))
    names = [s[0] for s in seq]
    period = 0
    for P in range(1, len(seq) // 3 + 1):
        if names[-P:] == names[-2 * P:-P] == names[-3 * P:-2 * P]:
            period = P
            break
    if not period:
        print(f"no period found in {len(seq)} kernels", file=sys.stderr)
        return 1
    last = seq[-period:]
    total = sum(s[1] for s in last)
    print(f"{a.model} {a.shapes} {a.precision}: {period} kernels a run, {total:.1f} us summed")
    for i, (n, us, grid, blk) in enumerate(last):
        print(f"{i:4d} {us:8.2f} us  grid {grid:>14} block {blk:>12}  {n[:110]}")
    by = {}
    for n, us, _, _ in last:
        k = n.split("(")[0][:90]
        c, t = by.get(k, (0, 0.0))
        by[k] = (c + 1, t + us)
    print("\nby kernel:")
    for k, (c, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{t:9.1f} us {c:4d}x  {k}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": os.path.basename(a.model), "shapes": a.shapes,
                       "precision": a.precision, "kernels_a_run": period, "sum_us": total,
                       "kernels": [{"name": n, "us": us, "grid": g, "block": b}
                                   for n, us, g, b in last]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
