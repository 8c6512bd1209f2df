"""``Fusion``: a backend that wraps a cubepy backend and fuses runs of elementwise ops.

Elementwise ops (``unary``, ``binary``, ``where``, ``clamp``, ``cast``, ``copy``) are recorded
as ``graph.Lazy`` values instead of run. A value is computed when something needs its
memory: any other op (a matmul, a reduction, an index op) takes it as input, the host reads
it, or it is used in a layout other than in order (a transpose, a broadcast). Then the whole
run of elementwise ops under it becomes one kernel (``codegen``), so the intermediate
results are never written to memory and a chain of ten ops costs one launch. Plans are
cached by the expression's structure: a training step compiles its kernels once.

Wrap it under ``Autodiff`` for training: ``burn.Autodiff(burn.Fusion(burn.Cuda()))``.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import cubepy as cube
from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels import elementwise
from kernels.layout import Context, View, contiguous_strides, float_register, register, scalar

from ..backend import backend_for, default_backend
from ..backend.base import Backend, BurnError, WrapperBackend
from ..backend.cube.core import CubeCore
from ..backend.ops import BackendOps, ElementwiseOps
from . import codegen, reduction
from .graph import (
    MAX_OPS,
    Constant,
    Lazy,
    Op,
    Operand,
    distinct_leaves,
    leaf_bound,
    reads_in_order,
)
from .softmax import fused_softmax, softmax_rows


@dataclass
class FusionStats:
    """What a ``Fusion`` backend has done: ``launches`` of kernels for pending values (a
    value of one op runs the inner backend's own kernel), the elementwise ``ops`` they
    computed, the distinct generated ``kernels`` (plans) among them, and the
    ``reductions`` and ``softmaxes`` among the launches (kernels that computed their input's
    pending ops: one per sum, mean, max...; two per variance or logsumexp; one per softmax or
    log_softmax)."""

    launches: int = 0
    ops: int = 0
    kernels: int = 0
    reductions: int = 0
    softmaxes: int = 0


def _realized_arg(backend: Fusion, value: Any) -> Any:
    if isinstance(value, View):
        return backend.realized(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, View) for v in value):
        return type(value)(backend.realized(v) if isinstance(v, View) else v for v in value)
    return value


def _forwarded(name: str) -> Callable[..., Any]:
    """The op ``name`` of the inner backend, with its inputs computed first."""
    protocol = getattr(BackendOps, name)

    @functools.wraps(protocol, updated=())  # not __dict__: it marks the protocol abstract
    def op(self: Fusion, *args: Any, **kwargs: Any) -> Any:
        args = tuple(_realized_arg(self, a) for a in args)
        kwargs = {k: _realized_arg(self, v) for k, v in kwargs.items()}
        return getattr(self.inner, name)(*args, **kwargs)

    return op


_ELEMENTWISE = {name for name in vars(ElementwiseOps) if not name.startswith("_")}
_Forwarding = type("_Forwarding", (), {
    name: _forwarded(name) for name in sorted(BackendOps.__abstractmethods__ - _ELEMENTWISE)})


class Fusion(_Forwarding, BackendOps, WrapperBackend):  # type: ignore[misc]
    """Kernel fusion for a cubepy backend: ``burn.Fusion(burn.Cuda())``.

    Results are the unfused ones: each op still rounds to its own dtype (a GPU compiler
    allowed to contract a multiply and an add into one rounding may do so inside a fused
    kernel). ``stats`` counts the launches; ``realize(*tensors)`` computes what tensors have
    pending now.

    Example:
        >>> fusion = burn.Fusion(burn.Cpu())
        >>> x = burn.tensor([0.0, 1.0, 2.0], backend=fusion)
        >>> y = ((x * 2 + 1).exp() - 1).sqrt()   # recorded, not run
        >>> [round(v, 3) for v in y.tolist()]    # one kernel for the five ops
        [1.311, 4.369, 12.141]
        >>> fusion.stats.launches, fusion.stats.ops
        (1, 5)
    """

    def __init__(self, inner: Backend | str | None = None):
        inner = default_backend() if inner is None else backend_for(inner)
        if not isinstance(inner, CubeCore):  # NumPy, Autodiff, Fusion
            wrapped = type(inner).__name__
            hint = ("write burn.Autodiff(burn.Fusion(...)): Autodiff goes outside"
                    if wrapped == "Autodiff" else "wrap Cpu(), Cuda() or Wgpu() once")
            raise BurnError(f"Fusion({wrapped}(...)): Fusion generates cubepy kernels and "
                            f"wraps a cubepy backend; {hint}")
        super().__init__(inner, "fusion")
        self.stats = FusionStats()
        self._lock = threading.RLock()
        self._plans: set[tuple[Any, ...]] = set()
        #: the values recorded and not computed yet (while something holds them): an op
        #: that writes memory in place first computes those that read it (``_before_write``)
        self._pending: weakref.WeakSet[Lazy] = weakref.WeakSet()
        limit = _storage_buffer_limit() if inner.ctx.target == "wgsl" else None
        # distinct loads in one kernel; WebGPU also bounds the buffers a kernel binds
        self.max_leaves = min(16, limit - 1) if limit else 16

    @property
    def ctx(self) -> Context:
        """The inner backend's launch context, for a user's own kernels on real views
        (``fusion.realized(view)``)."""
        return self.inner.ctx

    def unwrapped_view(self, view: View) -> View:
        return self.realized(view)

    # ---- storage: the inner backend's, once computed ----

    def storage_to_numpy(self, storage: Any, dtype: DType) -> Any:
        if isinstance(storage, Constant):
            return storage.array.reshape(1)
        if isinstance(storage, Lazy):
            storage = self.compute(storage)
        return self.inner.storage_to_numpy(storage, dtype)

    def constant_view(self, value: np.ndarray) -> View:
        # kept on the host: fused kernels take it as an argument, others get it uploaded
        dtype = dt.from_numpy(value.dtype)
        self.check_dtype(dtype, "constant")
        return View(Constant(value, scalar(value, register(dtype))), 0, (), (), dtype)

    def compute(self, lazy: Lazy) -> Any:
        """The storage of ``lazy``, running its fused kernel if it has not run yet."""
        with self._lock:  # two threads reading one value run its kernel once
            if lazy.real is None:
                lazy.real = self._run(lazy)
                lazy.operands = ()  # what it read can be freed now
                self._pending.discard(lazy)
        return lazy.real

    def _run(self, lazy: Lazy) -> Any:
        self.stats.launches += 1
        if all(type(o) is not Lazy or o.real is not None for o in lazy.operands):
            # one op: nothing to fuse, and the inner backend's own kernel skips the tracing
            self.stats.ops += 1
            inputs = [o.view() if type(o) is Lazy else o for o in lazy.operands]
            return self._eager(lazy.op, inputs, lazy.scalars, lazy.dtype).storage
        traced = codegen.trace(lazy)
        self.stats.ops += traced.ops
        self._plans.add(traced.key)
        self.stats.kernels = len(self._plans)
        return codegen.launch(self.inner.ctx, lazy, traced).storage

    def realize(self, *tensors: Any) -> None:
        """Compute now what ``tensors`` (of this backend or of an ``Autodiff`` over it) still
        have pending, as reading them would; for timing a step, or to free what their
        pending ops keep alive.

        Example:
            >>> fusion = burn.Fusion(burn.Cpu())
            >>> y = burn.ones(3, backend=fusion) + 1
            >>> fusion.realize(y); fusion.stats.launches
            1
        """
        for tensor in tensors:
            storage = tensor.prim.storage
            if isinstance(storage, Lazy):
                self.compute(storage)

    def realized(self, view: View) -> View:
        """``view`` over real storage of the inner backend, computing it if needed."""
        storage = view.storage
        if isinstance(storage, Lazy):
            storage = self.compute(storage)
        elif isinstance(storage, Constant):
            if storage.real is None:
                storage.real = self.inner.constant(storage.array).storage
            storage = storage.real
        else:
            return view
        return View(storage, view.offset, view.shape, view.strides, view.dtype)

    # ---- reductions and softmax: their input's pending ops computed in their kernel ----

    def _fused_rows(self, x: View, rows: Callable[[Lazy], reduction.Rows | None],
                    run: Callable[[reduction.Rows], View], kinds: tuple[str, ...], stat: str
                    ) -> View | None:
        """``run`` on ``rows(value)`` when ``x`` is a whole pending value, in order or
        reshaped, that ``rows`` finds a row kernel can address (else None: the caller runs
        the plain op on ``x`` computed). ``kinds``: the generated kernels ``run`` launches,
        one each; ``stat``: the ``FusionStats`` counter they add to."""
        lazy = x.storage
        if (type(lazy) is not Lazy or x.dtype != lazy.dtype or x.offset
                or x.numel != math.prod(lazy.shape) or not x.is_contiguous):
            return None
        with self._lock:
            value = rows(lazy) if lazy.real is None else None
            if value is None:
                return None
            out = run(value)
            self.stats.launches += len(kinds)
            setattr(self.stats, stat, getattr(self.stats, stat) + len(kinds))
            self.stats.ops += value.traced.ops * len(kinds)
            self._plans.update((kind, value.traced.key) for kind in kinds)
            self.stats.kernels = len(self._plans)
            return out

    def _fused_reduction(self, x: View, axes: Sequence[int], centered: bool,
                         run: Callable[[reduction.Rows], View]) -> View | None:
        """``run`` on ``x`` as rows reducing ``axes`` (see ``_fused_rows``). ``centered``: two
        launches, the second reading a center per row."""
        ctx = self.inner.ctx
        return self._fused_rows(
            x, lambda lazy: reduction.value_rows(ctx, lazy, x.shape, axes,
                                                 self.max_leaves - centered),
            run, ("reduce", "centered")[:1 + centered], "reductions")

    def softmax(self, x: View, axis: int, log: bool, compute: DType, out_dtype: DType
                ) -> View:
        ctx = self.inner.ctx
        out = self._fused_rows(
            x, lambda lazy: softmax_rows(ctx, lazy, x.shape, axis, self.max_leaves),
            lambda value: fused_softmax(ctx, value, x.shape, log, compute, out_dtype),
            ("softmax",), "softmaxes")
        return self.inner.softmax(self.realized(x), axis, log, compute, out_dtype) \
            if out is None else out

    def reduce(self, op: str, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
               ) -> View:
        ctx = self.inner.ctx
        out = self._fused_reduction(x, axes, False, lambda value: reduction.fused_reduce(
            ctx, value, op, compute, out_dtype))
        return self.inner.reduce(op, self.realized(x), axes, compute, out_dtype) \
            if out is None else out

    def variance(self, x: View, axes: Sequence[int], correction: float, sqrt: bool,
                 compute: DType, out_dtype: DType) -> View:
        ctx = self.inner.ctx
        out = self._fused_reduction(x, axes, True, lambda value: reduction.fused_variance(
            ctx, value, correction, sqrt, compute, out_dtype))
        return self.inner.variance(self.realized(x), axes, correction, sqrt, compute,
                                   out_dtype) if out is None else out

    def logsumexp(self, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
                  ) -> View:
        ctx = self.inner.ctx
        out = self._fused_reduction(x, axes, True, lambda value: reduction.fused_logsumexp(
            ctx, value, compute, out_dtype))
        return self.inner.logsumexp(self.realized(x), axes, compute, out_dtype) \
            if out is None else out

    # ---- writes in place: after every pending read of the memory they write ----

    def _before_write(self, *targets: View | None) -> list[View | None]:
        """``targets`` over real storage, once every pending value that reads one of them
        is computed: a value recorded before a write must see the memory as it was."""
        real = [None if t is None else self.realized(t) for t in targets]
        written = {id(t.storage) for t in real if t is not None}
        with self._lock:
            pending = [lazy for lazy in list(self._pending) if lazy.real is None]
            reads: dict[int, bool] = {}  # id of a pending value: whether it reads `written`

            def reads_written(lazy: Lazy) -> bool:
                if id(lazy) not in reads:
                    reads[id(lazy)] = any(
                        reads_written(o) if type(o) is Lazy and o.real is None else
                        id(o.real if type(o) is Lazy else o.storage) in written
                        for o in lazy.operands)
                return reads[id(lazy)]

            readers = [lazy for lazy in pending if reads_written(lazy)]
            # only the outermost: each runs as one kernel with the readers under it
            inner = {id(o) for lazy in readers for o in lazy.operands if type(o) is Lazy}
            for lazy in readers:
                if id(lazy) not in inner:
                    self.compute(lazy)
        return real

    def assign(self, target: View, source: View) -> None:
        (target,) = self._before_write(target)
        self.inner.assign(target, self.realized(source))

    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool, numbers: View | None = None, in_place: bool = False
                  ) -> tuple[View, View, View]:
        if in_place:  # a captured step's update writes the parameter and its moments
            p, m, v = self._before_write(p, m, v)
        return super().adam_step(p, g, m, v, lr, betas, eps, weight_decay, step, decoupled,
                                 numbers, in_place)

    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool,
                 numbers: View | None = None, in_place: bool = False
                 ) -> tuple[View, View | None]:
        if in_place:
            p, buf = self._before_write(p, buf)
        return super().sgd_step(p, g, buf, lr, momentum, dampening, weight_decay, nesterov,
                                numbers, in_place)

    # ---- elementwise ops: recorded ----

    def _record(self, op: Op, inputs: Sequence[View], scalars: tuple[Any, ...],
                dtype: DType) -> View:
        shape = inputs[0].shape
        if inputs[0].numel == 0:  # nothing to fuse; the inner op makes the empty result
            return self._eager(op, inputs, scalars, dtype)
        operands = tuple(self._operand(v, shape) for v in inputs)
        lazies = [o for o in operands if isinstance(o, Lazy)]
        if lazies and (1 + sum(o.ops for o in lazies) > MAX_OPS
                       or (leaf_bound(operands) > self.max_leaves
                           and distinct_leaves(operands) > self.max_leaves)):
            # too big for one kernel: the operands are computed first and loaded
            for lazy in lazies:
                self.compute(lazy)
            operands = tuple(o.view() if isinstance(o, Lazy) else o for o in operands)
        strides = contiguous_strides(shape)
        lazy = Lazy(op, operands, scalars, dtype, shape, strides)
        self._pending.add(lazy)
        return View(lazy, 0, shape, strides, dtype)

    def _operand(self, view: View, shape: tuple[int, ...]) -> Operand:
        storage = view.storage
        if isinstance(storage, Constant):
            return view  # a value argument of the kernel
        if isinstance(storage, Lazy) and storage.real is None and reads_in_order(view, storage,
                                                                                  shape):
            return storage
        return self.realized(view)

    def _eager(self, op: Op, inputs: Sequence[View], scalars: tuple[Any, ...],
               dtype: DType) -> View:
        inputs = [self.realized(v) for v in inputs]
        if op.kind == "unary":
            return self.inner.unary(op.name, inputs[0], op.compute, dtype)
        if op.kind == "binary":
            return self.inner.binary(op.name, *inputs, op.compute, dtype)
        if op.kind == "where":
            return self.inner.where(*inputs, dtype)
        return self.inner.clamp(inputs[0], *_bounds(op.name, scalars), dtype)

    def unary(self, op: str, x: View, compute: DType, out_dtype: DType) -> View:
        if op not in elementwise.UNARY_OPS:  # now, not when the kernel is generated
            raise ValueError(f"unknown unary op {op!r}; ops: {', '.join(elementwise.UNARY_OPS)}")
        # computed in float32 for 16-bit floats, as the unfused kernels do
        return self._record(Op("unary", op, float_register(compute)), (x,), (), out_dtype)

    def binary(self, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
        if op not in elementwise.BINARY_OPS:
            raise ValueError(f"unknown binary op {op!r}; ops: "
                             f"{', '.join(elementwise.BINARY_OPS)}")
        return self._record(Op("binary", op, float_register(compute)), (x, y), (), out_dtype)

    def where(self, cond: View, x: View, y: View, out_dtype: DType) -> View:
        return self._record(Op("where", "", out_dtype), (cond, x, y), (), out_dtype)

    def clamp(self, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
        compute = float_register(out_dtype)
        bounds = tuple(scalar(b, compute) for b in (lo, hi) if b is not None)
        name = ("lo" if lo is not None else "") + ("hi" if hi is not None else "")
        return self._record(Op("clamp", name, compute), (x,), bounds, out_dtype)

    def cast(self, x: View, dtype: DType) -> View:
        return self.unary("identity", x, float_register(x.dtype), dtype)

    def copy(self, x: View) -> View:
        return self.unary("identity", x, x.dtype, x.dtype)


def _bounds(name: str, scalars: tuple[Any, ...]) -> tuple[Any, Any]:
    values = list(scalars)
    lo = values.pop(0) if name.startswith("lo") else None
    hi = values.pop(0) if name.endswith("hi") else None
    return lo, hi


def _storage_buffer_limit() -> int | None:
    return cube.target_info("wgsl").limits.get("max_storage_buffers_per_shader_stage")
