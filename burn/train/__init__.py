"""Training: ``Learner`` (the loop), metrics, checkpoints, early stopping, the terminal
dashboard, ``CapturedStep`` (a step replayed as a CUDA graph) and ``MixedPrecision``
(16-bit compute with float32 parameters).

Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(128, 2)).astype(np.float32)
    >>> y = (x[:, 0] > x[:, 1]).astype(np.int64)
    >>> batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]
    >>> model = burn.nn.Linear(2, 2, generator=burn.Generator(0))
    >>> learner = burn.train.Learner(model, burn.optim.SGD(lr=0.5), burn.nn.cross_entropy,
    ...                              metrics=[burn.train.Accuracy()], dashboard=False)
    >>> model = learner.fit(batches, epochs=20)
    >>> learner.history[-1]["train"]["accuracy"] > 0.9
    True
"""

from .captured import CapturedStep
from .checkpoint import Checkpointer
from .dashboard import Dashboard
from .learner import Learner
from .metrics import Accuracy, Loss, MeanAbsoluteError, Metric
from .precision import MixedPrecision
from .stopping import EarlyStopping

__all__ = ["Accuracy", "CapturedStep", "Checkpointer", "Dashboard", "EarlyStopping",
           "Learner", "Loss", "MeanAbsoluteError", "Metric", "MixedPrecision"]
