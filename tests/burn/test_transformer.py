"""examples/train_transformer.py: a causal transformer (embeddings, encoder blocks with the
fused attention, AdamW) trained on every backend present follows the NumPy reference, and
learns to reverse sequences; captured as CUDA graphs, it follows its eager training."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest
from optest import expect_unsupported

import burn
from burn.backend.base import BurnError
from burn.backend.cube.graphs import graph_support

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_transformer  # noqa: E402 - the example is the code under test

SMALL = {"length": 4, "d_model": 32, "heads": 2, "layers": 1}


@functools.cache
def _numpy_losses() -> tuple[float, ...]:
    return tuple(train_transformer.train(burn.NumPy(), **FOLLOW)[0])


# Three steps of four sequences: every layer's forward, backward and update three times,
# small enough for Triton's interpreter (about 10 s a step at batch 4).
FOLLOW = {"steps": 3, "batch": 4, "evaluate": 0, "lr": 1e-2, **SMALL}


def test_training_follows_the_reference(backend):
    """Three steps on ``backend`` and on NumPy (whose attention is float64 NumPy): the same
    losses, to float32 rounding carried through the updates."""
    losses, _ = train_transformer.train(backend, **FOLLOW)
    np.testing.assert_allclose(losses, _numpy_losses(), rtol=2e-3)


def test_the_transformer_learns_to_reverse():
    """Greedy decoding from the separator on, so the causal mask cannot be leaking the
    answer: 120 steps reach at least 90 % of the digits (a model that cannot attend back
    guesses 10 %)."""
    losses, accuracy = train_transformer.train(burn.NumPy(), steps=120, batch=32, **SMALL)
    assert losses[-1] < 0.1 * losses[0] and accuracy >= 0.9


def test_captured_training_follows_eager_training(backend):
    """Eight steps as a ``CapturedStep`` (three warm-up steps, the capture, four replays,
    under the example's learning-rate schedule) give the eager steps' losses where CUDA
    graphs exist; elsewhere ``captured=True`` is refused at the first step."""
    settings = {**FOLLOW, "steps": 8}
    if graph_support(backend) is not None:
        with pytest.raises(BurnError, match="CUDA graphs need"):
            train_transformer.train(backend, **settings, captured=True)
        return
    eager, _ = train_transformer.train(backend, **settings)
    captured, _ = train_transformer.train(backend, **settings, captured=True)
    np.testing.assert_allclose(captured, eager, rtol=1e-5)


def test_mixed_precision_training_follows_the_reference(backend):
    """Three steps computed in bfloat16 with float32 parameters (``precision="bfloat16"``)
    follow float64 NumPy's float32 losses to bfloat16's rounding (its unit in the last place
    is 2**-8); a backend without bfloat16 refuses it, naming the dtype."""
    if "bfloat16" not in backend.dtypes:
        expect_unsupported(backend, "bfloat16", lambda: train_transformer.train(
            backend, **FOLLOW, precision="bfloat16"))
        return
    losses, _ = train_transformer.train(backend, **FOLLOW, precision="bfloat16")
    np.testing.assert_allclose(losses, _numpy_losses(), rtol=2.0 ** -8)


def test_captured_float16_is_refused_before_training(monkeypatch, capsys):
    """float16's dynamic loss scale skips steps on the host, which one replayed graph
    cannot: the command line refuses the pair at once and says what to use."""
    monkeypatch.setattr(sys, "argv", ["train_transformer.py", "--captured", "--precision",
                                      "float16", "--backend", "numpy"])
    with pytest.raises(SystemExit) as exit_info:
        train_transformer.main()
    assert exit_info.value.code == 2
    assert "use --precision bfloat16 with --captured" in capsys.readouterr().err
