"""``MixedPrecision``: train in a 16-bit float with float32 master parameters.

The model's parameters stay in their own dtype (float32): those are what the optimizer
updates, so small updates are not rounded away. Each step runs the model on 16-bit copies:
``compute_model`` casts every float parameter on the Autodiff backend, so the casts are in
the graph and each parameter's gradient comes back in its own dtype; ``inputs`` casts the
float inputs (integer ones, such as token ids or labels, stay as they are). The model's
output is cast back to float32 (``output``) so the loss is computed in float32. Inside,
burn's reductions (sums, softmax, normalizations) and matmuls accumulate in float32 for
16-bit operands, and their results are rounded once.

bfloat16 has float32's range, so it needs no loss scaling. float16 does: its gradients
underflow to zero below about 6e-8. ``loss_scale`` multiplies the loss before ``backward``
and ``unscale`` divides the gradients again:

- ``"dynamic"`` (float16's default): start at ``init_scale``; a step whose gradients hold an
  infinity or NaN (the scale was too large) is skipped and the scale halved; after
  ``growth_interval`` steps in a row without one, it doubles. Telling whether gradients are
  finite reads one number from the device per step.
- a number: a fixed scale, no check (nothing is read back, so a ``CapturedStep`` can replay it).
- ``None`` (bfloat16's default): no scaling.

``burn.train.Learner(..., precision="bfloat16")`` does all of this; a loop of one's own calls
the methods.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> model = burn.nn.Linear(4, 2, generator=burn.Generator(0)).to(ad).require_grad()
    >>> amp, opt = burn.train.MixedPrecision("bfloat16"), burn.optim.SGD(lr=0.1)
    >>> x, y = burn.ones((8, 4), backend=ad), burn.zeros((8, 2), backend=ad)
    >>> out = amp.output(amp.compute_model(model)(*amp.inputs([x])))
    >>> grads = amp.unscale(amp.scale(burn.nn.mse_loss(out, y)).backward())
    >>> model = opt.step(model, grads)
    >>> str(model.weight.dtype), str(out.dtype)
    ('f32', 'f32')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cubepy.ir import dtypes as dt

from ..autodiff import Gradients
from ..backend.base import Backend, BurnError
from ..nn.module import Module
from ..tensor.tensor import Tensor


class MixedPrecision:
    """Run a model in ``dtype`` (``"bfloat16"`` or ``"float16"``) with its parameters kept
    in their own dtype, and scale the loss as ``loss_scale`` says (see the module docstring).
    """

    def __init__(self, dtype: str | dt.DType = "bfloat16", *,
                 loss_scale: float | str | None = "default", init_scale: float = 2.0 ** 16,
                 growth_interval: int = 2000):
        compute = dtype if isinstance(dtype, dt.DType) else dt.BY_NAME.get(str(dtype))
        if compute not in (dt.bfloat16, dt.float16):
            raise BurnError(f"MixedPrecision: the compute dtype must be 'bfloat16' or "
                            f"'float16', got {dtype!r} (float32 needs no MixedPrecision: "
                            f"leave precision=None)")
        if loss_scale == "default":
            loss_scale = "dynamic" if compute == dt.float16 else None
        if loss_scale is not None and loss_scale != "dynamic" and not (
                isinstance(loss_scale, (int, float)) and math.isfinite(loss_scale)
                and loss_scale > 0):
            raise BurnError(f"MixedPrecision: loss_scale must be 'dynamic', a number > 0 or "
                            f"None, got {loss_scale!r}")
        if not (math.isfinite(init_scale) and init_scale > 0):
            raise BurnError(f"MixedPrecision: init_scale must be a number > 0, got "
                            f"{init_scale!r}")
        if not isinstance(growth_interval, int) or growth_interval < 1:
            raise BurnError(f"MixedPrecision: growth_interval must be an int >= 1 (steps "
                            f"without overflow before the scale doubles), got "
                            f"{growth_interval!r}")
        self.dtype = compute
        self.dynamic = loss_scale == "dynamic"
        #: the factor the loss is multiplied by (1.0: none)
        self.scale_factor = float(init_scale if self.dynamic else loss_scale or 1.0)
        self.growth_interval = growth_interval
        #: steps in a row whose gradients were finite, and steps skipped in all
        self.good_steps = 0
        self.skipped_steps = 0

    def __repr__(self) -> str:
        scale = ("dynamic" if self.dynamic else
                 self.scale_factor if self.scale_factor != 1.0 else None)
        return f"MixedPrecision({self.dtype.name!r}, loss_scale={scale!r})"

    # ---- the forward pass ----

    def check_backend(self, backend: Backend, what: str = "MixedPrecision") -> None:
        """Raise ``BurnError`` naming the dtype if ``backend`` cannot compute in it."""
        backend.check_dtype(self.dtype, what)

    def compute_model(self, model: Module) -> Module:
        """``model`` with each float parameter cast to the compute dtype (recorded, so the
        gradients reach the parameters themselves, in their own dtype); buffers (``BatchNorm``'s
        running statistics) are the model's own, so their updates reach it."""
        buffers = model.buffer_paths()  # BatchNorm's statistics: float32, updated in place
        return model.map_parameters(lambda name, p: p if name in buffers else self._cast(p))

    def inputs(self, values: Sequence[Any]) -> list[Any]:
        """The float tensors of ``values`` in the compute dtype; anything else as it is."""
        return [self._cast(v) if isinstance(v, Tensor) else v for v in values]

    def output(self, value: Any) -> Any:
        """A model's output with its 16-bit float tensors cast to float32 (tuples and lists
        of them too), for the loss and the metrics."""
        if isinstance(value, Tensor):
            return value.to(dt.float32) if value.dtype in (dt.bfloat16, dt.float16) else value
        if isinstance(value, (tuple, list)):
            return type(value)(self.output(v) for v in value)
        return value

    def _cast(self, t: Tensor) -> Tensor:
        return t.to(self.dtype) if t.dtype.is_float and t.dtype.bits > self.dtype.bits else t

    # ---- the loss and the gradients ----

    def scale(self, loss: Tensor) -> Tensor:
        """``loss`` times the loss scale (the loss itself when there is none)."""
        return loss if self.scale_factor == 1.0 else loss * self.scale_factor

    def unscale(self, grads: Gradients, factor: float = 1.0) -> Gradients | None:
        """The gradients of the scaled loss divided by the scale (and times ``factor``, as
        averaging accumulated batches asks), or None when the scale is dynamic and they hold
        an infinity or NaN: that step is to be skipped, and the scale has been halved."""
        inverse = factor / self.scale_factor
        if self.dynamic and not _finite(grads):
            self.skipped_steps += 1
            self.good_steps = 0
            self.scale_factor *= 0.5
            return None
        if self.dynamic:
            self.good_steps += 1
            if self.good_steps == self.growth_interval:
                self.good_steps = 0
                self.scale_factor *= 2.0
        return grads if inverse == 1.0 else grads.scaled(inverse)

    # ---- checkpoints ----

    def state_dict(self) -> dict[str, float | int]:
        """The loss scale's state (JSON values), for checkpoints."""
        return {"scale": self.scale_factor, "good_steps": self.good_steps,
                "skipped_steps": self.skipped_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``'s values."""
        self.scale_factor = float(state["scale"])
        self.good_steps, self.skipped_steps = int(state["good_steps"]), int(
            state["skipped_steps"])


def _finite(grads: Gradients) -> bool:
    """Whether every gradient is finite: one sum of magnitudes, read back as one number (an
    infinity or NaN anywhere makes it non-finite; shader compilers may assume away NaN
    comparisons, not arithmetic on them)."""
    total = None
    for grad in grads.leaves().values():
        part = grad.to(dt.float32).abs().sum()
        total = part if total is None else total + part
    return total is None or math.isfinite(total.item())


def resolve_precision(precision: MixedPrecision | str | dt.DType | None
                      ) -> MixedPrecision | None:
    """``Learner(precision=...)``'s value as a ``MixedPrecision`` (None: train in the
    parameters' own dtype)."""
    if precision is None or isinstance(precision, MixedPrecision):
        return precision
    if isinstance(precision, (str, dt.DType)):
        return MixedPrecision(precision)
    raise BurnError(f"Learner: precision must be 'bfloat16', 'float16', a "
                    f"burn.train.MixedPrecision or None, got {type(precision).__name__}")
