"""ONNX's ``Resize``: nearest, linear and cubic sampling, antialiased when shrinking.

Resizing is separable, so each resized axis is one pass. A pass's sampling is a table built on
the host once per geometry and kept on the device (a captured graph must upload nothing):
- ``nearest``: the input index of each output position, one ``index_select``;
- ``linear`` and ``cubic``: each output position weighs ``taps`` input positions (2 and 4; more
  with ``antialias=1`` when shrinking, where the kernel widens by ``1 / scale``). Along an
  axis of up to ``DENSE_LIMIT`` positions the pass is one matmul by the (out x size) matrix of
  those weights, on tensor cores where there are some; a longer axis is one ``index_select``
  of every tap, a product with the weights and a sum over the taps (the matmul's work grows
  with the axis, the gather's with the taps).

Taps past an edge read the edge value; with ``exclude_outside=1`` they weigh nothing and the
other weights are scaled back to a sum of 1. An output position that falls exactly on an input
sample takes the window on its left, as ONNX's reference evaluator does, which gives the same
weights. ``tf_crop_and_resize`` samples each axis's ``roi``, and gives
``extrapolation_value`` where that falls outside the input.

Example:
    >>> attrs = burn.onnx.registry.Attributes({"mode": "cubic"}, "Resize", version=18)
    >>> x = burn.tensor(np.arange(4.0, dtype=np.float32).reshape(1, 1, 1, 4))
    >>> y = burn.onnx.OPERATORS["Resize"].run(attrs, x, None, np.array([1, 1, 1, 2.0]))
    >>> y.shape, y.numpy()[0, 0, 0, :3].tolist()
    ((1, 1, 1, 8), [-0.10546875, 0.19140625, 0.66796875])
"""

from __future__ import annotations

import math

import numpy as np

from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .registry import Attributes, operator, ops

MODES = ("nearest", "linear", "cubic")
# Input positions per axis up to which a linear or cubic pass is a matmul (BENCHMARKS.md,
# "H200: ONNX Resize"): at most 1024 multiply-adds per output value.
DENSE_LIMIT = 1024
_HALF_WIDTH = {"linear": 1, "cubic": 2}  # the sampling kernel's reach, in input positions
_TABLES: dict[tuple, tuple[Tensor, ...]] = {}  # device index/weight tables, by geometry
_TABLES_KEPT = 64


def _source_coordinates(mode: str, size: int, out: int, scale: float,
                        crop: tuple[float, float]) -> np.ndarray:
    """Where each output position samples the input, per ``coordinate_transformation_mode``
    (``crop``: the axis's ``roi`` start and end, which only ``tf_crop_and_resize`` reads)."""
    x = np.arange(out, dtype=np.float64)
    if mode == "tf_crop_and_resize":
        start, end = crop[0] * (size - 1), crop[1] * (size - 1)
        if scale * size == 1:
            return np.full(out, (start + end) / 2)
        return start + x * (end - start) / (scale * size - 1)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if scale * size != 1 else np.full(out, -0.5)
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / (scale * size))
        return offset + (x + 0.5) / scale - 0.5
    if mode == "align_corners":
        return x * (size - 1) / (scale * size - 1) if scale * size != 1 else np.zeros(out)
    if mode == "asymmetric":
        return x / scale
    raise BurnError(f"Resize: coordinate_transformation_mode={mode!r} is not one ONNX defines "
                    f"(half_pixel, pytorch_half_pixel, half_pixel_symmetric, align_corners, "
                    f"asymmetric, tf_crop_and_resize)")


def _nearest_index(x: np.ndarray, rule: str, size: int) -> np.ndarray:
    below = np.floor(x)
    ratio = x - below
    up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
          "floor": np.zeros_like(ratio, bool), "ceil": ratio > 0}.get(rule)
    if up is None:
        raise BurnError(f"Resize: nearest_mode={rule!r} is not one ONNX defines "
                        f"(round_prefer_floor, round_prefer_ceil, floor, ceil)")
    return np.clip(below + up, 0, size - 1).astype(np.int64)


