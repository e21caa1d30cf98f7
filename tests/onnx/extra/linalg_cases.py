"""Linalg-family edge cases: MatMul/Gemm broadcasting, 1-D operands, int/float16/float64 and
empty K; MatMulInteger and QLinearMatMul with per-row/per-column zero points and scales;
Einsum (implicit output, ellipsis broadcasting, traces, diagonals); Softmax/LogSoftmax/Hardmax
before opset 13 (coerced to 2-D) and after; Reduce* at opsets 11/13/18 (axes attribute or
input, empty axes with and without noop_with_empty_axes, empty sets, integer dtypes);
ArgMax/ArgMin select_last_index; CumSum exclusive/reverse; TopK ties, k = 0 and old opsets.
Plus the onnx package's own node tests for these ops (as node_cases does for tensor ops).

Expected values come from onnxruntime where it runs the case, else onnx's reference
evaluator, else the numpy value given with the case. float16 cases are computed in float32
(or float64 in numpy) and rounded once (casegen.expected).
"""
import importlib

import numpy as np

import casegen

NODE_MODULES = """argmax argmin cumsum einsum gemm hardmax logsoftmax matmul matmulinteger qlinearmatmul
reduce_log_sum reduce_log_sum_exp reducel1 reducel2 reducemax reducemean reducemin reduceprod
reducesum reducesumsquare softmax topk""".split()


def node_tests(w):
    """The node tests these modules add (generate.py runs node_cases first: its modules
    are not re-imported, so no case is written twice)."""
    import onnx.backend.test.case.node as node
    first = len(node._NodeTestCases)
    for m in NODE_MODULES:
        importlib.import_module(f"{node.__name__}.{m}")
    for case in node._NodeTestCases[first:]:
        if case.model is None or "_expanded" in case.name:  # function expansions
            continue
        w.write(case.name[len("test_"):], case.model, case.data_sets)


