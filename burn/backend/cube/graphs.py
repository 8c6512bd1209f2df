"""CUDA graphs for the ``Cuda`` backend, through torch: what ``burn.train.CapturedStep``
needs of them (a capture, its replay, and copies into the buffers a replay reads).

A graph records the kernels launched while it captures, with their arguments, and replays
them without any host code: the launches of a whole training step cost one call. The
backend's storage is torch's (``torch.empty`` on the current device), so memory allocated
while capturing comes from the graph's own pool and stays valid between replays.

Example:
    >>> graph = CudaGraph(backend)  # doctest: +SKIP
    >>> result = graph.capture(lambda: step(model, x))  # doctest: +SKIP
    >>> graph.replay()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.layout import View

from ..base import BurnError
from .core import CudaCore


def graph_support(backend: Any) -> str | None:
    """Why ``backend`` cannot capture CUDA graphs, in words (None when it can)."""
    if not isinstance(backend, CudaCore):
        return (f"CUDA graphs need the Cuda backend; this step runs on {backend.name}, "
                f"where the step can be called directly")
    if not backend.on_gpu:
        return "CUDA graphs need a CUDA GPU; this Cuda backend runs on Triton's interpreter"
    if backend._torch_empty is None:
        return "CUDA graphs are captured through torch, which is not installed (CuPy is)"
    return None


class CudaGraph:
    """One CUDA graph on ``backend``'s device: ``capture`` once, then ``replay``."""

    def __init__(self, backend: CudaCore):
        reason = graph_support(backend)
        if reason is not None:
            raise BurnError(reason)
        import torch

        self._torch = torch
        self._graph = torch.cuda.CUDAGraph()

    def capture(self, body: Callable[[], Any]) -> Any:
        """Run ``body`` while capturing its launches (they do not execute: ``replay`` runs
        them) and return what it returned."""
        torch = self._torch
        torch.cuda.synchronize()  # the eager steps before it are done with their memory
        with torch.cuda.graph(self._graph):
            return body()

    def replay(self) -> None:
        """Launch the captured kernels again, on the current stream."""
        self._graph.replay()


def _tensor(view: View) -> Any:
    """``view`` as a torch tensor over its storage (no copy)."""
    import torch

    return torch.as_strided(view.storage, view.shape, view.strides, view.offset)


def write(view: View, values: np.ndarray) -> None:
    """Copy host ``values`` into ``view`` on the current stream, not waiting for it (through
    pinned memory, which torch keeps until the copy is done)."""
    import torch

    host = torch.from_numpy(np.ascontiguousarray(values).reshape(view.shape)).pin_memory()
    _tensor(view).copy_(host, non_blocking=True)


def copy(target: View, source: View) -> None:
    """Copy ``source`` into ``target`` (same shape and dtype) on the current stream; inside
    a capture, the copy becomes part of the graph."""
    _tensor(target).copy_(_tensor(source))


def clone(view: View) -> View:
    """A fresh contiguous copy of ``view``."""
    tensor = _tensor(view).contiguous().clone()
    return View(tensor.reshape(-1), 0, tuple(view.shape), tuple(tensor.stride()), view.dtype)


def clone_layout(view: View) -> View:
    """A copy of ``view`` that kernels see laid out as ``view`` (offset, strides): a clone
    of the dense ``view`` alone, else of its whole storage."""
    if view.offset == 0 and view.is_contiguous:
        return clone(view)
    return View(view.storage.clone(), view.offset, view.shape, view.strides, view.dtype)


def same_place(a: View, b: View) -> bool:
    """Whether two views read the same elements of the same storage."""
    return (a.storage.data_ptr() == b.storage.data_ptr() and a.offset == b.offset
            and a.shape == b.shape and a.strides == b.strides)
