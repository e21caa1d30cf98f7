#!/usr/bin/env python3
"""Per-layer precision rules, proved by numbers (issue 6).

usage: test_precision.py PATH/TO/precis [--device cuda]

With --device cuda every build runs on the CUDA backend (the numeric checks; the
error-message checks are the CPU run's); without a usable GPU it exits 77 (ctest skip).

Small models built with the onnx helper API; every check whose outcome depends on the
precision that really ran compares precis's output with a numpy float64 reference:
  - a LayerNorm fed values whose square overflows float16 (|x - mean| up to 2000): with
    a rule keeping it float32 (glob, regex, op: selector, rules file) the output matches
    the reference to float32 rounding; without, it visibly deviates. Decomposed and not
    recognised (Reciprocal * instead of Div: every piece runs alone), decomposed and
    fused into one LayerNormalization, and a real LayerNormalization op, each between
    ops that get fused (MatMul + bias). fp16 and bf16 builds.
  - a Softmax fed large logits in an int8 network: precis keeps its input float by
    default (KL to the float reference small); a rule storing the logits int8 makes the
    KL rise; the report says which ran.
  - an output-type rule: an int8 conv whose output is stored float32 hands its consumer
    float32 bytes (the step's output dtype), where by default it hands int8.
  - rule errors (no match: closest names; bad type; int8 rule outside int8 builds; bad
    rules file) exit with one line; --strict fails on a request that cannot be met,
    and the default build warns and reports it in `inspect`.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import clicheck
from clicheck import check, expect_error, finish, run

DEVICE = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
if DEVICE != "cpu":  # every build of this test on that device
    _run = clicheck.run

    def run(*args):  # noqa: F811
        if args and args[0] == "build":
            args = args + ("--device", DEVICE)
        return _run(*args)

    clicheck.run = run

D = 64


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def fc1():
    """x -> MatMul(I) + 0 (fused into one FusedMatMul; exact in fp16 for integers)."""
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1/MatMul"),
             helper.make_node("Add", ["h0", "b1"], ["h"], name="fc1/Add")]
    inits = [init("W1", np.eye(D, dtype=np.float32)), init("b1", np.zeros(D, np.float32))]
    return nodes, inits


def ln_model(path, form):
    """form: 'unfused' (Reciprocal + Mul: not recognised), 'decomposed' (recognised and
    fused), 'op' (LayerNormalization, opset 17)."""
    nodes, inits = fc1()
    inits += [init("two", np.array(2, np.float32)), init("eps", np.array(1e-5, np.float32)),
              init("gamma", np.ones(D, np.float32)), init("beta", np.zeros(D, np.float32))]
    if form == "op":
        nodes.append(helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y"],
                                      axis=-1, epsilon=1e-5, name="encoder/ln"))
        opset = 17
    else:
        nodes += [helper.make_node("ReduceMean", ["h"], ["m"], axes=[-1], keepdims=1,
                                   name="LayerNorm/ReduceMean"),
                  helper.make_node("Sub", ["h", "m"], ["d"], name="LayerNorm/Sub"),
                  helper.make_node("Pow", ["d", "two"], ["q"], name="LayerNorm/Pow"),
                  helper.make_node("ReduceMean", ["q"], ["v"], axes=[-1], keepdims=1,
                                   name="LayerNorm/ReduceMean_1"),
                  helper.make_node("Add", ["v", "eps"], ["ve"], name="LayerNorm/Add"),
                  helper.make_node("Sqrt", ["ve"], ["s"], name="LayerNorm/Sqrt")]
        if form == "decomposed":
            nodes.append(helper.make_node("Div", ["d", "s"], ["n"], name="LayerNorm/Div"))
        else:
            nodes += [helper.make_node("Reciprocal", ["s"], ["rs"], name="LayerNorm/Reciprocal"),
                      helper.make_node("Mul", ["d", "rs"], ["n"], name="LayerNorm/Mul_r")]
        nodes += [helper.make_node("Mul", ["n", "gamma"], ["ng"], name="LayerNorm/Mul"),
                  helper.make_node("Add", ["ng", "beta"], ["y"], name="LayerNorm/Add_1")]
        opset = 13
    g = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", TP.FLOAT, [4, D])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [4, D])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def ln_ref(x):
    x = x.astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)


def build_run(d, model, tag, inputs, *rules, expect_ok=True):
    """Build model with the rules, run it on inputs ({name: path}); returns (outputs dir,
    inspect json) or None when the build fails (then reports it unless expected)."""
    plan = f"{d}/{tag}.plan"
    rc, out, err = run("build", model, "-o", plan, *rules)
    if rc != 0:
        if expect_ok:
            check(f"{tag}: build", False, err.strip())
        return None
    od = f"{d}/{tag}.out"
    args = ["run", plan, "--output-dir", od]
    for k, v in inputs.items():
        args += ["--input", f"{k}={v}"]
    rc, out, err = run(*args)
    check(f"{tag}: run", rc == 0, err.strip())
    rc, js, err = run("inspect", plan, "--json")
    check(f"{tag}: inspect --json", rc == 0, err.strip())
    return od, json.loads(js)


def nodes_of(js, prefix):
    return [n for n in js["nodes"] if n["name"].startswith(prefix)]


def layernorm_tests(d):
    rng = np.random.default_rng(1)
    # (x - mean)^2 > 65504; multiples of 8 below 2048 are exact in fp16 and bf16
    x = (8 * rng.integers(-250, 250, size=(4, D))).astype(np.float32)
    xp = f"{d}/x.npy"
    np.save(xp, x)
    ref = ln_ref(x)
    rules_json = f"{d}/rules.json"
    with open(rules_json, "w") as f:
        json.dump({"rules": [{"select": "LayerNorm*", "precision": "fp32"}]}, f)
    for form in ("unfused", "decomposed", "op"):
        m = ln_model(f"{d}/ln_{form}.onnx", form)
        ln_prefix = "encoder/ln" if form == "op" else "LayerNorm/"
        for prec in ("fp16", "bf16"):
            base = build_run(d, m, f"{form}-{prec}-norule", {"x": xp}, "--precision", prec)
            if not base:
                continue
            err0 = np.abs(np.load(f"{base[0]}/y.npy") - ref).max()
            # without a rule the low type shows: float16 overflows (unfused) or rounds the
            # stored output (fused kernels compute in float32 internally); bf16 rounds to
            # 8 bits everywhere
            check(f"{form}-{prec}: no rule deviates", err0 > 1e-4, f"max err {err0}")
            if form == "unfused" and prec == "fp16":
                check("unfused fp16: overflow visible", err0 > 0.5, f"max err {err0}")
            sels = ["op:LayerNormalization:fp32", "encoder/*:fp32"] if form == "op" else \
                ["LayerNorm*:fp32", "re:^LayerNorm/:fp32", "rules-file"]
            if form == "decomposed":  # op: also selects the LayerNorms precis recognizes
                sels.append("op:LayerNormalization:fp32")
            for sel in sels:
                rules = ["--rules", rules_json] if sel == "rules-file" else \
                    ["--layer-precision", sel]
                r = build_run(d, m, f"{form}-{prec}-{len(rules)}-{sels.index(sel)}", {"x": xp},
                              "--precision", prec, *rules)
                if not r:
                    continue
                err1 = np.abs(np.load(f"{r[0]}/y.npy") - ref).max()
                check(f"{form}-{prec} {sel}: matches float32", err1 < 1e-5, f"max err {err1}")
                ln = nodes_of(r[1], ln_prefix)
                check(f"{form}-{prec} {sel}: report", ln and all(
                    n["requested"]["compute"] == "fp32" and n["actual"]["compute"] == "fp32" and
                    n["honored"] for n in ln), json.dumps(ln)[:400])
                fc = nodes_of(r[1], "fc1/")
                check(f"{form}-{prec} {sel}: neighbours stay {prec} and fused",
                      len(fc) == 2 and all(n["actual"]["compute"] == prec for n in fc) and
                      fc[0]["step"] == fc[1]["step"] >= 0, json.dumps(fc)[:400])
        if form == "decomposed":  # the fused LayerNormalization runs float32 as one step
            r = build_run(d, m, "decomposed-fused", {"x": xp}, "--precision", "fp16",
                          "--layer-precision", "LayerNorm*:fp32")
            if r:
                ln = nodes_of(r[1], "LayerNorm/")
                steps = {n["step"] for n in ln}
                st = r[1]["steps"][ln[0]["step"]] if ln else {}
                check("decomposed: one fp32 LayerNormalization step",
                      len(steps) == 1 and st.get("op") == "LayerNormalization" and
                      st.get("dtype") == "float32", json.dumps(st))
    # later rules win; both shown
    m = f"{d}/ln_unfused.onnx"
    r = build_run(d, m, "later-wins", {"x": xp}, "--precision", "fp32", "--layer-precision",
                  "LayerNorm*:bf16", "--layer-precision", "LayerNorm/Pow:fp32")
    if r:
        pw = nodes_of(r[1], "LayerNorm/Pow")[0]
        sb = nodes_of(r[1], "LayerNorm/Sub")[0]
        check("later rule wins", pw["requested"]["compute"] == "fp32" and
              pw["actual"]["compute"] == "fp32" and sb["actual"]["compute"] == "bf16" and
              "LayerNorm*:bf16" in pw["rules"] and "LayerNorm/Pow:fp32" in pw["rules"],
              json.dumps([pw, sb]))
    # the same with op:LayerNormalization on a recognized (decomposed) LayerNorm: rule order
    # decides also when the op: rule applies after fusion
    m = f"{d}/ln_decomposed.onnx"
    for tag, order, want in (("op-then-name", ["op:LayerNormalization:fp32", "LayerNorm/*:fp16"],
                              "fp16"),
                             ("name-then-op", ["LayerNorm/*:fp16", "op:LayerNormalization:fp32"],
                              "fp32")):
        args = []
        for sel in order:
            args += ["--layer-precision", sel]
        r = build_run(d, m, f"order-{tag}", {"x": xp}, "--precision", "fp16", *args)
        if not r:
            continue
        ln = nodes_of(r[1], "LayerNorm/")
        err1 = np.abs(np.load(f"{r[0]}/y.npy") - ref).max()
        check(f"order {tag}: the later rule wins ({want})", ln and all(
            n["requested"]["compute"] == want and n["actual"]["compute"] == want and n["honored"]
            and "op:LayerNormalization:fp32" in n["rules"] and "LayerNorm/*:fp16" in n["rules"]
            for n in ln), json.dumps(ln)[:600])
        check(f"order {tag}: numbers follow", (err1 < 1e-5) == (want == "fp32"), f"err {err1}")


def mm_softmax_model(path):
    rng = np.random.default_rng(3)
    W = (rng.standard_normal((32, 48)) * 1.5).astype(np.float32)
    W[:, 0] *= 20  # one class with large logits sets a per-tensor int8 scale too coarse for the rest
    nodes = [helper.make_node("MatMul", ["x", "W"], ["logits"], name="head/MatMul"),
             helper.make_node("Softmax", ["logits"], ["p"], axis=-1, name="head/Softmax")]
    g = helper.make_graph(nodes, "sm", [helper.make_tensor_value_info("x", TP.FLOAT, [8, 32])],
                          [helper.make_tensor_value_info("p", TP.FLOAT, [8, 48])], [init("W", W)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path, W


def softmax_int8_tests(d):
    m, W = mm_softmax_model(f"{d}/sm.onnx")
    rng = np.random.default_rng(4)
    cal = f"{d}/sm_calib"
    os.makedirs(cal, exist_ok=True)
    for i in range(8):
        np.save(f"{cal}/{i}.npy", rng.standard_normal((8, 32)).astype(np.float32))
    x = rng.standard_normal((8, 32)).astype(np.float32)
    xp = f"{d}/sm_x.npy"
    np.save(xp, x)
    lg = x.astype(np.float64) @ W
    ref = np.exp(lg - lg.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)

    def kl(p):
        p = np.clip(p.astype(np.float64), 1e-12, 1)
        return float((ref * (np.log(np.clip(ref, 1e-12, 1)) - np.log(p))).sum(-1).mean())
    common = ["--precision", "int8", "--calib-data", cal, "--calibrator", "minmax"]
    r0 = build_run(d, m, "sm-default", {"x": xp}, *common)
    r1 = build_run(d, m, "sm-int8-logits", {"x": xp}, *common,
                   "--layer-output-type", "head/MatMul:int8")
    r2 = build_run(d, m, "sm-fp32", {"x": xp}, *common, "--layer-precision", "op:Softmax:fp32")
    if not (r0 and r1 and r2):
        return
    k0, k1, k2 = (kl(np.load(f"{r[0]}/p.npy")) for r in (r0, r1, r2))
    check("softmax: float logits keep the distribution", k0 < 2e-3 and k2 < 2e-3, f"{k0} {k2}")
    check("softmax: int8 logits raise the KL", k1 > 4 * max(k0, 1e-4) and k1 > 2e-3,
          f"default {k0}, int8 logits {k1}")
    mm1 = nodes_of(r1[1], "head/MatMul")[0]
    check("softmax: report shows int8 logits", mm1["actual"]["compute"] == "int8" and
          mm1["actual"]["output"] in ("int8", "uint8") and mm1["honored"], json.dumps(mm1))
    sm2 = nodes_of(r2[1], "head/Softmax")[0]
    check("softmax: fp32 rule met", sm2["actual"]["compute"] == "fp32" and sm2["honored"],
          json.dumps(sm2))


def conv_model(path):
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["y"], pads=[1, 1, 1, 1], name="conv2")]
    g = helper.make_graph(nodes, "cv", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [1, 8, 16, 16])],
                          [init("w1", w1), init("w2", w2)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def image_data(d, tag, seed):
    """Four 1x3x16x16 calibration samples in a folder and one input: (folder, input path)."""
    rng = np.random.default_rng(seed)
    cal = f"{d}/{tag}_calib"
    os.makedirs(cal, exist_ok=True)
    for i in range(4):
        np.save(f"{cal}/{i}.npy", rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
    xp = f"{d}/{tag}_x.npy"
    np.save(xp, rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
    return cal, xp


def output_type_tests(d):
    m = conv_model(f"{d}/cv.onnx")
    cal, xp = image_data(d, "cv", 6)
    common = ["--precision", "int8", "--calib-data", cal]
    r0 = build_run(d, m, "cv-default", {"x": xp}, *common)
    r1 = build_run(d, m, "cv-out-fp32", {"x": xp}, *common, "--layer-output-type", "relu1:fp32")
    if not (r0 and r1):
        return
    for tag, r, want in (("default", r0, ("int8", "uint8")), ("rule", r1, ("float32",))):
        c1 = nodes_of(r[1], "conv1")[0]
        st = r[1]["steps"][c1["step"]]
        check(f"output type {tag}: conv1 runs int8", c1["actual"]["compute"] == "int8" and
              ("qconv" in st["kernel"] or st.get("op") == "QConv"), json.dumps([c1, st]))
        check(f"output type {tag}: conv1 hands on {want}", st["dtype"] in want, json.dumps(st))
    scale_tests(d, m, cal, xp)
    r1n = nodes_of(r1[1], "relu1")[0]
    check("output type rule: reported met", r1n["requested"]["output"] == "fp32" and
          r1n["actual"]["output"] == "fp32" and r1n["honored"], json.dumps(r1n))


def scale_tests(d, m, cal, xp):
    """inspect reports the int8 scales that run: minmax input scale max|x|/127, weight
    scales per output channel max|w[m]|/127, and a consumer's input scale equal to its
    producer's output scale."""
    r = build_run(d, m, "cv-scales", {"x": xp}, "--precision", "int8", "--calib-data", cal,
                  "--calibrator", "minmax")
    if not r:
        return
    c1, c2 = nodes_of(r[1], "conv1")[0]["scales"], nodes_of(r[1], "conv2")[0]["scales"]
    amax = max(float(np.abs(np.load(f"{cal}/{f}")).max()) for f in os.listdir(cal))
    check("scales: conv1 x = max|calib x| / 127", abs(c1.get("x", 0) - amax / 127) < 1e-3 * amax / 127,
          f"{c1} vs {amax / 127}")
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    ws = np.abs(w1).reshape(8, -1).max(1) / 127
    w = c1.get("w", {})
    check("scales: conv1 w per channel", w.get("count") == 8 and
          abs(w.get("min", 0) - ws.min()) < 1e-3 * ws.min() and
          abs(w.get("max", 0) - ws.max()) < 1e-3 * ws.max(), f"{w} vs {ws.min()}..{ws.max()}")
    check("scales: conv2 reads conv1's output scale", c1.get("y", 0) > 0 and
          abs(c2.get("x", -1) - c1["y"]) < 1e-3 * c1["y"], f"{c1} {c2}")
    check("scales: float output has no y", "y" not in c2, json.dumps(c2))
    relu = nodes_of(r[1], "relu1")[0]["scales"]
    check("scales: fused relu shows its step's scales", relu == c1, f"{relu} {c1}")


