"""The onnx package's own node tests (onnx.backend.test.case.node) for the tensor-family ops.

These track the installed onnx release: newer opsets and attributes than the Debian
libonnx-testdata set (Resize antialias/axes/keep_aspect_ratio_policy, Pad axes and wrap,
Split num_outputs, ...). Importing a module runs its export functions (seeded by onnx).
"""
import importlib

MODULES = """concat constant constantofshape depthtospace expand eyelike flatten gather gatherelements
gathernd nonzero onehot pad rangeop reshape resize scatter scatterelements scatternd shape size
slice spacetodepth split squeeze tile transpose trilu unsqueeze upsample""".split()


def build(w):
    import onnx.backend.test.case.node as node
    for m in MODULES:
        importlib.import_module(f"{node.__name__}.{m}")
    for case in node._NodeTestCases:
        if case.model is None or "_expanded" in case.name:  # function expansions (Loop etc.)
            continue
        w.write(case.name[len("test_"):], case.model, case.data_sets)
