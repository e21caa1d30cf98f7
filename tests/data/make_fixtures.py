#!/usr/bin/env python3
"""Generate the small ONNX / TensorProto / .npy fixtures used by
tests/unit/test_onnx_import.c and tests/unit/test_npy.c, plus the fuzz seed
corpora under tests/fuzz/corpus/.

    python3 tests/data/make_fixtures.py

Needs the `onnx` and `numpy` Python packages. Output is deterministic; the
generated files are committed (each a few hundred bytes)."""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus")

F = TensorProto.FLOAT


def save(model, name, check=True):
    if check:
        onnx.checker.check_model(model)
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def model(graph, opset=17, **kw):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    m.ir_version = kw.get("ir_version", 8)
    return m


def identity_graph(name, inits, extra_inputs=()):
    x = helper.make_tensor_value_info("X", F, [2])
    y = helper.make_tensor_value_info("Y", F, [2])
    node = helper.make_node("Identity", ["X"], ["Y"], name="id")
    return helper.make_graph([node], name, [x, *extra_inputs], [y], initializer=inits)


# Values per dtype, chosen so the C test can check them exactly.
DTYPE_VALUES = [
    ("f32", TensorProto.FLOAT, [1.5, -2.25, 3.0]),
    ("f64", TensorProto.DOUBLE, [1.5, -2.25, 1e300]),
    ("f16", TensorProto.FLOAT16, [1.5, -2.25, 65504.0]),
    ("bf16", TensorProto.BFLOAT16, [1.5, -2.25, 3.0]),
    ("i8", TensorProto.INT8, [-128, 0, 127]),
    ("u8", TensorProto.UINT8, [0, 200, 255]),
    ("i16", TensorProto.INT16, [-32768, 7, 32767]),
    ("u16", TensorProto.UINT16, [0, 40000, 65535]),
    ("i32", TensorProto.INT32, [-2147483648, 5, 2147483647]),
    ("u32", TensorProto.UINT32, [0, 3000000000, 4294967295]),
    ("i64", TensorProto.INT64, [-(2**63), 5, 2**63 - 1]),
    ("u64", TensorProto.UINT64, [0, 2**63, 2**64 - 1]),
    ("b", TensorProto.BOOL, [True, False, True]),
]


def typed_tensor(name, dt, vals, raw):
    if raw:
        np_dt = helper.tensor_dtype_to_np_dtype(dt)
        if dt == TensorProto.BFLOAT16:
            bits = [(np.array(v, np.float32).view(np.uint32) >> 16).item() for v in vals]
            t = TensorProto(name=name, data_type=dt, dims=[len(vals)])
            t.raw_data = np.array(bits, np.uint16).tobytes()
            return t
        return numpy_helper.from_array(np.array(vals, dtype=np_dt), name)
    return helper.make_tensor(name, dt, [len(vals)], vals, raw=False)


def tensor(name, arr, raw):
    if raw:
        return numpy_helper.from_array(arr, name)
    return helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape,
                              arr.flatten().tolist())


def make_inits():
    for raw, fname in ((False, "typed_init.onnx"), (True, "raw_init.onnx")):
        inits = [typed_tensor(f"w_{n}", dt, v, raw) for n, dt, v in DTYPE_VALUES]
        # a 2x3 tensor and a scalar and an empty one
        inits.append(tensor("w_2x3", np.arange(6, dtype=np.float32).reshape(2, 3), raw))
        inits.append(tensor("w_scalar", np.array(42, dtype=np.int64), raw))
        inits.append(tensor("w_empty", np.zeros((0, 3), np.float32), raw))
        save(model(identity_graph("inits", inits)), fname)


