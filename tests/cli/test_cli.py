#!/usr/bin/env python3
"""CLI behaviour on good and bad input: exit codes, one clear error line, outputs.

usage: test_cli.py PATH/TO/precis

Builds small models with the onnx helper API in a temporary folder. Under an
ASan/UBSan build a leak or UB report changes the exit status or adds stderr
lines, so the same checks prove "no crash, no leak".
"""
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from clicheck import check, expect_error, finish, run


def save(model, path):
    onnx.save(model, path)
    return path


def add_model(d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    b = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "b")
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"], name="add0")], "g", [x], [y], [b])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/add.onnx")


def two_input_model(d):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 2])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])
    g = helper.make_graph([helper.make_node("Mul", ["a", "b"], ["y"])], "g", [a, b], [y])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/mul.onnx")


def unknown_op_model(d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("FrobnicateV2", ["x"], ["y"], name="frob")], "g", [x], [y])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/unknown.onnx")


def huge_dims_model(d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40])
    t.raw_data = b"\0" * 16
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(f"{d}/huge.onnx", "wb") as f:  # bypass onnx.save's checker
        f.write(m.SerializeToString())
    return f"{d}/huge.onnx"


def external_model(d, location):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "8")):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = f"{d}/ext_{abs(hash(location))}.onnx"
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def profile_checks(d, add, mul):
    """bench PLAN --profile leaves PLAN.profile.json; inspect shows each step's
    time and share from it, ignores it once the plan is rebuilt, and refuses a
    --profile file that does not fit."""
    plan = f"{d}/add.plan"
    rc, _, err = run("build", add, "-o", plan, "--shapes", "x:2x3")
    check("build plan", rc == 0, err)
    rc, out, err = run("bench", plan, "--iterations", "3", "--warmup", "1", "--profile")
    prof = plan + ".profile.json"
    check("bench --profile saves", rc == 0 and os.path.exists(prof) and prof in out, out + err)
    rc, out, err = run("inspect", plan)
    check("inspect shows time", rc == 0 and "share" in out and "ms per run" in out and "%" in out, out + err)
    rc, out, err = run("inspect", plan, "--json")
    check("inspect json share", rc == 0 and '"share": ' in out and '"profile_total_ms"' in out, out + err)
    rc, _, err = run("build", mul, "-o", plan, "--shapes", "a:2x2,b:2x2")
    rc, out, err = run("inspect", plan)
    check("stale profile ignored", rc == 0 and "share" not in out and "profile ignored" in err, out + err)
    expect_error("stale --profile refused", 2, ["inspect", plan, "--profile", prof], "another build")
    expect_error("missing --profile", 2, ["inspect", plan, "--profile", f"{d}/none.json"], "none.json")
    garbage = f"{d}/garbage.json"
    open(garbage, "w").write("{}")
    expect_error("not a profile", 2, ["inspect", plan, "--profile", garbage], "not a precis profile")
    rc, _, err = run("inspect", add, "--profile", prof)
    check("--profile needs a plan", rc == 1 and "applies to a plan" in err, err)
    out_json = f"{d}/p.json"
    rc, out, err = run("bench", add, "--shape", "x=2x3", "--iterations", "2", "--profile-out", out_json)
    check("--profile-out for a model", rc == 0 and os.path.exists(out_json), out + err)


def mixed_model(d):
    """MatMul, ReduceMean, Sub, Relu; the Relu's name needs XML escaping."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    w = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("ReduceMean", ["h"], ["m"], axes=[-1], keepdims=1, name="rm"),
             helper.make_node("Sub", ["h", "m"], ["c"], name="sub"),
             helper.make_node("Relu", ["c"], ["y"], name='relu<&>"q\'')]
    g = helper.make_graph(nodes, "g", [x], [y], [w])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/mixed.onnx")


SVG = "{http://www.w3.org/2000/svg}"


def svg_steps(path):
    """(step boxes, edges) of an inspect --svg file; None when it is not XML."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None, None
    steps = [g for g in root.iter(SVG + "g") if "step" in g.get("class", "").split()]
    edges = [e for e in root.iter() if e.get("class") == "edge"]
    return steps, edges


