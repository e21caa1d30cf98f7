#!/usr/bin/env python3
"""Static shape and type inference with symbolic dims, seen through
`precis inspect --json` on models whose outputs declare no shape or type.

usage: test_shapes.py PATH/TO/precis
"""
import json
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from clicheck import PRECIS, check, finish

F = TensorProto.FLOAT


def model(d, name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info(o, 0, None) for o in outputs],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = f"{d}/{name}.onnx"
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def inferred(path):
    p = subprocess.run([PRECIS, "inspect", path, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr}
    return {o["name"]: (o["dtype"], o["shape"]) for o in json.loads(p.stdout)["outputs"]}


def expect(d, name, want, *args, **kw):
    got = inferred(model(d, name, *args, **kw))
    check(name, got == want, f"got {got}, want {want}")


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def main():
    vi = helper.make_tensor_value_info
    with tempfile.TemporaryDirectory() as d:
        x = vi("x", F, ["batch", 3, 32, 32])
        w = init("w", np.zeros((8, 3, 3, 3), np.float32))
        expect(d, "conv", {"y": ("float32", ["batch", 8, 16, 16]), "z": ("float32", ["batch", 8, 1, 1])},
               [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                helper.make_node("Relu", ["c"], ["y"]),
                helper.make_node("GlobalAveragePool", ["y"], ["z"])], [x], ["y", "z"], [w])

        s = vi("s", F, ["batch", "seq", 64])
        expect(d, "matmul_softmax",
               {"y": ("float32", ["batch", "seq", 32]), "p": ("float32", ["batch", "seq", "seq"]),
                "t": ("float32", ["seq", "batch", 32])},
               [helper.make_node("MatMul", ["s", "w2"], ["y"]),
                helper.make_node("Transpose", ["s"], ["st"], perm=[0, 2, 1]),
                helper.make_node("MatMul", ["s", "st"], ["a"]),
                helper.make_node("Softmax", ["a"], ["p"], axis=-1),
                helper.make_node("Transpose", ["y"], ["t"], perm=[1, 0, 2])],
               [s], ["y", "p", "t"], [init("w2", np.zeros((64, 32), np.float32))])

        expect(d, "layernorm_concat",
               {"n": ("float32", ["batch", "seq", 64]), "c": ("float32", ["batch", "seq", 128]),
                "i": ("int64", ["batch", "seq"])},
               [helper.make_node("LayerNormalization", ["s", "g", "b"], ["n"], axis=-1),
                helper.make_node("Concat", ["s", "n"], ["c"], axis=2),
                helper.make_node("ArgMax", ["c"], ["i"], axis=-1, keepdims=0)],
               [s], ["n", "c", "i"], [init("g", np.ones(64, np.float32)), init("b", np.zeros(64, np.float32))],
               opset=17)

        # a shape computed inside the graph from constants is folded and becomes known
        expect(d, "folded_reshape", {"r": ("float32", [2, 12])},
               [helper.make_node("Shape", ["k"], ["ks"]),
                helper.make_node("Gather", ["ks", "i0"], ["k0"], axis=0),
                helper.make_node("Unsqueeze", ["k0", "ax"], ["k0u"]),
                helper.make_node("Concat", ["k0u", "m1"], ["shape"], axis=0),
                helper.make_node("Reshape", ["q", "shape"], ["r"])],
               [vi("q", F, [2, 3, 4])], ["r"],
               [init("k", np.zeros((2, 5), np.float32)), init("i0", np.array(0, np.int64)),
                init("ax", np.array([0], np.int64)), init("m1", np.array([-1], np.int64))])

        # a reshape whose target is computed from symbolic dims keeps them
        expect(d, "symbolic_reshape", {"r": ("float32", ["batch", "seq", 4, 16])},
               [helper.make_node("Shape", ["s"], ["ss"]),
                helper.make_node("Slice", ["ss", "st0", "st2"], ["bs"]),
                helper.make_node("Concat", ["bs", "hd"], ["shape"], axis=0),
                helper.make_node("Reshape", ["s", "shape"], ["r"])],
               [s], ["r"],
               [init("st0", np.array([0], np.int64)), init("st2", np.array([2], np.int64)),
                init("hd", np.array([4, 16], np.int64))])

        # the BERT export pattern: per-dim Gather + Unsqueeze + Concat, then
        # ConstantOfShape/Expand from a computed shape
        h = vi("h", F, ["batch", "seq", 768])
        expect(d, "bert_heads",
               {"t": ("float32", ["batch", 12, "seq", 64]), "z": ("float32", ["batch", "seq", 768]),
                "e": ("float32", ["batch", "seq", 768])},
               [helper.make_node("Shape", ["h"], ["hs"]),
                helper.make_node("Gather", ["hs", "i0"], ["b"], axis=0),
                helper.make_node("Gather", ["hs", "i1"], ["l"], axis=0),
                helper.make_node("Unsqueeze", ["b", "ax"], ["bu"]),
                helper.make_node("Unsqueeze", ["l", "ax"], ["lu"]),
                helper.make_node("Concat", ["bu", "lu", "heads"], ["shape"], axis=0),
                helper.make_node("Reshape", ["h", "shape"], ["r"]),
                helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
                helper.make_node("ConstantOfShape", ["hs"], ["z"],
                                 value=helper.make_tensor("v", F, [1], [0.0])),
                helper.make_node("Expand", ["one", "hs"], ["e"])],
               [h], ["t", "z", "e"],
               [init("i0", np.array(0, np.int64)), init("i1", np.array(1, np.int64)),
                init("ax", np.array([0], np.int64)), init("heads", np.array([12, 64], np.int64)),
                init("one", np.ones((1, 1, 1), np.float32))])

        expect(d, "cast_where_broadcast",
               {"c": ("int64", ["batch", 3, 32, 32]), "w": ("float32", ["batch", 3, 32, 32])},
               [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT64),
                helper.make_node("Greater", ["x", "zero"], ["m"]),
                helper.make_node("Where", ["m", "x", "zero"], ["w"])],
               [x], ["c", "w"], [init("zero", np.zeros((1, 32), np.float32))])

        # an inconsistent model is refused at load time with the node named
        p = model(d, "bad_matmul", [helper.make_node("MatMul", ["s", "w3"], ["y"], name="mm")], [s], ["y"],
                  [init("w3", np.zeros((63, 8), np.float32))])
        r = subprocess.run([PRECIS, "inspect", p], capture_output=True, text=True)
        check("bad_matmul refused", r.returncode == 6 and "'mm'" in r.stderr, r.stderr)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
