"""Tensor-family edge cases (shape manipulation, indexing, generation, Pad, Resize/Upsample)
at older opsets and less common dtypes, plus one graph with a symbolic batch dim.

Expected values come from onnx's reference evaluator, or from numpy where the evaluator
disagrees with the ONNX spec or lacks an older opset (opset-10 Resize, Upsample).
"""

import numpy as np
from onnx import TensorProto, helper as h, numpy_helper


def build(w):
    case = w.case
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 5)).astype(np.float32)
    I64 = lambda *v: np.array(v, dtype=np.int64)
    # Slice
    case('slice_v1', 'Slice', [X], attrs=dict(starts=[1, -3], ends=[100, -1], axes=[2, 1]), opset=1)
    case('slice_v1_noaxes', 'Slice', [X], attrs=dict(starts=[0, 1], ends=[2, 1000]), opset=1)
    case('slice_v10', 'Slice', [X, I64(-1), I64(-10**18), I64(2), I64(-2)], opset=10)
    case('slice_neg_full', 'Slice', [X, I64(-1, 4), I64(np.iinfo(np.int64).min, -9), I64(0, 2), I64(-1, -2)])
    case('slice_bigstep', 'Slice', [X, I64(0), I64(5), I64(2), I64(np.iinfo(np.int64).max)])
    case('slice_empty', 'Slice', [X, I64(3), I64(1), I64(1)])
    case('slice_int32', 'Slice', [X.astype(np.float16), np.array([1], np.int32), np.array([3], np.int32)])
    # Split
    case('split_v2', 'Split', [X], attrs=dict(axis=2, split=[2, 3]), opset=2, n_out=2)
    case('split_v11_neg', 'Split', [X], attrs=dict(axis=-1, split=[1, 1, 3]), opset=11, n_out=3)
    case('split_v13_equal', 'Split', [X.astype(np.int8)], attrs=dict(axis=1), opset=13, n_out=2)
    case('split_v18_num', 'Split', [X], attrs=dict(axis=1, num_outputs=3), opset=18, n_out=3)
    # Squeeze / Unsqueeze
    S = rng.standard_normal((1, 3, 1, 2)).astype(np.float64)
    case('squeeze_v1', 'Squeeze', [S], attrs=dict(axes=[0, 2]), opset=1)
    case('squeeze_v11_neg', 'Squeeze', [S], attrs=dict(axes=[-2]), opset=11)
    case('squeeze_v13_noaxes', 'Squeeze', [S])
    case('unsqueeze_v1', 'Unsqueeze', [X], attrs=dict(axes=[0, 4]), opset=1)
    case('unsqueeze_v11_neg', 'Unsqueeze', [X], attrs=dict(axes=[-1, 1]), opset=11)
    # Pad
    P = rng.standard_normal((2, 3, 4)).astype(np.float32)
    case('pad_v2_const', 'Pad', [P], attrs=dict(pads=[0, 1, 2, 1, 0, 3], value=1.5), opset=2)
    case('pad_v2_reflect', 'Pad', [P], attrs=dict(pads=[1, 2, 3, 1, 2, 3], mode='reflect'), opset=2)
    case('pad_v11_edge_int', 'Pad', [P.astype(np.int32) * 0 + np.arange(24, dtype=np.int32).reshape(2, 3, 4), I64(0, 2, 1, 0, 2, 5)], attrs=dict(mode='edge'), opset=11)
    case('pad_v11_const_val', 'Pad', [P.astype(np.float16), I64(1, 0, 0, 0, 1, 1), np.array(7, np.float16)], attrs=dict(mode='constant'), opset=11)
    case('pad_v18_axes_reflect', 'Pad', [P, I64(2, 1, 3, 1), None, I64(-1, 1)], attrs=dict(mode='reflect'), opset=18)
    case('pad_reflect_large', 'Pad', [P, I64(0, 0, 9, 0, 0, 7)], attrs=dict(mode='reflect'))
    case('pad_wrap_large', 'Pad', [P, I64(0, 4, 9, 0, 5, 7)], attrs=dict(mode='wrap'), opset=19)
    case('pad_reflect_len1', 'Pad', [P[:, :1, :], I64(0, 2, 0, 0, 3, 0)], attrs=dict(mode='reflect'))
    # negative pads (crop): expected by hand
    Pn = np.pad(P, [(1, 0), (0, 2), (0, 0)], mode='constant', constant_values=0)[:, 1:, 1:-1]
    case('pad_negative', 'Pad', [P, I64(1, -1, -1, 0, 2, -1)], attrs=dict(mode='constant'), opset=13, outputs=[Pn])
    # Reshape
    case('reshape_v5', 'Reshape', [X, I64(0, -1)], opset=5)
    case('reshape_v1_attr', 'Reshape', [X], attrs=dict(shape=[-1, 2, 5]), opset=1, outputs=[X.reshape(-1, 2, 5)])
    Z = np.zeros((0, 3), np.float32)
    case('reshape_allowzero', 'Reshape', [Z, I64(3, 0)], attrs=dict(allowzero=1), opset=14)
    case('reshape_scalar', 'Reshape', [np.array([5.0], np.float32), np.zeros((0,), np.int64)], opset=14)
    # Gather family
    case('gather_int32_neg', 'Gather', [X, np.array([[-1, 0], [2, -3]], np.int32)], attrs=dict(axis=1))
    case('gather_scalar_idx', 'Gather', [X.astype(np.float64), np.array(-2, np.int64)], attrs=dict(axis=2))
    case('gather_bool', 'Gather', [X > 0, I64(2, 0)], attrs=dict(axis=0))
    case('gatherelements_neg', 'GatherElements', [X, np.array([[[-1, 0, 2, 1, -5]] * 4] * 3, np.int64)], attrs=dict(axis=2))
    case('gathernd_b1', 'GatherND', [X, np.array([[[1, 2]], [[0, 0]], [[3, -1]]], np.int64)], attrs=dict(batch_dims=1))
    case('gathernd_full', 'GatherND', [X, np.array([[0, 1, 2], [2, -1, -1]], np.int64)])
    case('scatterelements_max', 'ScatterElements', [X, np.array([[[0, 0]], [[1, -1]], [[2, 2]]], np.int64), np.ones((3, 1, 2), np.float32)], attrs=dict(axis=2, reduction='max'), opset=18)
    case('scatterelements_min_int', 'ScatterElements', [np.arange(12, dtype=np.int32).reshape(3, 4), np.array([[1, 1], [0, 3]], np.int64), np.array([[-5, 100], [7, -1]], np.int32)], attrs=dict(axis=1, reduction='min'), opset=18)
    case('scatternd_max_3d', 'ScatterND', [X, np.array([[1], [0]], np.int64), np.zeros((2, 4, 5), np.float32)], attrs=dict(reduction='max'), opset=18)
    case('scatternd_slice2', 'ScatterND', [X, np.array([[1, -1], [0, 2]], np.int64), np.full((2, 5), 3.0, np.float32)])
    # Expand / Tile
    case('expand_smaller_shape', 'Expand', [X[:, :1, :], I64(4, 1)])
    case('expand_bigger', 'Expand', [np.arange(3, dtype=np.int16).reshape(3, 1), I64(2, 1, 1, 4)])
    case('tile_zero', 'Tile', [X, I64(2, 0, 1)])
    case('tile_f16', 'Tile', [X.astype(np.float16), I64(1, 3, 2)])
    # Range
    case('range_int64', 'Range', [np.array(-7, np.int64), np.array(20, np.int64), np.array(3, np.int64)], opset=11)
    case('range_int16_neg', 'Range', [np.array(10, np.int16), np.array(-3, np.int16), np.array(-4, np.int16)], opset=11)
    case('range_double', 'Range', [np.array(0.5), np.array(3.2), np.array(0.3)], opset=11)
    case('range_empty', 'Range', [np.array(5.0, np.float32), np.array(1.0, np.float32), np.array(1.0, np.float32)], opset=11)
    # OneHot
    case('onehot_float_idx', 'OneHot', [np.array([[0.0, 2.0], [-1.0, 9.0]], np.float32), np.array(4.0, np.float32), np.array([0, 5], np.int32)], attrs=dict(axis=0), opset=11)
    case('onehot_int64', 'OneHot', [np.array([1, -4, 3, 7], np.int64), np.array(5, np.int64), np.array([-1.0, 1.0], np.float64)], opset=11)
    # NonZero
    nz = np.array([[0.0, -0.0, np.nan], [1.0, 0.0, -2.0]], np.float32)
    case('nonzero_float', 'NonZero', [nz])
    case('nonzero_int', 'NonZero', [np.array([[[0, 3], [4, 0]]], np.int64)])
    case('nonzero_all_zero', 'NonZero', [np.zeros((2, 3), np.int8)])
    # ConstantOfShape / EyeLike / Trilu
    case('cos_int64', 'ConstantOfShape', [I64(2, 3)], attrs=dict(value=numpy_helper.from_array(np.array([7], np.int64))), opset=9)
    case('cos_scalar', 'ConstantOfShape', [np.zeros((0,), np.int64)], attrs=dict(value=numpy_helper.from_array(np.array([2.5], np.float16))), opset=9)
    case('eyelike_k', 'EyeLike', [np.zeros((3, 5), np.int32)], attrs=dict(k=-1, dtype=TensorProto.DOUBLE), opset=9)
    case('eyelike_k_big', 'EyeLike', [np.zeros((3, 5), np.float32)], attrs=dict(k=7), opset=9)
    case('trilu_batch_bigk', 'Trilu', [X, np.array(-100, np.int64)], attrs=dict(upper=0), opset=14)
    case('trilu_upper_int', 'Trilu', [np.arange(24, dtype=np.int8).reshape(2, 3, 4), np.array(2, np.int64)], opset=14)
    # Transpose / Concat / Flatten dtypes
    case('transpose_f16', 'Transpose', [X.astype(np.float16)], attrs=dict(perm=[2, 0, 1]))
    case('transpose_u8_4d', 'Transpose', [rng.integers(0, 255, (2, 3, 4, 5)).astype(np.uint8)], attrs=dict(perm=[0, 2, 3, 1]))
    case('concat_empty', 'Concat', [X, np.zeros((3, 0, 5), np.float32), X[:, :2]], attrs=dict(axis=1))
    case('concat_bool', 'Concat', [X > 0, X < 0], attrs=dict(axis=-1))
    case('flatten_axis0_int', 'Flatten', [np.arange(24, dtype=np.int64).reshape(2, 3, 4)], attrs=dict(axis=0))
    case('constant_floats', 'Constant', [], attrs=dict(value_floats=[1.0, 2.5, -3.0]))
    case('constant_int', 'Constant', [], attrs=dict(value_int=42))
    case('constant_ints', 'Constant', [], attrs=dict(value_ints=[4, 5]))
    case('shape_v1', 'Shape', [X], opset=1)
    case('d2s_dcr_f64', 'DepthToSpace', [rng.standard_normal((2, 8, 2, 3))], attrs=dict(blocksize=2, mode='DCR'))
    case('d2s_crd_b1', 'DepthToSpace', [rng.standard_normal((1, 3, 2, 3)).astype(np.float32)], attrs=dict(blocksize=1, mode='CRD'))
    # Resize opset 11/13/18 extras
    R = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    E = np.zeros((0,), np.float32)
    case('resize_v11_sizes_linear', 'Resize', [R, E, E, I64(1, 2, 7, 3)], attrs=dict(mode='linear'), opset=11)
    def nearest_nd(X, scales, coord, rnd):
        Y = X
        for ax, s in enumerate(scales):
            n = X.shape[ax]; o = int(np.floor(n * np.float64(np.float32(s))))
            sc = np.float64(np.float32(s))
            idx = [min(max(int(rnd(coord(x, sc))), 0), n - 1) for x in range(o)]
            Y = np.take(Y, idx, axis=ax)
        return Y
    def rpf(x):
        f = np.floor(x); return f if x == f else (f if x - f <= 0.5 else f + 1)
    sc = [1, 1, 2.5, 1.5]
    case('resize_v11_tf_half_pixel_nn', 'Resize', [R, E, np.array(sc, np.float32)], attrs=dict(mode='nearest', coordinate_transformation_mode='tf_half_pixel_for_nn'), opset=11,
         outputs=[nearest_nd(R, sc, lambda x, s: (x + 0.5) / s, rpf)])
    # opset 10 / Upsample: asymmetric, floor when upsampling, ceil when downsampling
    sc = [1, 1, 2, 0.6]
    def nearest_simple(X, scales):
        Y = X
        for ax, s in enumerate(scales):
            n = X.shape[ax]; sc_ = np.float64(np.float32(s)); o = int(np.floor(n * sc_))
            idx = [min(max(int(np.ceil(x / sc_) if sc_ < 1 else np.floor(x / sc_)), 0), n - 1) for x in range(o)]
            Y = np.take(Y, idx, axis=ax)
        return Y
    def linear_asym(X, scales):
        Y = X.astype(np.float64)
        for ax, s in enumerate(scales):
            n = X.shape[ax]; sc_ = np.float64(np.float32(s)); o = int(np.floor(n * sc_))
            if o == n and sc_ == 1: continue
            xs = np.arange(o) / sc_
            x0 = np.floor(xs).astype(int); r = xs - x0
            i0 = np.clip(x0, 0, n - 1); i1 = np.clip(x0 + 1, 0, n - 1)
            shp = [1] * X.ndim; shp[ax] = o
            Y = np.take(Y, i0, axis=ax) * (1 - r).reshape(shp) + np.take(Y, i1, axis=ax) * r.reshape(shp)
        return Y.astype(X.dtype)
    case('resize_v10_nearest', 'Resize', [R, np.array(sc, np.float32)], attrs=dict(mode='nearest'), opset=10, outputs=[nearest_simple(R, sc)])
    case('resize_v10_linear', 'Resize', [R, np.array([1, 1, 1.5, 0.5], np.float32)], attrs=dict(mode='linear'), opset=10, outputs=[linear_asym(R, [1, 1, 1.5, 0.5])])
    case('upsample_v7_linear', 'Upsample', [R], attrs=dict(mode='linear', scales=[1.0, 1.0, 2.0, 3.0]), opset=7, outputs=[linear_asym(R, [1, 1, 2, 3])])
    case('upsample_v7_nearest', 'Upsample', [R], attrs=dict(mode='nearest', scales=[1.0, 2.0, 1.5, 2.5]), opset=7, outputs=[nearest_simple(R, [1, 2, 1.5, 2.5])])
    case('upsample_v9_linear', 'Upsample', [R, np.array([1, 1, 1.5, 2], np.float32)], attrs=dict(mode='linear'), opset=9, outputs=[linear_asym(R, [1, 1, 1.5, 2])])
    case('resize_cubic_int8', 'Resize', [(R * 40).astype(np.int8), None, np.array([1, 1, 1.7, 0.6], np.float32)], attrs=dict(mode='cubic'))
    case('resize_linear_u8', 'Resize', [(R * 40 + 100).astype(np.uint8), None, np.array([1, 1, 2, 2], np.float32)], attrs=dict(mode='linear'))
    case('resize_linear_f16', 'Resize', [R.astype(np.float16), None, np.array([1, 1, 2, 2], np.float32)], attrs=dict(mode='linear'))
    case('resize_linear_f64_3d', 'Resize', [rng.standard_normal((2, 3, 4, 5, 2)), None, np.array([1, 1.5, 0.5, 2, 1], np.float32)], attrs=dict(mode='linear', coordinate_transformation_mode='align_corners'))
    case('resize_nearest_f16_down', 'Resize', [R.astype(np.float16), None, np.array([1, 1, 0.5, 0.34], np.float32)], attrs=dict(mode='nearest', nearest_mode='ceil'))
    case('resize_nearest_5d_int64', 'Resize', [rng.integers(-9, 9, (1, 2, 3, 4, 5)).astype(np.int64), None, None, I64(1, 3, 5, 2, 7)], attrs=dict(mode='nearest', coordinate_transformation_mode='half_pixel', nearest_mode='round_prefer_ceil'))
    case('resize_tf_crop_nearest', 'Resize', [R, np.array([0, 0, 0.2, -0.1, 1, 1, 1.3, 0.8], np.float32), None, I64(1, 2, 5, 5)], attrs=dict(mode='nearest', coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=-3.0))
    case('resize_tf_crop_cubic_excl', 'Resize', [R, np.array([0, 0, 0.2, -0.1, 1, 1, 1.3, 0.8], np.float32), None, I64(1, 2, 5, 5)], attrs=dict(mode='cubic', exclude_outside=1, coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=2.0))
    case('resize_v18_axes_linear_antialias', 'Resize', [R, None, np.array([0.4, 0.6], np.float32)], attrs=dict(mode='linear', antialias=1, axes=[3, 2]), opset=18)
    case('resize_v18_cubic_antialias_small', 'Resize', [rng.standard_normal((1, 1, 20, 30)).astype(np.float32), None, np.array([1, 1, 0.13, 0.07], np.float32)], attrs=dict(mode='cubic', antialias=1), opset=18)
    case('resize_large_linear_up2', 'Resize', [rng.standard_normal((1, 8, 40, 40)).astype(np.float32), None, np.array([1, 1, 2, 2], np.float32)], attrs=dict(mode='linear'))
    case('resize_large_nearest_up2', 'Resize', [rng.standard_normal((1, 8, 40, 40)).astype(np.float32), None, np.array([1, 1, 2, 2], np.float32)], attrs=dict(mode='nearest'))

    # A chain through Shape/Gather/Concat/Reshape/Resize/NonZero with a symbolic batch dim.
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    x[x < 0.3] = 0
    inits = [numpy_helper.from_array(np.array([0], np.int64), 'zero'),
             numpy_helper.from_array(np.array([-1], np.int64), 'm1'),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), 'sc')]
    nodes = [
        h.make_node('Shape', ['X'], ['s']),
        h.make_node('Gather', ['s', 'zero'], ['b'], axis=0),
        h.make_node('Concat', ['b', 'm1'], ['shp'], axis=0),
        h.make_node('Reshape', ['X', 'shp'], ['r']),
        h.make_node('Unsqueeze', ['r', 'zero'], ['u']),
        h.make_node('Unsqueeze', ['u', 'zero'], ['u2']),
        h.make_node('Resize', ['u2', '', 'sc'], ['rs'], mode='linear'),
        h.make_node('NonZero', ['X'], ['nz']),
        h.make_node('Transpose', ['nz'], ['nzt']),
        h.make_node('Slice', ['rs', 'zero', 'm1', 'm1'], ['sl']),
    ]
    w.graph('dyn_chain', nodes, {'X': x}, ['sl', 'nzt'], inits=inits, dims={'X': ['N', 3, 4]})