def svg_checks(d):
    """inspect PLAN --svg: valid XML, one box per step, fills by dtype, a red
    border with the reason where a request was not met, clean errors."""
    import json
    m = mixed_model(d)
    plan, svg = f"{d}/mixed.plan", f"{d}/mixed.svg"
    rc, _, err = run("build", m, "-o", plan, "--precision", "fp16", "--layer-precision",
                     'relu<&>"q\':fp32')
    check("svg: mixed build", rc == 0, err)
    rc, out, err = run("inspect", plan, "--svg", svg)
    check("svg: written", rc == 0 and svg in out and err == "", out + err)
    steps, edges = svg_steps(svg)
    check("svg: valid XML", steps is not None)
    rc, js, _ = run("inspect", plan, "--json")
    n = len(json.loads(js)["steps"]) if rc == 0 else -1
    steps = steps or []
    check("svg: one box per step", len(steps) == n and n > 0, f"{len(steps)} boxes, {n} steps")
    check("svg: ids in order", [g.get("id") for g in steps] == [f"step{i}" for i in range(n)])
    dtypes = {g.get("data-dtype") for g in steps if "inserted" not in g.get("class")}
    check("svg: fp16 and fp32 boxes", {"fp16", "fp32"} <= dtypes, str(dtypes))
    fills = {g.find(SVG + "rect").get("fill") for g in steps if "inserted" not in g.get("class")}
    check("svg: two fills", len(fills) >= 2, str(fills))
    check("svg: edges", edges is not None and len(edges) >= n - 1, f"{len(edges or [])} edges")
    text = open(svg, encoding="utf-8").read() if os.path.exists(svg) else ""
    check("svg: name escaped", "relu&lt;&amp;&gt;&quot;q&apos;" in text)
    check("svg: met marked", any("met" in g.get("class").split() for g in steps))
    check("svg: no unmet", not any("unmet" in g.get("class").split() for g in steps))

    # ReduceMean has no fp16 CPU kernel: the request is not met
    plan2, svg2 = f"{d}/unmet.plan", f"{d}/unmet.svg"
    rc, _, err = run("build", m, "-o", plan2, "--layer-precision", "rm:fp16")
    check("svg: unmet build", rc == 0, err)
    rc, out, err = run("inspect", plan2, "--svg", svg2)
    steps, _ = svg_steps(svg2)
    unmet = [g for g in steps or [] if "unmet" in g.get("class").split()]
    check("svg: one unmet box", rc == 0 and len(unmet) == 1, out + err)
    if unmet:
        rect, title = unmet[0].find(SVG + "rect"), unmet[0].find(SVG + "title")
        check("svg: red border", rect.get("stroke") == "#d62728" and float(rect.get("stroke-width")) >= 3)
        check("svg: reason tooltip", title is not None and "NOT MET" in title.text and "rm" in title.text
              and "fp16" in title.text, title.text if title is not None else "")

    # errors: no partial file, one line
    bad = f"{d}/nodir/x.svg"
    expect_error("svg: bad path", 3, ["inspect", plan, "--svg", bad], "nodir/x.svg")
    check("svg: no partial file", not os.path.exists(bad))
    expect_error("svg: unwritable", 3, ["inspect", plan, "--svg", "/proc/precis_nope.svg"], "precis_nope")
    rc, _, err = run("inspect", m, "--svg", f"{d}/model.svg")
    check("svg: model refused", rc == 1 and len(err.strip().splitlines()) == 1 and "plan" in err
          and not os.path.exists(f"{d}/model.svg"), err)
    rc, _, err = run("inspect", plan, "--svg", svg, "--json")
    check("svg: --json refused", rc == 1 and "--svg" in err, err)
    rc, _, err = run("inspect", plan, "--svg")
    check("svg: needs a file", rc == 1 and "needs a file" in err, err)


def conv_model(d):
    rng = np.random.default_rng(3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 8, 8])
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "conv", [x], [y], [w])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/conv.onnx")


def fixed_batch_checks(d):
    """INT8 built for a fixed batch calibrates on single samples gathered into batches;
    the plan runs its batch split per sample (bench says so)."""
    conv = conv_model(d)
    cal = f"{d}/cal"
    os.makedirs(cal)
    rng = np.random.default_rng(4)
    for i in range(5):
        np.save(f"{cal}/{i}.npy", rng.random((1, 3, 8, 8), dtype=np.float32))
    plan = f"{d}/conv_b2.plan"
    rc, _, err = run("build", conv, "-o", plan, "--precision", "int8", "--calib-data", cal,
                     "--shapes", "x:2x3x8x8/2x3x8x8/2x3x8x8", "--threads", "2", "-v")
    check("int8 fixed batch from single samples", rc == 0, err)
    check("left-out sample said", "left out the last 1 sample" in err, err)
    os.environ["PRECIS_BATCH_SPLIT"] = "1"  # always (not the timed choice)
    rc, out, err = run("bench", plan, "--iterations", "2", "--warmup", "1")
    del os.environ["PRECIS_BATCH_SPLIT"]
    check("batch split reported", rc == 0 and "2 samples run one by one on 2 workers" in out, out + err)
    expect_error("fixed batch larger than the data", 2,
                 ["build", conv, "-o", f"{d}/conv_b8.plan", "--precision", "int8", "--calib-data", cal,
                  "--shapes", "x:8x3x8x8/8x3x8x8/8x3x8x8"], "built for batch 8", "5 samples",
                 "at least 8")


