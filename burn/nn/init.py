"""Parameter initialization as torch's layers do it, from burn's seeded generators.

Example:
    >>> w = burn.nn.init.fan_in_uniform((4, 3), fan_in=3)
    >>> bool((w.abs() <= 3 ** -0.5).all())
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..backend.base import Backend
from ..tensor import creation, random
from ..tensor.tensor import Tensor


def fan_in_uniform(shape: Sequence[int], fan_in: int, dtype: Any = None,
                   backend: Backend | str | None = None, generator: Any = None) -> Tensor:
    """Uniform in ``[-1/sqrt(fan_in), 1/sqrt(fan_in))``: torch's default for the weights and
    biases of linear and convolution layers (Kaiming-uniform with ``a = sqrt(5)``)."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    if bound == 0.0:
        return creation.zeros(tuple(shape), dtype=dtype, backend=backend)
    return random.uniform(tuple(shape), -bound, bound, dtype=dtype, backend=backend,
                          generator=generator)


def standard_normal(shape: Sequence[int], dtype: Any = None, backend: Backend | str | None = None,
                    generator: Any = None) -> Tensor:
    """Standard normal values: torch's default for embeddings."""
    return random.normal(tuple(shape), 0.0, 1.0, dtype=dtype, backend=backend,
                         generator=generator)
