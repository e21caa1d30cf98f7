#!/usr/bin/env python3
"""The zoo's task metrics on the GPU next to the CPU backend's (issue 8: "the zoo's metrics for
FP16 and INT8 match the CPU backend's").

Three steps, because the GPU machine has neither the zoo's data generators nor ONNX Runtime:

  zoo_metrics.py prep DIR [--models a,b]   (here) one folder a model under DIR: the ONNX model,
      its evaluation samples stacked into batches (eval.npz, one batch per input shape) and
      the INT8 calibration cache of the CPU build with the calibrator bench/results/zoo_int8.json
      found best, so both backends quantize from the same statistics. MiniLM's 90 MB model is
      cut to the vocabulary its samples use (word-embedding rows gathered, token ids renumbered:
      the same function on these inputs) so that it fits the GPU machine's 64 MiB carry.
  zoo_metrics.py run DIR OUT --precis P    (GPU machine) per model: precis build --device cuda
      --precision fp16, and int8 from the carried cache; precis run on each batch; the outputs
      into OUT/<model>.npz (PP-OCR rec: the argmax per time step only, all its CTC decoding
      reads).
  zoo_metrics.py score DIR GPU_OUT [--out JSON]   (here) the same plans built for the CPU run
      the same batches; every output set is scored with the zoo's metric against ONNX Runtime
      FP32 (batch 1, as bench/zoo/int8.py) and written as JSON + a Markdown table.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRECISIONS = ("fp16", "bf16", "int8")


def safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def model_path(d):
    """The model of a prep folder: <model name>.onnx (check_models.py names its cases by file)."""
    return os.path.join(d, os.path.basename(os.path.normpath(d)) + ".onnx")


def groups(samples):
    """Indices of the samples grouped by input shapes (each group runs as one batch)."""
    g = {}
    for i, s in enumerate(samples):
        g.setdefault(tuple((n, np.asarray(v).shape) for n, v in sorted(s.items())), []).append(i)
    return list(g.values())


# ------------------------------------------------------------------ prep (here)

def prune_minilm(src, dst, samples):
    """MiniLM with the word-embedding table cut to the ids the samples use."""
    import onnx
    from onnx import numpy_helper
    ids = sorted({int(t) for s in samples for t in np.asarray(s["input_ids"]).ravel()})
    remap = {old: new for new, old in enumerate(ids)}
    m = onnx.load(src)
    inits = {i.name: i for i in m.graph.initializer}
    gathers = [n for n in m.graph.node if n.op_type == "Gather" and n.input[1] == "input_ids"]
    if len(gathers) != 1 or gathers[0].input[0] not in inits:
        raise RuntimeError("MiniLM: expected one Gather of input_ids from an initializer")
    table = inits[gathers[0].input[0]]
    w = numpy_helper.to_array(table)
    table.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w[ids]), table.name))
    onnx.save(m, dst)
    return remap


def prep(a):
    sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
    import zoo
    from int8 import dump_calib, pick
    best = {k: v.get("precis_best") for k, v in
            json.load(open(os.path.join(ROOT, "bench", "results", "zoo_int8.json")))["models"].items()}
    for m in zoo.models(a.models.split(",") if a.models else None):
        if m.name == "ppocr_v4_rec_cjk":
            continue  # the rec model again, on another script
        d = os.path.join(a.dir, m.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        ev, cal = m.eval, pick(m.calib, 32)
        if m.name == "minilm_l6_v2":
            remap = prune_minilm(m.path, model_path(d), ev + cal)
            ren = lambda ss: [{**s, "input_ids": np.vectorize(remap.get)(s["input_ids"]).astype(
                s["input_ids"].dtype)} for s in ss]
            ev, cal = ren(ev), ren(cal)
        else:
            shutil.copyfile(m.path, model_path(d))
        batches = {}
        for k, idx in enumerate(groups(ev)):
            for n in m.inputs:
                batches[f"{k}/{n}"] = np.concatenate([np.asarray(ev[i][n]) for i in idx])
        np.savez_compressed(os.path.join(d, "eval.npz"), **batches)
        with tempfile.TemporaryDirectory() as tmp:
            dump_calib(cal, tmp)
            cache = os.path.join(d, "calib.cache")
            r = subprocess.run([a.precis, "build", model_path(d), "-o",
                                os.path.join(tmp, "p.plan"), "--precision", "int8", "--calib-data",
                                tmp, "--calib-cache", cache, "--calibrator", best[m.name]],
                               capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"{m.name}: {r.stderr.strip()[-300:]}")
        meta = {"name": m.name, "inputs": m.inputs, "outputs": m.outputs or [],
                "calibrator": best[m.name], "groups": groups(ev), "samples": len(ev),
                "fp8": m.name == "minilm_l6_v2"}  # fp8 quantizes the MatMuls of constant weights
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
        mb = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d)) / 2**20
        print(f"{m.name}: {len(ev)} samples in {len(meta['groups'])} batches, {mb:.1f} MiB", flush=True)


# ------------------------------------------------------------------ run (either machine)

def run_model(precis, d, prec, device, tmp, log):
    """Outputs of one precision: {"k/output": array} per batch k, or None (log says why)."""
    meta = json.load(open(os.path.join(d, "meta.json")))
    plan = os.path.join(tmp, f"{meta['name']}.{device}.{prec}.plan")
    cmd = [precis, "build", model_path(d), "-o", plan, "--precision", prec]
    cmd += ["--backend", "ref"] if device == "ref" else ["--device", device]
    if prec == "fp8":  # the int8 build's statistics (fp8's default calibrator, minmax)
        cmd += ["--calib-cache", os.path.join(d, "calib.cache")]
    if prec == "int8":
        cmd += ["--calib-cache", os.path.join(d, "calib.cache"), "--calibrator", meta["calibrator"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        log.append(f"{meta['name']} {device} {prec} build: {r.stderr.strip()[-400:]}")
        return None
    ev = np.load(os.path.join(d, "eval.npz"))
    outs = {}
    for k in range(len(meta["groups"])):
        od = os.path.join(tmp, f"{meta['name']}.{device}.{prec}.{k}")
        os.makedirs(od, exist_ok=True)
        cmd = [precis, "run", plan, "--output-dir", od, "--quiet"]
        for n in meta["inputs"]:
            p = os.path.join(od, f"in_{safe(n)}.npy")
            np.save(p, ev[f"{k}/{n}"])
            cmd += ["--input", f"{n}={p}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            log.append(f"{meta['name']} {device} {prec} run: {r.stderr.strip()[-400:]}")
            return None
        for f in os.listdir(od):
            if not f.startswith("in_") and f.endswith(".npy"):
                outs[f"{k}/{f[:-4]}"] = np.load(os.path.join(od, f))
    return outs


def precisions(d):
    """FP16, BF16 and INT8; FP8 too for the transformers (the cpu backend has none: the ref
    backend runs its QDQ model for the CPU column)."""
    return PRECISIONS + (("fp8",) if json.load(open(os.path.join(d, "meta.json"))).get("fp8") else ())


def reduce(name, outs):
    """What the metric reads: PP-OCR rec's CTC decoding reads the argmax per step only."""
    if name == "ppocr_v4_rec":
        return {k: np.argmax(v, axis=-1).astype(np.int32) for k, v in outs.items()}
    return outs


