"""Conv-family edge cases: grouped, depthwise and pointwise Conv with strides, dilations and
auto_pad, 1-D and 3-D, float16/float64; ConvTranspose with output_padding/output_shape;
per-channel ConvInteger and QLinearConv; MaxPool Indices in both storage orders, ceil_mode
edges (windows starting in the padding), AveragePool count_include_pad, LpPool, global pools;
Batch/Instance/Layer/Lp normalization (LayerNormalization scale/bias broadcasting) and LRN.

Expected values come from onnxruntime where it runs the case, else onnx's reference
evaluator (float64 Conv/AveragePool/GlobalMaxPool/InstanceNormalization, SAME padding with
dilations, per-channel ConvInteger zero points, opset-6 BatchNormalization), else numpy
(grouped float64 ConvTranspose and LRN, where the reference evaluator is wrong). float16
cases are computed in float32 and rounded once (casegen.expected). Where both ran, the
reference evaluator disagreed with onnxruntime and the spec on grouped ConvTranspose,
SAME_LOWER MaxPool, 2-D/3-D BatchNormalization and LpNormalization p=1 (sign dropped).
"""
import numpy as np

import casegen


def build(w):
    rng = np.random.default_rng(0)

    def case(name, op, inputs, n_out=1, opset=17, numpy=None, oracle=casegen.ORT, **attrs):
        w.case(name, op, inputs, attrs=attrs, opset=opset, n_out=n_out,
               oracle=oracle + ((numpy,) if numpy else ()))

    def f(*shape, dt=np.float32):
        return rng.standard_normal(shape).astype(dt)

    # ---------------- Conv
    case('c_group_dil', 'Conv', [f(2, 4, 11, 9), f(6, 2, 3, 2), f(6)], group=2, dilations=[2, 1], strides=[2, 3], pads=[1, 0, 2, 1])
    case('c_dw3', 'Conv', [f(2, 8, 17, 15), f(8, 1, 3, 3), f(8)], group=8, pads=[1, 1, 1, 1])
    case('c_dw_s2', 'Conv', [f(1, 8, 17, 16), f(8, 1, 5, 5)], group=8, pads=[2, 2, 2, 2], strides=[2, 2])
    case('c_dw_mult2', 'Conv', [f(1, 8, 12, 13), f(16, 1, 3, 3), f(16)], group=8, pads=[1, 1, 1, 1])
    case('c_dw_mult4', 'Conv', [f(1, 3, 12, 13), f(12, 1, 3, 3), f(12)], group=3, pads=[0, 1, 2, 1], strides=[1, 2])
    case('c_pw', 'Conv', [f(1, 16, 64, 64), f(24, 16, 1, 1), f(24)])
    case('c_pw_edge', 'Conv', [f(2, 13, 9, 7), f(7, 13, 1, 1), f(7)])
    case('c_pw_s2', 'Conv', [f(1, 16, 15, 15), f(9, 16, 1, 1)], strides=[2, 2])
    case('c_big_k', 'Conv', [rng.random((1, 40, 37, 41), dtype=np.float32), rng.random((21, 40, 3, 3), dtype=np.float32), f(21)], pads=[1, 1, 1, 1])
    case('c_c1', 'Conv', [f(1, 1, 20, 20), f(32, 1, 3, 3), f(32)], pads=[1, 1, 1, 1], strides=[2, 2])
    case('c_1d_same', 'Conv', [f(2, 3, 29), f(5, 3, 4), f(5)], auto_pad='SAME_UPPER', strides=[3], dilations=[2])
    case('c_1d_lower', 'Conv', [f(2, 3, 30), f(5, 3, 4)], auto_pad='SAME_LOWER', strides=[1], dilations=[1])
    case('c_3d_group', 'Conv', [f(1, 4, 7, 8, 9), f(6, 2, 3, 2, 3), f(6)], group=2, pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 2])
    case('c_3d_dw', 'Conv', [f(1, 4, 6, 7, 8), f(4, 1, 3, 3, 3)], group=4, pads=[1, 1, 1, 1, 1, 1])
    case('c_valid', 'Conv', [f(1, 3, 10, 11), f(4, 3, 3, 3)], auto_pad='VALID', strides=[2, 2])
    case('c_same_lower_dil', 'Conv', [f(1, 3, 10, 11), f(4, 3, 3, 3)], auto_pad='SAME_LOWER', strides=[2, 1], dilations=[2, 2])
    case('c_f64', 'Conv', [f(1, 4, 9, 9, dt=np.float64), f(6, 2, 3, 3, dt=np.float64), f(6, dt=np.float64)], group=2, pads=[1, 1, 1, 1])
    case('c_f64_dw', 'Conv', [f(1, 4, 9, 9, dt=np.float64), f(4, 1, 3, 3, dt=np.float64)], group=4, strides=[2, 2])
    case('c_f16', 'Conv', [f(1, 4, 9, 9, dt=np.float16), f(6, 4, 3, 3, dt=np.float16), f(6, dt=np.float16)], pads=[1, 1, 1, 1])
    case('c_ks_attr', 'Conv', [f(1, 2, 9, 9), f(3, 2, 2, 3)], kernel_shape=[2, 3])
    # ---------------- ConvTranspose
    case('ct_group', 'ConvTranspose', [f(2, 4, 5, 6), f(4, 3, 3, 3), f(6)], group=2, strides=[2, 2], dilations=[2, 1], pads=[1, 0, 0, 2], output_padding=[1, 1])
    case('ct_dw_k2s2', 'ConvTranspose', [f(1, 8, 10, 12), f(8, 1, 2, 2), f(8)], group=8, strides=[2, 2])
    case('ct_k2s2', 'ConvTranspose', [f(1, 16, 10, 12), f(16, 8, 2, 2), f(8)], strides=[2, 2])
    case('ct_k4s2p1', 'ConvTranspose', [f(1, 6, 10, 12), f(6, 5, 4, 4)], strides=[2, 2], pads=[1, 1, 1, 1])
    case('ct_same_lower', 'ConvTranspose', [f(1, 2, 5, 6), f(2, 3, 3, 3)], strides=[2, 2], auto_pad='SAME_LOWER')
    case('ct_same_upper_s3', 'ConvTranspose', [f(1, 2, 5, 6), f(2, 3, 4, 3)], strides=[3, 2], auto_pad='SAME_UPPER')
    case('ct_oshape', 'ConvTranspose', [f(1, 2, 5, 6), f(2, 3, 3, 3)], strides=[2, 2], output_shape=[12, 11])
    case('ct_1d', 'ConvTranspose', [f(2, 3, 7), f(3, 2, 3), f(2)], strides=[3], pads=[1, 2])
    case('ct_3d', 'ConvTranspose', [f(1, 2, 3, 4, 5), f(2, 2, 2, 3, 2)], strides=[2, 1, 2], pads=[0, 1, 1, 0, 1, 0])
    def ct_np(x, w, group, strides):  # 2-D, no pads: scatter each input pixel's kernel-sized product
        (N, C, H, W), (_, Mg, KH, KW), (sh, sw) = x.shape, w.shape, strides
        Cg = C // group
        y = np.zeros((N, group * Mg, (H - 1) * sh + KH, (W - 1) * sw + KW))
        for g in range(group):
            xg, wg = x[:, g * Cg:(g + 1) * Cg], w[g * Cg:(g + 1) * Cg]
            for i in range(H):
                for j in range(W):
                    y[:, g * Mg:(g + 1) * Mg, i * sh:i * sh + KH, j * sw:j * sw + KW] += \
                        np.einsum('nc,cmhw->nmhw', xg[:, :, i, j], wg)
        return [y.astype(x.dtype)]
    case('ct_f64', 'ConvTranspose', [f(1, 4, 5, 6, dt=np.float64), f(4, 3, 3, 3, dt=np.float64)], group=2, strides=[2, 2],
         numpy=lambda x, w: ct_np(x, w, 2, (2, 2)))  # the reference evaluator fails on grouped ConvTranspose
    case('ct_big', 'ConvTranspose', [rng.random((1, 300, 6, 7), dtype=np.float32), rng.random((300, 4, 3, 3), dtype=np.float32), f(4)], strides=[2, 2], pads=[1, 1, 1, 1])
    # ---------------- ConvInteger / QLinearConv
    def q(*shape, dt=np.uint8):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=shape).astype(dt)
    case('ci_perch', 'ConvInteger', [q(1, 4, 7, 8), q(6, 2, 3, 3), np.array(131, np.uint8), q(6)], group=2, pads=[1, 1, 0, 1], opset=10)
    case('ci_s8', 'ConvInteger', [q(1, 3, 7, 8, dt=np.int8), q(5, 3, 3, 3, dt=np.int8), np.array(-3, np.int8), np.array(5, np.int8)], strides=[2, 1], opset=10)
    case('ci_u8s8', 'ConvInteger', [q(1, 3, 7, 8), q(5, 3, 3, 3, dt=np.int8)], opset=10)
    case('ci_big', 'ConvInteger', [q(1, 64, 9, 9), q(8, 64, 3, 3), np.array(128, np.uint8)], pads=[1, 1, 1, 1], opset=10)
    def qlc(name, xt, wt, yt, per_ch, group=1, C=4, M=6, bias=True, **attrs):
        x, wq = q(1, C, 9, 10, dt=xt), q(M, C // group, 3, 3, dt=wt)
        xs, ys = np.array(0.02, np.float32), np.array(0.7, np.float32)
        ws = (rng.uniform(0.005, 0.03, M) if per_ch else np.array([0.01])).astype(np.float32)
        wz = (q(M, dt=wt) if per_ch else q(1, dt=wt)) if wt == np.uint8 else np.zeros(M if per_ch else 1, np.int8)
        xz = np.array(120 if xt == np.uint8 else -5, xt)
        yz = np.array(128 if yt == np.uint8 else 3, yt)
        ins = [x, xs, xz, wq, ws, wz, ys, yz]
        if bias:
            ins.append(rng.integers(-3000, 3000, M).astype(np.int32))
        case(name, 'QLinearConv', ins, group=group, opset=10, **attrs)
    qlc('qlc_u8_perch', np.uint8, np.uint8, np.uint8, True, pads=[1, 1, 1, 1])
    qlc('qlc_u8s8_perch', np.uint8, np.int8, np.uint8, True, group=2, strides=[2, 2])
    qlc('qlc_s8', np.int8, np.int8, np.int8, False, pads=[0, 1, 2, 1])
    qlc('qlc_u8_nobias', np.uint8, np.uint8, np.uint8, False, bias=False)
    # ---------------- pools
    case('mp_ceil_pads', 'MaxPool', [f(2, 3, 10, 11)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    case('mp_ceil_dil', 'MaxPool', [f(1, 2, 11, 12)], kernel_shape=[2, 3], strides=[3, 2], dilations=[2, 2], ceil_mode=1)
    case('mp_idx', 'MaxPool', [f(2, 3, 7, 9)], n_out=2, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])
    case('mp_idx_so1', 'MaxPool', [f(2, 3, 7, 9)], n_out=2, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], storage_order=1)
    case('mp_idx_3d', 'MaxPool', [f(1, 2, 5, 6, 7)], n_out=2, kernel_shape=[2, 3, 2], strides=[2, 2, 2])
    case('mp_1d', 'MaxPool', [f(2, 3, 20)], kernel_shape=[4], strides=[3], pads=[2, 1])
    case('mp_same_lower', 'MaxPool', [f(1, 3, 9, 10)], kernel_shape=[3, 2], strides=[2, 3], auto_pad='SAME_LOWER')
    case('mp_f16', 'MaxPool', [f(1, 3, 9, 10, dt=np.float16)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    case('mp_f64', 'MaxPool', [f(1, 3, 9, 10, dt=np.float64)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    case('mp_i8', 'MaxPool', [q(1, 3, 9, 10, dt=np.int8)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    case('mp_opset1', 'MaxPool', [f(1, 3, 9, 10)], kernel_shape=[3, 3], strides=[2, 2], opset=1)
    case('ap_ceil_cip', 'AveragePool', [f(2, 3, 10, 11)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    case('ap_ceil', 'AveragePool', [f(2, 3, 10, 11)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    case('ap_same_lower_cip', 'AveragePool', [f(1, 3, 9, 10)], kernel_shape=[3, 2], strides=[2, 3], auto_pad='SAME_LOWER', count_include_pad=1)
    case('ap_same_upper', 'AveragePool', [f(1, 3, 9, 10)], kernel_shape=[3, 2], strides=[2, 3], auto_pad='SAME_UPPER')
    case('ap_3d_pads', 'AveragePool', [f(1, 2, 6, 7, 8)], kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)
    case('ap_f64', 'AveragePool', [f(1, 3, 9, 10, dt=np.float64)], kernel_shape=[2, 2], strides=[2, 2])
    case('ap_f16', 'AveragePool', [f(1, 3, 9, 10, dt=np.float16)], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1])
    case('ap_opset7', 'AveragePool', [f(1, 3, 9, 10)], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1, opset=7)
    case('lp_p2', 'LpPool', [f(1, 3, 9, 10)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], opset=11)
    case('lp_p1', 'LpPool', [f(1, 3, 9, 10)], kernel_shape=[2, 3], strides=[2, 1], p=1, opset=11)
    case('lp_p3', 'LpPool', [f(1, 3, 9, 10)], kernel_shape=[3, 3], p=3, opset=11)
    case('lp_same', 'LpPool', [f(1, 3, 9, 10)], kernel_shape=[3, 3], strides=[2, 2], auto_pad='SAME_UPPER', opset=11)
    case('glp_p3', 'GlobalLpPool', [f(2, 3, 5, 6)], p=3, opset=2)
    case('glp_p2', 'GlobalLpPool', [f(2, 3, 5, 6)], opset=2)
    case('gap_3d', 'GlobalAveragePool', [f(2, 3, 4, 5, 6)])
    case('gap_1d', 'GlobalAveragePool', [f(2, 3, 7)])
    case('gmp_f64', 'GlobalMaxPool', [f(2, 3, 5, 6, dt=np.float64)])
    case('gap_f16', 'GlobalAveragePool', [f(2, 3, 5, 6, dt=np.float16)])
    # ---------------- norms
    def bn_in(C, dt=np.float32):
        return [f(C, dt=dt), f(C, dt=dt), f(C, dt=dt), rng.uniform(0.5, 2, C).astype(dt)]
    case('bn_3d', 'BatchNormalization', [f(2, 5, 7)] + bn_in(5), epsilon=1e-3, opset=9)
    case('bn_2d', 'BatchNormalization', [f(4, 5)] + bn_in(5), opset=9)
    case('bn_5d', 'BatchNormalization', [f(2, 3, 3, 4, 5)] + bn_in(3), opset=15)
    case('bn_f64', 'BatchNormalization', [f(2, 5, 3, 3, dt=np.float64)] + bn_in(5, np.float64), opset=15)
    case('bn_f16', 'BatchNormalization', [f(2, 5, 3, 3, dt=np.float16)] + bn_in(5, np.float16), opset=15)
    case('bn_opset6', 'BatchNormalization', [f(2, 5, 3, 3)] + bn_in(5), opset=6, is_test=1)
    case('bn_opset7', 'BatchNormalization', [f(2, 5, 3, 3)] + bn_in(5), opset=7)
    case('bn_train_f64', 'BatchNormalization', [f(3, 4, 5, dt=np.float64)] + bn_in(4, np.float64), n_out=3, training_mode=1, momentum=0.8, opset=15)
    case('in_3d', 'InstanceNormalization', [f(2, 4, 5, 6, 3), f(4), f(4)], epsilon=1e-3)
    case('in_1d', 'InstanceNormalization', [f(2, 4, 17) + 5, f(4), f(4)])
    case('in_f64', 'InstanceNormalization', [f(2, 4, 5, 6, dt=np.float64), f(4, dt=np.float64), f(4, dt=np.float64)])
    case('ln_nob', 'LayerNormalization', [f(3, 4, 8), f(8), None], n_out=3)
    case('ln_bcast', 'LayerNormalization', [f(3, 4, 8), f(1, 8), f(4, 1)], axis=1)
    case('ln_f64', 'LayerNormalization', [f(3, 4, 8, dt=np.float64), f(8, dt=np.float64), f(8, dt=np.float64)], axis=1)
    case('ln_f16', 'LayerNormalization', [f(3, 4, 8, dt=np.float16), f(8, dt=np.float16), f(8, dt=np.float16)], n_out=3)
    case('lpn_p1_ax0', 'LpNormalization', [f(3, 4, 5)], axis=0, p=1, opset=1)
    case('lpn_p2', 'LpNormalization', [f(3, 4, 5)], opset=1)
    case('lpn_p2_ax1', 'LpNormalization', [f(3, 4, 5, dt=np.float64)], axis=1, opset=1)
    def lrn(name, x, size, alpha=1e-4, beta=0.75, bias=1.0):
        # window [c - floor((size-1)/2), c + ceil((size-1)/2)]; the reference evaluator's LRN
        # is wrong (it loops over the batch dim), so numpy where onnxruntime refuses
        def lrn_np(x):
            xd = x.astype(np.float64)
            C = x.shape[1]
            sq = np.zeros_like(xd)
            bef = (size - 1) // 2
            aft = size - 1 - bef
            for c in range(C):
                sq[:, c] = (xd[:, max(0, c - bef):min(C, c + aft + 1)] ** 2).sum(1)
            return [(xd / (bias + alpha / size * sq) ** beta).astype(x.dtype)]
        case(name, 'LRN', [x], size=size, alpha=alpha, beta=beta, bias=bias, oracle=('ort', lrn_np))
    lrn('lrn_even', f(2, 7, 4, 5), 4, alpha=0.001, beta=0.7, bias=1.5)
    lrn('lrn_3d', f(2, 7, 4), 3)
    lrn('lrn_f64', f(2, 7, 4, 5, dt=np.float64), 5)
    lrn('lrn_f16', f(2, 7, 4, 5, dt=np.float16), 3)
    # ---- edge semantics
    case('mp_ceil_drop', 'MaxPool', [f(1, 2, 5, 7)], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    case('ap_ceil_drop_cip', 'AveragePool', [f(1, 2, 5, 7)], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    case('ap_ceil_drop', 'AveragePool', [f(1, 2, 5, 7)], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    case('ap_ceil_over_cip', 'AveragePool', [f(1, 2, 6, 8)], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 0, 0], ceil_mode=1, count_include_pad=1)
    case('ct_oshape_pads', 'ConvTranspose', [f(1, 2, 5, 6), f(2, 3, 3, 3)], strides=[2, 2], output_shape=[10, 12], pads=[1, 1, 1, 1])
    case('ct_oshape_upper', 'ConvTranspose', [f(1, 2, 5, 6), f(2, 3, 3, 3)], strides=[2, 2], output_shape=[10, 12], auto_pad='SAME_UPPER')
    case('mp_pad_big', 'MaxPool', [f(1, 2, 6, 6)], kernel_shape=[3, 3], strides=[1, 1], pads=[2, 2, 2, 2])
