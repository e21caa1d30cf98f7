#!/usr/bin/env python3
"""Which precision rule brings a cuda plan back to ref? One model, one input, several
builds that differ by their rules, each compared with the ref backend.

usage: probe_rules.py PRECIS MODEL.onnx NAME=DIMS PRECISION [RULES]...

RULES: one string of build options per variant (e.g. "--layer-precision op:Softmax:fp32");
"" is the plan without rules. Prints max |cuda - ref| / max |ref| and the cosine per
variant (the metrics of tests/cuda/check_models.py)."""
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np


def main():
    precis, model, spec, prec, *variants = sys.argv[1:]
    name, _, dims = spec.partition("=")
    shape = [int(d) for d in dims.split("x")]
    tmp = tempfile.mkdtemp(prefix="precis-probe-")
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    xp = os.path.join(tmp, "x.npy")
    np.save(xp, x)
    ref = os.path.join(tmp, "ref")
    subprocess.run([precis, "run", model, "--input", f"{name}={xp}", "-o", ref, "-q"], check=True)
    for i, v in enumerate(variants or [""]):
        plan, out = os.path.join(tmp, f"{i}.plan"), os.path.join(tmp, f"{i}.out")
        b = subprocess.run([precis, "build", model, "-o", plan, "--device", "cuda", "--precision",
                            prec, "--shapes", f"{name}:{dims}", *shlex.split(v)],
                           capture_output=True, text=True)
        if b.returncode:
            print(f"{v!r}: build failed: {b.stderr.strip()[-300:]}")
            continue
        r = subprocess.run([precis, "run", plan, "--input", f"{name}={xp}", "-o", out, "-q"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"{v!r}: run failed: {r.stderr.strip()[-300:]}")
            continue
        for f in sorted(os.listdir(ref)):
            a = np.load(os.path.join(ref, f)).astype(np.float64)
            c = np.load(os.path.join(out, f)).astype(np.float64)
            rel = np.max(np.abs(c - a)) / (np.max(np.abs(a)) + 1e-30)
            cos = a.ravel() @ c.ravel() / (np.linalg.norm(a) * np.linalg.norm(c) + 1e-300)
            print(f"{prec} {v or '(no rules)'!s:70.70s} {f}: max rel err {rel:.2e}, cosine {cos:.7f}",
                  flush=True)


if __name__ == "__main__":
    main()