def run(a):
    os.makedirs(a.out, exist_ok=True)
    log = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(a.dir)):
            d = os.path.join(a.dir, name)
            if not os.path.exists(os.path.join(d, "meta.json")):
                continue
            res = {}
            for prec in precisions(d):
                o = run_model(a.precis, d, prec, a.device, tmp, log)
                if o is not None:
                    res.update({f"{prec}/{k}": v for k, v in reduce(name, o).items()})
                print(f"{name} {prec}: {'ok' if o is not None else 'FAILED'}", flush=True)
            np.savez_compressed(os.path.join(a.out, f"{name}.npz"), **res)
    with open(os.path.join(a.out, "zoo_metrics_log.json"), "w") as f:
        json.dump(log, f, indent=1)
    for line in log:
        print(line, flush=True)


def specs(a):
    """MODEL:NAME=DIMS (batch 1) for check_models.py: random inputs suit the float-input models."""
    out = []
    for name in sorted(os.listdir(a.dir)):
        d = os.path.join(a.dir, name)
        if not os.path.exists(os.path.join(d, "meta.json")):
            continue
        meta = json.load(open(os.path.join(d, "meta.json")))
        ev = np.load(os.path.join(d, "eval.npz"))
        x = ev[f"0/{meta['inputs'][0]}"]
        if len(meta["inputs"]) == 1 and x.dtype == np.float32:
            dims = "x".join(str(v) for v in (1,) + x.shape[1:])
            out.append(f"{model_path(d)}:{meta['inputs'][0]}={dims}")
    print(" ".join(out))


# ------------------------------------------------------------------ score (here)

def per_sample(meta, arrs, prec, outputs, rec):
    """Per-sample output lists (the zoo's metric form) from one precision's batch arrays."""
    n = meta["samples"]
    got = [[None] * len(outputs) for _ in range(n)]
    for k, idx in enumerate(meta["groups"]):
        for j, o in enumerate(outputs):
            key = f"{prec}/{k}/{safe(o)}"
            if key not in arrs:
                return None
            v = arrs[key]
            for r, i in enumerate(idx):
                x = v[r:r + 1]
                if rec:  # one-hot rows rebuilt from the argmax: the same greedy CTC text
                    oh = np.zeros(x.shape + (rec,), np.float32)
                    np.put_along_axis(oh, x[..., None], 1.0, axis=-1)
                    x = oh
                got[i][j] = x
    return got


