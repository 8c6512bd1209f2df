"""ONNX's operators on shapes and layouts: Shape, Reshape, Slice, Gather, Concat, Pad, ...

Shapes, axes and counts are host inputs (NumPy arrays); exported graphs compute them with
``Shape`` → ``Gather`` → ``Concat`` chains, which run on the host's ``NumPy`` backend.

Example:
    >>> x = burn.zeros((2, 3, 4))
    >>> attrs = burn.onnx.registry.Attributes({}, "Reshape")
    >>> burn.onnx.OPERATORS["Reshape"].run(attrs, x, np.array([0, -1])).shape
    (2, 12)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend import bounds
from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .registry import Attributes, axis_of, operator, ops, stored_dtype

_HOST = "numpy"  # the backend of values the host computes


def _host(array: np.ndarray) -> Tensor:
    array = np.asarray(array)  # (np.ascontiguousarray would make a 0-d array 1-d)
    return ops.from_numpy(array if array.flags.c_contiguous else array.copy(), backend=_HOST)


def _ints(array: np.ndarray | None) -> list[int] | None:
    return None if array is None else [int(v) for v in np.ravel(array)]


@operator("Shape", raw=True)
def shape(attrs: Attributes, x: Tensor) -> Tensor:
    dims = np.array(x.shape, np.int64)
    start, end = attrs.int("start", 0), attrs.get("end")
    return _host(dims[start:None if end is None else int(end)])


@operator("Size", raw=True)
def size(attrs: Attributes, x: Tensor) -> Tensor:
    return _host(np.array(x.numel(), np.int64))


@operator("Constant")
def constant(attrs: Attributes) -> Tensor:
    for name, dtype in [("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)]:
        if attrs.has(name):
            return _host(np.array(attrs.get(name), dtype))
    if attrs.has("value"):
        return _host(np.asarray(attrs.get("value")))
    raise attrs.refuse(f"a Constant holding {sorted(attrs.values) or 'nothing'}",
                       "burn reads value, value_float(s) and value_int(s)")


@operator("ConstantOfShape", host=(0,))
def constant_of_shape(attrs: Attributes, dims: np.ndarray) -> Tensor:
    value = np.asarray(attrs.get("value", np.zeros(1, np.float32)))
    return _host(np.full(_ints(dims), value.reshape(-1)[0], value.dtype))


@operator("Range", host=(0, 1, 2))
def arange(attrs: Attributes, start: np.ndarray, limit: np.ndarray,
           delta: np.ndarray) -> Tensor:
    return _host(np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype))


@operator("Reshape", host=(1,))
def reshape(attrs: Attributes, x: Tensor, dims: np.ndarray) -> Tensor:
    wanted = _ints(dims)
    if not attrs.int("allowzero", 0):  # a 0 copies the input's size on that axis
        wanted = [x.shape[i] if d == 0 else d for i, d in enumerate(wanted)]
    return ops.reshape(x, *wanted)


@operator("Flatten")
def flatten(attrs: Attributes, x: Tensor) -> Tensor:
    axis = attrs.int("axis", 1)
    axis = axis if axis >= 0 else axis + x.ndim
    return ops.reshape(x, math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@operator("Transpose")
def transpose(attrs: Attributes, x: Tensor) -> Tensor:
    perm = attrs.ints("perm") or list(range(x.ndim))[::-1]
    return ops.permute(x, *perm)


def _axes(attrs: Attributes, given: np.ndarray | None, since: int) -> list[int] | None:
    return attrs.ints("axes") if attrs.version < since else _ints(given)


@operator("Squeeze", host=(1,))
def squeeze(attrs: Attributes, x: Tensor, axes: np.ndarray | None = None) -> Tensor:
    listed = _axes(attrs, axes, 13)
    if not listed:
        return ops.squeeze(x)
    kept = set(range(x.ndim)) - {axis_of(a, x.ndim, "Squeeze") for a in listed}
    return ops.reshape(x, *[x.shape[i] for i in sorted(kept)])


@operator("Unsqueeze", host=(1,))
def unsqueeze(attrs: Attributes, x: Tensor, axes: np.ndarray | None = None) -> Tensor:
    listed = _axes(attrs, axes, 13)
    rank = x.ndim + len(listed)
    inserted = {axis_of(a, rank, "Unsqueeze") for a in listed}
    sizes = iter(x.shape)
    return ops.reshape(x, *[1 if i in inserted else next(sizes) for i in range(rank)])


@operator("Concat")
def concat(attrs: Attributes, *inputs: Tensor) -> Tensor:
    axis = axis_of(attrs.int("axis"), inputs[0].ndim, "Concat")
    # exporters concatenate empty shape lists; they add nothing, whatever their dtype
    filled = [t for t in inputs if t.numel()]
    return ops.cat(filled if filled else list(inputs), axis)


@operator("Split", host=(1,))
def split(attrs: Attributes, x: Tensor, sizes: np.ndarray | None = None) -> list[Tensor]:
    axis = axis_of(attrs.int("axis", 0), x.ndim, "Split")
    listed = attrs.ints("split") if attrs.version < 13 else _ints(sizes)
    if listed is None:  # equal parts, the last smaller (num_outputs, opset 18)
        parts = attrs.int("num_outputs", attrs.outputs)
        listed = [math.ceil(x.shape[axis] / parts)] * parts
        listed[-1] = x.shape[axis] - sum(listed[:-1])
    if sum(listed) != x.shape[axis]:
        raise BurnError(f"Split: sizes {listed} do not add up to the {x.shape[axis]} "
                        f"elements of axis {axis}")
    return list(ops.split(x, listed, axis))


def _slice_bounds(start: int, end: int, step: int, size: int) -> slice:
    """ONNX's clamping of a slice on an axis of ``size``, as a Python slice."""
    if step == 0:
        raise BurnError("Slice: a step of 0")
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), size), min(max(end, 0), size), step)
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return slice(start, None if end < 0 else end, step)


