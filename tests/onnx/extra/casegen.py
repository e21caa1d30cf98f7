"""Writes ONNX node-test cases in the backend-test layout that precis_conformance reads:

    OUT/test_NAME/model.onnx
    OUT/test_NAME/test_data_set_K/{input,output}_N.pb

Expected outputs are given by the caller (numpy) or, when omitted, computed by an
oracle: onnx's reference evaluator, or with oracle=ORT onnxruntime where it runs the
model (see expected()).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

ORT = ("ort", "ref")  # oracle order: onnxruntime, else onnx's reference evaluator
_WIDE = {TensorProto.FLOAT16: TensorProto.FLOAT, TensorProto.BFLOAT16: TensorProto.FLOAT}


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


def _run(source, model, feeds):
    if source == "ref":
        return ReferenceEvaluator(model).run(None, feeds)
    import onnxruntime as ort
    # onnxruntime refuses UNDEFINED output types: take onnx shape inference's, or where it
    # gives up (Einsum broadcasting ellipses of different ranks) guess the first input's;
    # a wrong guess fails the run
    known = {o.name: o.type.tensor_type.elem_type for o in shape_inference.infer_shapes(model).graph.output}
    first = model.graph.input[0].type.tensor_type.elem_type
    model2 = onnx.ModelProto()
    model2.CopyFrom(model)
    for o in model2.graph.output:
        o.type.tensor_type.elem_type = o.type.tensor_type.elem_type or known.get(o.name, 0) or first
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = so.inter_op_num_threads = 1  # same summation order every run
    so.log_severity_level = 4
    sess = ort.InferenceSession(model2.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def expected(model, feeds, oracle):
    """Outputs of `model` (outputs may be UNDEFINED-typed) from the first source of `oracle`
    that runs it: "ort" (onnxruntime, graph optimizations off), "ref" (onnx's reference
    evaluator) or a callable (numpy; called with the feed values in order).

    float16/bfloat16 inputs are widened to float32 for "ort"/"ref" and outputs declared
    float16/bfloat16 (by onnx shape inference) are rounded back once, so the expected
    value does not depend on the oracle's half-precision arithmetic.
    Returns (outputs, source)."""
    if "ort" in oracle:
        import onnxruntime  # noqa: F401 - a missing onnxruntime fails here, not as "cannot run"
    narrow = {o.name: o.type.tensor_type.elem_type
              for o in shape_inference.infer_shapes(model).graph.output}
    wide = any(_dtype(v) in _WIDE for v in feeds.values())
    errors = []
    for src in oracle:
        if callable(src):
            return [np.asarray(v) for v in src(*feeds.values())], "numpy"
        m, f = model, feeds
        if wide:
            m = onnx.ModelProto()
            m.CopyFrom(model)
            for vi in m.graph.input:
                t = vi.type.tensor_type
                t.elem_type = _WIDE.get(t.elem_type, t.elem_type)
            f = {k: (np.asarray(v).astype(np.float32) if _dtype(v) in _WIDE else v) for k, v in feeds.items()}
        try:
            outs = _run(src, m, f)
        except Exception as e:  # noqa: BLE001 - any failure means "this oracle cannot run it"
            errors.append(f"{src}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
            continue
        outs = [np.asarray(v) for v in outs]
        if wide:
            for j, o in enumerate(model.graph.output):
                dt = narrow.get(o.name, 0)
                if dt in _WIDE:
                    outs[j] = outs[j].astype(helper.tensor_dtype_to_np_dtype(dt))
                elif not dt:
                    raise ValueError(f"{model.graph.name}: dtype of output {o.name} unknown")
        return outs, src
    raise RuntimeError(f"{model.graph.name}: no oracle ran it: " + "; ".join(errors))


class Writer:
    def __init__(self, out):
        self.out = out
        self.count = 0
        self.sources = {}  # oracle source -> number of cases, for cases using expected()

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
              out_shapes=True, oracle=None):
        """A multi-node case. feeds: {name: array}; dims: {name: symbolic shape} overrides.
        Omitted outputs come from expected(..., oracle), else from the reference evaluator."""
        dims = dims or {}
        gin = [helper.make_tensor_value_info(n, _dtype(v), dims.get(n, np.shape(v))) for n, v in feeds.items()]
        if outputs is None:
            undef = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in out_names]
            m = _model(name, nodes, gin, undef, list(inits), opset)
            if oracle is None:
                outputs = ReferenceEvaluator(m).run(None, feeds)
            else:
                outputs, src = expected(m, feeds, oracle)
                self.sources[src] = self.sources.get(src, 0) + 1
        shape = lambda e: np.shape(e) if out_shapes and not dims else None
        gout = [helper.make_tensor_value_info(o, _dtype(e), shape(e)) for o, e in zip(out_names, outputs)]
        m = _model(name, nodes, gin, gout, list(inits), opset)
        return self.write(name, m, [(list(feeds.values()), outputs)]), feeds

    def case(self, name, op, inputs, outputs=None, attrs=None, opset=13, n_out=1, out_shapes=True,
             oracle=None):
        """A one-node case. inputs: arrays, None for an omitted optional input."""
        in_names = [f"x{i}" if v is not None else "" for i, v in enumerate(inputs)]
        feeds = {n: v for n, v in zip(in_names, inputs) if n}
        out_names = [f"y{j}" for j in range(len(outputs) if outputs is not None else n_out)]
        node = helper.make_node(op, in_names, out_names, **(attrs or {}))
        return self.graph(name, [node], feeds, out_names, outputs, opset, out_shapes=out_shapes,
                          oracle=oracle)
