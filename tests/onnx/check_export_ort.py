#!/usr/bin/env python3
"""Export check against ONNX Runtime on the zoo models.

For each model: precis_export_check loads it, optimizes it (pr_optimize, as
tests/passes/precis_opt_check.c does) and writes it back as ONNX; ONNX
Runtime then runs the original and the exported file on the model's test
input and every output must agree: 1 - cosine <= 1e-6 (--cos), same shape
and dtype. The exported file must also pass onnx.checker (full check with
shape inference) when the onnx package is installed.

    check_export_ort.py --tool build/tests/onnx/precis_export_check [MODEL ...]

MODEL is a name below (all when none is given); NAME_static exports with the
inputs' dims made static first (precis_export_check --static). Models and data
come from $PRECIS_CACHE (default ~/.cache/precis). Exit status: 0 when every
model passed, 1 when one failed, 77 (ctest: skipped) when a model or its data
is missing and nothing failed.

    check_export_ort.py --unit-dump DIR

checks instead the small graphs tests/unit/test_onnx_export.c exported into
DIR (run with PRECIS_EXPORT_DUMP=DIR): each NNN_name.onnx must pass
onnx.checker and give in ONNX Runtime, on NNN_name.in<i>.npy, what the precis
ref backend gave (NNN_name.out<i>.npy): max |a - b| / max |a| <= --rel per
output, integer outputs exactly.
"""
import argparse
import os
import subprocess
import sys
import tempfile

# name: (model, {input name or None for the only input: data file}), paths
# relative to the cache; the same models and data as tests/passes/CMakeLists.txt
MODELS = {
    "ppocr_det": ("models/ch_PP-OCRv4_det_infer.onnx", {None: "data/det_page.npy"}),
    "ppocr_rec": ("models/ch_PP-OCRv4_rec_infer.onnx", {None: "data/rec_lines.npy"}),
    "ppocr_cls": ("models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {None: "data/cls_lines.npy"}),
    "minilm": ("models/minilm/all-MiniLM-L6-v2.onnx", {
        "input_ids": "data/minilm/eval/input_ids.npy",
        "attention_mask": "data/minilm/eval/attention_mask.npy",
        "token_type_ids": "data/minilm/eval/token_type_ids.npy",
    }),
    "efficientnet": ("models/efficientnet/efficientnet_lite0.onnx",
                     {None: "data/efficientnet/coffee.npy"}),
    "yolov8n": ("models/detector/320n.onnx", {None: "data/detector/yolo320_astronaut.npy"}),
    "centerface": ("models/detector/centerface_dyn.onnx", {None: "data/detector/cf640_person.npy"}),
}

SKIP = 77


def cache_dir():
    c = os.environ.get("PRECIS_CACHE")
    return c if c else os.path.join(os.path.expanduser("~"), ".cache", "precis")


def cos_dist(a, b):
    import numpy as np
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    na, nb = float(np.dot(a, a)), float(np.dot(b, b))
    if na == 0 or nb == 0:
        return 0.0 if na == nb else 1.0
    return max(0.0, 1.0 - float(np.dot(a, b)) / (na * nb) ** 0.5)


def session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def check(name, tool, cos_tol, keep):
    import numpy as np
    static = name.endswith("_static")
    base = name[: -len("_static")] if static else name
    if base not in MODELS:
        print(f"{name}: unknown model (one of {', '.join(MODELS)}, optionally _static)")
        return 1
    rel, data = MODELS[base]
    cache = cache_dir()
    model = os.path.join(cache, rel)
    files = {k: os.path.join(cache, v) for k, v in data.items()}
    for p in [model, *files.values()]:
        if not os.path.exists(p):
            print(f"{name}: SKIP: {p} is missing")
            return SKIP
    ref = session(model)
    feeds = {}
    in_names = [i.name for i in ref.get_inputs()]
    for k, p in files.items():
        feeds[k if k is not None else in_names[0]] = np.load(p)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(keep or tmp, f"{name}.export.onnx")
        cmd = [tool, *(["--static"] if static else []), model, out]
        cmd += [f"{k}={v}" if k is not None else v for k, v in files.items()]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: FAILED: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
            return 1
        print(f"{name}: {r.stdout.strip().splitlines()[0]}")
        try:
            import onnx
            onnx.checker.check_model(out, full_check=True)
        except ImportError:
            pass
        except Exception as ex:  # noqa: BLE001 (any checker complaint fails the model)
            print(f"{name}: FAILED: onnx.checker: {str(ex).splitlines()[0]}")
            return 1
        try:
            exp = session(out)
            got = exp.run(None, feeds)
        except Exception as ex:  # noqa: BLE001
            print(f"{name}: FAILED: onnxruntime cannot run the export: {str(ex).splitlines()[0]}")
            return 1
        want = ref.run(None, feeds)
        out_names = [o.name for o in ref.get_outputs()]
        if [o.name for o in exp.get_outputs()] != out_names:
            print(f"{name}: FAILED: outputs {[o.name for o in exp.get_outputs()]} != {out_names}")
            return 1
    rc = 0
    for on, a, b in zip(out_names, want, got):
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"{name}: output {on}: FAILED: {b.dtype}{list(b.shape)} != {a.dtype}{list(a.shape)}")
            rc = 1
            continue
        d = cos_dist(a, b)
        mad = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        ok = d <= cos_tol and np.array_equal(np.isnan(a), np.isnan(b))
        print(f"{name}: output {on}: {a.dtype}{list(a.shape)} 1-cos {d:.3g} max abs diff {mad:.3g}"
              f"{'' if ok else '  FAILED'}")
        rc |= 0 if ok else 1
    return rc


