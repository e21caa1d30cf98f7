"""Fused INT8 blocks (src/backends/cpu/qblock.h) on the zoo models whose int8 plans have them.

For each model: an int8 plan (calibrated on four of the zoo's calibration samples), then
  - inspect names the blocks: every member step's kernel reads "qblock[i/n] ...", the
    members of one block are consecutive, and PP-OCR cls has its 8 SE MBConv blocks with
    the fused SE tail ("seproj");
  - the block run by composition (PRECIS_QBLOCK_SEPROJ=0: each member's own kernel,
    images split across the threads) gives the same bytes as the steps one by one
    (PRECIS_QBLOCK=0): bit for bit, batch 1 and 3, 1 and 2 threads;
  - with the fused SE tail (the default; the gate folded into the projection's weights,
    not bit-exact) the outputs stay within 0.05 of the unfused ones and, for cls, the
    predicted class is the same on every sample.

    python3 tests/models/test_qblock.py --precis build/precis [--models a,b]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
import zoo  # noqa: E402
from int8 import dump_calib  # noqa: E402
from checks import Checks  # noqa: E402

MODELS = ["ppocr_v2_cls", "ppocr_v4_rec"]
check = Checks("test_qblock")


def run(precis, plan, inputs, threads, out, env_extra):
    env = dict(os.environ, **env_extra)
    cmd = [precis, "run", plan, "--threads", str(threads), "--output-dir", out, "--quiet"]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return {f: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for m in zoo.models(a.models.split(",")):
            cal = os.path.join(tmp, m.name + "_calib")
            dump_calib(m.calib[:4], cal)
            plan = os.path.join(tmp, m.name + ".plan")
            r = subprocess.run([a.precis, "build", m.path, "-o", plan, "--precision", "int8",
                                "--calib-data", cal], capture_output=True, text=True)
            check(r.returncode == 0, f"{m.name}: build", r.stderr.strip()[-300:])
            if r.returncode:
                continue
            r = subprocess.run([a.precis, "inspect", plan, "--json"], capture_output=True,
                               text=True)
            steps = json.loads(r.stdout)["steps"] if r.returncode == 0 else []
            tags = [re.match(r"qblock\[(\d+)/(\d+)\]", s["kernel"]) for s in steps]
            blocks, bad = 0, []
            for k, t in enumerate(tags):
                if t and t.group(1) == "1":
                    n = int(t.group(2))
                    blocks += 1
                    for i in range(n):
                        u = tags[k + i] if k + i < len(tags) else None
                        if not u or int(u.group(1)) != i + 1 or int(u.group(2)) != n:
                            bad.append(f"step {k + i}")
            seproj = sum("seproj" in s["kernel"] for s in steps)
            print(f"{m.name}: {blocks} blocks, {seproj} fused SE-tail steps", flush=True)
            check(blocks > 0 and not bad, f"{m.name}: blocks in inspect", "; ".join(bad[:4]))
            if m.name == "ppocr_v2_cls":
                # 9 SE blocks (the first, 8 channels, on the direct depthwise path:
                # composition only), 8 with the tail fused
                check(blocks == 9 and seproj == 16, f"{m.name}: 9 SE blocks, 8 with the tail fused",
                      f"{blocks} blocks, {seproj} seproj steps")
            # batches of the evaluation samples (batch 1 and 3, same shapes)
            samples = m.eval[:3]
            if any(x.shape != samples[0][k].shape for s in samples for k, x in s.items()):
                samples = samples[:1]
            for batch in sorted({1, len(samples)}):
                inputs = {}
                for name in samples[0]:
                    p = os.path.join(tmp, f"{m.name}_{name.replace('/', '_')}_{batch}.npy")
                    np.save(p, np.concatenate([s[name] for s in samples[:batch]], axis=0))
                    inputs[name] = p
                for threads in (1, 2):
                    tag = f"{m.name} b{batch} t{threads}"
                    outs = {}
                    for key, env in (("off", {"PRECIS_QBLOCK": "0"}),
                                     ("composed", {"PRECIS_QBLOCK_SEPROJ": "0"}),
                                     ("fused", {})):
                        d = os.path.join(tmp, f"{m.name}_{batch}_{threads}_{key}")
                        outs[key], err = run(a.precis, plan, inputs, threads, d, env)
                        check(outs[key] is not None, f"{tag} {key}: run", err)
                    if any(v is None for v in outs.values()):
                        continue
                    same = all(np.array_equal(outs["off"][f], outs["composed"][f])
                               for f in outs["off"])
                    check(same, f"{tag}: composed block bit-exact")
                    diff = max(float(np.max(np.abs(outs["off"][f].astype(np.float64) -
                                                   outs["fused"][f].astype(np.float64))))
                               for f in outs["off"])
                    check(diff <= 0.05, f"{tag}: fused SE tail within 0.05", f"max diff {diff}")
                    if m.name == "ppocr_v2_cls":
                        f = next(iter(outs["off"]))
                        check(np.array_equal(outs["off"][f].argmax(-1), outs["fused"][f].argmax(-1)),
                              f"{tag}: same class")
                    print(f"{tag}: composed bit-exact {same}, fused max diff {diff:.3g}",
                          flush=True)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
