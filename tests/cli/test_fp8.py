#!/usr/bin/env python3
"""--precision fp8 (FLOAT8E4M3FN, issue 8) from the command line.

usage: test_fp8.py PATH/TO/precis

On any machine: the cpu backend refuses an fp8 build with one line; the ref backend
runs the fp8 QDQ model (close to fp32); export-qdq --precision fp8 writes a model
the ONNX checker accepts (opset 19, e4m3 initializers) and that ONNX Runtime (when
installed; graph optimizations off: its QDQ fusions take only int8) runs to the same
outputs as precis's ref plan; an fp8 rule in an int8 build is refused. With a GPU: the
cuda fp8 build runs the MatMuls on cuBLASLt's FP8 kernels (inspect says so) and
agrees with the ref fp8 plan.
"""
import os
import tempfile

import numpy as np

from clicheck import check, expect_error, finish, run

HERE = os.path.dirname(os.path.abspath(__file__))
MLP = os.path.join(HERE, "..", "data", "small_mlp.onnx")  # MatMul, GELU, MatMul, LN, Softmax


def rel(a, b):
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))


def main():
    tmp = tempfile.mkdtemp(prefix="precis-fp8-")
    cal = os.path.join(tmp, "cal")
    os.makedirs(cal)
    rng = np.random.default_rng(8)
    for i in range(8):
        np.save(os.path.join(cal, f"{i}.npy"), rng.standard_normal((5, 32)).astype(np.float32))
    x = os.path.join(tmp, "x.npy")
    xv = rng.standard_normal((2, 5, 32)).astype(np.float32)
    np.save(x, xv)
    expect_error("fp8 on the cpu backend refused", 5,
                 ["build", MLP, "-o", os.path.join(tmp, "c.plan"), "--precision", "fp8",
                  "--calib-data", cal], "fp8 runs on the cuda backend")
    expect_error("fp8 rule in an int8 build refused", 2,
                 ["build", MLP, "-o", os.path.join(tmp, "c.plan"), "--precision", "int8",
                  "--calib-data", cal, "--layer-precision", "mm1:fp8"], "asks for fp8")
    refp = os.path.join(tmp, "ref8.plan")
    rc, out, err = run("build", MLP, "-o", refp, "--precision", "fp8", "--calib-data", cal,
                       "--device", "ref", "-v")
    check("ref fp8 build", rc == 0 and "precision fp8" in out, err[-600:])
    check("ref fp8 quantizes both MatMuls", "2 compute nodes fp8" in err, err[-600:])
    rc, _, err = run("run", refp, "--input", "x=" + x, "-o", os.path.join(tmp, "o8"), "-q")
    check("ref fp8 run", rc == 0, err)
    rc, _, err = run("run", MLP, "--input", "x=" + x, "-o", os.path.join(tmp, "o32"), "-q")
    check("fp32 run", rc == 0, err)
    y8 = np.load(os.path.join(tmp, "o8", "y.npy"))
    y32 = np.load(os.path.join(tmp, "o32", "y.npy"))
    check("ref fp8 close to fp32", rel(y8, y32) < 0.05, f"rel {rel(y8, y32)}")
    check("ref fp8 differs from fp32 (it quantized)", rel(y8, y32) > 0, "")
    qdq = os.path.join(tmp, "q8.onnx")
    rc, _, err = run("export-qdq", MLP, "-o", qdq, "--precision", "fp8", "--calib-data", cal)
    check("export-qdq fp8", rc == 0 and os.path.exists(qdq), err)
    try:
        import onnx
        m = onnx.load(qdq)
        onnx.checker.check_model(m, full_check=True)
        ops = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
        check("fp8 QDQ at opset >= 19", ops and ops[0] >= 19, str(ops))
        f8 = [i for i in m.graph.initializer if i.data_type == onnx.TensorProto.FLOAT8E4M3FN]
        check("e4m3 weights and zero points", len(f8) >= 4, str(len(f8)))
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001
        check("onnx checker accepts the fp8 QDQ model", False, str(e)[:400])
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        yo = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"]).run(
            None, {"x": xv})[0]
        check("ORT runs the fp8 QDQ model as precis ref does", rel(yo, y8) < 1e-5,
              f"rel {rel(yo, y8)}")
    except ImportError:
        pass
    cplan = os.path.join(tmp, "cuda8.plan")
    rc, out, err = run("build", MLP, "-o", cplan, "--precision", "fp8", "--calib-data", cal,
                       "--device", "cuda", "--shapes", "x:2x5x32")
    if rc != 0:  # no GPU or no CUDA here: one clear line
        lines = [l for l in err.splitlines() if l.strip()]
        check("cuda fp8 without a GPU: one line", len(lines) == 1 and
              ("CUDA" in lines[0] or "cuda" in lines[0]), err)
        return finish("test_fp8 (no GPU): ")
    rc, out, err = run("inspect", cplan)
    check("inspect names the FP8 kernels", rc == 0 and "cublasLt fp8" in out, out[-1500:])
    rc, _, err = run("run", cplan, "--input", "x=" + x, "-o", os.path.join(tmp, "oc"), "-q")
    check("cuda fp8 run", rc == 0, err)
    if rc == 0:
        yc = np.load(os.path.join(tmp, "oc", "y.npy"))
        check("cuda fp8 agrees with ref fp8", rel(yc, y8) < 2e-2, f"rel {rel(yc, y8)}")
    return finish("test_fp8 (GPU): ")


if __name__ == "__main__":
    raise SystemExit(main())
