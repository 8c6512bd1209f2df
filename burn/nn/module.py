"""``Module``: a layer as a value that owns its parameters.

A module's parameters are its ``Tensor`` attributes; its submodules are its ``Module``
attributes and the modules in its list or tuple attributes. Modules are values, as tensors
are: ``map_parameters`` returns a new module with each parameter replaced and leaves the old
one as it was, so an optimizer's step makes the next module and a module can be sent to
another thread or device (``to``) to compute gradients there.

Example:
    >>> class Affine(burn.nn.Module):
    ...     def __init__(self, n, backend=None):
    ...         self.scale = burn.ones(n, backend=backend)
    ...         self.shift = burn.zeros(n, backend=backend)
    ...     def forward(self, x):
    ...         return x * self.scale + self.shift
    >>> m = Affine(3)
    >>> [name for name, _ in m.named_parameters()]
    ['scale', 'shift']
    >>> m(burn.ones(3)).tolist()
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..backend import backend_for
from ..backend.base import Backend, BurnError
from ..tensor.tensor import Tensor


class Module:
    """Base of every layer (see the module docstring). Subclasses define ``forward``."""

    #: False after ``eval()``: layers such as ``Dropout`` act as in inference
    training: bool = True
    #: the tensor attributes that are state, not trained (``BatchNorm``'s running
    #: statistics): listed and saved as parameters are, never tracked for gradients
    buffer_names: tuple[str, ...] = ()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- what it holds ----

    def _children(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of each parameter, submodule or list of them, in definition order."""
        for name, value in vars(self).items():
            if isinstance(value, (Tensor, Module)):
                yield name, value
            elif isinstance(value, (list, tuple)) and value and all(
                    isinstance(v, (Tensor, Module)) for v in value):
                yield name, value

    def named_parameters(self, prefix: str = "") -> list[tuple[str, Tensor]]:
        """Every parameter with its dotted path (``"layers.0.weight"``), in a fixed order."""
        found = []
        for name, value in self._children():
            items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
            for index, item in items:
                path = prefix + name + ("" if index is None else f".{index}")
                if isinstance(item, Tensor):
                    found.append((path, item))
                else:
                    found.extend(item.named_parameters(path + "."))
        return found

    def named_modules(self, prefix: str = "") -> list[tuple[str, Module]]:
        """This module (path ``""``) and every submodule with its dotted path, in a fixed
        order.

        Example:
            >>> [name for name, _ in burn.nn.Sequential(burn.nn.Linear(2, 2)).named_modules()]
            ['', 'layers.0']
        """
        found: list[tuple[str, Module]] = [(prefix.removesuffix("."), self)]
        for name, value in self._children():
            items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
            for index, item in items:
                if isinstance(item, Module):
                    path = prefix + name + ("" if index is None else f".{index}")
                    found.extend(item.named_modules(path + "."))
        return found

    def buffer_paths(self) -> set[str]:
        """The paths of the tensors that are buffers (see ``buffer_names``).

        Example:
            >>> sorted(burn.nn.Sequential(burn.nn.BatchNorm(3)).buffer_paths())
            ['layers.0.num_batches_tracked', 'layers.0.running_mean', 'layers.0.running_var']
        """
        return {f"{path}.{name}" if path else name for path, module in self.named_modules()
                for name in module.buffer_names if getattr(module, name, None) is not None}

    def parameters(self) -> list[Tensor]:
        """Every parameter, in ``named_parameters``'s order."""
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        """How many numbers the parameters hold."""
        return sum(p.numel() for p in self.parameters())

    # ---- new modules from this one ----

    def map_parameters(self, fn: Callable[[str, Tensor], Tensor], prefix: str = "") -> Module:
        """A copy of this module with each parameter ``p`` at path ``name`` replaced by
        ``fn(name, p)``; this module is unchanged.

        Example:
            >>> half = model.map_parameters(lambda name, p: p * 0.5)  # doctest: +SKIP
        """
        new = copy.copy(self)
        for name, value in self._children():
            if isinstance(value, (list, tuple)):
                items = [_mapped(item, fn, f"{prefix}{name}.{i}") for i, item in enumerate(value)]
                setattr(new, name, type(value)(items))
            else:
                setattr(new, name, _mapped(value, fn, prefix + name))
        return new

    def to(self, target: Backend | str) -> Module:
        """The module with every parameter on ``target`` (a backend or device name)."""
        backend = backend_for(target)
        return self.map_parameters(lambda name, p: p.to(backend))

    def require_grad(self) -> Module:
        """The module with every float parameter a leaf of its Autodiff backend's graph (the
        parameters must live on an ``burn.Autodiff`` backend: ``module.to(burn.Autodiff(b))``);
        buffers stay untracked.
        """
        buffers = self.buffer_paths()
        return self.map_parameters(lambda name, p: p.require_grad()
                                   if p.dtype.is_float and name not in buffers else p)

    def detach(self) -> Module:
        """The module with no parameter tracked (for inference inside an Autodiff backend)."""
        return self.map_parameters(lambda name, p: p.detach())

    def train(self, mode: bool = True) -> Module:
        """A copy of the module (and its submodules) in training mode, or inference mode."""
        new = copy.copy(self)
        new.training = mode
        for name, value in self._children():
            if isinstance(value, Module):
                setattr(new, name, value.train(mode))
            elif isinstance(value, (list, tuple)):
                setattr(new, name, type(value)(
                    v.train(mode) if isinstance(v, Module) else v for v in value))
        return new

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    # ---- values in and out ----

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every parameter as a NumPy array, by path."""
        return {name: p.numpy() for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, Any]) -> Module:
        """The module with the arrays of ``state`` (by path) as its parameters, on each
        parameter's backend and in its dtype; paths and shapes must match exactly. The new
        parameters track nothing: call ``require_grad()`` on the result to train it."""
        own = dict(self.named_parameters())
        missing, unknown = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        if missing or unknown:
            raise BurnError(f"load_state_dict: missing {missing}, unexpected {unknown}")

        def load(name: str, p: Tensor) -> Tensor:
            array = np.asarray(state[name])
            if array.shape != p.shape:
                raise BurnError(f"load_state_dict: {name} has shape {array.shape}, the module's "
                                f"parameter {p.shape}")
            return Tensor(p.backend.from_numpy(array.astype(p.dtype.numpy)), p.backend)

        return self.map_parameters(load)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={_describe(value)}" for name, value in self._children())
        return f"{type(self).__name__}({inner})"


def _mapped(value: Any, fn: Callable[[str, Tensor], Tensor], path: str) -> Any:
    if isinstance(value, Tensor):
        result = fn(path, value)
        if not isinstance(result, Tensor) or result.shape != value.shape:
            raise BurnError(f"map_parameters: the function must return a tensor of shape "
                            f"{value.shape} for {path}, got {getattr(result, 'shape', result)!r}")
        return result
    return value.map_parameters(fn, path + ".")


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"Tensor{value.shape}"
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(_describe(v) for v in value)}]"
    return repr(value)