def make_constant():
    nodes = [
        helper.make_node("Constant", [], ["c_t"], name="const_tensor",
                         value=helper.make_tensor("v", F, [2], [1.0, 2.0])),
        helper.make_node("Constant", [], ["c_f"], value_float=0.5),  # unnamed
        helper.make_node("Constant", [], ["c_fs"], name="const_floats", value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["c_i"], name="const_int", value_int=-7),
        helper.make_node("Constant", [], ["c_is"], name="const_ints", value_ints=[4, 5]),
        helper.make_node("Add", ["X", "c_t"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "c_f"], ["Y"], name="mul"),
    ]
    g = helper.make_graph(nodes, "constants", [helper.make_tensor_value_info("X", F, [2])],
                          [helper.make_tensor_value_info("Y", F, [2]),
                           helper.make_tensor_value_info("c_fs", F, [3]),
                           helper.make_tensor_value_info("c_i", TensorProto.INT64, []),
                           helper.make_tensor_value_info("c_is", TensorProto.INT64, [2])])
    save(model(g), "constant.onnx")

    for attr, kw in (("value_string", dict(value_string="hi")),
                     ("value_strings", dict(value_strings=["a", "b"]))):
        node = helper.make_node("Constant", [], ["Y"], name="const_str", **kw)
        g = helper.make_graph([node], "c", [],
                              [helper.make_tensor_value_info("Y", TensorProto.STRING, None)])
        save(model(g), f"constant_{attr}.onnx", check=False)


def make_external():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    with open(os.path.join(OUT, "ext_weights.bin"), "wb") as f:
        f.write(b"\0" * 16)  # offset 16
        f.write(w.tobytes())

    def ext_model(name, location, offset=16, length=24):
        t = TensorProto(name="W", data_type=F, dims=[2, 3])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, str(v)
        x = helper.make_tensor_value_info("X", F, [2, 3])
        y = helper.make_tensor_value_info("Y", F, [2, 3])
        g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], "ext",
                              [x], [y], initializer=[t])
        save(model(g), name, check=False)

    ext_model("ext_good.onnx", "ext_weights.bin")
    ext_model("ext_abs.onnx", "/etc/hostname")
    ext_model("ext_dotdot.onnx", "../fixtures/ext_weights.bin")
    ext_model("ext_missing.onnx", "no_such_weights.bin")
    ext_model("ext_short.onnx", "ext_weights.bin", offset=32)
    ext_model("ext_badlen.onnx", "ext_weights.bin", length=20)
    ext_model("ext_link.onnx", "link_weights.bin")  # the test makes the symlink


def make_symbolic():
    x = helper.make_tensor_value_info("X", F, ["batch", 3, None, "batch"])
    x.type.tensor_type.shape.dim[2].Clear()  # neither dim_value nor dim_param
    z = helper.make_tensor_value_info("Z", TensorProto.INT64, None)  # no shape: rank -1
    y = helper.make_tensor_value_info("Y", F, ["batch", "seq"])
    vi = helper.make_tensor_value_info("t", F, [7])
    nodes = [helper.make_node("Relu", ["X"], ["t"]), helper.make_node("Relu", ["t"], ["Y"]),
             helper.make_node("Identity", ["Z"], ["Z2"])]
    g = helper.make_graph(nodes, "sym", [x, z], [y, helper.make_tensor_value_info("Z2", TensorProto.INT64, [])],
                          value_info=[vi])
    save(model(g), "symbolic.onnx", check=False)


def make_init_as_input():
    w = helper.make_tensor("W", F, [2], [1.0, 2.0])
    g = identity_graph("iai", [w], extra_inputs=[helper.make_tensor_value_info("W", F, [2])])
    g.node.append(helper.make_node("Add", ["X", "W"], ["Y2"], name="add"))
    g.output.append(helper.make_tensor_value_info("Y2", F, [2]))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3
    save(m, "init_as_input.onnx")


def make_metadata():
    m = model(identity_graph("meta_graph", []), producer_name="precis-fixtures",
              producer_version="1.2.3", domain="org.precis.test", model_version=42,
              doc_string="a model with metadata")
    m.opset_import.append(helper.make_opsetid("com.example", 3))
    helper.set_model_props(m, {"author": "precis", "license": "MIT"})
    save(m, "metadata.onnx")


