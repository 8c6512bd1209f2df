"""``NumPy``: the plain reference backend that the op suite compares every backend with."""

from __future__ import annotations

from ..ops import BackendOps
from .creation import NumpyCreation
from .elementwise import NumpyElementwise
from .index import NumpyIndex
from .linalg import NumpyLinalg
from .optim import NumpyOptim
from .random import NumpyRandom
from .reduce import NumpyReduce


class NumPy(NumpyElementwise, NumpyCreation, NumpyReduce, NumpyIndex, NumpyLinalg, NumpyRandom,
            NumpyOptim, BackendOps):
    """Every op in plain NumPy, on the host.

    Example:
        >>> t = burn.ones((2, 2), backend=burn.NumPy())
        >>> t.backend.name
        'numpy'
    """


__all__ = ["NumPy"]
