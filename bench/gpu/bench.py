#!/usr/bin/env python3
"""precis (--device cuda) vs PyTorch on the GPU machine, side by side in one run.

usage: bench.py --precis PATH/TO/precis --out DIR [--models resnet50,bert,minilm,effnet]
                [--batches resnet50=1,32,256 ...] [--no-compile] [--quick]

For each model: build it in PyTorch with random weights (seeded), export it to ONNX
on this machine (so both run the same weights), then
  correctness  batch 1: PyTorch fp32 vs the ref backend (validates the export), and
               precis cuda fp32 / fp16 (built without a shape profile: dynamic dims,
               per-shape algorithm choice, host steps for shape arithmetic) vs ref and
               vs PyTorch fp32: max |a - b| / max |b| and cosine per output;
  speed        per batch size: `precis bench MODEL.onnx --device cuda --precision P
               --shapes ... --json` with CUDA graphs (default) and PRECIS_CUDA_GRAPHS=0,
               reporting the end-to-end latency (host inputs in, host outputs out) and
               the GPU time between upload and download; PyTorch fp16 eager,
               torch.compile and torch.compile(mode="reduce-overhead") on GPU-resident
               inputs (CUDA events, median of rounds), and eager with host copies
               (end-to-end, like precis's API).
  --int8       int8 rows too (precis only; calibrated on 8 random samples drawn like the
               timing inputs, one batch-free calibration cache per model) and an int8
               correctness row (a batch-1 int8 plan vs PyTorch fp32 and ref);
  --fp8        fp8 rows too (e4m3 on Hopper: the same calibration data and cache as int8,
               default calibrator minmax) and an fp8 correctness row, like --int8;
  --int8-gemm  precis's int8 GEMM path at 8192^3 (tests/cuda/bench_imma) vs torch._int_mm;
  --profile MODEL=BATCH[:PRECISION]  per-step GPU times (a synchronize around each step).
effnet: EfficientNet-Lite0, precis on the zoo's ONNX ($PRECIS_ZOO), PyTorch from the
efficientnet-lite-pytorch wheel ($PRECIS_WHEELS) with that ONNX's weights (its
initializers carry the state_dict names): the correctness rows check the mapping.
Writes DIR/gpu_bench.json and a table DIR/gpu_bench.md; prints the table last.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

INT8 = False  # --int8: int8 rows too
FP8 = False  # --fp8: fp8 rows too
PRECIS = "precis"
RESULTS = {"meta": {}, "correctness": [], "speed": [], "profile": {}, "errors": []}


def log(*a):
    print(*a, flush=True)


def err(what, e):
    msg = f"{what}: {e}"
    log("ERROR", msg)
    RESULTS["errors"].append(msg)


# ---------------------------------------------------------------- models

def make_resnet50():
    import torchvision
    torch.manual_seed(50)
    m = torchvision.models.resnet50(weights=None).eval()
    names, shapes = ["input"], {"input": (3, 224, 224)}
    return m, names, shapes


def make_bert(kind):
    from transformers import BertConfig, BertModel
    torch.manual_seed(128)
    if kind == "bert":
        cfg = BertConfig()  # BERT-base: 12 layers, 768 hidden, 12 heads
    else:  # all-MiniLM-L6-v2's shape
        cfg = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                         intermediate_size=1536)
    m = BertModel(cfg, add_pooling_layer=True).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    return m, names, {n: (128,) for n in names}


def effnet_onnx():
    """The zoo's EfficientNet-Lite0 ONNX ($PRECIS_ZOO or $PRECIS_CACHE/models)."""
    zoo = os.environ.get("PRECIS_ZOO") or os.path.join(
        os.environ.get("PRECIS_CACHE", os.path.expanduser("~/.cache/precis")), "models")
    for p in (os.path.join(zoo, "efficientnet_lite0.onnx"),
              os.path.join(zoo, "efficientnet", "efficientnet_lite0.onnx")):
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"efficientnet_lite0.onnx not under {zoo}")