def main():
    with tempfile.TemporaryDirectory() as d:
        add = add_model(d)
        mul = two_input_model(d)
        x = f"{d}/x.npy"
        np.save(x, np.arange(6, dtype=np.float32).reshape(2, 3))
        xi = f"{d}/xi.npy"
        np.save(xi, np.arange(6, dtype=np.int64).reshape(2, 3))
        x4 = f"{d}/x4.npy"
        np.save(x4, np.zeros((2, 4), np.float32))
        a2 = f"{d}/a2.npy"
        np.save(a2, np.ones((2, 2), np.float32))
        a3 = f"{d}/a3.npy"
        np.save(a3, np.ones((3, 2), np.float32))

        # help and version
        for cmd in (["--help"], ["run", "--help"], ["inspect", "--help"], ["help", "run"], ["--version"]):
            rc, out, _ = run(*cmd)
            check(f"help {cmd}", rc == 0 and out.strip() != "")
        rc, out, _ = run("--help")
        check("help lists exit codes", "Exit status" in out)
        rc, _, err = run()
        check("no args", rc == 1 and "usage" in err)
        rc, _, err = run("frobnicate")
        check("unknown command", rc == 1 and "unknown command 'frobnicate'" in err)
        rc, _, err = run("run", add, "--bogus")
        check("unknown option", rc == 1 and "unknown option '--bogus'" in err)

        # the good path: run writes outputs, values right
        out_dir = f"{d}/out"
        rc, out, err = run("run", add, "--input", f"x={x}", "--output-dir", out_dir)
        check("run ok", rc == 0, err)
        y = np.load(f"{out_dir}/y.npy") if rc == 0 else None
        check("run values", y is not None and np.array_equal(y, np.arange(6).reshape(2, 3) + [1, 2, 3]))
        rc, out, err = run("run", add, "--input", x, "--quiet")
        check("single input without name", rc == 0 and out == "", err)
        rc, out, err = run("inspect", add)
        check("inspect", rc == 0 and "x" in out and "float32[batch,3]" in out and "Add" in out, out + err)
        rc, out, err = run("inspect", add, "--json")
        check("inspect json", rc == 0 and '"parameters": 3' in out and '"batch"' in out, out + err)

        # bad model files
        expect_error("missing model", 3, ["run", f"{d}/nope.onnx"], "nope.onnx")
        data = open(add, "rb").read()
        for cut in (1, 7, len(data) // 2, len(data) - 1):
            p = f"{d}/trunc{cut}.onnx"
            open(p, "wb").write(data[:cut])
            rc, _, err = run("inspect", p)
            lines = err.strip().splitlines()
            check(f"truncated {cut}", rc in (4, 6) and len(lines) == 1 and "trunc" in lines[0], f"rc={rc} {err!r}")
        garbled = f"{d}/garbled.onnx"
        open(garbled, "wb").write(bytes((i * 131 + 7) % 256 for i in range(4096)))
        expect_error("garbled model", 4, ["inspect", garbled], "garbled.onnx")
        expect_error("unknown op", 5, ["run", unknown_op_model(d), "--input", f"x={x}"], "FrobnicateV2", "opset 13", "frob")
        rc, out, _ = run("inspect", unknown_op_model(d))
        check("inspect marks unknown op", rc == 0 and "! FrobnicateV2" in out, out)
        expect_error("huge dims", 7, ["inspect", huge_dims_model(d)], "'w'")
        open(f"{d}/w.bin", "wb").write(np.array([1, 2], np.float32).tobytes())
        check("external ok", run("inspect", external_model(d, "w.bin"))[0] == 0)
        expect_error("external absolute", 4, ["inspect", external_model(d, "/etc/passwd")], "/etc/passwd")
        expect_error("external escape", 4, ["inspect", external_model(d, "../w.bin")], "../w.bin")
        expect_error("external missing", 3, ["inspect", external_model(d, "missing.bin")], "missing.bin")
        os.symlink("/etc/hostname", f"{d}/link.bin")
        expect_error("external symlink escape", 4, ["inspect", external_model(d, "link.bin")], "link.bin")

        # bad inputs
        expect_error("missing input", 2, ["run", mul, "--input", f"a={a2}"], "missing input 'b'")
        expect_error("unknown input", 2, ["run", add, "--input", f"z={x}"], "'z'")
        expect_error("wrong dtype", 2, ["run", add, "--input", f"x={xi}"], "'x'", "float32[batch,3]", "int64[2,3]")
        expect_error("wrong shape", 2, ["run", add, "--input", f"x={x4}"], "float32[batch,3]", "float32[2,4]")
        expect_error("symbol mismatch", 2, ["run", mul, "--input", f"a={a2}", "--input", f"b={a3}"], "'n'")
        expect_error("npy missing", 3, ["run", add, "--input", f"x={d}/none.npy"], "none.npy")
        bad_npy = f"{d}/bad.npy"
        open(bad_npy, "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
        expect_error("npy malformed", 4, ["run", add, "--input", f"x={bad_npy}"], "bad.npy")
        short_npy = f"{d}/short.npy"
        raw = open(x, "rb").read()
        open(short_npy, "wb").write(raw[:-4])
        expect_error("npy short data", 4, ["run", add, "--input", f"x={short_npy}"], "short.npy")
        rc, _, err = run("run", add, "--input", f"x={x}", "--output-dir", "/proc/precis_nope")
        check("unwritable output dir", rc == 3 and len(err.strip().splitlines()) == 1, err)

        profile_checks(d, add, mul)
        svg_checks(d)
        fixed_batch_checks(d)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
