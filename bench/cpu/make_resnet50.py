"""Writes a ResNet-50-shaped ONNX model with random weights (for speed only):
the torchvision ResNet-50 v1.5 layer structure (Conv-BN-ReLU, bottleneck blocks
[3, 4, 6, 3], stride on the 3x3 conv, projection shortcuts), opset 13, dynamic
batch. Deterministic (seeded).

    python3 bench/cpu/make_resnet50.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(50)
nodes, inits = [], []
count = [0]


def name(p):
    count[0] += 1
    return f"{p}_{count[0]}"


def const(arr, p):
    n = name(p)
    inits.append(numpy_helper.from_array(arr.astype(np.float32), n))
    return n


def conv_bn(x, cin, cout, k, stride, relu):
    w = rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))
    y = name("conv")
    nodes.append(helper.make_node("Conv", [x, const(w, "w")], [y], name=y, kernel_shape=[k, k],
                                  strides=[stride, stride], pads=[k // 2] * 4))
    z = name("bn")
    nodes.append(helper.make_node(
        "BatchNormalization",
        [y, const(1 + 0.1 * rng.standard_normal(cout), "g"), const(0.1 * rng.standard_normal(cout), "b"),
         const(0.1 * rng.standard_normal(cout), "m"), const(1 + 0.1 * rng.random(cout), "v")],
        [z], name=z, epsilon=1e-5))
    if not relu:
        return z
    r = name("relu")
    nodes.append(helper.make_node("Relu", [z], [r], name=r))
    return r


def bottleneck(x, cin, width, stride):
    cout = width * 4
    y = conv_bn(x, cin, width, 1, 1, True)
    y = conv_bn(y, width, width, 3, stride, True)
    y = conv_bn(y, width, cout, 1, 1, False)
    sc = conv_bn(x, cin, cout, 1, stride, False) if (stride != 1 or cin != cout) else x
    a = name("add")
    nodes.append(helper.make_node("Add", [y, sc], [a], name=a))
    r = name("relu")
    nodes.append(helper.make_node("Relu", [a], [r], name=r))
    return r


def main(out):
    x = conv_bn("input", 3, 64, 7, 2, True)
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [p], name=p, kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            x = bottleneck(x, cin, width, stride if b == 0 else 1)
            cin = width * 4
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g], name=g))
    f = name("flatten")
    nodes.append(helper.make_node("Flatten", [g], [f], name=f, axis=1))
    w = rng.standard_normal((1000, 2048)) * 0.01
    nodes.append(helper.make_node("Gemm", [f, const(w, "fc_w"), const(np.zeros(1000), "fc_b")],
                                  ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "resnet50_random",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="precis bench/cpu/make_resnet50.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main(sys.argv[1])
