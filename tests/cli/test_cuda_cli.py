#!/usr/bin/env python3
"""--device cuda from the command line (issue 8).

usage: test_cuda_cli.py PATH/TO/precis PATH/TO/cuda_plan_stub

Three situations, found out by a first build:
  - precis built without CUDA: build --device cuda, and loading a cuda plan (run,
    bench, inspect), fail with one line saying so, exit 5;
  - built with CUDA on a machine without a GPU (CI): the same fail with one line
    'no CUDA device: <the CUDA error string>', exit 5; int8 on cuda is refused
    first with its own line;
  - with a GPU: the build succeeds, inspect names GPU kernels, and `precis run`
    agrees with the ref backend.
The cuda plan for the loading checks is a CPU plan whose metadata the helper
rewrites (cuda_plan_stub), so no GPU is needed to make it.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from clicheck import check, expect_error, finish, run

HERE = os.path.dirname(os.path.abspath(__file__))
MLP = os.path.join(HERE, "..", "data", "small_mlp.onnx")
STUB = os.path.abspath(sys.argv[2])


def main():
    tmp = tempfile.mkdtemp(prefix="precis-cuda-cli-")
    plan = os.path.join(tmp, "mlp.plan")
    rc, out, err = run("build", MLP, "-o", plan, "--device", "cuda", "--shapes", "x:2x5x32")
    gpu = rc == 0
    if not gpu:
        no_cuda = "built without CUDA" in err
        needle = "built without CUDA" if no_cuda else "no CUDA device: "
        expect_error("build --device cuda without a GPU", 5,
                     ["build", MLP, "-o", plan, "--device", "cuda"], needle)
        check("no plan written", not os.path.exists(plan))
        if not no_cuda:
            expect_error("int8 on cuda without a GPU", 5,
                         ["build", MLP, "-o", plan, "--device", "cuda", "--precision", "int8"],
                         "no CUDA device: ")
        cpu_plan = os.path.join(tmp, "cpu.plan")
        rc, out, err = run("build", MLP, "-o", cpu_plan, "--shapes", "x:2x5x32")
        check("cpu build", rc == 0, err)
        p = subprocess.run([STUB, cpu_plan, plan], capture_output=True, text=True)
        check("stub cuda plan written", p.returncode == 0, p.stderr)
        x = os.path.join(tmp, "x.npy")
        np.save(x, np.ones((2, 5, 32), np.float32))
        load_needle = "built without CUDA" if no_cuda else "no CUDA device: "
        expect_error("run a cuda plan without a GPU", 5, ["run", plan, "--input", "x=" + x],
                     load_needle)
        expect_error("bench a cuda plan without a GPU", 5, ["bench", plan, "--iterations", "1"],
                     load_needle)
        expect_error("inspect a cuda plan without a GPU", 5, ["inspect", plan], load_needle)
        return finish("test_cuda_cli (no GPU): ")
    check("build says cuda target", "target cuda:sm_" in out, out)
    rc, out, err = run("inspect", plan)
    check("inspect runs", rc == 0, err)
    check("inspect names GPU kernels", "cublasLt" in out, out)
    x = os.path.join(tmp, "x.npy")
    np.save(x, np.random.default_rng(1).standard_normal((2, 5, 32)).astype(np.float32))
    rc, _, err = run("run", plan, "--input", "x=" + x, "-o", os.path.join(tmp, "cuda"), "-q")
    check("run on the GPU", rc == 0, err)
    rc, _, err = run("run", MLP, "--input", "x=" + x, "-o", os.path.join(tmp, "ref"), "-q")
    check("run on ref", rc == 0, err)
    for f in os.listdir(os.path.join(tmp, "ref")):
        r = np.load(os.path.join(tmp, "ref", f))
        c = np.load(os.path.join(tmp, "cuda", f))
        d = float(np.max(np.abs(r - c)) / (np.max(np.abs(r)) + 1e-30))
        check(f"cuda {f} matches ref", r.shape == c.shape and d < 1e-4, f"rel err {d}")
    # precision rules on the GPU: the same planner as the cpu backend
    rplan = os.path.join(tmp, "rules.plan")
    rc, out, err = run("build", MLP, "-o", rplan, "--device", "cuda", "--precision", "fp16",
                       "--shapes", "x:2x5x32", "--layer-precision", "op:Softmax:fp32",
                       "--layer-precision", "mm2:fp32", "--strict")
    check("rules build on cuda", rc == 0, err)
    check("rules met on cuda", "0 not met" in out, out)
    rc, out, err = run("inspect", rplan)
    check("inspect shows the fp32 softmax", rc == 0 and "softmax" in out, out[-2000:])
    timing_cache_tests(tmp)
    int8_dynamic_tests(tmp)
    plan_choices_tests(tmp)
    return finish("test_cuda_cli (GPU): ")


def timing_cache_tests(tmp):
    """--timing-cache: written by the first build, reused by the second (nothing timed
    again), refused with one line when made under another header."""
    cnn = os.path.join(HERE, "..", "data", "small_cnn.onnx")
    tc = os.path.join(tmp, "cnn.timing")
    p1, p2 = os.path.join(tmp, "t1.plan"), os.path.join(tmp, "t2.plan")
    rc, _, err = run("build", cnn, "-o", p1, "--device", "cuda", "--precision", "fp16",
                     "--shapes", "input:4x3x16x16", "--timing-cache", tc, "-v")
    check("timing cache: first build", rc == 0 and os.path.exists(tc), err[-800:])
    first = [l for l in err.splitlines() if "timing cache" in l]
    check("timing cache: first build records choices", first and " 0 new" not in first[-1],
          str(first))
    rc, _, err = run("build", cnn, "-o", p2, "--device", "cuda", "--precision", "fp16",
                     "--shapes", "input:4x3x16x16", "--timing-cache", tc, "-v")
    second = [l for l in err.splitlines() if "timing cache" in l]
    check("timing cache: second build reuses every choice",
          rc == 0 and second and ", 0 new" in second[-1] and " 0 choices reused" not in second[-1],
          str(second))
    with open(tc) as f:
        lines = f.read().splitlines()
    lines[1] = "gpu\tSome Other GPU"
    bad = os.path.join(tmp, "other.timing")
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    expect_error("timing cache of another GPU refused", 2,
                 ["build", cnn, "-o", p2, "--device", "cuda", "--timing-cache", bad],
                 "was made for gpu Some Other GPU")
    expect_error("timing cache needs cuda", 2, ["build", cnn, "-o", p2, "--timing-cache", bad],
                 "--timing-cache is for the cuda backend")


def plan_choices_tests(tmp):
    """The GPU's timed choices travel with the plan (precis.cuda_tcache): a loaded plan takes
    every one of them instead of timing again and computes what a second load computes; a
    plan whose choices name another GPU times again and runs; malformed ones are refused."""
    from clicheck import PRECIS
    cnn = os.path.join(HERE, "..", "data", "small_cnn.onnx")
    plan = os.path.join(tmp, "choices.plan")
    rc, _, err = run("build", cnn, "-o", plan, "--device", "cuda", "--precision", "fp16",
                     "--shapes", "input:4x3x16x16")
    check("choices: build", rc == 0, err[-800:])
    x = os.path.join(tmp, "cx.npy")
    np.save(x, np.random.default_rng(3).standard_normal((4, 3, 16, 16)).astype(np.float32))
    env = dict(os.environ, PRECIS_VERBOSE="1")

    def load_run(p, out):
        r = subprocess.run([PRECIS, "run", p, "--input", "input=" + x, "-o", out, "-q"],
                           env=env, capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if "timed GPU choices" in l]
        return r.returncode, (lines[-1] if lines else ""), r.stderr

    o1, o2 = os.path.join(tmp, "c1"), os.path.join(tmp, "c2")
    rc, line, err = load_run(plan, o1)
    check("choices: a loaded plan reuses them all",
          rc == 0 and " 0 timed at load" in line and " 0 reused" not in line, line or err[-800:])
    rc, _, err = load_run(plan, o2)
    for f in os.listdir(o1):
        same = np.array_equal(np.load(os.path.join(o1, f)), np.load(os.path.join(o2, f)))
        check(f"choices: two loads compute the same {f}", rc == 0 and same, err[-400:])
    other = os.path.join(tmp, "choices_other.plan")
    p = subprocess.run([STUB, plan, other, "--other-gpu"], capture_output=True, text=True)
    check("choices: other-GPU plan written", p.returncode == 0, p.stderr)
    rc, line, err = load_run(other, os.path.join(tmp, "c3"))
    check("choices: made on another GPU, timed again",
          rc == 0 and "timing again" in err and " 0 reused" in line, err[-800:])
    # int8: the conv routes are timed at a shape's first run; the build runs its --shapes
    # once, so the plan carries them and a load times none (no "timed ms" route line)
    i8 = os.path.join(tmp, "choices_int8.plan")
    rc, _, err = run("build", cnn, "-o", i8, "--device", "cuda", "--precision", "int8",
                     "--shapes", "input:4x3x16x16", "--calib-data", os.path.join(tmp, "calib"))
    check("choices: int8 build", rc == 0, err[-800:])
    rc, line, err = load_run(i8, os.path.join(tmp, "c4"))
    routes = [l for l in err.splitlines() if "m=" in l and "node '" in l]
    check("choices: int8 routes taken from the plan",
          rc == 0 and routes and not any("timed ms" in l for l in routes), err[-800:])
    bad = os.path.join(tmp, "choices_bad.plan")
    p = subprocess.run([STUB, plan, bad, "--bad-tcache"], capture_output=True, text=True)
    check("choices: malformed plan written", p.returncode == 0, p.stderr)
    expect_error("choices: malformed ones refused", 4, ["run", bad, "--input", "input=" + x],
                 "precis.cuda_tcache")


def int8_dynamic_tests(tmp):
    """An int8 cuda plan built without --shapes (dynamic batch) runs at batch 1 and 8, and
    agrees with ref's run of the model (int8 vs fp32: loose): the residual conv of
    small_cnn is a QConv with an int8 Z."""
    cnn = os.path.join(HERE, "..", "data", "small_cnn.onnx")
    cal = os.path.join(tmp, "calib")
    os.makedirs(cal, exist_ok=True)
    rng = np.random.default_rng(5)
    for i in range(8):
        np.save(os.path.join(cal, f"{i}.npy"), rng.random((3, 16, 16)).astype(np.float32))
    plan = os.path.join(tmp, "cnn_int8_dyn.plan")
    rc, _, err = run("build", cnn, "-o", plan, "--device", "cuda", "--precision", "int8",
                     "--calib-data", cal)
    check("int8 build without --shapes", rc == 0, err[-800:])
    for b in (1, 8):
        x = os.path.join(tmp, f"xb{b}.npy")
        np.save(x, rng.random((b, 3, 16, 16)).astype(np.float32))
        oc, orf = os.path.join(tmp, f"i8dyn{b}"), os.path.join(tmp, f"i8ref{b}")
        rc, _, err = run("run", plan, "--input", "input=" + x, "-o", oc, "-q")
        check(f"int8 dynamic plan runs at batch {b}", rc == 0, err[-800:])
        rc, _, err = run("run", cnn, "--input", "input=" + x, "-o", orf, "-q")
        if rc == 0 and os.path.isdir(oc):
            r = np.load(os.path.join(orf, "prob.npy"))
            c = np.load(os.path.join(oc, "prob.npy"))
            d = float(np.max(np.abs(r - c)))
            check(f"int8 dynamic plan batch {b} near fp32", r.shape == c.shape and d < 0.1,
                  f"max abs diff {d}")


if __name__ == "__main__":
    sys.exit(main())