def residual_model(path):
    rng = np.random.default_rng(7)
    w = [(rng.standard_normal((8, c, 3, 3)) * 0.3).astype(np.float32) for c in (3, 8, 8)]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Add", ["c2", "r1"], ["a1"], name="add1"),
             helper.make_node("Conv", ["a1", "w3"], ["y"], pads=[1, 1, 1, 1], name="conv3")]
    g = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [1, 8, 16, 16])],
                          [init("w1", w[0]), init("w2", w[1]), init("w3", w[2])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def elementwise_tests(d):
    """An elementwise node asked fp32 in an int8 network computes in float32 (its own float
    step, not an int8 kernel that reads int8 operands), and the network still agrees."""
    m = residual_model(f"{d}/res.onnx")
    cal, xp = image_data(d, "res", 8)
    common = ["--precision", "int8", "--calib-data", cal]
    r0 = build_run(d, m, "res-default", {"x": xp}, *common)
    r1 = build_run(d, m, "res-add-fp32", {"x": xp}, *common, "--layer-precision", "add1:fp32")
    if not (r0 and r1):
        return
    a0, a1 = nodes_of(r0[1], "add1")[0], nodes_of(r1[1], "add1")[0]
    check("elementwise default: add1 int8", a0["actual"]["compute"] in ("int8", "uint8"), json.dumps(a0))
    st = r1[1]["steps"][a1["step"]]
    check("elementwise rule: add1 computes fp32 in a float step",
          a1["actual"]["compute"] == "fp32" and a1["honored"] and st["dtype"] == "float32" and
          not st["op"].startswith("Q"), json.dumps([a1, st]))
    check("elementwise rule: no int8 scales on add1", a1["scales"] == {}, json.dumps(a1))
    y0, y1 = np.load(f"{r0[0]}/y.npy"), np.load(f"{r1[0]}/y.npy")
    rel = float(np.abs(y1 - y0).max() / (np.abs(y0).max() + 1e-9))
    check("elementwise rule: output agrees with the default int8 build", rel < 0.1, f"rel {rel}")
    cache_tests(d, m, cal, xp, y0)


def cache_tests(d, m, cal, xp, y0):
    """A calibration cache made under other precision rules (another fused graph): used when
    it has every tensor the build quantizes, else refused without data, recalibrated and
    merged with data."""
    cache = f"{d}/res.cache"
    rule = ["--layer-precision", "add1:fp32"]
    rc, _, err = run("build", m, "-o", f"{d}/c0.plan", "--precision", "int8", "--calib-data", cal,
                     "--calib-cache", cache)
    check("cache: made by the default build", rc == 0 and os.path.exists(cache), err)
    expect_error("cache: other rules, tensors missing, no data", 2,
                 ["build", m, "-o", f"{d}/c1.plan", "--precision", "int8", "--calib-cache", cache,
                  *rule], "another optimized graph", "lacks", "--calib-data")
    rc, _, err = run("build", m, "-o", f"{d}/c1.plan", "--precision", "int8", "--calib-data", cal,
                     "--calib-cache", cache, "-v", *rule)
    check("cache: other rules with data recalibrate", rc == 0 and "recalibrating" in err, err)
    for tag, extra in (("default", []), ("rule", rule)):
        plan = f"{d}/c2{tag}.plan"
        rc, _, err = run("build", m, "-o", plan, "--precision", "int8", "--calib-cache", cache,
                         *extra)
        check(f"cache: merged cache serves the {tag} build alone", rc == 0, err)
        od = f"{d}/c2{tag}.out"
        rc, _, err = run("run", plan, "--input", f"x={xp}", "--output-dir", od)
        if tag == "default" and rc == 0:
            y = np.load(f"{od}/y.npy")
            check("cache: default build from the merged cache gives the same output",
                  np.array_equal(y, y0), f"max diff {np.abs(y - y0).max()}")
    other = conv_model(f"{d}/cv2.onnx")
    expect_error("cache: another model refused", 2,
                 ["build", other, "-o", f"{d}/c3.plan", "--precision", "int8", "--calib-cache",
                  cache], "another model")


def error_tests(d):
    m = f"{d}/ln_unfused.onnx"
    p = f"{d}/e.plan"
    expect_error("no match", 2, ["build", m, "-o", p, "--layer-precision", "LayerNrom/Pow:fp32"],
                 "LayerNrom/Pow:fp32", "matches no node name", "'LayerNorm/Pow'")
    expect_error("no op match", 2, ["build", m, "-o", p, "--layer-precision", "op:Softmax:fp32"],
                 "op:Softmax:fp32", "op type")
    expect_error("op: not recognized either", 2, ["build", m, "-o", p, "--layer-precision",
                                                   "op:LayerNormalization:fp32"],
                 "nor a pattern precis recognizes")
    expect_error("bad type", 2, ["build", m, "-o", p, "--layer-output-type", "LayerNorm*:fp64"],
                 "unknown type 'fp64'")
    expect_error("int8 outside int8", 2, ["build", m, "-o", p, "--layer-precision", "fc1/*:int8"],
                 "--precision int8")
    bad = f"{d}/bad.json"
    with open(bad, "w") as f:
        f.write('{"rules": [\n {"select": "LayerNorm*", "precison": "fp32"}]}')
    expect_error("bad rules file key", 2, ["build", m, "-o", p, "--rules", bad], "bad.json:2",
                 "precison")
    expect_error("missing rules file", 3, ["build", m, "-o", p, "--rules", f"{d}/none.json"],
                 "none.json")
    check("no plan left by failed builds", not os.path.exists(p))
    # ReduceMean has no fp16 CPU kernel: the default build warns, --strict fails
    rc, out, err = run("build", m, "-o", p, "--layer-precision", "LayerNorm/ReduceMean:fp16")
    check("unmet request warns", rc == 0 and "warning: node 'LayerNorm/ReduceMean'" in err and
          "no fp16 kernel" in err and "1 not met" in out, err + out)
    rc, js, _ = run("inspect", p, "--json")
    n = nodes_of(json.loads(js), "LayerNorm/ReduceMean")[0] if rc == 0 else {}
    check("unmet request in inspect", n.get("honored") is False and "fp16" in n.get("reason", ""),
          json.dumps(n))
    os.remove(p)
    expect_error("--strict", 5, ["build", m, "-o", p, "--strict", "--layer-precision",
                                 "LayerNorm/ReduceMean:fp16"],
                 "--strict", "LayerNorm/ReduceMean", "fp16")
    check("no plan left by --strict", not os.path.exists(p))


def device_usable(d):
    """False (after saying why) when builds for DEVICE fail for want of a GPU."""
    m = ln_model(f"{d}/probe.onnx", "op")
    rc, _, err = run("build", m, "-o", f"{d}/probe.plan")
    if rc != 0 and ("no CUDA device" in err or "built without CUDA" in err):
        print(f"SKIP: {err.strip()}")
        return False
    return True


def main():
    with tempfile.TemporaryDirectory() as d:
        if DEVICE != "cpu" and not device_usable(d):
            return 77
        layernorm_tests(d)
        softmax_int8_tests(d)
        elementwise_tests(d)
        output_type_tests(d)
        if DEVICE == "cpu":  # messages and the CPU's missing fp16 ReduceMean
            error_tests(d)
    return finish(f"test_precision ({DEVICE}): ")


if __name__ == "__main__":
    sys.exit(main())