def check_unit_dump(d, rel_tol):
    import glob
    import numpy as np
    models = sorted(glob.glob(os.path.join(d, "*.onnx")))
    if not models:
        print(f"FAILED: no exported models in {d}")
        return 1
    rc = 0
    worst = 0.0
    for p in models:
        name, base = os.path.basename(p)[:-5], p[:-5]
        try:
            import onnx
            onnx.checker.check_model(p, full_check=True)
        except ImportError:
            pass
        except Exception as ex:  # noqa: BLE001
            print(f"{name}: FAILED: onnx.checker: {str(ex).splitlines()[0]}")
            rc = 1
            continue
        try:
            s = session(p)
            feeds = {i.name: np.load(f"{base}.in{k}.npy") for k, i in enumerate(s.get_inputs())}
            got = s.run(None, feeds)
        except Exception as ex:  # noqa: BLE001
            print(f"{name}: FAILED: onnxruntime: {str(ex).splitlines()[0]}")
            rc = 1
            continue
        for k, b in enumerate(got):
            a = np.load(f"{base}.out{k}.npy")
            if a.shape != b.shape or a.dtype != b.dtype:
                print(f"{name}: output {k}: FAILED: {b.dtype}{list(b.shape)} != {a.dtype}{list(a.shape)}")
                rc = 1
                continue
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            if a.dtype.kind in "iub":
                rel = 0.0 if np.array_equal(a, b) else 1.0
            elif a.size:
                rel = float(np.max(np.abs(a64 - b64))) / max(float(np.max(np.abs(a64))), 1e-30)
            else:
                rel = 0.0
            worst = max(worst, rel)
            if rel > rel_tol or not np.array_equal(np.isnan(a64), np.isnan(b64)):
                print(f"{name}: output {k}: FAILED: rel {rel:.3g}")
                rc = 1
    print(f"{len(models)} exported unit graphs, max rel {worst:.3g} vs the ref backend: "
          f"{'FAILED' if rc else 'OK'}")
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", help="path of precis_export_check")
    ap.add_argument("--unit-dump", help="check the graphs test_onnx_export wrote here instead")
    ap.add_argument("--rel", type=float, default=1e-4, help="max rel diff (--unit-dump)")
    ap.add_argument("--cos", type=float, default=1e-6, help="max 1 - cosine per output")
    ap.add_argument("--keep", help="write the exported models into this directory")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    try:
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as ex:
        print(f"FAILED: {ex} (scripts/setup.sh installs numpy and onnxruntime)")
        return 1
    if a.unit_dump:
        return check_unit_dump(a.unit_dump, a.rel)
    if not a.tool:
        ap.error("--tool is required")
    names = a.models or list(MODELS)
    results = [check(n, a.tool, a.cos, a.keep) for n in names]
    if any(r == 1 for r in results):
        print("FAILED")
        return 1
    if any(r == SKIP for r in results):
        return SKIP
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
