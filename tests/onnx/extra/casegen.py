"""Writes ONNX node-test cases in the backend-test layout that precis_conformance reads:

    OUT/test_NAME/model.onnx
    OUT/test_NAME/test_data_set_K/{input,output}_N.pb

Expected outputs are given by the caller (numpy) or, when omitted, computed
with onnx's reference evaluator.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def _tensor(v, name):
    if isinstance(v, TensorProto):
        t = TensorProto()
        t.CopyFrom(v)
        t.name = name
        return t
    return numpy_helper.from_array(np.asarray(v), name)


def _dtype(v):
    if isinstance(v, TensorProto):
        return v.data_type
    return helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype)


def _model(name, nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


class Writer:
    def __init__(self, out):
        self.out = out
        self.count = 0

    def write(self, name, model, data_sets):
        """data_sets: [(inputs, outputs)], values in graph input/output order."""
        d = os.path.join(self.out, "test_" + name)
        os.makedirs(d)  # fails on a duplicate name
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for k, (ins, outs) in enumerate(data_sets):
            ds = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(ds)
            for kind, vals, infos in (("input", ins, model.graph.input), ("output", outs, model.graph.output)):
                for j, (v, vi) in enumerate(zip(vals, infos)):
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(_tensor(v, vi.name).SerializeToString())
        self.count += 1
        return d

    def graph(self, name, nodes, feeds, out_names, outputs=None, opset=13, inits=(), dims=None,
              out_shapes=True):
        """A multi-node case. feeds: {name: array}; dims: {name: symbolic shape} overrides."""
        dims = dims or {}
        gin = [helper.make_tensor_value_info(n, _dtype(v), dims.get(n, np.shape(v))) for n, v in feeds.items()]
        if outputs is None:
            undef = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in out_names]
            outputs = ReferenceEvaluator(_model(name, nodes, gin, undef, list(inits), opset)).run(None, feeds)
        shape = lambda e: np.shape(e) if out_shapes and not dims else None
        gout = [helper.make_tensor_value_info(o, _dtype(e), shape(e)) for o, e in zip(out_names, outputs)]
        m = _model(name, nodes, gin, gout, list(inits), opset)
        return self.write(name, m, [(list(feeds.values()), outputs)]), feeds

    def case(self, name, op, inputs, outputs=None, attrs=None, opset=13, n_out=1, out_shapes=True):
        """A one-node case. inputs: arrays, None for an omitted optional input."""
        in_names = [f"x{i}" if v is not None else "" for i, v in enumerate(inputs)]
        feeds = {n: v for n, v in zip(in_names, inputs) if n}
        out_names = [f"y{j}" for j in range(len(outputs) if outputs is not None else n_out)]
        node = helper.make_node(op, in_names, out_names, **(attrs or {}))
        return self.graph(name, [node], feeds, out_names, outputs, opset, out_shapes=out_shapes)
