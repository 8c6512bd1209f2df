"""``Embedding``: rows of a learned table picked by integer indices.

Example:
    >>> table = burn.nn.Embedding(10, 4)
    >>> table(burn.tensor([[1, 2], [3, 9]])).shape
    (2, 2, 4)
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..tensor import index
from ..tensor.tensor import Tensor
from .init import standard_normal
from .module import Module


class Embedding(Module):
    """A ``(num_embeddings, embedding_dim)`` table, initialized standard normal."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype: Any = None,
                 backend: Backend | str | None = None, generator: Any = None):
        self.weight = standard_normal((num_embeddings, embedding_dim), dtype, backend, generator)

    def forward(self, indices: Tensor) -> Tensor:
        return index.embedding(self.weight, indices)
