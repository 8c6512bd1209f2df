"""Each ONNX operator burn imports, as a one-node model, on every backend, against ONNX's
own NumPy reference evaluator: attributes and their defaults, opset differences, negative
axes and indices, uneven pads, ceil mode, integer division's rounding."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto
from onnxbuild import Const, compare, one_node

import burn
import burn.onnx.resize
from burn.onnx.control import CONTROL_FLOW

R = np.random.default_rng(1234)


def f32(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return R.uniform(low, high, shape).astype(np.float32)


def i64(*values: int) -> Const:
    return Const(np.array(values, np.int64))


X = f32(2, 3, 4)
POS = f32(2, 3, 4, low=0.1, high=3.0)
IMG = f32(2, 4, 7, 6)
INTS = R.integers(-9, 10, (3, 5)).astype(np.int32)
NONZERO = np.where(INTS == 0, 3, INTS).astype(np.int32)
SPECIAL = np.array([1.0, np.nan, np.inf, -np.inf, -0.5], np.float32)

MATRIX_MODES = ("linear", "cubic")  # the Resize modes that weigh taps
# Cubic resizing's float32 error bound: each of its two passes is a sum of up to 8 taps (the
# antialiased halving), rounded at most 9 times in all (u = 2**-24), of |w * x| <= 1.3 max|x|
# (Keys' kernel has negative lobes); the second pass also carries the first's error times 1.3.
_U, _LOBES, _MAX_X, _ROUNDINGS = 2.0**-24, 1.3, 2.0, 9
_FIRST_PASS = _ROUNDINGS * _U * _LOBES * _MAX_X
CUBIC_ATOL = _LOBES * _FIRST_PASS + _ROUNDINGS * _U * _LOBES * (_LOBES * _MAX_X)  # 3.6e-6

UNARY = ["Abs", "Neg", "Exp", "Floor", "Ceil", "Sin", "Cos", "Tan", "Atan", "Tanh",
         "Sigmoid", "Relu", "Erf", "Sign", "Softplus", "Identity", "HardSwish", "Softsign",
         "Mish", "Selu", "Elu", "Celu", "HardSigmoid", "ThresholdedRelu", "LeakyRelu"]

CASES = {
    **{op: (op, [X], {}) for op in UNARY},
    "Log": ("Log", [POS], {}), "Sqrt": ("Sqrt", [POS], {}),
    "Reciprocal": ("Reciprocal", [POS], {}),
    "Round": ("Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.7, 2.2], np.float32)], {}),
    "IsNaN": ("IsNaN", [SPECIAL], {}), "IsInf": ("IsInf", [SPECIAL], {}),
    "IsInf_negative_only": ("IsInf", [SPECIAL], {"detect_positive": 0}),
    "Not": ("Not", [X > 0], {}), "BitwiseNot": ("BitwiseNot", [INTS], {}),
    "LeakyRelu_alpha": ("LeakyRelu", [X], {"alpha": 0.3}),
    "Gelu": ("Gelu", [X], {}, 20), "Gelu_tanh": ("Gelu", [X], {"approximate": "tanh"}, 20),
    "PRelu": ("PRelu", [X, Const(f32(3, 1))], {}),
    "Add": ("Add", [X, f32(3, 1)], {}), "Sub": ("Sub", [X, f32(4)], {}),
    "Mul": ("Mul", [X, Const(f32(1, 3, 1))], {}), "Div": ("Div", [X, POS], {}),
    "Div_int": ("Div", [INTS, NONZERO[::-1].copy()], {}),
    "Pow": ("Pow", [POS, f32(4)], {}),
    "Pow_int_exponent": ("Pow", [X, Const(np.array(2, np.int64))], {}),
    "Mod_int": ("Mod", [INTS, NONZERO[::-1].copy()], {}),
    "Mod_fmod_int": ("Mod", [INTS, NONZERO[::-1].copy()], {"fmod": 1}),
    "Mod_fmod_float": ("Mod", [X, POS], {"fmod": 1}),
    **{op: (op, [X, f32(4)], {}) for op in ["Equal", "Less", "Greater", "LessOrEqual",
                                           "GreaterOrEqual"]},
    **{op: (op, [X > 0, f32(4) > 0], {}) for op in ["And", "Or", "Xor"]},
    **{op: (op, [INTS, NONZERO[::-1].copy()], {}) for op in ["BitwiseAnd", "BitwiseOr",
                                                             "BitwiseXor"]},
    "BitShift": ("BitShift", [np.array([1, 8, 255], np.uint32), np.array([3, 1, 4], np.uint32)],
                 {"direction": "LEFT"}),
    "Where": ("Where", [X > 0, X, f32(4)], {}),
    "Max": ("Max", [X, f32(4), f32(3, 1)], {}), "Min": ("Min", [X, f32(4)], {}),
    "Sum": ("Sum", [X, f32(4), X], {}), "Mean": ("Mean", [X, f32(3, 4)], {}),
    "Cast": ("Cast", [X * 3], {"to": TensorProto.INT32}),
    "Cast_to_float16": ("Cast", [X], {"to": TensorProto.FLOAT16}),
    "CastLike": ("CastLike", [INTS, X], {}),
    "Clip": ("Clip", [X, Const(np.array(-0.5, np.float32)), Const(np.array(1, np.float32))], {}),
    "Clip_max_only": ("Clip", [X, None, Const(np.array(0.25, np.float32))], {}),
    "Softmax": ("Softmax", [X], {}), "Softmax_axis0": ("Softmax", [X], {"axis": 0}),
"LogSoftmax": ("LogSoftmax", [X], {"axis": 1}),
    "MatMul": ("MatMul", [X, f32(4, 5)], {}),
    "MatMul_batched": ("MatMul", [f32(2, 1, 3, 4), f32(3, 4, 2)], {}),
    "MatMul_vector": ("MatMul", [f32(4), f32(2, 4, 3)], {}),
    "Gemm": ("Gemm", [f32(3, 4), Const(f32(5, 4)), Const(f32(5))], {"transB": 1}),
    "Gemm_scaled": ("Gemm", [f32(4, 3), f32(4, 5), f32(3, 5)],
                    {"transA": 1, "alpha": 0.5, "beta": 2.0}),
    "Einsum_matmul": ("Einsum", [f32(3, 4), f32(4, 5)], {"equation": "ij,jk->ik"}),
    "Einsum_attention": ("Einsum", [f32(2, 3, 5, 4), f32(2, 3, 6, 4)],
                         {"equation": "bhqd,bhkd->bhqk"}),
    "Einsum_ellipsis": ("Einsum", [f32(2, 3, 4), f32(4, 5)], {"equation": "...ij,jk->...ik"}),
    "Einsum_implicit": ("Einsum", [f32(3, 4), f32(4, 5)], {"equation": "ij,jk"}),
    "Einsum_transpose_sum": ("Einsum", [X], {"equation": "abc->cb"}),
    "Einsum_outer_and_dot": ("Einsum", [f32(3), f32(4), f32(4)], {"equation": "i,j,j->i"}),
    "Einsum_batched_weights": ("Einsum", [X, f32(4, 5)], {"equation": "bij,jk->bki"}),
    "Einsum_diagonal": ("Einsum", [f32(3, 3)], {"equation": "ii->i"}),
    "Einsum_trace": ("Einsum", [f32(4, 4)], {"equation": "ii"}),
    "Einsum_diagonal_product": ("Einsum", [f32(2, 3, 3), f32(3, 4)],
                                {"equation": "bii,ik->bk"}),
    "Einsum_thrice_repeated": ("Einsum", [f32(3, 3, 3)], {"equation": "iii->i"}),
    "Einsum_diagonal_kept": ("Einsum", [f32(2, 3, 3)], {"equation": "ijj->ji"}),
    "ReduceSum": ("ReduceSum", [X, i64(-1, 0)], {}),
    "ReduceSum_all": ("ReduceSum", [X], {"keepdims": 0}),
    "ReduceSum_noop": ("ReduceSum", [X], {"noop_with_empty_axes": 1}),
    "ReduceMean_opset17": ("ReduceMean", [X], {"axes": [1]}, 17),
    "ReduceMean": ("ReduceMean", [X, i64(1)], {"keepdims": 0}),
    "ReduceMax": ("ReduceMax", [X, i64(2)], {}), "ReduceMin": ("ReduceMin", [X, i64(0, 2)], {}),
    "ReduceProd": ("ReduceProd", [X, i64(1)], {}),
    "ReduceLogSumExp": ("ReduceLogSumExp", [X, i64(2)], {}),
    "ReduceSumSquare": ("ReduceSumSquare", [X, i64(1)], {}),
    "ReduceL1": ("ReduceL1", [X, i64(1)], {}), "ReduceL2": ("ReduceL2", [X, i64(1)], {}),
    "ReduceLogSum": ("ReduceLogSum", [POS, i64(0)], {}),
    "ArgMax": ("ArgMax", [X], {"axis": 1}),
    "ArgMin_last": ("ArgMin", [np.array([[1, 0, 0], [2, 2, 5]], np.float32)],
                    {"axis": -1, "keepdims": 0, "select_last_index": 1}),
    "CumSum": ("CumSum", [X, Const(np.array(1, np.int64))], {}),
    "CumSum_exclusive_reverse": ("CumSum", [X, Const(np.array(-1, np.int32))],
                                 {"exclusive": 1, "reverse": 1}),
    "TopK": ("TopK", [X, i64(2)], {"axis": 1}, 18, 2),
    "TopK_smallest": ("TopK", [X, i64(3)], {"largest": 0}, 18, 2),
    "Shape": ("Shape", [X], {}), "Shape_slice": ("Shape", [X], {"start": 1, "end": -1}),
    "Size": ("Size", [X], {}),
    "ConstantOfShape": ("ConstantOfShape", [i64(2, 3)], {}),
    "Range": ("Range", [Const(np.array(1, np.int64)), Const(np.array(9, np.int64)),
                        Const(np.array(3, np.int64))], {}),
    "Reshape": ("Reshape", [X, i64(0, -1)], {}),
    "Reshape_allowzero": ("Reshape", [X, i64(4, 6)], {"allowzero": 1}),
    "Flatten": ("Flatten", [X], {}), "Flatten_axis": ("Flatten", [X], {"axis": -1}),
    "Transpose": ("Transpose", [X], {"perm": [1, 2, 0]}),
    "Transpose_reversed": ("Transpose", [X], {}),
    "Squeeze": ("Squeeze", [f32(1, 3, 1), i64(-1)], {}),
    "Squeeze_all": ("Squeeze", [f32(1, 3, 1)], {}),
    "Squeeze_opset11": ("Squeeze", [f32(1, 3, 1)], {"axes": [0]}, 11),
    "Unsqueeze": ("Unsqueeze", [X, i64(0, -1)], {}),
    "Concat": ("Concat", [X, f32(2, 1, 4), f32(2, 2, 4)], {"axis": -2}),
    "Split": ("Split", [X, i64(1, 3)], {"axis": 2}, 18, 2),
    "Split_num_outputs": ("Split", [f32(7, 2)], {"num_outputs": 3}, 18, 3),
    "Split_opset11": ("Split", [X], {"axis": 1, "split": [2, 1]}, 11, 2),
    "Slice": ("Slice", [X, i64(0, 1), i64(100, -1), i64(2, 1), i64(2, 1)], {}),
    "Slice_reversed": ("Slice", [X, i64(-1), i64(-1000), i64(1), i64(-2)], {}),
    "Slice_opset9": ("Slice", [X], {"starts": [1], "ends": [3], "axes": [2]}, 9),
    "Gather": ("Gather", [X, i64(2, -1, 0)], {"axis": 2}),
    "Gather_2d_index": ("Gather", [X, Const(np.array([[1, 0], [-1, 1]], np.int64))], {}),
    "GatherElements": ("GatherElements", [X, Const(R.integers(-3, 3, (2, 2, 4)))], {"axis": 1}),
    "ScatterElements": ("ScatterElements", [X, Const(np.array([[[1, 0, 2, -1]]], np.int64)),
                                            f32(1, 1, 4)], {"axis": 1}),
    "ScatterElements_add": ("ScatterElements", [X, Const(np.array([[[0], [0]]], np.int64)),
                                                f32(1, 2, 1)], {"axis": 2, "reduction": "add"}),
    "ScatterElements_mul": ("ScatterElements", [X, Const(np.array([[[0, 1, 0]], [[2, 0, 0]]],
                                                                  np.int64)), f32(2, 1, 3)],
                            {"axis": 2, "reduction": "mul"}),
    "ScatterElements_max": ("ScatterElements", [X, Const(np.array([[[1], [1], [0]]], np.int64)),
                                                f32(1, 3, 1)], {"axis": 1, "reduction": "max"}),
    "ScatterElements_min": ("ScatterElements", [X, Const(np.array([[[1], [1], [0]]], np.int64)),
                                                f32(1, 3, 1)], {"axis": 1, "reduction": "min"}),
    "ScatterND": ("ScatterND", [X, Const(np.array([[1, 2], [0, -1]], np.int64)), f32(2, 4)],
                  {}),
    "ScatterND_add_rows": ("ScatterND", [X, Const(np.array([[1], [1]], np.int64)),
                                         f32(2, 3, 4)], {"reduction": "add"}),
    "ScatterND_mul_rows": ("ScatterND", [X, Const(np.array([[1], [1]], np.int64)),
                                         f32(2, 3, 4)], {"reduction": "mul"}),
    "ScatterND_max": ("ScatterND", [X, Const(np.array([[0, 2], [0, 2], [1, 0]], np.int64)),
                                    f32(3, 4)], {"reduction": "max"}),
    "ScatterND_min": ("ScatterND", [X, Const(np.array([[0, 2], [0, 2], [1, 0]], np.int64)),
                                    f32(3, 4)], {"reduction": "min"}),
    "ScatterND_elements": ("ScatterND", [f32(4, 5), Const(np.array([[[3, 4]], [[0, 0]]],
                                                                   np.int64)), f32(2, 1)], {}),
    "Expand": ("Expand", [f32(3, 1), i64(2, 1, 4)], {}),
    "Tile": ("Tile", [f32(2, 3), i64(2, 1)], {}),
    "Pad": ("Pad", [IMG, i64(0, 0, 1, 2, 0, 0, 3, 0), Const(np.array(1.5, np.float32))], {}),
    "Pad_axes": ("Pad", [X, i64(1, 2), None, i64(-1)], {}),
    "Pad_reflect": ("Pad", [IMG, i64(0, 0, 3, 2, 0, 0, 1, 5)], {"mode": "reflect"}),
    "Pad_edge": ("Pad", [IMG, i64(0, 1, 0, 9, 0, 2, 0, 0)], {"mode": "edge"}),
    "Pad_wrap": ("Pad", [X, i64(2, 1), None, i64(-1)], {"mode": "wrap"}, 19),
    "Trilu": ("Trilu", [f32(4, 5), Const(np.array(1, np.int64))], {}),
    "Trilu_lower": ("Trilu", [f32(2, 4, 4)], {"upper": 0}),
    "OneHot": ("OneHot", [Const(np.array([0, 2, -1], np.int64)), Const(np.array(4, np.int64)),
                          Const(np.array([0.0, 5.0], np.float32))], {"axis": 0}),
    "OneHot_input": ("OneHot", [np.array([[1, 3], [0, 2]], np.int64),
                                Const(np.array(4, np.int64)),
                                Const(np.array([-1, 1], np.int32))], {}),
    "Dropout": ("Dropout", [X], {}, 18, 2),
    "Conv": ("Conv", [IMG, Const(f32(6, 2, 3, 3)), Const(f32(6))],
             {"group": 2, "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]}),
    "Conv_same": ("Conv", [IMG, Const(f32(3, 4, 2, 3))], {"auto_pad": "SAME_UPPER",
                                                          "strides": [2, 2]}),
    "Conv_1d": ("Conv", [f32(2, 3, 9), Const(f32(4, 3, 3))], {"pads": [1, 1]}),
    "Conv_3d": ("Conv", [f32(1, 4, 5, 6, 5), Const(f32(4, 2, 3, 2, 3)), Const(f32(4))],
                {"group": 2, "strides": [2, 1, 1], "pads": [1, 0, 1, 1, 1, 0]}),
    "ConvTranspose": ("ConvTranspose", [IMG, Const(f32(4, 3, 3, 2)), Const(f32(3))],
                      {"strides": [2, 1], "pads": [1, 0, 1, 0], "output_padding": [1, 0]}),
    "ConvTranspose_3d": ("ConvTranspose", [f32(1, 4, 3, 4, 3), Const(f32(4, 3, 2, 3, 2)),
                                           Const(f32(3))],
                         {"strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0],
                          "output_padding": [1, 0, 0]}),  # groups: test_volume.py
    "ConvTranspose_uneven": ("ConvTranspose", [IMG, Const(f32(4, 2, 3, 3))],
                             {"strides": [2, 2], "pads": [0, 1, 1, 0]}),
    "MaxPool": ("MaxPool", [IMG], {"kernel_shape": [3, 2], "strides": [2, 2],
                                   "pads": [1, 0, 0, 1], "ceil_mode": 1}),
    "MaxPool_dilated": ("MaxPool", [IMG], {"kernel_shape": [2, 2], "dilations": [2, 1]}),
    "MaxPool_same": ("MaxPool", [IMG], {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"}),
    "AveragePool": ("AveragePool", [IMG], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "AveragePool_counting_pads": ("AveragePool", [IMG], {"kernel_shape": [2, 3],
                                                         "pads": [1, 1, 0, 1],
                                                         "count_include_pad": 1}),
    "AveragePool_ceil": ("AveragePool", [IMG], {"kernel_shape": [2, 2], "strides": [2, 2],
                                                "ceil_mode": 1}),
    "AveragePool_1d": ("AveragePool", [f32(2, 3, 9)], {"kernel_shape": [2]}),
    "AveragePool_3d": ("AveragePool", [f32(1, 3, 5, 6, 5)], {"kernel_shape": [3, 2, 3],
                                                             "strides": [2, 2, 1],
                                                             "pads": [1, 0, 1, 1, 0, 1],
                                                             "ceil_mode": 1}),
    "MaxPool_3d": ("MaxPool", [f32(1, 3, 5, 6, 5)], {"kernel_shape": [2, 3, 2],
                                                     "strides": [2, 2, 2], "ceil_mode": 1}),
    "Resize_nearest": ("Resize", [IMG, None, Const(np.array([1, 1, 2, 1.5], np.float32))], {}),
    "Resize_nearest_sizes": ("Resize", [IMG, None, None, i64(2, 4, 11, 4)],
                             {"coordinate_transformation_mode": "asymmetric",
                              "nearest_mode": "floor"}),
    "Resize_nearest_ceil": ("Resize", [IMG, None, None, i64(2, 4, 5, 9)],
                            {"nearest_mode": "ceil"}),
    "Resize_linear": ("Resize", [IMG, None, Const(np.array([1, 1, 2, 2], np.float32))],
                      {"mode": "linear"}),
    "Resize_linear_align_corners": ("Resize", [IMG, None, None, i64(2, 4, 4, 9)],
                                    {"mode": "linear",
                                     "coordinate_transformation_mode": "align_corners"}),
    "Resize_linear_pytorch_half_pixel": ("Resize", [IMG, None, None, i64(2, 4, 1, 3)],
                                         {"mode": "linear", "coordinate_transformation_mode":
                                          "pytorch_half_pixel"}),
    "Resize_linear_symmetric_axes": ("Resize", [IMG, None, Const(np.array([1.7], np.float32))],
                                     {"mode": "linear", "axes": [3],
                                      "coordinate_transformation_mode":
                                      "half_pixel_symmetric"}, 19),
    "Resize_cubic": ("Resize", [IMG, None, Const(np.array([1, 1, 2, 1.5], np.float32))],
                     {"mode": "cubic"}),
    "Resize_cubic_exclude_outside": ("Resize", [IMG, None, None, i64(2, 4, 5, 9)],
                                     {"mode": "cubic", "cubic_coeff_a": -0.5,
                                      "exclude_outside": 1,
                                      "coordinate_transformation_mode": "asymmetric"}),
    "Resize_cubic_align_corners": ("Resize", [IMG, None, None, i64(2, 4, 10, 4)],
                                   {"mode": "cubic",
                                    "coordinate_transformation_mode": "align_corners"}),
    "Resize_linear_antialias": ("Resize", [IMG, None, None, i64(2, 4, 3, 2)],
                                {"mode": "linear", "antialias": 1}),
    "Resize_cubic_antialias": ("Resize", [IMG, None, Const(np.array([1, 1, 0.6, 0.5],
                                                                    np.float32))],
                               {"mode": "cubic", "antialias": 1, "exclude_outside": 1}),
    "Resize_cubic_antialias_growing": ("Resize", [IMG, None, None, i64(2, 4, 9, 3)],
                                       {"mode": "cubic", "antialias": 1,
                                        "coordinate_transformation_mode":
                                        "pytorch_half_pixel"}),
    "Resize_not_larger": ("Resize", [IMG, None, None, i64(14, 9)],
                          {"mode": "linear", "axes": [2, 3],
                           "keep_aspect_ratio_policy": "not_larger"}),
    "Resize_not_smaller": ("Resize", [IMG, None, None, i64(3, 2)],
                           {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}),
    "Resize_tf_crop_and_resize": ("Resize", [IMG, Const(np.array([0, 0, 0.2, -0.1, 1, 1, 0.9,
                                                                  1.2], np.float32)),
                                             None, i64(2, 4, 5, 4)],
                                  {"mode": "linear", "extrapolation_value": 7.5,
                                   "coordinate_transformation_mode": "tf_crop_and_resize"}),
    "Resize_tf_crop_nearest": ("Resize", [IMG, Const(np.array([-0.2, 1.1], np.float32)),
                                          Const(np.array([1.5], np.float32))],
                               {"axes": [3], "coordinate_transformation_mode":
                                "tf_crop_and_resize"}),
    "Resize_tf_crop_cubic": ("Resize", [IMG, Const(np.array([0.1, -0.1, 0.8, 1.3], np.float32)),
                                        None, i64(6, 5)],
                             {"mode": "cubic", "axes": [2, 3],
                              "coordinate_transformation_mode": "tf_crop_and_resize"}),
    "GlobalAveragePool": ("GlobalAveragePool", [IMG], {}),
    "GlobalMaxPool": ("GlobalMaxPool", [IMG], {}),
    "BatchNormalization": ("BatchNormalization", [IMG, Const(f32(4)), Const(f32(4)),
                                                  Const(f32(4)), Const(f32(4, low=0.5))],
                           {"epsilon": 1e-3}),
    "BatchNormalization_training": ("BatchNormalization", [IMG, Const(f32(4)), Const(f32(4)),
                                                           Const(f32(4)),
                                                           Const(f32(4, low=0.5))],
                                    {"training_mode": 1, "momentum": 0.8}, 15, 3),
    "BatchNormalization_training_y": ("BatchNormalization", [IMG, Const(f32(4)),
                                                             Const(f32(4)), Const(f32(4)),
                                                             Const(f32(4, low=0.5))],
                                      {"training_mode": 1}, 15),
    "LayerNormalization": ("LayerNormalization", [X, Const(f32(4)), Const(f32(4))], {}),
    "LayerNormalization_axis": ("LayerNormalization", [X, Const(f32(3, 4))], {"axis": 1}),
    "LayerNormalization_broadcast_scale": ("LayerNormalization", [X, Const(f32(1, 4))], {}),
    "InstanceNormalization": ("InstanceNormalization", [IMG, Const(f32(4)), Const(f32(4))],
                              {}),
    "GroupNormalization": ("GroupNormalization", [IMG, Const(f32(4)), Const(f32(4))],
                           {"num_groups": 2, "epsilon": 1e-3}, 21),
    "GroupNormalization_opset18": ("GroupNormalization", [IMG, Const(f32(2)), Const(f32(2))],
                                   {"num_groups": 2}),
}


def _case(name: str) -> tuple:
    op, inputs, attrs, *rest = CASES[name]
    opset, outputs = [*rest, *[18, 1][len(rest):]]
    return op, inputs, attrs, opset, outputs


@pytest.mark.parametrize("name", CASES)
def test_operator_matches_the_onnx_reference(backend, name):
    op, inputs, attrs, opset, outputs = _case(name)
    model = one_node(op, inputs, attrs, outputs=outputs, opset=opset)
    feeds = [v for v in inputs if isinstance(v, np.ndarray)]
    # within float32's own tolerance (tests/util.py); cubic resizing within its bound
    atol = CUBIC_ATOL if attrs.get("mode") == "cubic" else None
    compare(model, feeds, backend, atol=atol)


@pytest.mark.parametrize("name", [name for name, case in CASES.items()
                                  if case[0] == "Resize" and case[2].get("mode") in MATRIX_MODES])
def test_long_axes_resize_by_gathering_taps(backend, name, monkeypatch):
    """Axes longer than ``DENSE_LIMIT`` gather their taps rather than multiply by a matrix:
    the Resize cases again with the limit at 0."""
    monkeypatch.setattr(burn.onnx.resize, "DENSE_LIMIT", 0)
    test_operator_matches_the_onnx_reference(backend, name)


@pytest.mark.parametrize("op", ["Add", "Relu", "MatMul", "Softmax"])
def test_float16_models(backend, op):
    other = (4, 4) if op == "MatMul" else (4,)
    a, b = f32(3, 4).astype(np.float16), f32(*other).astype(np.float16)
    inputs = [a] if op in ("Relu", "Softmax") else [a, b]
    compare(one_node(op, inputs), inputs, backend, rtol=2e-2, atol=2e-3)


def test_negative_pads_crop(backend):
    """ONNX's negative pads remove elements (its reference evaluator, NumPy's pad, refuses
    them): in constant mode, the crop and the pad of each axis, against NumPy slicing."""
    x = f32(3, 5, 4)
    pads = np.array([0, -2, 1, -1, 2, -1], np.int64)  # begins, then ends, per axis
    model = one_node("Pad", [x, Const(pads), Const(np.array(9.0, np.float32))], {})
    got = burn.onnx.load(model.SerializeToString(), backend=backend)(x).numpy()
    want = np.pad(x[:2, 2:, :3], [(0, 0), (0, 2), (1, 0)], constant_values=9.0)
    np.testing.assert_array_equal(got, want)
    edge = one_node("Pad", [x, Const(pads)], {"mode": "edge"})
    with pytest.raises(burn.BurnError, match=r"a negative pad \(a crop\) with mode='edge' is "
                                             r"not supported"):
        burn.onnx.load(edge.SerializeToString(), backend=backend)(x)


def test_dropout_in_training_mode(backend):
    """Random, so checked by its properties rather than against the reference: each element
    kept with probability 1 - ratio and scaled by 1 / (1 - ratio), the mask output saying
    which; a seeded node draws a new mask on each call and repeats its sequence when loaded
    again; ratio 0 keeps everything, ratio 1 nothing."""
    x = np.abs(f32(64, 64)) + 1.0

    def load(ratio, seed=7):
        model = one_node("Dropout", [x, Const(np.array(ratio, np.float32)),
                                     Const(np.array(True))], {"seed": seed}, outputs=2)
        return burn.onnx.load(model.SerializeToString(), backend=backend)

    model = load(0.25)
    (out, mask), (_, mask2) = model(x), model(x)
    out, mask = out.numpy(), mask.numpy()
    assert mask.dtype == np.bool_ and abs((~mask).mean() - 0.25) < 0.04  # 6 sigma of 4096
    np.testing.assert_allclose(out, np.where(mask, x / 0.75, 0.0), rtol=1e-6)
    assert (mask != mask2.numpy()).any()  # a new mask per call
    again = load(0.25)(x)[1].numpy()
    assert (again == mask).all()  # the same seed, the same sequence
    assert (load(0.0)(x)[0].numpy() == x).all()
    assert not load(1.0)(x)[0].numpy().any()


def test_every_registered_operator_has_a_case():
    tested = {CASES[name][0] for name in CASES} | {"Constant"}  # Constant: test_onnx_models
    assert set(burn.onnx.OPERATORS) - tested == set()


def test_the_readme_lists_exactly_the_registered_operators():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    listed = readme.split("Operators (opsets")[1].split("Not yet:")[0]
    names = set(re.findall(r"\b[A-Z][A-Za-z0-9]+\b", " ".join(re.findall(r"`([^`]*)`", listed))))
    assert names == set(burn.onnx.OPERATORS) | set(CONTROL_FLOW)