@operator("Slice", host=(1, 2, 3, 4))
def slice_(attrs: Attributes, x: Tensor, starts: np.ndarray | None = None,
           ends: np.ndarray | None = None, axes: np.ndarray | None = None,
           steps: np.ndarray | None = None) -> Tensor:
    if attrs.version < 10:
        starts, ends, axes = attrs.ints("starts"), attrs.ints("ends"), attrs.ints("axes")
    else:
        starts, ends, axes, steps = _ints(starts), _ints(ends), _ints(axes), _ints(steps)
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    key: list[Any] = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = axis_of(axis, x.ndim, "Slice")
        key[axis] = _slice_bounds(start, end, step, x.shape[axis])
    return x[tuple(key)]


def _wrapped(index: Tensor, size: int) -> Tensor:
    """ONNX indices may count from the end: -1 is the last. Where the index's bounds are
    known on the host (an upload), the result's are recorded too, so the op's range check
    reads nothing back from the device (and a captured graph can run it)."""
    known = bounds.known_bounds(getattr(index.prim, "storage", None))
    if known is not None and known[0] >= 0:
        return index
    wrapped = ops.where(ops.lt(index, 0), index + size, index)
    if known is not None:
        low, high = known
        bounds.remember_range(getattr(wrapped.prim, "storage", None),
                              low + size if high < 0 else min(low + size, 0),
                              high + size if high < 0 else max(high, size - 1))
    return wrapped


@operator("Gather")
def gather(attrs: Attributes, x: Tensor, index: Tensor) -> Tensor:
    axis = axis_of(attrs.int("axis", 0), x.ndim, "Gather")
    return ops.index_select(x, axis, _wrapped(index, x.shape[axis]))


@operator("GatherElements")
def gather_elements(attrs: Attributes, x: Tensor, index: Tensor) -> Tensor:
    axis = axis_of(attrs.int("axis", 0), x.ndim, "GatherElements")
    return ops.gather(x, axis, _wrapped(index, x.shape[axis]))


@operator("Expand", host=(1,))
def expand(attrs: Attributes, x: Tensor, dims: np.ndarray) -> Tensor:
    # both ways: a 1 in ``dims`` keeps the input's size (numpy's broadcasting rule)
    return ops.expand(x, *ops.broadcast_shapes("Expand", x.shape, tuple(_ints(dims))))


@operator("Tile", host=(1,))
def tile(attrs: Attributes, x: Tensor, repeats: np.ndarray) -> Tensor:
    return ops.repeat(x, *_ints(repeats))


@operator("Pad", host=(1, 2, 3))
def pad(attrs: Attributes, x: Tensor, pads: np.ndarray | None = None,
        value: np.ndarray | None = None, axes: np.ndarray | None = None) -> Tensor:
    mode = attrs.str("mode", "constant")
    if mode not in _PAD_MODES:
        raise BurnError(f"Pad: mode={mode!r} is not one ONNX defines "
                        f"({', '.join(_PAD_MODES)})")
    if attrs.version < 11:
        listed, fill = attrs.ints("pads"), attrs.float("value", 0.0)
    else:
        listed = _ints(pads)
        fill = 0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
    padded_axes = [axis_of(a, x.ndim, "Pad") for a in _ints(axes)] if axes is not None \
        else list(range(x.ndim))
    count = len(padded_axes)
    before, after = dict(zip(padded_axes, listed[:count])), dict(zip(padded_axes,
                                                                     listed[count:]))
    if mode != "constant" and any(p < 0 for p in listed):
        # ONNX leaves the order of a crop and a mirrored pad unsaid: constant mode only
        raise attrs.refuse(f"a negative pad (a crop) with mode={mode!r}", "crop with Slice, "
                           "or pad in constant mode")
    torch_order = []  # burn.pad lists (before, after) from the last axis backwards
    for axis in reversed(range(x.ndim)):
        torch_order += [before.get(axis, 0), after.get(axis, 0)]
    if mode != "constant":
        return ops.pad(x, torch_order, mode=_PAD_MODES[mode])
    return ops.pad(x, torch_order, fill)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}  # ONNX's names, burn.pad's