def make_effnet():
    """EfficientNet-Lite0 from the efficientnet-lite-pytorch wheel (pure Python, imported
    from the .whl in $PRECIS_WHEELS) with the zoo ONNX's weights: its initializers carry
    the PyTorch state_dict names (the ONNX was exported from this definition)."""
    import glob
    import onnx
    from onnx import numpy_helper
    for whl in glob.glob(os.path.join(os.environ.get("PRECIS_WHEELS", "."),
                                      "efficientnet_lite_pytorch-*.whl")):
        sys.path.insert(0, whl)
    from efficientnet_lite_pytorch import EfficientNet
    m = EfficientNet.from_name("efficientnet-lite0").eval()
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(effnet_onnx()).graph.initializer}
    sd = m.state_dict()
    load = {k: torch.from_numpy(inits[k].copy()).reshape(v.shape) for k, v in sd.items()
            if k in inits}
    missing = [k for k in sd if k not in inits and not k.endswith("num_batches_tracked")]
    if missing:
        raise RuntimeError(f"ONNX initializers lack {len(missing)} weights, e.g. {missing[:3]}")
    m.load_state_dict(load, strict=False)
    return m, ["input"], {"input": (3, 224, 224)}


def is_bert(name):
    return name in ("bert", "minilm")


def make(name):
    if name == "effnet":
        return make_effnet()
    return make_resnet50() if name == "resnet50" else make_bert(name)


