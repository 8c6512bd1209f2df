"""The ``Tensor`` API; importing this package attaches every op family's methods.

Each family module (``elementwise``, ``views``, ``reduce``, ``batch_norm``, ``index``,
``scatter``, ``linalg``, ``conv_transpose``, ``volume``, ``attention``, ``random``) defines its
functions, attaches the ones that are methods with ``@tensor_method`` and lists its public
functions in ``__all__``; ``burn`` re-exports them.
"""

from collections.abc import Callable
from typing import Any

from . import (
    attention,
    batch_norm,
    conv_transpose,
    creation,
    elementwise,
    index,
    linalg,
    random,
    reduce,
    scatter,
    views,
    volume,
)
from .tensor import Tensor

FAMILIES = (creation, elementwise, views, reduce, batch_norm, index, scatter, linalg,
            conv_transpose, volume, attention, random)


def family_functions() -> dict[str, Callable[..., Any]]:
    """Name -> function (or class: ``Generator``) for every family's ``__all__``, in
    ``FAMILIES`` order: what ``burn`` re-exports and what the backward rules compute with
    (built in one place, so the two cannot drift apart)."""
    return {name: getattr(family, name) for family in FAMILIES for name in family.__all__}


__all__ = ["Tensor", "FAMILIES", "family_functions"]
