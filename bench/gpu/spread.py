#!/usr/bin/env python3
"""How much a GPU latency moves from process to process, and why.

    spread.py --precis PATH/TO/precis --out DIR [--runs 5] SPEC...   SPEC: MODEL=BATCH:PRECISION

For each SPEC (MODEL: bert or minilm, exported by bench.py into --work when missing; their
three inputs at sequence 128), `precis bench` runs --runs times, each in a new process, in
four variants interleaved:
  timed   the default: every process times its own algorithm choices (cuBLASLt
          candidates, the flash-attention form) while it prepares;
  cached  the choices read from one timing cache made by a first process
          (--timing-cache), so every process runs the same kernels;
  nograph the cached choices, without the CUDA graph (PRECIS_CUDA_GRAPHS=0): what the
          graph saves or costs, in the same processes' conditions;
  warm    the cached choices after --long-warmup runs (seconds of work) instead of 20:
          a GPU that idled while the process loaded needs time to clock up.
If `timed` spreads and `cached` does not, the spread is the choices; if both spread
alike, it is the machine (clocks, the process's placement). Writes DIR/spread.json
and prints one line per variant: min / median / max of the processes' p50s.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    return p.returncode, p.stdout, p.stderr


def read_choices(path):
    """KEY -> value of a timing cache file (its first line is the header)."""
    out = {}
    try:
        with open(path) as f:
            for line in f.read().splitlines()[1:]:
                k, _, v = line.rpartition("\t")
                if k:
                    out[k] = v
    except OSError:
        pass
    return out


def short(v):
    return hashlib.md5(v.encode()).hexdigest()[:6] if v else "-"


def report_choices(spec, own, shared, results):
    """The choices that differ between processes, next to each process's p50."""
    keys = sorted({k for _, c in own for k in c} | set(shared))
    diff = [k for k in keys if len({c.get(k) for _, c in own} | {shared.get(k)}) > 1]
    print(f"{spec}: {len(diff)} of {len(keys)} timed choices differ between processes"
          f" (p50s of the timed processes: {' '.join(f'{p:.3f}' for p, _ in own)})")
    for k in diff:
        vals = " ".join(f"{p:.3f}:{short(c.get(k))}" for p, c in own)
        print(f"  {k[:70]:70s} shared {short(shared.get(k))} | {vals}")
    results.setdefault("choices", {})[spec] = {
        "differing": {k: {"shared": shared.get(k), "processes": [[p, c.get(k)] for p, c in own]}
                      for k in diff}, "n_keys": len(keys)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/precis-gpu-work")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--long-warmup", type=int, default=3000)
    ap.add_argument("specs", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    results = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv}, "rows": []}
    for spec in a.specs:
        model, rest = spec.split("=")
        batch, _, prec = rest.partition(":")
        prec = prec or "fp16"
        path = os.path.join(a.work, f"{model}.onnx")
        if not os.path.exists(path):
            rc, _, e = run([sys.executable, os.path.join(HERE, "bench.py"), "--precis", a.precis,
                            "--out", os.path.join(a.work, "spread-export"), "--work", a.work,
                            "--models", model, "--no-speed", "--no-correctness", "--no-compile"])
            if rc or not os.path.exists(path):
                print(f"{spec}: export failed: {e.strip()[-400:]}")
                continue
        shapes = ",".join(f"{n}:{batch}x128" for n in ("input_ids", "attention_mask",
                                                       "token_type_ids"))
        base = [a.precis, "bench", path, "--device", "cuda", "--precision", prec, "--shapes",
                shapes, "--warmup", "20", "--iterations", str(a.iterations), "--json"]
        tc = os.path.join(a.work, f"spread-{model}-b{batch}-{prec}.tcache")
        if os.path.exists(tc):
            os.remove(tc)
        rc, _, e = run(base + ["--timing-cache", tc])
        if rc:
            print(f"{spec}: the timing-cache run failed: {e.strip()[-400:]}")
            continue
        got = {"timed": [], "cached": [], "nograph": [], "warm": []}
        own = []  # the timed processes' own choices: a fresh timing cache each
        for i in range(a.runs):
            for var in got:
                mine = os.path.join(a.work, f"spread-{model}-b{batch}-{prec}-p{i}.tcache")
                if var == "timed" and os.path.exists(mine):
                    os.remove(mine)
                cmd = base + ["--timing-cache", mine if var == "timed" else tc]
                if var == "warm":
                    cmd[cmd.index("--warmup") + 1] = str(a.long_warmup)
                t0 = time.time()
                rc, o, e = run(cmd,
                               env={"PRECIS_CUDA_GRAPHS": "0"} if var == "nograph" else None)
                if rc:
                    print(f"{spec} {var}: {e.strip()[-300:]}")
                    continue
                got[var].append(json.loads(o)["device_ms_p50"])
                results.setdefault("processes", []).append(
                    {"spec": spec, "variant": var, "start": t0, "end": time.time(),
                     "p50_ms": got[var][-1]})
                if var == "timed":
                    own.append((got[var][-1], read_choices(mine)))
        report_choices(spec, own, read_choices(tc), results)
        for var, v in got.items():
            if not v:
                continue
            row = {"spec": spec, "variant": var, "p50s_ms": v, "min": min(v),
                   "median": statistics.median(v), "max": max(v), "command": " ".join(base)}
            results["rows"].append(row)
            print(f"{spec:18s} {var:6s} p50 over {len(v)} processes: min {row['min']:.3f} "
                  f"median {row['median']:.3f} max {row['max']:.3f} ms  "
                  f"({' '.join(f'{x:.3f}' for x in v)})", flush=True)
    with open(os.path.join(a.out, "spread.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
