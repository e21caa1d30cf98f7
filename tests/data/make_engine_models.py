"""Writes the small models tests/unit/test_engine.c builds engines from
(committed; rerun to regenerate): random weights, seeded.

  small_cnn.onnx   Conv-BN-Relu, a residual block (Conv-BN-Add-Relu), depthwise
                   Conv + Clip (Relu6), MaxPool, Concat, Resize, GlobalAveragePool,
                   Flatten, Gemm, Softmax; input [batch, 3, 16, 16].
  small_mlp.onnx   MatMul+Add+GELU (erf form), LayerNorm (decomposed), residual
                   Add, Softmax over the last axis; input [batch, seq, 32].
  odd_cnn.onnx     what INT8 lowering must survive: a 3x3 Conv whose channel 3
                   holds denormal weights (a dead channel, as BatchNorm folding
                   leaves them) with a real bias, Relu, Reshape to 1-D and a
                   Conv1d (no int8 CPU kernel: it goes back to float);
                   input [batch, 4, 8, 8].
  se_cnn.onnx      the elementwise/pooling INT8 lowering (QBinary, QPool): a
                   PP-LCNet squeeze-excitation (GlobalAveragePool, 1x1 convs,
                   HardSigmoid, Mul by the per-channel gate, residual Add), an
                   FPN-style Add of a nearest Resize with Relu after it, a Sub of
                   a per-channel constant, a 3x3 AveragePool; input
                   [batch, 8, 12, 12].
  batch_softmax.onnx  MatMul then a Softmax over axis 0, the batch: a model whose
                   samples are not independent (batch splitting must refuse it);
                   input [batch, 8].
  batch_transpose.onnx  Transpose moving the batch to axis 1, a Softmax over
                   axis 1 (over the batch: not splittable), Transpose back;
                   input [batch, 4, 6].
  batch_move.onnx  Transpose moving the batch to axis 1, Softmax over the last
                   axis, Transpose back (splittable: the batch axis is tracked);
                   input [batch, 4, 6].
  batch_reshape.onnx  Reshape to [batch, 24] through Shape/Slice/Concat (folded
                   to a constant holding the batch when built for fixed shapes),
                   Relu; input [batch, 4, 6].
  outlier_mlp.onnx  a transformer FFN with BERT-like outlier channels: LayerNormalization
                   (opset 17) whose gamma is 25x on 2 of 32 channels, MatMul+Add+GELU
                   (erf form), MatMul+Add, residual Add of the LayerNorm output
                   (int8 smoothing, quantize.h); input [batch, seq, 32].
  batch_count.onnx  adds the batch size (Shape, Gather, Cast) to every element: a
                   value computed from the batch used as data (not splittable);
                   input [batch, 4, 6].
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def cnn():
    rng = np.random.default_rng(1)
    inits, nodes = [], []

    def c(a, n):
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    def conv(x, y, cin, cout, k, group=1, stride=1):
        nodes.append(helper.make_node("Conv", [x, c(rng.standard_normal((cout, cin // group, k, k)) * 0.3, y + "_w"),
                                              c(rng.standard_normal(cout) * 0.1, y + "_b")], [y], name=y,
                                      kernel_shape=[k, k], pads=[k // 2] * 4, group=group, strides=[stride] * 2))

    def bn(x, y, ch):
        nodes.append(helper.make_node("BatchNormalization", [x, c(1 + 0.1 * rng.standard_normal(ch), y + "_g"),
                                      c(0.1 * rng.standard_normal(ch), y + "_b"), c(0.1 * rng.standard_normal(ch), y + "_m"),
                                      c(1 + rng.random(ch), y + "_v")], [y], name=y))

    conv("input", "conv1", 3, 16, 3)
    bn("conv1", "bn1", 16)
    nodes.append(helper.make_node("Relu", ["bn1"], ["relu1"], name="relu1"))
    conv("relu1", "conv2", 16, 16, 3)
    bn("conv2", "bn2", 16)
    nodes.append(helper.make_node("Add", ["bn2", "relu1"], ["add1"], name="add1"))
    nodes.append(helper.make_node("Relu", ["add1"], ["relu2"], name="relu2"))
    conv("relu2", "dw", 16, 16, 3, group=16)
    nodes.append(helper.make_node("Clip", ["dw", c(0, "zero"), c(6, "six")], ["relu6"], name="relu6"))
    nodes.append(helper.make_node("MaxPool", ["relu6"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    conv("pool", "conv3", 16, 8, 1)
    nodes.append(helper.make_node("Resize", ["conv3", "", c([1, 1, 2, 2], "scales")], ["up"], name="up", mode="nearest"))
    nodes.append(helper.make_node("Concat", ["up", "relu2"], ["cat"], name="cat", axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    nodes.append(helper.make_node("Gemm", ["flat", c(rng.standard_normal((10, 24)) * 0.3, "fc_w"), c(rng.standard_normal(10) * 0.1, "fc_b")],
                                  ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=-1))
    g = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 16, 16])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 10]),
                           helper.make_tensor_value_info("relu2", TensorProto.FLOAT, ["batch", 16, 16, 16])], inits)
    return g


def mlp():
    rng = np.random.default_rng(2)
    inits, nodes = [], []

    def c(a, n):
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    D = 32
    nodes.append(helper.make_node("MatMul", ["x", c(rng.standard_normal((D, 64)) * 0.2, "w1")], ["mm1"], name="mm1"))
    nodes.append(helper.make_node("Add", ["mm1", c(rng.standard_normal(64) * 0.1, "b1")], ["h1"], name="bias1"))
    nodes.append(helper.make_node("Div", ["h1", c(np.sqrt(2.0), "sqrt2")], ["g_div"], name="gelu_div"))
    nodes.append(helper.make_node("Erf", ["g_div"], ["g_erf"], name="gelu_erf"))
    nodes.append(helper.make_node("Add", ["g_erf", c(1.0, "one")], ["g_add"], name="gelu_add"))
    nodes.append(helper.make_node("Mul", ["h1", "g_add"], ["g_mul"], name="gelu_mul"))
    nodes.append(helper.make_node("Mul", ["g_mul", c(0.5, "half")], ["gelu"], name="gelu_half"))
    nodes.append(helper.make_node("MatMul", ["gelu", c(rng.standard_normal((64, D)) * 0.2, "w2")], ["mm2"], name="mm2"))
    nodes.append(helper.make_node("Add", ["mm2", c(rng.standard_normal(D) * 0.1, "b2")], ["h2"], name="bias2"))
    nodes.append(helper.make_node("Add", ["h2", "x"], ["res"], name="residual"))
    nodes.append(helper.make_node("ReduceMean", ["res"], ["mu"], name="ln_mean", axes=[-1]))
    nodes.append(helper.make_node("Sub", ["res", "mu"], ["xc"], name="ln_sub"))
    nodes.append(helper.make_node("Pow", ["xc", c(2.0, "two")], ["sq"], name="ln_pow"))
    nodes.append(helper.make_node("ReduceMean", ["sq"], ["var"], name="ln_var", axes=[-1]))
    nodes.append(helper.make_node("Add", ["var", c(1e-5, "eps")], ["ve"], name="ln_eps"))
    nodes.append(helper.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"))
    nodes.append(helper.make_node("Div", ["xc", "sd"], ["xn"], name="ln_div"))
    nodes.append(helper.make_node("Mul", ["xn", c(1 + 0.1 * rng.standard_normal(D), "gamma")], ["xg"], name="ln_scale"))
    nodes.append(helper.make_node("Add", ["xg", c(0.1 * rng.standard_normal(D), "beta")], ["ln"], name="ln_shift"))
    nodes.append(helper.make_node("Softmax", ["ln"], ["y"], name="softmax", axis=-1))
    g = helper.make_graph(nodes, "small_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", D])], inits)
    return g


def odd_cnn():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 4, 3, 3)) * 0.3
    w[3] = rng.standard_normal((4, 3, 3)) * 1e-39
    b = rng.standard_normal(8) * 0.1
    b[3] = 0.7
    inits = [numpy_helper.from_array(np.asarray(a, np.float32), n) for a, n in
             [(w, "c2_w"), (b, "c2_b"), (rng.standard_normal((4, 8, 3)) * 0.3, "c1_w"),
              (rng.standard_normal(4) * 0.1, "c1_b")]]
    inits.append(numpy_helper.from_array(np.array([0, 8, 64], np.int64), "shape1d"))
    nodes = [helper.make_node("Conv", ["x", "c2_w", "c2_b"], ["c2"], name="conv2d", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["c2"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape1d"], ["r1"], name="to1d"),
             helper.make_node("Conv", ["r1", "c1_w", "c1_b"], ["y"], name="conv1d", kernel_shape=[3], pads=[1, 1])]
    return helper.make_graph(nodes, "odd_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8, 8])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 64]),
                              helper.make_tensor_value_info("r", TensorProto.FLOAT, ["batch", 8, 8, 8])], inits)


def se_cnn():
    rng = np.random.default_rng(4)
    inits, nodes = [], []

    def c(a, n):
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    def conv(x, y, cin, cout, k):
        nodes.append(helper.make_node("Conv", [x, c(rng.standard_normal((cout, cin, k, k)) * 0.4, y + "_w"),
                                              c(rng.standard_normal(cout) * 0.1, y + "_b")], [y], name=y,
                                      kernel_shape=[k, k], pads=[k // 2] * 4))

    conv("input", "c1", 8, 16, 3)
    nodes.append(helper.make_node("Relu", ["c1"], ["x"], name="relu1"))
    nodes.append(helper.make_node("GlobalAveragePool", ["x"], ["gap"], name="gap"))
    conv("gap", "se1", 16, 4, 1)
    nodes.append(helper.make_node("Relu", ["se1"], ["se1r"], name="se_relu"))
    conv("se1r", "se2", 4, 16, 1)
    nodes.append(helper.make_node("HardSigmoid", ["se2"], ["se"], name="se_gate", alpha=0.2, beta=0.5))
    nodes.append(helper.make_node("Mul", ["x", "se"], ["m"], name="se_mul"))
    nodes.append(helper.make_node("Add", ["x", "m"], ["a"], name="rse_add"))
    nodes.append(helper.make_node("MaxPool", ["a"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    conv("p", "lat", 16, 16, 1)
    nodes.append(helper.make_node("Resize", ["lat", "", c([1, 1, 2, 2], "scales")], ["up"], name="up", mode="nearest"))
    nodes.append(helper.make_node("Add", ["up", "a"], ["f0"], name="fpn_add"))
    nodes.append(helper.make_node("Relu", ["f0"], ["f"], name="fpn_relu"))
    nodes.append(helper.make_node("Sub", ["f", c(rng.random((16, 1, 1)), "shift")], ["s"], name="shift"))
    nodes.append(helper.make_node("AveragePool", ["s"], ["v"], name="avg", kernel_shape=[3, 3], pads=[1] * 4))
    conv("v", "y", 16, 4, 1)
    return helper.make_graph(nodes, "se_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 8, 12, 12])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 12, 12])], inits)


def batch_softmax():
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Softmax", ["h"], ["y"], name="softmax_batch", axis=0)]
    return helper.make_graph(nodes, "batch_softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w])


def batch_transpose(axis=1, name="batch_transpose"):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="t1", perm=[1, 0, 2]),
             helper.make_node("Softmax", ["t"], ["r"], name="softmax", axis=axis),
             helper.make_node("Transpose", ["r"], ["y"], name="t2", perm=[1, 0, 2])]
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 6])], [])


def batch_reshape():
    i64 = lambda a, n: numpy_helper.from_array(np.asarray(a, np.int64), n)
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Slice", ["s", "z", "o"], ["b"], name="batch"),
             helper.make_node("Concat", ["b", "f"], ["ns"], name="newshape", axis=0),
             helper.make_node("Reshape", ["x", "ns"], ["r"], name="reshape"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    return helper.make_graph(nodes, "batch_reshape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 24])],
                             [i64([0], "z"), i64([1], "o"), i64([24], "f")])


def batch_count():
    i64 = lambda a, n: numpy_helper.from_array(np.asarray(a, np.int64), n)
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
             helper.make_node("Cast", ["b"], ["bf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "bf"], ["y"], name="add_batch")]
    return helper.make_graph(nodes, "batch_count", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 6])], [i64(0, "zero")])


def outlier_mlp():
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def c(a, n):
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    D, H = 32, 64
    gamma = 1 + 0.1 * rng.standard_normal(D)
    gamma[[3, 17]] = 25.0
    nodes.append(helper.make_node("LayerNormalization", ["x", c(gamma, "gamma"), c(0.1 * rng.standard_normal(D), "beta")],
                                  ["ln"], name="ln", axis=-1, epsilon=1e-5))
    nodes.append(helper.make_node("MatMul", ["ln", c(rng.standard_normal((D, H)) * 0.2, "w1")], ["mm1"], name="mm1"))
    nodes.append(helper.make_node("Add", ["mm1", c(rng.standard_normal(H) * 0.1, "b1")], ["h1"], name="bias1"))
    nodes.append(helper.make_node("Div", ["h1", c(np.sqrt(2.0), "sqrt2")], ["g_div"], name="gelu_div"))
    nodes.append(helper.make_node("Erf", ["g_div"], ["g_erf"], name="gelu_erf"))
    nodes.append(helper.make_node("Add", ["g_erf", c(1.0, "one")], ["g_add"], name="gelu_add"))
    nodes.append(helper.make_node("Mul", ["h1", "g_add"], ["g_mul"], name="gelu_mul"))
    nodes.append(helper.make_node("Mul", ["g_mul", c(0.5, "half")], ["gelu"], name="gelu_half"))
    nodes.append(helper.make_node("MatMul", ["gelu", c(rng.standard_normal((H, D)) * 0.2, "w2")], ["mm2"], name="mm2"))
    nodes.append(helper.make_node("Add", ["mm2", c(rng.standard_normal(D) * 0.1, "b2")], ["h2"], name="bias2"))
    nodes.append(helper.make_node("Add", ["h2", "ln"], ["y"], name="residual"))
    return helper.make_graph(nodes, "outlier_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", D])], inits)


for name, g, opset in [("outlier_mlp", outlier_mlp(), 17), ("small_cnn", cnn(), 13), ("small_mlp", mlp(), 13), ("odd_cnn", odd_cnn(), 13),
                       ("se_cnn", se_cnn(), 13), ("batch_softmax", batch_softmax(), 13),
                       ("batch_transpose", batch_transpose(), 13), ("batch_reshape", batch_reshape(), 13),
                       ("batch_count", batch_count(), 13), ("batch_move", batch_transpose(-1, "batch_move"), 13)]:
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="precis tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))
    print("wrote", name)
