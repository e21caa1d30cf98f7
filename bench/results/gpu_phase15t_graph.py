import onnx, sys
from collections import deque
m = onnx.load(sys.argv[1], load_external_data=False)
g = m.graph
cons = {}
for i, n in enumerate(g.node):
    for t in n.input: cons.setdefault(t, []).append(i)
init = {t.name for t in g.initializer}
seen, q, order = set(), deque(["attention_mask"]), []
while q:
    t = q.popleft()
    for i in cons.get(t, []):
        n = g.node[i]
        if i in seen: continue
        seen.add(i)
        if n.op_type in ("MatMul", "Softmax"): continue
        order.append(i)
        if len(order) > 80: break
        if n.op_type == "Add" and any(c for c in cons.get(n.output[0], []) if g.node[c].op_type == "Softmax"): continue
        for o in n.output: q.append(o)
for i in sorted(order):
    n = g.node[i]
    at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    at = {k: (v if not isinstance(v, onnx.TensorProto) else onnx.numpy_helper.to_array(v).tolist()) for k, v in at.items()}
    print(i, n.op_type, list(n.input), "->", list(n.output), at)
print("outputs", [(o.name) for o in g.output])
for n in g.node[-12:]: print("tail", n.op_type, list(n.input), list(n.output))
