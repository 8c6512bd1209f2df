"""``MultiHeadAttention`` and ``TransformerEncoderLayer``, batch first.

``MultiHeadAttention`` projects queries, keys and values with their own ``Linear`` layers
(``q_proj``, ``k_proj``, ``v_proj``), splits ``d_model`` into ``num_heads`` heads of
``d_model // num_heads`` features, attends with ``burn.scaled_dot_product_attention`` (one
fused kernel without a mask) and merges the heads through ``out_proj``. It differs from
``torch.nn.MultiheadAttention`` in three ways: inputs are always (batch, sequence, features)
(torch's ``batch_first=True``); a bool ``mask`` is True where a query *may* attend (torch's
``scaled_dot_product_attention`` convention, the opposite of ``nn.MultiheadAttention``'s
``attn_mask`` and ``key_padding_mask``); and ``dropout`` drops elements of the attention's
output before ``out_proj``, not attention weights (which the fused kernel never stores).
The projections are initialized as ``Linear`` layers are.

Example:
    >>> mha = burn.nn.MultiHeadAttention(32, 4)
    >>> x = burn.randn(2, 10, 32)                       # (batch, sequence, d_model)
    >>> mha(x, causal=True).shape                       # self-attention
    (2, 10, 32)
    >>> mha(x[:, :3], x).shape                          # 3 queries over 10 keys
    (2, 3, 32)
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend, BurnError
from ..tensor import elementwise, views
from ..tensor.attention import scaled_dot_product_attention
from ..tensor.tensor import Tensor
from .activation import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm

_ACTIVATIONS = {"gelu": elementwise.gelu, "relu": elementwise.relu}


def _check_sequence(name: str, x: Any, features: int) -> None:
    if isinstance(x, Tensor) and x.ndim == 3 and x.shape[-1] == features:
        return
    shape = x.shape if isinstance(x, Tensor) else type(x).__name__
    hint = "; add a batch axis with x.unsqueeze(0)" if isinstance(x, Tensor) and x.shape == (
        x.shape[0], features) else ""
    raise BurnError(f"MultiHeadAttention: {name} must be (batch, sequence, {features}), got "
                    f"{shape}{hint}")


class MultiHeadAttention(Module):
    """Attention over ``num_heads`` heads of ``d_model // num_heads`` features (see the module
    docstring): ``forward(query, key=None, value=None, *, mask=None, causal=False)`` with
    ``query`` (B, Sq, d_model), ``key`` (B, Sk, kdim) and ``value`` (B, Sk, vdim) (``key``
    defaults to ``query``, ``value`` to ``key``) gives (B, Sq, d_model). ``mask`` broadcasts
    to (B, num_heads, Sq, Sk): (Sq, Sk) for every batch and head, or (B, 1, 1, Sk) to pad keys.

    Example:
        >>> mha = burn.nn.MultiHeadAttention(16, 2, kdim=8, vdim=4)
        >>> q, k, v = burn.randn(1, 5, 16), burn.randn(1, 7, 8), burn.randn(1, 7, 4)
        >>> mha(q, k, v).shape, mha.head_dim
        ((1, 5, 16), 8)
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True, dropout: float = 0.0,
                 kdim: int | None = None, vdim: int | None = None, dtype: Any = None,
                 backend: Backend | str | None = None, generator: Any = None):
        if not isinstance(num_heads, int) or num_heads < 1 or not isinstance(d_model, int) \
                or d_model < 1 or d_model % num_heads:
            raise BurnError(f"MultiHeadAttention: d_model ({d_model}) must be a positive "
                            f"multiple of num_heads ({num_heads}), e.g. "
                            f"MultiHeadAttention({max(1, num_heads) * 8}, {num_heads})")
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        kdim = d_model if kdim is None else kdim
        vdim = d_model if vdim is None else vdim
        options = {"bias": bias, "dtype": dtype, "backend": backend, "generator": generator}
        self.q_proj = Linear(d_model, d_model, **options)
        self.k_proj = Linear(kdim, d_model, **options)
        self.v_proj = Linear(vdim, d_model, **options)
        self.out_proj = Linear(d_model, d_model, **options)
        self.dropout = Dropout(dropout)

    def _heads(self, x: Tensor) -> Tensor:
        """(B, S, d_model) as (B, heads, S, head_dim): a view, no copy."""
        b, s, _ = x.shape
        return views.transpose(views.reshape(x, b, s, self.num_heads, self.head_dim), 1, 2)

    def forward(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None, *,
                mask: Tensor | None = None, causal: bool = False) -> Tensor:
        key = query if key is None else key
        value = key if value is None else value
        _check_sequence("query", query, self.q_proj.weight.shape[1])
        _check_sequence("key", key, self.k_proj.weight.shape[1])
        _check_sequence("value", value, self.v_proj.weight.shape[1])
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise BurnError(f"MultiHeadAttention: query {query.shape}, key {key.shape} and "
                            f"value {value.shape} need one batch size, and key and value one "
                            "sequence length")
        attended = scaled_dot_product_attention(
            self._heads(self.q_proj(query)), self._heads(self.k_proj(key)),
            self._heads(self.v_proj(value)), mask=mask, causal=causal)
        b, sq = query.shape[:2]
        # (B, H, Sq, Dh) -> (B, Sq, H * Dh): free for the fused kernel's (B, Sq, H, Dh) output
        merged = views.reshape(views.transpose(attended, 1, 2), b, sq, -1)
        return self.out_proj(self.dropout(merged))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block (``d_model -> dim_feedforward -> d_model``),
    each a residual branch with a ``LayerNorm``: applied before the branch when
    ``norm_first`` (pre-norm, the default: ``x + attn(norm1(x))``), else after the sum
    (post-norm, ``norm1(x + attn(x))``). ``dropout`` applies to the attention's output, after
    the activation and on both branches; ``activation`` is ``"gelu"`` or ``"relu"``.
    ``forward(x, *, mask=None, causal=False)`` with ``x`` (batch, sequence, d_model).

    Example:
        >>> layer = burn.nn.TransformerEncoderLayer(16, 2, 32)
        >>> layer(burn.randn(3, 6, 16), causal=True).shape
        (3, 6, 16)
    """

    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int, dropout: float = 0.0,
                 *, norm_first: bool = True, activation: str = "gelu", eps: float = 1e-5,
                 bias: bool = True, dtype: Any = None, backend: Backend | str | None = None,
                 generator: Any = None):
        if activation not in _ACTIVATIONS:
            raise BurnError(f"TransformerEncoderLayer: activation must be one of "
                            f"{sorted(_ACTIVATIONS)}, got {activation!r}")
        options = {"dtype": dtype, "backend": backend}
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout,
                                            generator=generator, **options)
        self.linear1 = Linear(d_model, dim_feedforward, bias, generator=generator, **options)
        self.linear2 = Linear(dim_feedforward, d_model, bias, generator=generator, **options)
        self.norm1 = LayerNorm(d_model, eps, bias=bias, **options)
        self.norm2 = LayerNorm(d_model, eps, bias=bias, **options)
        self.dropout = Dropout(dropout)
        self.norm_first, self.activation = norm_first, activation

    def _attention(self, x: Tensor, mask: Tensor | None, causal: bool) -> Tensor:
        return self.dropout(self.self_attn(x, mask=mask, causal=causal))

    def _feed_forward(self, x: Tensor) -> Tensor:
        hidden = self.dropout(_ACTIVATIONS[self.activation](self.linear1(x)))
        return self.dropout(self.linear2(hidden))

    def forward(self, x: Tensor, *, mask: Tensor | None = None, causal: bool = False) -> Tensor:
        if self.norm_first:
            x = x + self._attention(self.norm1(x), mask, causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._attention(x, mask, causal))
        return self.norm2(x + self._feed_forward(x))