@operator("Trilu", host=(1,))
def trilu(attrs: Attributes, x: Tensor, k: np.ndarray | None = None) -> Tensor:
    diagonal = 0 if k is None else int(k.item())
    return ops.triu(x, diagonal) if attrs.int("upper", 1) else ops.tril(x, diagonal)


@operator("OneHot", host=(1, 2))
def one_hot(attrs: Attributes, index: Tensor, depth: np.ndarray,
            values: np.ndarray) -> Tensor:
    classes = int(np.asarray(depth).item())
    off, on = values.reshape(-1)[:2].tolist()
    dtype = stored_dtype(_host(values).dtype, index.backend)
    hot = ops.one_hot(ops.cast(_wrapped(index, classes), "int32"), classes)
    axis = attrs.int("axis", -1)
    if axis not in (-1, index.ndim):
        hot = ops.permute(hot, *_moved_last(index.ndim + 1, axis_of(axis, index.ndim + 1,
                                                                    "OneHot")))
    return ops.cast(ops.where(ops.gt(hot, 0), on, off), dtype)


def _moved_last(rank: int, axis: int) -> list[int]:
    order = list(range(rank - 1))
    order.insert(axis, rank - 1)
    return order


@operator("Dropout", host=(1, 2))
def dropout(attrs: Attributes, x: Tensor, ratio: np.ndarray | None = None,
            training: np.ndarray | None = None) -> list[Tensor]:
    if training is None or not bool(training.item()):
        return [x, ops.ones(x.shape, "bool", x.backend)][:attrs.outputs]
    # training mode: each element kept with probability 1 - ratio and scaled by its inverse;
    # with a seed, one stream per node, so that successive calls draw new masks
    p = 0.5 if ratio is None else float(ratio.item())
    if not 0.0 <= p <= 1.0:
        raise BurnError(f"Dropout: ratio must be in [0, 1], got {p}")
    generator = None
    if attrs.has("seed"):
        generator = attrs.state.setdefault("generator", ops.Generator(attrs.int("seed")))
    keep = ops.bernoulli(1.0 - p, x.shape, dtype="bool", backend=x.backend,
                         generator=generator)
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    return [ops.where(keep, x * scale, ops.zeros_like(x)), keep][:attrs.outputs]


# ---- scatters ----

_SCATTER_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _scattered(attrs: Attributes, data: Tensor, axis: int, index: Tensor,
               updates: Tensor) -> Tensor:
    """``data`` with ``updates`` written (reduction ``none``) or combined with it (``add``,
    ``mul``, ``max``, ``min``) at ``index`` along ``axis``, in scatter_add's layout
    (``index`` shaped as ``updates``)."""
    reduction = attrs.str("reduction", "none")
    if reduction in _SCATTER_REDUCTIONS:
        return ops.scatter_reduce(data, axis, index, updates, _SCATTER_REDUCTIONS[reduction])
    if reduction != "none":
        raise attrs.refuse(f"reduction={reduction!r}", "ONNX's reductions are 'none', 'add', "
                           "'mul', 'max' and 'min'")
    # written once each (ONNX leaves repeated indices undefined): a mask of the written
    # places, then the sum of the one update that lands on each
    ones = ops.ones(updates.shape, data.dtype, data.backend)
    written = ops.gt(ops.scatter_add(ops.zeros_like(data), axis, index, ones), 0)
    return ops.where(written, ops.scatter_add(ops.zeros_like(data), axis, index, updates),
                     data)


@operator("ScatterElements")
def scatter_elements(attrs: Attributes, data: Tensor, index: Tensor,
                     updates: Tensor) -> Tensor:
    axis = axis_of(attrs.int("axis", 0), data.ndim, "ScatterElements")
    return _scattered(attrs, data, axis, _wrapped(index, data.shape[axis]), updates)


@operator("ScatterND")
def scatter_nd(attrs: Attributes, data: Tensor, index: Tensor, updates: Tensor) -> Tensor:
    depth = index.shape[-1]  # the leading axes of data each index row names
    if depth > data.ndim:
        raise BurnError(f"ScatterND: index rows of {depth} for data of rank {data.ndim}")
    lead, rest = data.shape[:depth], data.shape[depth:]
    flat = ops.zeros(index.shape[:-1], index.dtype, index.backend)
    for j, size in enumerate(lead):  # row-major offsets into the leading axes
        flat = flat * size + _wrapped(ops.reshape(index[..., j], *index.shape[:-1]), size)
    count = math.prod(index.shape[:-1])
    rows = ops.reshape(data, math.prod(lead), *rest)
    spread = ops.expand(ops.reshape(flat, count, *[1] * len(rest)), count, *rest)
    written = _scattered(attrs, rows, 0, spread, ops.reshape(updates, count, *rest))
    return ops.reshape(written, *data.shape)