def build(w):
    rng = np.random.default_rng(0)

    def case(name, op, inputs, attrs, opset, expected=None, n_out=1):
        numpy = (lambda *_: expected,) if expected is not None else ()
        w.case(name, op, inputs, attrs=attrs, opset=opset, n_out=n_out, oracle=casegen.ORT + numpy)

    def f32(*s):
        return rng.standard_normal(s).astype(np.float32)

    def pos(*s):
        return rng.random(s, dtype=np.float32)

    # ---------------- MatMul
    for dt in (np.float32, np.float64, np.float16):
        a = rng.standard_normal((2, 1, 3, 5)).astype(dt); b = rng.standard_normal((4, 5, 6)).astype(dt)
        case(f"mm_bcast_{dt.__name__}", "MatMul", [a, b], {}, 13, [np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dt)])
    a = f32(5); b = f32(5); case("mm_1d_1d", "MatMul", [a, b], {}, 13, [np.matmul(a, b)])
    a = f32(5); b = f32(3, 5, 4); case("mm_1d_3d", "MatMul", [a, b], {}, 13, [np.matmul(a, b)])
    a = f32(2, 3, 5); b = f32(5); case("mm_3d_1d", "MatMul", [a, b], {}, 13, [np.matmul(a, b)])
    # big products use positive inputs: no cancellation, so the float32 summation order
    # (blocking, FMA) stays far inside the tolerance
    a = pos(70, 260); b = pos(260, 300); case("mm_big", "MatMul", [a, b], {}, 13, [(a.astype(np.float64) @ b).astype(np.float32)])
    a = pos(3, 37, 129); b = pos(3, 129, 33); case("mm_big_batch", "MatMul", [a, b], {}, 13, [(a.astype(np.float64) @ b).astype(np.float32)])
    a = pos(2, 37, 129); b = pos(129, 45); case("mm_tall", "MatMul", [a, b], {}, 13, [(a.astype(np.float64) @ b).astype(np.float32)])
    a = pos(1, 37, 129); b = pos(4, 129, 45); case("mm_abcast", "MatMul", [a, b], {}, 13, [(a.astype(np.float64) @ b).astype(np.float32)])
    for dt in (np.int32, np.int64, np.uint32, np.uint64):
        a = rng.integers(0, 100, (3, 4, 5)).astype(dt); b = rng.integers(0, 100, (5, 6)).astype(dt)
        case(f"mm_{dt.__name__}", "MatMul", [a, b], {}, 13, [np.matmul(a, b)])
    a = np.zeros((2, 0), np.float32); b = f32(0, 3); case("mm_k0", "MatMul", [a, b], {}, 13, [np.zeros((2, 3), np.float32)])

    # ---------------- Gemm
    a = pos(260, 70); b = pos(300, 260); c = f32(300)
    case("gemm_tA_tB_big", "Gemm", [a, b, c], dict(transA=1, transB=1, alpha=0.5, beta=2.0), 13,
         [(0.5 * (a.T.astype(np.float64) @ b.T) + 2.0 * c).astype(np.float32)])
    a = f32(4, 3); b = f32(3, 5); c = np.array(3.0, np.float32)
    case("gemm_scalar_c", "Gemm", [a, b, c], {}, 13, [a @ b + c])
    c = f32(4, 1); case("gemm_col_c", "Gemm", [a, b, c], dict(beta=0.5), 13, [a @ b + 0.5 * c])
    case("gemm_no_c", "Gemm", [a, b, None], dict(alpha=2.0), 13, [2.0 * (a @ b)])
    for dt in (np.float64, np.float16):
        a = rng.standard_normal((4, 3)).astype(dt); b = rng.standard_normal((5, 3)).astype(dt); c = rng.standard_normal((4, 5)).astype(dt)
        case(f"gemm_{dt.__name__}", "Gemm", [a, b, c], dict(transB=1), 13, [(a.astype(np.float64) @ b.T.astype(np.float64) + c).astype(dt)])
    a = f32(4, 3); b = f32(3, 5); c = f32(4, 5)
    case("gemm_opset7", "Gemm", [a, b, c], {}, 7, [a @ b + c])
    a = rng.integers(-50, 50, (4, 3)).astype(np.int32); b = rng.integers(-50, 50, (3, 5)).astype(np.int32); c = rng.integers(-50, 50, (5,)).astype(np.int32)
    case("gemm_int32", "Gemm", [a, b, c], {}, 13, [a @ b + c])

    # ---------------- MatMulInteger
    a = rng.integers(0, 255, (4, 7)).astype(np.uint8); b = rng.integers(-128, 127, (7, 3)).astype(np.int8)
    za = rng.integers(0, 255, (4,)).astype(np.uint8); zb = rng.integers(-128, 127, (3,)).astype(np.int8)
    case("mmi_rowcol", "MatMulInteger", [a, b, za, zb], {}, 10,
         [((a.astype(np.int32) - za.astype(np.int32)[:, None]) @ (b.astype(np.int32) - zb.astype(np.int32))).astype(np.int32)])
    a = rng.integers(0, 255, (2, 4, 7)).astype(np.uint8); b = rng.integers(0, 255, (2, 7, 3)).astype(np.uint8)
    za = np.array(12, np.uint8); zb = rng.integers(0, 255, (2, 1, 3)).astype(np.uint8)
    case("mmi_nd", "MatMulInteger", [a, b, za, zb], {}, 10, [((a.astype(np.int32) - 12) @ (b.astype(np.int32) - zb.astype(np.int32))).astype(np.int32)])
    case("mmi_nozp", "MatMulInteger", [a, b], {}, 10, [(a.astype(np.int32) @ b.astype(np.int32)).astype(np.int32)])
    a = rng.integers(0, 255, (64, 300)).astype(np.uint8); b = rng.integers(0, 255, (300, 77)).astype(np.uint8)
    case("mmi_big", "MatMulInteger", [a, b, np.array(128, np.uint8), np.array(3, np.uint8)], {}, 10,
         [((a.astype(np.int32) - 128) @ (b.astype(np.int32) - 3)).astype(np.int32)])

    # ---------------- QLinearMatMul per-tensor / per-row/col, int8 output
    a = rng.integers(-128, 127, (3, 8)).astype(np.int8); b = rng.integers(-128, 127, (8, 5)).astype(np.int8)
    asc = np.array([0.02], np.float32); bsc = (rng.random(5) * 0.05 + 0.01).astype(np.float32)
    za = np.array([3], np.int8); zb = np.zeros(5, np.int8); ys = np.array([0.3], np.float32); yz = np.array([-5], np.int8)
    C = (a.astype(np.int32) - 3) @ b.astype(np.int32)
    D = C * (asc * bsc / ys)
    exp = np.clip(np.rint(D + yz.astype(np.float64)), -128, 127).astype(np.int8)
    case("qlmm_percol", "QLinearMatMul", [a, asc, za, b, bsc, zb, ys, yz], {}, 10, [exp])

    # ---------------- Einsum
    def ein(name, eq, *ops, dt=np.float32):
        ops = [o.astype(dt) for o in ops]
        wide = [o.astype(np.float64) for o in ops] if np.dtype(dt).kind == "f" else ops
        case("einsum_" + name, "Einsum", list(ops), dict(equation=eq), 12, [np.einsum(eq, *wide).astype(dt)])
    ein("mm", "ij,jk->ik", f32(3, 4), f32(4, 5))
    ein("implicit", "ij,jk", f32(3, 4), f32(4, 5))
    ein("implicit_T", "ba", f32(3, 4))
    ein("upper", "Ab,bc->cA", f32(3, 4), f32(4, 5))
    ein("trace", "ii", f32(4, 4))
    ein("diag", "ii->i", f32(4, 4))
    ein("attn", "bhid,bhjd->bhij", f32(2, 3, 5, 4), f32(2, 3, 6, 4))
    ein("ell_bcast", "...ij,...jk->...ik", f32(2, 3, 4, 5), f32(3, 5, 2))
    ein("ell_bcast1", "...ij,...jk->...ik", f32(2, 1, 4, 5), f32(3, 5, 2))
    ein("outer", "i,j->ij", f32(3), f32(4))
    ein("sum_all", "ijk->", f32(2, 3, 4))
    ein("three", "ij,jk,kl->il", f32(2, 3), f32(3, 4), f32(4, 5))
    ein("int64", "ij,jk->ik", rng.integers(-9, 9, (3, 4)), rng.integers(-9, 9, (4, 5)), dt=np.int64)
    ein("f64_ell_out_implicit", "...ij,jk", f32(2, 3, 4), f32(4, 5), dt=np.float64)
    ein("spaces", " i j , j k -> i k ", f32(3, 4), f32(4, 5))

    # ---------------- Softmax family old semantics
    def sm_old(x, axis, kind):
        r = x.ndim; a = axis if axis >= 0 else axis + r
        n0 = int(np.prod(x.shape[:a])); x2 = x.reshape(n0, -1).astype(np.float64)
        m = x2.max(1, keepdims=True); e = np.exp(x2 - m); s = e.sum(1, keepdims=True)
        if kind == "Softmax": y = e / s
        elif kind == "LogSoftmax": y = x2 - m - np.log(s)
        else:
            y = np.zeros_like(x2); y[np.arange(n0), x2.argmax(1)] = 1
        return y.reshape(x.shape).astype(x.dtype)
    for op in ("Softmax", "LogSoftmax", "Hardmax"):
        x = f32(2, 3, 4)
        for opset in (1, 11):
            case(f"{op}_o{opset}_default", op, [x], {}, opset, [sm_old(x, 1, op)])
            case(f"{op}_o{opset}_axis0", op, [x], dict(axis=0), opset, [sm_old(x, 0, op)])
            case(f"{op}_o{opset}_axis2", op, [x], dict(axis=2), opset, [sm_old(x, 2, op)])
        case(f"{op}_o11_neg", op, [x], dict(axis=-2), 11, [sm_old(x, -2, op)])
        xh = x.astype(np.float16)
        case(f"{op}_o13_f16", op, [xh], dict(axis=1), 13)
        case(f"{op}_o13_f64", op, [x.astype(np.float64)], dict(axis=1), 13)
        case(f"{op}_o13_inner", op, [f32(3, 5, 7)], dict(axis=1), 13)
    x = np.array([[1, 3, 3, 2], [0, 0, 0, 0]], np.float32)
    case("hardmax_ties", "Hardmax", [x], dict(axis=1), 13, [np.array([[0, 1, 0, 0], [1, 0, 0, 0]], np.float32)])

    # ---------------- Reductions
    ROPS = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
            "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
    x = (rng.random((3, 4, 5)) + 0.5).astype(np.float32)
    for op in ROPS:
        for opset in (11, 13, 18):
            attr_axes = opset < 13 or (opset < 18 and op != "ReduceSum")
            for axes, kd in (((0, 2), 1), ((1,), 0), ((-1,), 1), (None, 0), ((0, 1, 2), 1)):
                nm = f"{op}_o{opset}_{'n' if axes is None else '_'.join(str(a).replace('-','m') for a in axes)}_k{kd}"
                if attr_axes:
                    attrs = dict(keepdims=kd); ins = [x]
                    if axes is not None: attrs["axes"] = list(axes)
                else:
                    attrs = dict(keepdims=kd); ins = [x, None if axes is None else np.array(axes, np.int64)]
                    if axes is None: ins = [x]
                case(nm, op, ins, attrs, opset)
        # empty axes tensor with/without noop, opset 18
        case(f"{op}_o18_empty_noop", op, [x, np.array([], np.int64)], dict(keepdims=1, noop_with_empty_axes=1), 18)
        case(f"{op}_o18_empty_all", op, [x, np.array([], np.int64)], dict(keepdims=0), 18)
        case(f"{op}_o18_f64", op, [x.astype(np.float64), np.array([1], np.int64)], dict(keepdims=0), 18)
        case(f"{op}_o18_f16", op, [x.astype(np.float16), np.array([1], np.int64)], dict(keepdims=0), 18)
        # empty set (the spec leaves ReduceMean of one undefined)
        xe = np.zeros((2, 0, 4), np.float32)
        if op != "ReduceMean":
            case(f"{op}_o18_emptyset", op, [xe, np.array([1], np.int64)], dict(keepdims=1), 18)
    xi = rng.integers(-20, 20, (3, 4, 5)).astype(np.int32)
    for op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare", "ReduceMean"):
        case(f"{op}_o18_int32", op, [xi, np.array([1], np.int64)], dict(keepdims=0), 18)
        case(f"{op}_o18_int64", op, [xi.astype(np.int64), np.array([0, 2], np.int64)], dict(keepdims=1), 18)
    for op in ("ReduceMax", "ReduceMin"):
        case(f"{op}_o18_uint8", op, [rng.integers(0, 255, (3, 4)).astype(np.uint8), np.array([1], np.int64)], dict(keepdims=0), 18)
        case(f"{op}_o18_int8", op, [rng.integers(-128, 127, (3, 4)).astype(np.int8), np.array([0], np.int64)], dict(keepdims=0), 18)
        case(f"{op}_o18_int32_empty", op, [np.zeros((0, 3), np.int32), np.array([0], np.int64)], dict(keepdims=0), 18,
             [np.full((3,), np.iinfo(np.int32).min if op == "ReduceMax" else np.iinfo(np.int32).max, np.int32)])
    x = f32(4, 6); x[1, 2] = np.inf; x[2, :] = -np.inf
    case("lse_inf", "ReduceLogSumExp", [x, np.array([1], np.int64)], dict(keepdims=0), 18,
         [np.array([np.log(np.exp(x[0]).sum()), np.inf, -np.inf, np.log(np.exp(x[3]).sum())], np.float32)])
    x = f32(2, 3, 4, 5)
    case("rsum_mid", "ReduceSum", [x, np.array([1, 2], np.int64)], dict(keepdims=0), 13)
    case("rsum_alt", "ReduceSum", [x, np.array([0, 2], np.int64)], dict(keepdims=1), 13)
    case("rmean_big_last", "ReduceMean", [f32(64, 1000)], dict(axes=[-1]), 13)

    # ---------------- ArgMax/ArgMin
    x = np.array([[2, 2, 1, 2], [0, 5, 5, 1]], np.int32)
    for op, f in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        for last in (0, 1):
            for dt in (np.int32, np.uint8, np.float16, np.float64, np.int64):
                xx = x.astype(dt)
                if last: e = xx.shape[1] - 1 - f(np.flip(xx, 1), axis=1)
                else: e = f(xx, axis=1)
                case(f"{op}_{dt.__name__}_last{last}", op, [xx], dict(axis=1, keepdims=0, select_last_index=last), 13, [e.astype(np.int64)])
        x3 = f32(3, 4, 5)
        case(f"{op}_3d_axis1", op, [x3], dict(axis=1), 13, [f(x3, axis=1)[:, None, :].astype(np.int64)])
        case(f"{op}_o1", op, [x3], dict(axis=-1, keepdims=0), 11, [f(x3, axis=-1).astype(np.int64)])

    # ---------------- CumSum
    for dt in (np.float32, np.float64, np.int32, np.int64, np.float16):
        x = rng.integers(-5, 5, (2, 3, 4)).astype(dt)
        for ex in (0, 1):
            for rv in (0, 1):
                for ax in (1, -1, 0):
                    xx = np.flip(x, ax) if rv else x
                    c = np.cumsum(xx, axis=ax, dtype=np.float64 if dt in (np.float32, np.float16) else None)
                    if ex:
                        c = c - xx
                    if rv: c = np.flip(c, ax)
                    case(f"cumsum_{dt.__name__}_e{ex}_r{rv}_a{ax}".replace("-", "m"), "CumSum",
                         [x, np.array(ax, np.int32 if ax == 1 else np.int64)], dict(exclusive=ex, reverse=rv), 14, [c.astype(dt)])

    # ---------------- TopK
    x = np.array([[3, 1, 3, 2, 3, 0], [5, 5, 5, 1, 1, 1]], np.float32)
    for largest in (0, 1):
        case(f"topk_ties_l{largest}", "TopK", [x, np.array([4], np.int64)], dict(axis=1, largest=largest), 11, n_out=2)
    case("topk_k0", "TopK", [x, np.array([0], np.int64)], dict(axis=1), 11, n_out=2)
    x3 = f32(4, 5, 3)
    case("topk_axis0", "TopK", [x3, np.array([2], np.int64)], dict(axis=0), 11, n_out=2)
    case("topk_axis1_small", "TopK", [x3, np.array([3], np.int64)], dict(axis=1, largest=0), 11, n_out=2)
    case("topk_int64", "TopK", [rng.integers(-5, 5, (3, 7)).astype(np.int64), np.array([3], np.int64)], {}, 11, n_out=2)
    case("topk_uint8", "TopK", [rng.integers(0, 255, (3, 7)).astype(np.uint8), np.array([3], np.int64)], dict(largest=0), 11, n_out=2)
    case("topk_f64", "TopK", [x3.astype(np.float64), np.array([2], np.int64)], {}, 10, n_out=2)
    case("topk_o1", "TopK", [x3], dict(k=2), 1, n_out=2)
    ein("g_rowdot", "ij,ij->i", f32(3, 4), f32(3, 4))
    ein("g_hadamard", "ij,ij->ij", f32(3, 4), f32(3, 4))
    ein("g_dot", "i,i->", f32(7), f32(7))
    ein("g_multik", "abc,bcd->ad", f32(2, 3, 4), f32(3, 4, 5))
    ein("g_perm_out", "bhid,bhjd->hjbi", f32(2, 3, 5, 4), f32(2, 3, 6, 4))
    ein("g_batch_mid", "ibj,jbk->bik", f32(3, 2, 4), f32(4, 2, 5))
    ein("g_f16", "bij,bjk->bki", f32(2, 3, 4), f32(2, 4, 5), dt=np.float16)
    ein("g_i32", "bij,bjk->bik", rng.integers(-9, 9, (2, 3, 4)), rng.integers(-9, 9, (2, 4, 5)), dt=np.int32)
    ein("g_big", "bhid,bhjd->bhij", f32(1, 4, 70, 33), f32(1, 4, 50, 33))
    ein("f_sum_one", "ij,jk->k", f32(3, 4), f32(4, 5))
    ein("f_bcast1", "bij,bjk->bik", f32(1, 3, 4), f32(2, 4, 5))

    node_tests(w)
