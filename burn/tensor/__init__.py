"""The ``Tensor`` API; importing this package attaches every op family's methods.

Each family module (``elementwise``, ``views``, ``reduce``, ``index``, ``linalg``,
``random``) defines its functions, attaches the ones that are methods with
``@tensor_method`` and lists its public functions in ``__all__``; ``burn`` re-exports them.
"""

from . import creation, elementwise, index, linalg, random, reduce, views
from .tensor import Tensor

FAMILIES = (creation, elementwise, views, reduce, index, linalg, random)

__all__ = ["Tensor", "FAMILIES"]