def _cubic_kernel(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient ``a`` (ONNX's ``cubic_coeff_a``)."""
    d = np.abs(distance)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(attrs: Attributes, mode: str, source: np.ndarray, size: int, scale: float
          ) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, weights)``, each ``(out, taps)``: the input positions each output position
    weighs (clamped to the input) and their weights."""
    base = np.floor(source)
    base = np.where(base == source, base - 1, base)  # an exact sample: the window on its left
    ratio = source - base  # in (0, 1]
    antialias = bool(attrs.int("antialias", 0))
    stretch = min(scale, 1.0) if antialias else 1.0
    first = math.floor(-_HALF_WIDTH[mode] / stretch) + 1
    offsets = np.arange(first, 2 - first)
    distance = (offsets[None, :] - ratio[:, None]) * stretch
    if mode == "linear":
        weights = np.clip(1 - np.abs(distance), 0, 1)
    else:
        weights = _cubic_kernel(distance, attrs.float("cubic_coeff_a", -0.75))
    if antialias:
        weights = weights / weights.sum(axis=1, keepdims=True)
    indices = base.astype(np.int64)[:, None] + offsets[None, :]
    if attrs.int("exclude_outside", 0):
        weights = np.where((indices < 0) | (indices >= size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(indices, 0, size - 1), weights


def _tables(attrs: Attributes, x: Tensor, axis: int, out: int, scale: float,
            crop: tuple[float, float]) -> tuple[Tensor, ...]:
    """``(index,)`` for nearest; for linear and cubic, ``(matrix,)`` along a short axis (out x
    size, transposed along the last axis: the matmul's right operand there), else ``(tap
    indices, weights)``, the indices flat (``out * taps``) and the weights shaped to broadcast
    against the gathered taps. ``tf_crop_and_resize`` adds a last table, where the output
    positions sample within the input."""
    mode, size = attrs.str("mode", "nearest"), x.shape[axis]
    coordinates = attrs.str("coordinate_transformation_mode", "half_pixel")
    rule = attrs.str("nearest_mode", "round_prefer_floor")
    key = (mode, coordinates, rule, attrs.int("antialias", 0), attrs.int("exclude_outside", 0),
           attrs.float("cubic_coeff_a", -0.75), crop,
           size <= DENSE_LIMIT, size, out, scale, x.ndim, axis, x.dtype, x.backend)
    if key not in _TABLES:
        if len(_TABLES) >= _TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))
        source = _source_coordinates(coordinates, size, out, scale, crop)
        if mode == "nearest":
            arrays = [_nearest_index(source, rule, size).astype(np.int32)]
        else:
            indices, weights = _taps(attrs, mode, source, size, scale)
            if size <= DENSE_LIMIT:
                arrays = [_matrix(indices, weights, size, last=axis == x.ndim - 1)]
            else:
                arrays = _gathered_taps(indices, weights, x.ndim, axis)
            arrays = [a.astype(x.dtype.numpy) if a.dtype.kind == "f" else a for a in arrays]
        if coordinates == "tf_crop_and_resize":
            arrays.append(_inside(source, size, x.ndim, axis))
        _TABLES[key] = tuple(ops.from_numpy(a, backend=x.backend) for a in arrays)
    return _TABLES[key]


def _matrix(indices: np.ndarray, weights: np.ndarray, size: int, last: bool) -> np.ndarray:
    """The taps as one (out x size) matrix; transposed for the ``last`` axis, where it is the
    matmul's right operand."""
    matrix = np.zeros((indices.shape[0], size))
    np.add.at(matrix, (np.arange(indices.shape[0])[:, None], indices), weights)  # clamped taps add
    return np.ascontiguousarray(matrix.T if last else matrix)


def _gathered_taps(indices: np.ndarray, weights: np.ndarray, ndim: int, axis: int
                   ) -> list[np.ndarray]:
    """The taps' flat int32 indices and their weights, placed to broadcast against the
    gathered taps (``out`` and ``taps`` at ``axis``)."""
    place = [1] * (ndim + 1)
    place[axis:axis + 2] = weights.shape
    return [indices.reshape(-1).astype(np.int32), weights.reshape(place)]


def _inside(source: np.ndarray, size: int, ndim: int, axis: int) -> np.ndarray:
    """Where along ``axis`` a crop samples within the input (elsewhere the output is
    ``extrapolation_value``, as TensorFlow's CropAndResize)."""
    place = [1] * ndim
    place[axis] = source.size
    return ((source >= 0) & (source <= size - 1)).reshape(place)


def _crops(attrs: Attributes, x: Tensor, axes: list[int], roi: np.ndarray | None
           ) -> list[tuple[float, float]]:
    """Each resized axis's ``roi`` start and end (``[starts..., ends...]`` over ``axes``);
    only ``tf_crop_and_resize`` needs one."""
    if attrs.str("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize":
        return [(0.0, 1.0)] * len(axes)
    if roi is None or roi.size != 2 * len(axes):
        given = "none" if roi is None else f"{roi.size} values"
        raise BurnError(f"Resize: tf_crop_and_resize needs a roi of {2 * len(axes)} values "
                        f"(the starts, then the ends, of axes {axes}); got {given}")
    values = [float(v) for v in roi.reshape(-1)]
    return list(zip(values[:len(axes)], values[len(axes):]))


def _check_attributes(attrs: Attributes, x: Tensor) -> str:
    """The mode, after refusing what burn does not run (or ONNX does not define)."""
    mode = attrs.str("mode", "nearest")
    if mode not in MODES:
        raise BurnError(f"Resize: mode={mode!r} is not one ONNX defines ({', '.join(MODES)})")
    if mode != "nearest" and not x.dtype.is_float:
        raise attrs.refuse(f"mode={mode!r} on {x.dtype.name}", "cast to a float first")
    if mode == "nearest" and attrs.int("antialias", 0):
        raise BurnError("Resize: antialias applies to the linear and cubic modes; "
                        "drop it or choose one of them")
    if attrs.version < 11:
        raise attrs.refuse("Resize before opset 11 (its coordinate rule was unspecified)",
                           "convert the model to opset 11 or later (onnx.version_converter)")
    return mode


def _sizes_and_scales(attrs: Attributes, x: Tensor, axes: list[int],
                      scales: np.ndarray | None, sizes: np.ndarray | None
                      ) -> tuple[list[int], list[float]]:
    """Each resized axis's output size and scale; ``keep_aspect_ratio_policy`` applies to
    ``sizes`` (one scale for every axis, the smallest or the largest asked for)."""
    policy = attrs.str("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise BurnError(f"Resize: keep_aspect_ratio_policy={policy!r} is not one ONNX defines "
                        f"(stretch, not_larger, not_smaller)")
    if sizes is not None and sizes.size:
        outs = [int(v) for v in sizes.reshape(-1)]
        factors = [o / x.shape[a] for a, o in zip(axes, outs)]
        if policy != "stretch":
            scale = min(factors) if policy == "not_larger" else max(factors)
            factors = [scale] * len(axes)
            outs = [int(scale * x.shape[a] + 0.5) for a in axes]  # half up, as ONNX says
        return outs, factors
    if scales is not None and scales.size:
        factors = [float(v) for v in scales.reshape(-1)]
        return [int(f * x.shape[a]) for a, f in zip(axes, factors)], factors
    raise BurnError("Resize: give scales or sizes")


def _matrix_pass(x: Tensor, axis: int, matrix: Tensor) -> Tensor:
    """One axis resampled by its matrix: ``x @ matrix`` along the last axis, else
    ``matrix @ x`` with ``axis`` swapped into the rows."""
    if axis == x.ndim - 1:
        return ops.matmul(x, matrix)
    if axis == x.ndim - 2:
        return ops.matmul(matrix, x)
    return ops.transpose(ops.matmul(matrix, ops.transpose(x, axis, -2)), axis, -2)


@operator("Resize", host=(1, 2, 3))
def resize(attrs: Attributes, x: Tensor, roi: np.ndarray | None = None,
           scales: np.ndarray | None = None, sizes: np.ndarray | None = None) -> Tensor:
    mode = _check_attributes(attrs, x)
    axes = [a % x.ndim for a in attrs.ints("axes") or range(x.ndim)]
    outs, factors = _sizes_and_scales(attrs, x, axes, scales, sizes)
    crops = _crops(attrs, x, axes, roi)
    cropping = attrs.str("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize"
    for axis, out, factor, crop in zip(axes, outs, factors, crops):
        if out == x.shape[axis] and factor == 1.0 and crop == (0.0, 1.0):
            continue
        tables = _tables(attrs, x, axis, out, factor, crop)
        if not cropping:
            x = _resample(x, mode, axis, out, tables)
            continue
        x = _resample(x, mode, axis, out, tables[:-1])
        x = ops.where(tables[-1], x, attrs.float("extrapolation_value", 0.0))
    return x


def _resample(x: Tensor, mode: str, axis: int, out: int, tables: tuple[Tensor, ...]) -> Tensor:
    """One axis's pass: a gather (nearest), a matmul or gathered taps' weighted sum."""
    if mode == "nearest":
        return ops.index_select(x, axis, tables[0])
    if len(tables) == 1:
        return _matrix_pass(x, axis, tables[0])
    indices, weights = tables
    taps = weights.shape[axis + 1]
    gathered = ops.index_select(x, axis, indices)
    gathered = ops.reshape(gathered, *x.shape[:axis], out, taps, *x.shape[axis + 1:])
    return ops.sum(gathered * weights, axis=axis + 1)
