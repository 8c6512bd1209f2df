"""Layers and losses: modules own their parameters and are values (``burn.nn.Module``).

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> model = burn.nn.Sequential(burn.nn.Linear(2, 16), burn.nn.GELU(),
    ...                            burn.nn.Linear(16, 3)).to(ad).require_grad()
    >>> x, y = burn.randn(8, 2, backend=ad), burn.tensor([0, 1, 2, 0, 1, 2, 0, 1], backend=ad)
    >>> grads = burn.nn.cross_entropy(model(x), y).backward()
    >>> grads[model.layers[0].weight].shape
    (16, 2)
"""

from . import init
from .activation import GELU, Dropout, Flatten, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .attention import MultiHeadAttention, TransformerEncoderLayer
from .container import Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .embedding import Embedding
from .linear import Linear
from .loss import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .module import Module
from .norm import (
    BatchNorm,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm,
    LayerNorm,
    RMSNorm,
)
from .pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AvgPool1d", "AvgPool2d",
           "AvgPool3d", "BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Conv1d",
           "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Dropout",
           "Embedding", "Flatten", "GELU", "GroupNorm", "InstanceNorm", "LayerNorm", "Linear",
           "MaxPool1d", "MaxPool2d", "MaxPool3d", "Module", "MultiHeadAttention", "RMSNorm",
           "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Tanh", "TransformerEncoderLayer",
           "binary_cross_entropy_with_logits", "cross_entropy", "init", "l1_loss", "mse_loss",
           "nll_loss"]