def torch_inputs(name, names, shapes, batch, device, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in names:
        shp = (batch,) + tuple(shapes[n])
        if not is_bert(name):
            out.append(torch.rand(shp, generator=g))
        elif n == "input_ids":
            out.append(torch.randint(0, 30000, shp, generator=g))
        elif n == "attention_mask":
            t = torch.ones(shp, dtype=torch.int64)
            t[:, -7:] = 0  # padded tail: the mask matters
            out.append(t)
        else:
            out.append(torch.zeros(shp, dtype=torch.int64))
    return [t.to(device) for t in out]


class Wrap(torch.nn.Module):
    """Positional inputs, tuple outputs (BERT returns a ModelOutput)."""

    def __init__(self, m, bert):
        super().__init__()
        self.m, self.bert = m, bert

    def forward(self, *xs):
        if self.bert:
            o = self.m(input_ids=xs[0], attention_mask=xs[1], token_type_ids=xs[2])
            return o.last_hidden_state, o.pooler_output
        return self.m(xs[0])


def export(name, out_dir):
    m, names, shapes = make(name)
    bert = is_bert(name)
    if name == "effnet":  # precis runs the zoo's file itself: the same weights
        import onnx
        path = effnet_onnx()
        return path, names, shapes, [o.name for o in onnx.load(path).graph.output]
    if bert:  # the classic MatMul/Softmax graph precis fuses (same weights as SDPA)
        m.config._attn_implementation = "eager"
        for mod in m.modules():
            if hasattr(mod, "config") and hasattr(mod.config, "_attn_implementation"):
                mod.config._attn_implementation = "eager"
    w = Wrap(m, bert).eval()
    path = os.path.join(out_dir, f"{name}.onnx")
    xs = torch_inputs(name, names, shapes, 2, "cpu")
    onames = ["last_hidden_state", "pooler_output"] if bert else ["logits"]
    dyn = {n: {0: "batch"} for n in names + onames}
    t0 = time.time()
    try:
        torch.onnx.export(w, tuple(xs), path, input_names=names, output_names=onames,
                          dynamic_axes=dyn, opset_version=17, dynamo=False)
    except TypeError:
        torch.onnx.export(w, tuple(xs), path, input_names=names, output_names=onames,
                          dynamic_axes=dyn, opset_version=17)
    log(f"exported {name} to {path} in {time.time() - t0:.1f} s "
        f"({os.path.getsize(path) / 1e6:.0f} MB)")
    return path, names, shapes, onames


# ---------------------------------------------------------------- timing

def time_cuda(fn, iters, rounds=5, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(rounds):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        per.append(s.elapsed_time(e) / iters)
    return statistics.median(per), per


def time_host(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        lat.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(lat)


def run(cmd, env=None, timeout=300):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- parts

def compare(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return float("inf"), 0.0
    if not np.all(np.isfinite(a)):
        return float("inf"), 0.0
    rel = float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))
    return rel, cos


def correctness(name, precis, path, names, shapes, onames, out_dir):
    m, _, _ = make(name)
    w = Wrap(m, is_bert(name)).cuda().eval()
    xs = torch_inputs(name, names, shapes, 1, "cuda", seed=7)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        ys = w(*xs)
    ys = ys if isinstance(ys, tuple) else (ys,)
    torch_out = {n: y.float().cpu().numpy() for n, y in zip(onames, ys)}
    args = []
    for n, x in zip(names, xs):
        p = os.path.join(out_dir, f"{name}.in.{n}.npy")
        np.save(p, x.cpu().numpy())
        args += ["--input", f"{n}={p}"]
    outs = {}
    runs = [("ref", []), ("cuda fp32", ["--device", "cuda", "--precision", "fp32"]),
            ("cuda fp16", ["--device", "cuda", "--precision", "fp16"]),
            ("cuda bf16", ["--device", "cuda", "--precision", "bf16"])]
    # `precis run` takes no calibration options: build a batch-1 plan and run it
    for q in (["int8"] if INT8 else []) + (["fp8"] if FP8 else []):
        ca = calib_args(name, names, shapes, out_dir, q, path)
        spec = ",".join(f"{n}:{'x'.join(str(d) for d in (1,) + tuple(shapes[n]))}" for n in names)
        rc, _, e = run([precis, "build", path, "-o", os.path.join(out_dir, f"{name}.{q}.plan"),
                        "--device", "cuda", "--precision", q, "--shapes", spec, *ca])
        if rc:
            err(f"{name} {q} plan", e.strip()[-600:])
        runs.append((f"cuda {q}", None))
    for label, extra in runs:
        if extra is None:
            path_or_plan, extra = os.path.join(out_dir, f"{name}.{label.split()[-1]}.plan"), []
        else:
            path_or_plan = path
        d = os.path.join(out_dir, f"{name}.{label.replace(' ', '_')}")
        t0 = time.time()
        rc, o, e = run([precis, "run", path_or_plan, *args, *extra, "-o", d, "-q"])
        if rc:
            err(f"{name} correctness {label}", e.strip()[-600:])
            continue
        outs[label] = {n: np.load(os.path.join(d, n + ".npy")) for n in onames}
        log(f"  {name} {label} ran in {time.time() - t0:.1f} s")
    for label, o in outs.items():
        for n in onames:
            row = {"model": name, "batch": 1, "run": label, "output": n}
            row["vs_torch_fp32"] = dict(zip(("max_rel_err", "cosine"), compare(o[n], torch_out[n])))
            if "ref" in outs and label != "ref":
                row["vs_ref"] = dict(zip(("max_rel_err", "cosine"), compare(o[n], outs["ref"][n])))
            RESULTS["correctness"].append(row)
            log(f"  {name:9s} {label:10s} {n:18s} vs torch fp32: rel {row['vs_torch_fp32']['max_rel_err']:.2e} "
                f"cos {row['vs_torch_fp32']['cosine']:.6f}" +
                (f" | vs ref: rel {row['vs_ref']['max_rel_err']:.2e} cos {row['vs_ref']['cosine']:.6f}"
                 if "vs_ref" in row else ""))


def calib_args(name, names, shapes, work, prec, path=None):
    """int8 / fp8: --calib-data (8 random samples like the timing inputs, written once) and a
    calibration cache shared by every build of the model (the statistics are the same)."""
    if prec not in ("int8", "fp8"):
        return []
    d = os.path.join(work, f"calib-{name}")
    if not os.path.isdir(d):
        for i in range(8):
            xs = torch_inputs(name, names, shapes, 1, "cpu", seed=100 + i)
            for n, x in zip(names, xs):
                sub = os.path.join(d, n) if len(names) > 1 else d
                os.makedirs(sub, exist_ok=True)
                np.save(os.path.join(sub, f"{i:02d}.npy"), x.numpy()[0])  # no batch dim
    cache = os.path.join(work, f"{name}.calib")
    if not os.path.exists(cache):  # calibrate once, batch dim free (any --shapes later)
        rc, _, e = run([PRECIS, "build", path or os.path.join(work, f"{name}.onnx"), "-o",
                        os.path.join(work, f"{name}.int8-dyn.plan"), "--device", "cuda",
                        "--precision", "int8", "--calib-data", d, "--calib-cache", cache])
        if rc:
            err(f"{name} int8 calibration", e.strip()[-600:])
    return ["--calib-data", d, "--calib-cache", cache]


def precis_speed(name, precis, path, names, shapes, batch, prec, iters, work="/tmp"):
    spec = ",".join(f"{n}:{'x'.join(str(d) for d in (batch,) + tuple(shapes[n]))}" for n in names)
    variants = [("1", ""), ("0", "")] + ([("1", "nchw")] if not is_bert(name) and prec == "fp16" else [])
    for graphs, layout in variants:
        cmd = [precis, "bench", path, "--device", "cuda", "--precision", prec, "--shapes", spec,
               "--warmup", "10", "--iterations", str(iters), "--json"]
        cmd += calib_args(name, names, shapes, work, prec, path)
        env = {"PRECIS_CUDA_GRAPHS": graphs}
        if layout:
            env["PRECIS_CUDA_LAYOUT"] = layout
        rc, o, e = run(cmd, env=env)
        if rc:
            err(f"{name} precis {prec} b{batch} graphs={graphs}", e.strip()[-600:])
            continue
        j = json.loads(o)
        row = {"model": name, "batch": batch,
               "engine": "precis" + (" all-NCHW" if layout else ""), "precision": prec,
               "cuda_graphs": graphs == "1", "graph_used": j.get("cuda_graph"),
               "gpu_ms": j["device_ms_p50"], "e2e_ms": j["latency_ms"]["p50"],
               "gpu_items_per_s": j["device_throughput_per_s"],
               "e2e_items_per_s": j["throughput_per_s"], "build_ms": j["build_or_load_ms"],
               "iterations": iters,
               "command": " ".join(cmd) + f"  (PRECIS_CUDA_GRAPHS={graphs}"
               + (f", PRECIS_CUDA_LAYOUT={layout})" if layout else ")")}
        RESULTS["speed"].append(row)
        log(f"  precis {name} b{batch} {prec} graphs={graphs}{' ' + layout if layout else ''}"
            f"{' (none captured)' if graphs == '1' and not row['graph_used'] else ''}: gpu {row['gpu_ms']:.3f} ms "
            f"({row['gpu_items_per_s']:.0f}/s), e2e {row['e2e_ms']:.3f} ms")


def precis_profile(name, precis, path, names, shapes, batch, prec, work="/tmp"):
    """Per-step GPU time (a synchronize around every step), grouped by op and kernel."""
    spec = ",".join(f"{n}:{'x'.join(str(d) for d in (batch,) + tuple(shapes[n]))}" for n in names)
    cmd = [precis, "bench", path, "--device", "cuda", "--precision", prec, "--shapes", spec,
           "--warmup", "3", "--iterations", "10", "--profile", "--json"]
    cmd += calib_args(name, names, shapes, work, prec, path)
    rc, o, e = run(cmd)
    if rc:
        err(f"{name} profile b{batch}", e.strip()[-600:])
        return
    j = json.loads(o)
    groups = {}
    for st in j["profile"]:
        k = (st["op"], st["kernel"][:90], st["dtype"])
        g = groups.setdefault(k, [0.0, 0])
        g[0] += st["ms"]
        g[1] += 1
    total = sum(g[0] for g in groups.values())
    rows = sorted(([k[0], k[1], k[2], v[0], v[1]] for k, v in groups.items()), key=lambda r: -r[3])
    RESULTS["profile"][f"{name} b{batch} {prec}"] = {"total_ms": total, "groups": rows,
                                                     "steps": len(j["profile"]), "command": " ".join(cmd)}
    log(f"  profile {name} b{batch} {prec}: {len(j['profile'])} steps, {total:.3f} ms summed")
    for r in rows[:14]:
        log(f"    {r[3]:8.3f} ms {100 * r[3] / total:5.1f}%  x{r[4]:<3d} {r[0]:18s} {r[2]:8s} {r[1]}")


def torch_speed(name, names, shapes, batch, iters, compile_modes):
    m, _, _ = make(name)
    bert = is_bert(name)
    if bert:
        m.config._attn_implementation = "sdpa"
    w = Wrap(m, bert).cuda().eval().half()
    xs = torch_inputs(name, names, shapes, batch, "cuda")
    if not bert:
        xs = [x.half() for x in xs]
    torch.backends.cudnn.benchmark = True
    with torch.inference_mode():
        ms, per = time_cuda(lambda: w(*xs), iters)
        add_torch(name, batch, "eager fp16", ms, per, iters)
        if not bert:  # the NHWC layout cuDNN's tensor-core kernels want
            wc = w.to(memory_format=torch.channels_last)
            xc = [x.contiguous(memory_format=torch.channels_last) for x in xs]
            ms, per = time_cuda(lambda: wc(*xc), iters)
            add_torch(name, batch, "eager fp16 channels_last", ms, per, iters)
            w = w.to(memory_format=torch.contiguous_format)
        xh = [x.cpu() for x in xs]

        def e2e():
            ys = w(*[x.cuda(non_blocking=False) for x in xh])
            ys = ys if isinstance(ys, tuple) else (ys,)
            return [y.cpu() for y in ys]
        ms_e2e = time_host(e2e, max(10, iters // 4))
        RESULTS["speed"].append({"model": name, "batch": batch, "engine": "torch eager fp16, host in/out",
                                 "precision": "fp16", "e2e_ms": ms_e2e,
                                 "e2e_items_per_s": 1e3 * batch / ms_e2e})
        log(f"  torch {name} b{batch} eager fp16 host in/out: {ms_e2e:.3f} ms")
        for mode in compile_modes:
            t0 = time.time()
            try:
                torch._dynamo.reset()
                c = torch.compile(w, mode=mode) if mode else torch.compile(w)
                for _ in range(3):
                    c(*xs)
                torch.cuda.synchronize()
                ct = time.time() - t0
                ms, per = time_cuda(lambda: c(*xs), iters)
                add_torch(name, batch, f"torch.compile{'(' + mode + ')' if mode else ''} fp16",
                          ms, per, iters, compile_s=ct)
            except Exception as e:  # noqa: BLE001 -- record and go on
                err(f"torch.compile {mode} {name} b{batch}", repr(e)[:400])


def add_torch(name, batch, what, ms, per, iters, compile_s=None):
    row = {"model": name, "batch": batch, "engine": "torch " + what, "precision": "fp16",
           "gpu_ms": ms, "gpu_items_per_s": 1e3 * batch / ms, "rounds_ms": per,
           "iterations_per_round": iters}
    if compile_s is not None:
        row["compile_s"] = compile_s
    RESULTS["speed"].append(row)
    log(f"  torch {name} b{batch} {what}: {ms:.3f} ms ({row['gpu_items_per_s']:.0f}/s)")


# ---------------------------------------------------------------- report

def table():
    lines = ["| model | batch | engine | precision | GPU ms | GPU items/s | end-to-end ms |",
             "|---|---|---|---|---|---|---|"]
    for r in RESULTS["speed"]:
        # "+ CUDA graph" only where the runs replayed one (precis bench's cuda_graph): graphs
        # on but not captured (a host step in the plan) are eager runs, labelled so
        eng = r["engine"] + ("" if not r["engine"].startswith("precis") else
                             (" (no graph)" if not r.get("cuda_graphs") else
                              " + CUDA graph" if r.get("graph_used") else
                              " (graphs on, none captured)"))
        g = f"{r['gpu_ms']:.3f}" if "gpu_ms" in r else ""
        gi = f"{r['gpu_items_per_s']:.0f}" if "gpu_items_per_s" in r else ""
        e = f"{r['e2e_ms']:.3f}" if "e2e_ms" in r else ""
        lines.append(f"| {r['model']} | {r['batch']} | {eng} | {r['precision']} | {g} | {gi} | {e} |")
    lines += ["", "| model | run | output | vs torch fp32 rel / cos | vs ref rel / cos |",
              "|---|---|---|---|---|"]
    for r in RESULTS["correctness"]:
        t = r["vs_torch_fp32"]
        v = r.get("vs_ref")
        lines.append(f"| {r['model']} | {r['run']} | {r['output']} | {t['max_rel_err']:.2e} / "
                     f"{t['cosine']:.6f} | " + (f"{v['max_rel_err']:.2e} / {v['cosine']:.6f}" if v else "") + " |")
    if RESULTS["errors"]:
        lines += ["", "errors:"] + [f"- {e}" for e in RESULTS["errors"]]
    return "\n".join(lines)


def int8_gemm(build, n=8192):
    """precis's int8 GEMM path (tests/cuda/bench_imma: the pr_lt_i8 call QMatMul makes, and
    with the requantizing epilogue) vs torch._int_mm, n^3, in the same run."""
    exe = os.path.join(build, "tests", "cuda", "bench_imma")
    rc, o, e = run([exe, str(n), str(n), str(n), "20"])
    if rc:
        err("bench_imma", (o + e).strip()[-600:])
        return
    row = json.loads(o.strip().splitlines()[-1])
    a = torch.randint(-128, 127, (n, n), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 127, (n, n), dtype=torch.int8, device="cuda").t()  # K-major B
    ms, _ = time_cuda(lambda: torch._int_mm(a, b), 20)
    row["torch_int_mm_ms"] = ms
    row["torch_int_mm_tops"] = 2.0 * n ** 3 / (ms * 1e9)
    row["ratio_gemm"] = row["gemm_tops"] / row["torch_int_mm_tops"]
    row["ratio_gemm_requant"] = row["gemm_requant_tops"] / row["torch_int_mm_tops"]
    RESULTS["int8_gemm"] = row
    log(f"  int8 gemm {n}^3: precis {row['gemm_tops']:.0f} TOPS ({row['gemm_ms']:.3f} ms), "
        f"with requant {row['gemm_requant_tops']:.0f}; torch._int_mm {row['torch_int_mm_tops']:.0f} "
        f"TOPS ({ms:.3f} ms): {100 * row['ratio_gemm']:.0f}%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True)
    ap.add_argument("--out", required=True, help="results: gpu_bench.json, gpu_bench.md")
    ap.add_argument("--work", default="/tmp/precis-gpu-work", help="models, inputs, outputs")
    ap.add_argument("--models", default="resnet50,bert,minilm")
    ap.add_argument("--batches", nargs="*", default=[])
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-correctness", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--fp32-speed", action="store_true", help="also time precis fp32")
    ap.add_argument("--profile", nargs="*", default=[],
                    help="MODEL=BATCH[:PRECISION]: per-step profile (default fp16)")
    ap.add_argument("--int8", action="store_true", help="also time precis int8 (random calibration)")
    ap.add_argument("--fp8", action="store_true", help="also time precis fp8 (random calibration)")
    ap.add_argument("--int8-gemm", action="store_true", help="int8 GEMM 8192^3 vs torch._int_mm")
    ap.add_argument("--only", default="", help="time only these precis precisions (e.g. int8; "
                    "comma-separated) and no torch rows: an A/B of precis builds")
    ap.add_argument("--build", default="", help="build folder holding tests/cuda/bench_imma")
    a = ap.parse_args()
    global INT8, FP8, PRECIS
    INT8 = a.int8
    FP8 = a.fp8
    PRECIS = os.path.abspath(a.precis)
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    batches = {"resnet50": [1, 32, 256], "bert": [1, 64], "minilm": [1, 64], "effnet": [1, 32]}
    for b in a.batches:
        k, v = b.split("=")
        batches[k] = [int(x) for x in v.split(",")]
    RESULTS["meta"] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "cuda": torch.version.cuda, "host": platform.node(),
                       "date": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv}
    try:
        import transformers
        import torchvision
        RESULTS["meta"].update(transformers=transformers.__version__,
                               torchvision=torchvision.__version__)
    except Exception:  # noqa: BLE001
        pass
    precis = os.path.abspath(a.precis)
    if a.int8_gemm:
        try:
            int8_gemm(a.build or os.path.dirname(precis))
        except Exception:  # noqa: BLE001
            err("int8 gemm", traceback.format_exc()[-800:])
    for name in [m for m in a.models.split(",") if m]:
        log(f"== {name}")
        try:
            path, names, shapes, onames = export(name, a.work)
        except Exception as e:  # noqa: BLE001
            err(f"export {name}", traceback.format_exc()[-800:])
            continue
        if not a.no_correctness:
            try:
                correctness(name, precis, path, names, shapes, onames, a.work)
            except Exception:  # noqa: BLE001
                err(f"correctness {name}", traceback.format_exc()[-800:])
        for pspec in a.profile:
            pm, pb = pspec.split("=")
            pb, _, pp = pb.partition(":")
            if pm == name:
                try:
                    precis_profile(name, precis, path, names, shapes, int(pb), pp or "fp16",
                                   a.work)
                except Exception:  # noqa: BLE001
                    err(f"profile {name}", traceback.format_exc()[-800:])
        if a.no_speed:
            continue
        for batch in batches[name]:
            iters = 200 if batch == 1 else 50 if batch <= 64 else 20
            ends = batch in (batches[name][0], batches[name][-1])
            precs = ["fp16"] + (["int8"] if a.int8 else []) + (["fp8"] if a.fp8 else []) + (
                ["fp32"] if a.fp32_speed and ends else [])
            if a.only:
                precs = a.only.split(",")
            for prec in precs:
                try:
                    precis_speed(name, precis, path, names, shapes, batch, prec, iters, a.work)
                except Exception:  # noqa: BLE001
                    err(f"precis speed {name} b{batch}", traceback.format_exc()[-800:])
            modes = [] if a.no_compile else ([None] if batch > 1 else []) + (
                ["reduce-overhead"] if batch <= 64 else [])
            try:
                if not a.only:
                    torch_speed(name, names, shapes, batch, max(10, iters // 2), modes)
            except Exception:  # noqa: BLE001
                err(f"torch speed {name} b{batch}", traceback.format_exc()[-800:])
            with open(os.path.join(a.out, "gpu_bench.json"), "w") as f:
                json.dump(RESULTS, f, indent=1)
    with open(os.path.join(a.out, "gpu_bench.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)
    t = table()
    with open(os.path.join(a.out, "gpu_bench.md"), "w") as f:
        f.write(t + "\n")
    log(t)


if __name__ == "__main__":
    main()