def make_attrs():
    sub_then = helper.make_graph([helper.make_node("Add", ["X", "outer"], ["t_out"], name="then_add")],
                                 "then_branch", [], [helper.make_tensor_value_info("t_out", F, [2])])
    sub_else = helper.make_graph([helper.make_node("Sub", ["X", "outer"], ["e_out"], name="else_sub")],
                                 "else_branch", [], [helper.make_tensor_value_info("e_out", F, [2])])
    g1 = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "g1",
                           [helper.make_tensor_value_info("a", F, [1])],
                           [helper.make_tensor_value_info("b", F, [1])])
    g2 = helper.make_graph([helper.make_node("Abs", ["a"], ["b"])], "g2",
                           [helper.make_tensor_value_info("a", F, [1])],
                           [helper.make_tensor_value_info("b", F, [1])])
    sp = helper.make_sparse_tensor(helper.make_tensor("v", F, [1], [5.0]),
                                   helper.make_tensor("i", TensorProto.INT64, [1], [1]), [3])
    tp = helper.make_tensor_type_proto(F, [2])
    all_kinds = helper.make_node(
        "Everything", ["X"], ["E"], name="all_kinds", domain="com.example",
        a_float=1.25, a_int=-3, a_string="hello", a_tensor=helper.make_tensor("t", TensorProto.INT32, [2], [7, 8]),
        a_graph=g1, a_floats=[0.5, 1.5], a_ints=[1, 2, 3], a_strings=["x", "yz"],
        a_tensors=[helper.make_tensor("t0", F, [1], [1.0]), helper.make_tensor("t1", TensorProto.INT64, [2], [3, 4])],
        a_graphs=[g1, g2])
    all_kinds.attribute.append(helper.make_attribute("a_sparse", sp))
    all_kinds.attribute.append(helper.make_attribute("a_sparses", [sp]))
    all_kinds.attribute.append(helper.make_attribute("a_tp", tp))
    all_kinds.attribute.append(helper.make_attribute("a_tps", [tp, tp]))
    nodes = [
        helper.make_node("Relu", ["X"], ["outer"], name="outer_relu"),
        helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=sub_then, else_branch=sub_else),
        all_kinds,
        helper.make_node("Gemm", ["X2", "X2"], ["G"], alpha=2.0, transB=1),  # unnamed: Gemm_3
    ]
    g = helper.make_graph(nodes, "attrs",
                          [helper.make_tensor_value_info("X", F, [2]),
                           helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("X2", F, [2, 2])],
                          [helper.make_tensor_value_info("Y", F, [2]),
                           helper.make_tensor_value_info("E", F, None),
                           helper.make_tensor_value_info("G", F, [2, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.example", 3)])
    m.ir_version = 8
    save(m, "attrs.onnx", check=False)


def make_graph_errors():
    x = helper.make_tensor_value_info("X", F, [2])
    y = helper.make_tensor_value_info("Y", F, [2])

    def g(nodes, outputs=(y,), inits=()):
        return helper.make_graph(nodes, "bad", [x], list(outputs), initializer=list(inits))

    # unsorted but valid: B is consumed before it is produced
    save(model(g([helper.make_node("Relu", ["B"], ["Y"], name="second"),
                  helper.make_node("Neg", ["X"], ["B"], name="first")])), "unsorted.onnx", check=False)
    save(model(g([helper.make_node("Add", ["X", "C"], ["B"], name="n1"),
                  helper.make_node("Relu", ["B"], ["C"], name="n2"),
                  helper.make_node("Relu", ["B"], ["Y"], name="n3")])), "cycle.onnx", check=False)
    save(model(g([helper.make_node("Relu", ["X"], ["Y"], name="a"),
                  helper.make_node("Neg", ["X"], ["Y"], name="b")])), "dup_producer.onnx", check=False)
    save(model(g([helper.make_node("Add", ["X", "nowhere"], ["Y"], name="add")])),
         "undefined_input.onnx", check=False)
    save(model(g([helper.make_node("Relu", ["X"], ["Z"], name="r")])), "unproduced_output.onnx",
         check=False)
    save(model(g([helper.make_node("FancyOp", ["X"], ["Y"], name="fancy", domain="com.vendor")])),
         "unknown_op.onnx", check=False)
    save(model(g([helper.make_node("Relu", ["X", ""], ["Y", ""], name="opt")])), "optional_io.onnx",
         check=False)
    # subgraphs: an undefined name inside a branch; an outer-scope value
    # produced later in the file (only the subgraph refers to it), nested twice
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])

    def branch(name, src, dst):
        return helper.make_graph([helper.make_node("Identity", [src], [dst], name=name + "_id")],
                                 name, [], [helper.make_tensor_value_info(dst, F, [2])])
    iff = helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=branch("then", "ghost", "a"),
                           else_branch=branch("else", "X", "b"))
    save(model(helper.make_graph([iff], "g", [x, cond], [y])), "subgraph_undefined.onnx", check=False)
    inner = helper.make_node("If", ["cond"], ["c"], name="inner_if",
                             then_branch=branch("then2", "late", "d"), else_branch=branch("else2", "X", "e"))
    outer_then = helper.make_graph([inner], "then", [], [helper.make_tensor_value_info("c", F, [2])])
    iff = helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=outer_then,
                           else_branch=branch("else", "X", "b"))
    save(model(helper.make_graph([iff, helper.make_node("Neg", ["X"], ["late"], name="late_neg")],
                                 "g", [x, cond], [y])), "unsorted_subgraph.onnx", check=False)

    m = helper.make_model(helper.make_graph([], "x", [], []))
    m.ClearField("graph")
    save(m, "no_graph.onnx", check=False)
    # declared dims whose product overflows int64, and dims far over the limit
    for name, dims in (("dims_overflow.onnx", [2**40, 2**40, 2**40]), ("dims_huge.onnx", [2**20, 2**20, 64])):
        t = TensorProto(name="W", data_type=F, dims=dims)
        save(model(g([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], inits=[t])), name,
             check=False)
    t = TensorProto(name="W", data_type=F, dims=[3], float_data=[1.0, 2.0])  # 2 values for 3
    save(model(g([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], inits=[t])),
         "short_typed.onnx", check=False)
    t = TensorProto(name="W", data_type=F, dims=[3], raw_data=b"\0" * 11)
    save(model(g([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], inits=[t])),
         "short_raw.onnx", check=False)
    # rank 9 graph input, sequence graph input
    big = helper.make_tensor_value_info("X", F, [1] * 9)
    save(model(helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "r9", [big], [y])),
         "rank9_input.onnx", check=False)
    seq = helper.make_tensor_sequence_value_info("X", F, [2])
    save(model(helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "seq", [seq], [y])),
         "sequence_input.onnx", check=False)


