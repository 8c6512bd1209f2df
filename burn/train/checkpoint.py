"""Checkpoints of a training run: the model, the optimizer's state and the learner's own
(epoch, step, history), written at the end of each epoch so a stopped run resumes where it was.

Each checkpoint is a folder ``<directory>/epoch-0003/`` holding ``model.safetensors``,
``optimizer.safetensors`` and ``learner.json``; the learner also keeps the random generators'
states there (``generator_states``: the global one and each module's own, such as a
``Dropout(generator=...)``), so a model that draws random numbers resumes with the draws the
uninterrupted run would have made. The folder is written under a temporary name
and renamed into place, so a run killed while saving leaves the previous checkpoints whole and
no half-written one; only the newest ``keep`` are kept.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> checkpoints = burn.train.Checkpointer(folder, keep=2)
    >>> model, opt = burn.nn.Linear(2, 1), burn.optim.SGD(lr=0.1)
    >>> path = checkpoints.save(0, model, opt, {"step": 10})
    >>> checkpoints.epochs()
    [0]
    >>> restored, state = checkpoints.load(burn.nn.Linear(2, 1), burn.optim.SGD(lr=0.1))
    >>> state["step"], bool((restored.weight == model.weight).all())
    (10, True)
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..backend.base import BurnError
from ..nn.module import Module
from ..optim.optimizer import Optimizer
from ..record import load_file, save_file
from ..tensor.random import Generator, default_generator

_FOLDER = re.compile(r"epoch-(\d+)")
FORMAT = 1


class Checkpointer:
    """Writes and reads the checkpoints of one run in ``directory`` (created if absent),
    keeping the newest ``keep`` (None: all)."""

    def __init__(self, directory: str | Path, keep: int | None = 2):
        if keep is not None and keep < 1:
            raise BurnError(f"Checkpointer: keep must be >= 1 (or None for all), got {keep}")
        self.directory, self.keep = Path(directory), keep

    def epochs(self) -> list[int]:
        """The epochs (counted from 0) that have a complete checkpoint, oldest first."""
        if not self.directory.is_dir():
            return []
        found = (_FOLDER.fullmatch(p.name) for p in self.directory.iterdir() if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m)

    def path(self, epoch: int) -> Path:
        return self.directory / f"epoch-{epoch:04d}"

    def save(self, epoch: int, model: Module, optimizer: Optimizer,
             state: dict[str, Any]) -> Path:
        """Write the checkpoint of ``epoch``; ``state`` is the learner's (JSON values)."""
        final = self.path(epoch)
        staging = self.directory / f".{final.name}.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            save_file(model.state_dict(), staging / "model.safetensors", {"format": "burn"})
            save_file(optimizer.state_dict(), staging / "optimizer.safetensors",
                      {"format": "burn", "optimizer": type(optimizer).__name__})
            document = {"format": FORMAT, "epoch": epoch, **state}
            (staging / "learner.json").write_text(json.dumps(document, indent=1))
            if final.exists():  # saving one epoch again replaces it
                shutil.rmtree(final)
            os.replace(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._prune()
        return final

    def load(self, model: Module, optimizer: Optimizer, epoch: int | None = None
             ) -> tuple[Module, dict[str, Any]]:
        """The model with the checkpoint's parameters (tracking nothing: ``require_grad()``
        it to train) and the learner's state; ``optimizer`` gets its state back. ``epoch``:
        which checkpoint (None: the newest)."""
        saved = self.epochs()
        if not saved:
            raise BurnError(f"Checkpointer.load: no checkpoint in {self.directory}")
        epoch = saved[-1] if epoch is None else epoch
        if epoch not in saved:
            raise BurnError(f"Checkpointer.load: no checkpoint of epoch {epoch} in "
                            f"{self.directory} (there are {saved})")
        folder = self.path(epoch)
        try:
            document = json.loads((folder / "learner.json").read_text())
            parameters = load_file(folder / "model.safetensors")
            buffers = load_file(folder / "optimizer.safetensors")
        except (OSError, ValueError) as error:
            raise BurnError(f"Checkpointer.load: {folder} is not a whole checkpoint ({error}); "
                            f"delete it to resume from the one before") from None
        if document.get("format") != FORMAT:
            raise BurnError(f"Checkpointer.load: {folder} was written in checkpoint format "
                            f"{document.get('format')!r}; this burn reads format {FORMAT}")
        restored = model.load_state_dict(parameters)
        optimizer.load_state_dict(buffers, restored)
        return restored, document

    def parameters(self, epoch: int) -> dict[str, Any] | None:
        """The model parameters saved with ``epoch``'s checkpoint, None when it is not kept."""
        if epoch not in self.epochs():
            return None
        try:
            return load_file(self.path(epoch) / "model.safetensors")
        except (OSError, ValueError):
            return None

    def _prune(self) -> None:
        if self.keep is None:
            return
        for epoch in self.epochs()[:-self.keep]:
            shutil.rmtree(self.path(epoch), ignore_errors=True)


def generator_states(model: Module) -> dict[str, list[int]]:
    """The (seed, offset) of the global generator (key ``"default"``) and of each generator a
    module of ``model`` holds as ``generator`` (key ``"module:<path>"``), as JSON lists.

    Example:
        >>> states = generator_states(burn.nn.Dropout(0.1, generator=burn.Generator(4)))
        >>> states["module:"], sorted(states)
        ([4, 0], ['default', 'module:'])
    """
    states = {"default": list(default_generator().get_state())}
    for path, module in model.named_modules():
        generator = getattr(module, "generator", None)
        if isinstance(generator, Generator):
            states[f"module:{path}"] = list(generator.get_state())
    return states


def restore_generators(model: Module, states: dict[str, list[int]]) -> None:
    """Put back the ``generator_states`` saved from a model built as ``model`` is; a module
    path the checkpoint does not name (a model changed since) keeps its generator as is."""
    if "default" in states:
        default_generator().set_state(states["default"])
    for path, module in model.named_modules():
        generator = getattr(module, "generator", None)
        saved = states.get(f"module:{path}")
        if isinstance(generator, Generator) and saved is not None:
            generator.set_state(saved)