def score(a):
    sys.path.insert(0, os.path.join(ROOT, "bench", "zoo"))
    import zoo
    from eval import ort_session, run_ort
    res = {"command": "python3 bench/gpu/zoo_metrics.py " + " ".join(sys.argv[1:]), "models": {}}
    log = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in zoo.models():
            d = os.path.join(a.dir, m.name)
            g = os.path.join(a.gpu, f"{m.name}.npz")
            if not os.path.exists(os.path.join(d, "meta.json")) or not os.path.exists(g):
                continue
            meta = json.load(open(os.path.join(d, "meta.json")))
            ev = m.eval
            if m.name == "minilm_l6_v2":  # the pruned model's renumbered ids
                e = np.load(os.path.join(d, "eval.npz"))
                ev = [dict(s) for s in ev]
                for k, idx in enumerate(meta["groups"]):
                    for r, i in enumerate(idx):
                        ev[i]["input_ids"] = e[f"{k}/input_ids"][r:r + 1]
            path = model_path(d)
            outputs = m.outputs or [o.name for o in ort_session(path, 2).get_outputs()]
            ref, _ = run_ort(ort_session(path, 2), ev, outputs)
            rec = ref[0][0].shape[-1] if m.name == "ppocr_v4_rec" else 0
            row = {"calibrator": meta["calibrator"], "samples": meta["samples"]}
            cpu = {}
            for prec in precisions(d):
                o = run_model(a.precis, d, prec, "ref" if prec == "fp8" else "cpu", tmp, log)
                if o is not None:
                    cpu.update({f"{prec}/{k}": v for k, v in reduce(m.name, o).items()})
            gpu = np.load(g)
            for dev, arrs in (("cpu", cpu), ("cuda", gpu)):
                for prec in precisions(d):
                    cand = per_sample(meta, arrs, prec, outputs, rec)
                    row[f"{dev}_{prec}"] = m.metric(cand, ref) if cand else None
            res["models"][m.name] = row
            print(m.name, {k: v for k, v in row.items() if k.startswith(("cpu", "cuda"))}, flush=True)
    res["errors"] = log
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.splitext(a.out)[0] + ".md", "w") as f:
        f.write(markdown(res))


PRIMARY = {"ppocr_v4_rec": ("cer_vs_fp32", False), "ppocr_v2_cls": ("agreement_with_fp32", True),
           "ppocr_v4_det": ("mask_iou_vs_fp32_mean", True), "minilm_l6_v2": ("embedding_cosine_min", True),
           "efficientnet_lite0": ("top1_agreement_with_fp32", True), "yolov8n": ("fp32_boxes_matched", True),
           "centerface": ("fp32_boxes_matched", True)}


def markdown(res):
    out = ["# The zoo's metrics on the GPU next to the CPU backend", "",
           f"`{res['command']}` — the same ONNX, evaluation samples and INT8 calibration statistics "
           "on both backends (cuda: NVIDIA H100; cpu: the 2-core x86 machine); metric against "
           "ONNX Runtime FP32.", "",
           "| model | metric | FP16 CPU / GPU | BF16 CPU / GPU | INT8 CPU / GPU | FP8 ref / GPU | INT8 calibrator |",
           "|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        key, _ = PRIMARY.get(name, (None, True))

        def v(col):
            x = (r.get(col) or {}).get(key)
            return "—" if x is None else f"{x:.4g}"
        cells = [f"{v('cpu_' + p)} / {v('cuda_' + p)}" for p in PRECISIONS + ("fp8",)]
        out.append(f"| {name} | {key} | " + " | ".join(cells) + f" | {r['calibrator']} |")
    if res.get("errors"):
        out += ["", "Errors:", ""] + [f"- {e}" for e in res["errors"]]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("dir")
    p.add_argument("--models")
    p.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    p = sub.add_parser("run")
    p.add_argument("dir")
    p.add_argument("out")
    p.add_argument("--precis", required=True)
    p.add_argument("--device", default="cuda")
    p = sub.add_parser("score")
    p.add_argument("dir")
    p.add_argument("gpu")
    p.add_argument("--precis", default=os.path.join(ROOT, "build", "precis"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "gpu_zoo_metrics.json"))
    p = sub.add_parser("specs", help="check_models.py specs of DIR's single-input float models")
    p.add_argument("dir")
    a = ap.parse_args()
    {"prep": prep, "run": run, "score": score, "specs": specs}[a.cmd](a)


if __name__ == "__main__":
    main()