def make_tensor_files():
    for name, arr in (("tensor_f32.pb", np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5),
                      ("tensor_i64.pb", np.array([[-1, 2**40]], dtype=np.int64)),
                      ("tensor_bool.pb", np.array([True, False, True])),
                      ("tensor_f16.pb", np.array([0.5, -1, 65504], dtype=np.float16)),
                      ("tensor_scalar.pb", np.array(3.25, dtype=np.float64))):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(numpy_helper.from_array(arr, "x").SerializeToString())
    t = helper.make_tensor("y", TensorProto.INT8, [2, 2], [-1, 2, -3, 4], raw=False)
    with open(os.path.join(OUT, "tensor_i8_typed.pb"), "wb") as f:
        f.write(t.SerializeToString())


def make_npy():
    arrs = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "i64": np.array([-5, 2**40], dtype=np.int64),
        "bool": np.array([[True], [False]]),
        "scalar": np.array(1.5, dtype=np.float64),
        "u8_empty": np.zeros((0, 4), dtype=np.uint8),
    }
    for k, a in arrs.items():
        np.save(os.path.join(OUT, f"np_{k}.npy"), a)
    for ver in ((2, 0), (3, 0)):
        with open(os.path.join(OUT, f"np_v{ver[0]}.npy"), "wb") as f:
            np.lib.format.write_array(f, np.array([1, 2, 3], dtype="<i2"), version=ver)
    np.save(os.path.join(OUT, "np_bigendian.npy"), np.array([1, 2], dtype=">i4"))
    np.save(os.path.join(OUT, "np_fortran.npy"), np.asfortranarray(np.ones((2, 3), np.float32)))


def make_corpus():
    for sub in ("onnx", "npy"):
        d = os.path.join(CORPUS, sub)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for f in sorted(os.listdir(OUT)):
        src = os.path.join(OUT, f)
        if f.endswith(".onnx") and os.path.getsize(src) < 4096:
            shutil.copy(src, os.path.join(CORPUS, "onnx", f))
        elif f.endswith(".pb"):
            shutil.copy(src, os.path.join(CORPUS, "onnx", f))
        elif f.endswith(".npy"):
            shutil.copy(src, os.path.join(CORPUS, "npy", f))


def main():
    os.makedirs(OUT, exist_ok=True)
    make_inits()
    make_constant()
    make_external()
    make_symbolic()
    make_init_as_input()
    make_metadata()
    make_attrs()
    make_graph_errors()
    make_tensor_files()
    make_npy()
    make_corpus()


if __name__ == "__main__":
    main()
