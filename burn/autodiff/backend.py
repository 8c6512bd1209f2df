"""``Autodiff``: a backend that wraps another and records what gradients need.

Every op runs on the inner backend (its kernels, its storage); when an input is tracked the
result gets a ``graph.Node`` with the op's backward rule (``pointwise``, ``reductions``,
``indexing``, ``linalg``, ``attention``). Untracked inputs cost one ``isinstance`` test per
op. Results that are not floats (comparisons, indices, casts to integers) never track.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([1.0, 2.0, 3.0], backend=ad).require_grad()
    >>> grads = (x.exp() * 2).sum().backward()
    >>> x.grad(grads).shape
    (3,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..backend import backend_for, default_backend
from ..backend.base import Backend, BurnError, WrapperBackend
from ..backend.ops import BackendOps
from ..tensor import Tensor
from . import indexing, linalg, pointwise, reductions
from .attention import attention_rule
from .graph import MakeRule, Node, Rule, Saved, TrackedView, injective, node_of, plain


class Autodiff(BackendOps, WrapperBackend):
    """Gradients for any backend: ``burn.Autodiff(burn.Cuda())``.

    Tensors on it behave as on the inner backend; ``x.require_grad()`` marks a leaf,
    ``loss.backward()`` returns the gradients, ``x.grad(grads)`` reads one (a tensor of the
    inner backend), ``x.detach()`` stops tracking and ``x.inner()`` gives the inner tensor.

    Example:
        >>> ad = burn.Autodiff("cpu")
        >>> w = burn.tensor([2.0], backend=ad).require_grad()
        >>> (w * w * 3).sum().backward()[w].tolist()
        [12.0]
    """

    def __init__(self, inner: Backend | str | None = None):
        inner = default_backend() if inner is None else backend_for(inner)
        if isinstance(inner, Autodiff):
            raise BurnError("Autodiff(Autodiff(...)): wrap the plain backend once; for "
                            "gradients of gradients call loss.backward(create_graph=True), "
                            "whose gradients are tracked and can be differentiated again")
        super().__init__(inner, "autodiff")

    def constant(self, scalar: Any) -> View:
        return self.inner.constant(scalar)  # the inner backend's (Fusion keeps them on the host)

    # ---- recording ----

    def leaf(self, view: View) -> TrackedView:
        """A new leaf over ``view``'s values (copied first if its layout aliases)."""
        base = plain(view)
        if not injective(base):
            base = self.inner.copy(base)
        node = Node("leaf", (), None, base.shape, base.dtype, self.inner)
        return TrackedView(base.storage, base.offset, base.shape, base.strides, base.dtype,
                           node)

    def record(self, op: str, out: View, inputs: Sequence[View | None], make_rule: MakeRule,
               keeps_output: bool = False) -> View:
        """``out`` tracked by a node of ``op`` when an input is tracked and ``out`` is float.
        ``make_rule(saved)`` makes the node's rule when a backward pass reaches it
        (``graph.Saved``); ``keeps_output`` when that rule reads ``saved.output()``."""
        parents = tuple(node_of(v) for v in inputs)
        if not out.dtype.is_float or all(p is None for p in parents):
            return out
        if not injective(out):  # origins of view chains never alias (graph's docstring)
            out = self.inner.copy(out)
        node = Node(op, parents, make_rule, out.shape, out.dtype, self.inner,
                    out if keeps_output else None)
        return TrackedView(out.storage, out.offset, out.shape, out.strides, out.dtype, node)

    # ---- elementwise ----

    def unary(self, op: str, x: View, compute: DType, out_dtype: DType) -> View:
        out = self.inner.unary(op, plain(x), compute, out_dtype)
        if not pointwise.differentiable_unary(op):
            return out
        # keep only what the derivative reads: a node holds its tensors until backward
        kept = None if op in pointwise.UNARY_INPUT_UNREAD else x
        reads_output = op in pointwise.UNARY_READS_OUTPUT_ONLY
        return self.record(op, out, (x,), lambda s: pointwise.unary_rule(
            op, None if kept is None else s(kept), s.output() if reads_output else None,
            s.create_graph), keeps_output=reads_output)

    def binary(self, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
        out = self.inner.binary(op, plain(x), plain(y), compute, out_dtype)
        if not pointwise.differentiable_binary(op):
            return out
        if op in pointwise.LINEAR:  # the gradients are g and +-g: keeps no tensor alive
            return self.record(op, out, (x, y), lambda s: pointwise.binary_rule(
                op, None, None, None))
        # the output serves only y's gradient (div, pow): not kept when y is a constant
        reads = op in pointwise.READS_OUTPUT and node_of(y) is not None
        return self.record(op, out, (x, y), lambda s: pointwise.binary_rule(
            op, s(x), s(y), s.output() if reads else None), keeps_output=reads)

    def where(self, cond: View, x: View, y: View, out_dtype: DType) -> View:
        out = self.inner.where(plain(cond), plain(x), plain(y), out_dtype)
        return self.record("where", out, (None, x, y),
                           lambda s: pointwise.where_rule(s(cond)))

    def clamp(self, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
        out = self.inner.clamp(plain(x), lo, hi, out_dtype)
        return self.record("clamp", out, (x,),
                           lambda s: pointwise.clamp_rule(s(x), lo, hi))

    def cast(self, x: View, dtype: DType) -> View:
        out = self.inner.cast(plain(x), dtype)
        return self.record("cast", out, (x,), lambda s: pointwise.pass_through_rule)

    def copy(self, x: View) -> View:
        out = self.inner.copy(plain(x))
        return self.record("copy", out, (x,), lambda s: pointwise.pass_through_rule)

    # ---- creation and random numbers: never tracked, but dropout ----

    def full(self, shape: Sequence[int], value: Any, dtype: DType) -> View:
        return self.inner.full(shape, value, dtype)

    def arange(self, start: float, step: float, n: int, dtype: DType) -> View:
        return self.inner.arange(start, step, n, dtype)

    def linspace(self, start: float, stop: float, n: int, dtype: DType) -> View:
        return self.inner.linspace(start, stop, n, dtype)

    def eye(self, n: int, m: int, dtype: DType) -> View:
        return self.inner.eye(n, m, dtype)

    def random_uniform(self, shape, low, high, dtype, stream) -> View:  # noqa: ANN001
        return self.inner.random_uniform(shape, low, high, dtype, stream)

    def random_normal(self, shape, mean, std, dtype, stream) -> View:  # noqa: ANN001
        return self.inner.random_normal(shape, mean, std, dtype, stream)

    def random_randint(self, shape, low, high, dtype, stream) -> View:  # noqa: ANN001
        return self.inner.random_randint(shape, low, high, dtype, stream)

    def random_bernoulli(self, p: View, dtype: DType, stream: Any) -> View:
        return self.inner.random_bernoulli(plain(p), dtype, stream)

    def random_dropout(self, x: View, p: float, stream: Any) -> View:
        if node_of(x) is None:
            return self.inner.random_dropout(plain(x), p, stream)
        # the same draws as the inner dropout of x: its mask is dropout of ones, and the
        # backward pass needs that mask
        ones = self.inner.full(x.shape, 1, x.dtype)
        scale = self.inner.random_dropout(ones, p, stream)
        out = self.inner.binary("mul", plain(x), scale, x.dtype, x.dtype)
        return self.record("dropout", out, (x,), lambda s: _scaled_by(s(scale)))

    # ---- reductions ----

    def reduce(self, op: str, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
               ) -> View:
        out = self.inner.reduce(op, plain(x), axes, compute, out_dtype)
        if op in reductions.SHAPE_ONLY:  # keeps no tensor alive
            shape = x.shape
            return self.record(op, out, (x,), lambda s: reductions.spread_rule(op, shape, axes))
        reads = op in ("max", "min")  # prod's rule reads the input alone
        return self.record(op, out, (x,), lambda s: reductions.reduce_rule(
            op, s(x), axes, s.output() if reads else None), keeps_output=reads)

    def argreduce(self, op: str, x: View, axes: Sequence[int], out_dtype: DType) -> View:
        return self.inner.argreduce(op, plain(x), axes, out_dtype)

    def variance(self, x: View, axes: Sequence[int], correction: float, sqrt: bool,
                 compute: DType, out_dtype: DType) -> View:
        out = self.inner.variance(plain(x), axes, correction, sqrt, compute, out_dtype)
        return self.record("std" if sqrt else "var", out, (x,), lambda s: (
            reductions.variance_rule(s(x), axes, correction, sqrt, s.output() if sqrt else None)),
            keeps_output=sqrt)

    def logsumexp(self, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
                  ) -> View:
        out = self.inner.logsumexp(plain(x), axes, compute, out_dtype)
        return self.record("logsumexp", out, (x,), lambda s: reductions.logsumexp_rule(
            s(x), axes, s.output()), keeps_output=True)

    def scan(self, op: str, x: View, axis: int, compute: DType, out_dtype: DType) -> View:
        out = self.inner.scan(op, plain(x), axis, compute, out_dtype)
        return self.record(op, out, (x,), lambda s: reductions.scan_rule(
            op, s(x), axis, s.output() if op == "cumprod" else None),
            keeps_output=op == "cumprod")

    def softmax(self, x: View, axis: int, log: bool, compute: DType, out_dtype: DType) -> View:
        out = self.inner.softmax(plain(x), axis, log, compute, out_dtype)
        return self.record("log_softmax" if log else "softmax", out, (x,),
                           lambda s: reductions.softmax_rule(axis, log, s.output()),
                           keeps_output=True)

    def layer_norm(self, x: View, k: int, weight: View | None, bias: View | None, eps: float,
                   compute: DType, out_dtype: DType) -> View:
        out = self.inner.layer_norm(plain(x), k, _plain(weight), _plain(bias), eps, compute,
                                    out_dtype)
        return self.record("layer_norm", out, (x, weight, bias), lambda s: reductions.norm_rule(
            s, s(x), k, _optional(s, weight), eps, False, compute))

    def rms_norm(self, x: View, k: int, weight: View | None, eps: float, compute: DType,
                 out_dtype: DType) -> View:
        out = self.inner.rms_norm(plain(x), k, _plain(weight), eps, compute, out_dtype)
        return self.record("rms_norm", out, (x, weight), lambda s: reductions.norm_rule(
            s, s(x), k, _optional(s, weight), eps, True, compute))

    def batch_norm(self, x: View, mean: View | None, var: View | None, weight: View | None,
                   bias: View | None, eps: float, compute: DType, out_dtype: DType
                   ) -> tuple[View, View, View]:
        out, batch_mean, batch_var = self.inner.batch_norm(
            plain(x), _plain(mean), _plain(var), _plain(weight), _plain(bias), eps, compute,
            out_dtype)
        own = mean is None  # normalized by the batch's statistics, which depend on x
        tracked = self.record("batch_norm", out, (x, weight, bias, mean, var), lambda s: (
            reductions.batch_norm_rule(s, s(x), _optional(s, weight),
                                       s(batch_mean if own else mean),
                                       s(batch_var if own else var), own, eps, compute)))
        # the statistics come back untracked: a module keeps them as buffers
        return tracked, batch_mean, batch_var

    # ---- indexing, joining, sorting ----

    def index_range(self, index: View) -> tuple[int, int]:
        return self.inner.index_range(plain(index))

    def gather(self, x: View, axis: int, index: View) -> View:
        out = self.inner.gather(plain(x), axis, plain(index))
        return self.record("gather", out, (x, None), lambda s: indexing.gather_rule(
            s(x), axis, s(index)))

    def assign(self, target: View, source: View) -> None:
        self.inner.assign(plain(target), plain(source))  # untracked, as the buffers it serves

    def take(self, x: View, axis: int, index: View) -> View:
        out = self.inner.take(plain(x), axis, plain(index))
        return self.record("take", out, (x, None), lambda s: indexing.take_rule(
            s(x), axis, s(index)))

    def scatter_add(self, x: View, axis: int, index: View, src: View) -> View:
        out = self.inner.scatter_add(plain(x), axis, plain(index), plain(src))
        return self.record("scatter_add", out, (x, None, src), lambda s: (
            indexing.scatter_add_rule(axis, s(index), src.shape)))

    def scatter_reduce(self, x: View, axis: int, index: View, src: View, op: str,
                       include_self: bool) -> View:
        out = self.inner.scatter_reduce(plain(x), axis, plain(index), plain(src), op,
                                        include_self)
        extreme = op in ("max", "min")  # their rule compares the inputs with the result
        return self.record(f"scatter_reduce_{op}", out, (x, None, src), lambda s: (
            indexing.scatter_reduce_rule(op, include_self, axis, s(x), s(index), s(src),
                                         s.output() if extreme else None)),
                           keeps_output=extreme)

    def one_hot(self, index: View, num_classes: int, dtype: DType) -> View:
        return self.inner.one_hot(plain(index), num_classes, dtype)

    def triangle(self, x: View, diagonal: int, upper: bool) -> View:
        out = self.inner.triangle(plain(x), diagonal, upper)
        return self.record("triu" if upper else "tril", out, (x,),
                           lambda s: indexing.triangle_rule(diagonal, upper))

    def cat(self, xs: Sequence[View], axis: int, dtype: DType) -> View:
        out = self.inner.cat([plain(v) for v in xs], axis, dtype)
        return self.record("cat", out, tuple(xs), lambda s: indexing.cat_rule(
            [v.shape[axis] for v in xs], axis))

    def pad(self, x: View, pads: Sequence[tuple[int, int]], value: Any) -> View:
        out = self.inner.pad(plain(x), pads, value)
        return self.record("pad", out, (x,), lambda s: indexing.pad_rule(x.shape, pads))

    def sort(self, x: View, axis: int, k: int, descending: bool, index_dtype: DType
             ) -> tuple[View, View]:
        values, indices = self.inner.sort(plain(x), axis, k, descending, index_dtype)
        values = self.record("sort", values, (x,), lambda s: indexing.sort_rule(
            s(x), axis, s(indices)))
        return values, indices

    # ---- linear algebra, convolution, pooling ----

    def matmul(self, a: View, b: View, out_dtype: DType) -> View:
        out = self.inner.matmul(plain(a), plain(b), out_dtype)
        return self.record("matmul", out, (a, b), lambda s: linalg.matmul_rule(s(a), s(b)))

    def conv2d(self, x: View, weight: View, bias: View | None, stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], groups: int,
               out_size: Sequence[int]) -> View:
        out = self.inner.conv2d(plain(x), plain(weight), _plain(bias), stride, padding,
                                dilation, groups, out_size)
        return self.record("conv2d", out, (x, weight, bias), lambda s: linalg.conv2d_rule(
            s(x), s(weight), stride, padding, dilation, groups))

    def pool2d(self, op: str, x: View, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], out_size: Sequence[int]
               ) -> View:
        out = self.inner.pool2d(op, plain(x), kernel, stride, padding, dilation, out_size)
        return self.record(f"{op}_pool2d", out, (x,), lambda s: linalg.pool2d_rule(
            op, s(x), s.output() if op == "max" else None, kernel, stride, padding, dilation),
            keeps_output=op == "max")

    def adaptive_avg_pool2d(self, x: View, out_size: Sequence[int]) -> View:
        out = self.inner.adaptive_avg_pool2d(plain(x), out_size)
        return self.record("adaptive_avg_pool2d", out, (x,),
                           lambda s: linalg.adaptive_avg_pool2d_rule(s, x.shape))

    def attention(self, q: View, k: View, v: View, causal: bool, scale: float
                  ) -> tuple[View, View]:
        out, lse = self.inner.attention(plain(q), plain(k), plain(v), causal, scale)
        tracked = self.record("attention", out, (q, k, v), lambda s: attention_rule(
            s, s(q), s(k), s(v), s.output(), s(lse), causal, scale), keeps_output=True)
        return tracked, lse  # lse is a saved value of the rule, not differentiable

    def norm_backward(self, x: View, k: int, weight: View | None, d_out: View, eps: float,
                      rms: bool, params: bool, compute: DType
                      ) -> tuple[View, View | None, View | None]:
        # untracked: a graph-building backward composes the norms' gradients instead
        return self.inner.norm_backward(plain(x), k, _plain(weight), plain(d_out), eps, rms,
                                        params, compute)

    def batch_norm_backward(self, x: View, d_out: View, mean: View, var: View,
                            weight: View | None, eps: float, params: bool, compute: DType
                            ) -> tuple[View, View | None, View | None]:
        # untracked: a graph-building backward composes batch_norm's gradients instead
        return self.inner.batch_norm_backward(plain(x), plain(d_out), plain(mean), plain(var),
                                              _plain(weight), eps, params, compute)

    def attention_backward(self, q: View, k: View, v: View, out: View, lse: View, d_out: View,
                           causal: bool, scale: float) -> tuple[View, View, View]:
        # untracked: a graph-building backward composes attention's gradient instead
        # (burn.autodiff.attention)
        return self.inner.attention_backward(plain(q), plain(k), plain(v), plain(out),
                                             plain(lse), plain(d_out), causal, scale)

    # ---- optimizer steps: on parameters' values, never tracked ----

    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool, numbers: View | None = None, in_place: bool = False
                  ) -> tuple[View, View, View]:
        return self.inner.adam_step(plain(p), plain(g), _plain(m), _plain(v), lr, betas, eps,
                                    weight_decay, step, decoupled, _plain(numbers), in_place)

    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool,
                 numbers: View | None = None, in_place: bool = False
                 ) -> tuple[View, View | None]:
        return self.inner.sgd_step(plain(p), plain(g), _plain(buf), lr, momentum, dampening,
                                   weight_decay, nesterov, _plain(numbers), in_place)


def _plain(view: View | None) -> View | None:
    return None if view is None else plain(view)


def _optional(saved: Saved, view: View | None) -> Tensor | None:
    return None if view is None else saved(view)


def _scaled_by(scale: Tensor) -> Rule:
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        return (grad * scale,)

    return rule
