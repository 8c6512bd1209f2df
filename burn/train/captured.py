"""``CapturedStep``: a training step captured once as a CUDA graph and replayed.

A step of a small model launches a hundred or more kernels, and each launch costs tens of
microseconds of Python on the host (burn's layers, the kernel library, cubepy's launch), so
such a step is bound by the host, not the GPU. Captured as a CUDA graph, the whole step is
one call: the GPU runs the same kernels back to back.

``CapturedStep(fn, optimizer)`` wraps ``fn(model, *inputs) -> (model, *outputs)`` (or just
the model). Its first ``warmup`` calls run ``fn`` as it is (the kernels compile and tune);
the last two are recorded, and must launch the same kernels with the same numbers, as a
replay repeats them. The next call captures ``fn`` on copies of its inputs and replays it;
later calls copy their inputs into those copies and replay (the caller's tensors are never
written). What that asks of ``fn``:

- shapes and dtypes stay as they were captured (``DataLoader(..., drop_last=True)``, or
  run a batch of another shape through ``fn`` itself, as ``Learner(capture=True)`` does),
  and an optimizer serves one captured step;
- nothing is read back to the host inside it (``item()``, ``numpy()``, printing a tensor);
- the numbers its kernels take do not change between steps: the optimizers given are set
  ``capturable`` (their learning rate and step count live in a device buffer: set
  ``opt.lr`` between calls to follow a schedule), and a number that changes anyway is
  reported at the warm-up with the line that passed it;
- random draws (``Dropout``, ``burn.rand``) come from the global generator or a module's
  ``generator``: inside the step these read their seed and offset from a device buffer,
  which the host rewrites before each replay, so every replay draws anew, the draws an
  uncaptured step would make (``Generator.begin_step``); another generator must be
  given as ``generators=``;
- the model is updated in place: the model returned is the one captured, every call, and
  earlier models share its storage (``model.state_dict()`` keeps a copy).

The outputs are copies, so keeping one (a loss) is safe across calls. A replay runs no index
check of its own: an integer input the step indexes with (labels for ``cross_entropy``) is
checked before each replay against the axes the capture saw it index, from the bounds known
at its upload (else read from the device).

Example:
    >>> def train_step(model, x, y):
    ...     loss = burn.nn.cross_entropy(model(x), y)
    ...     return opt.step(model, loss.backward()), loss
    >>> step = burn.train.CapturedStep(train_step, opt)  # doctest: +SKIP
    >>> for x, y in batches:
    ...     model, loss = step(model, x, y)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import kernels
from cubepy.runtime.trace import LaunchRecord, first_difference, record_launches

from ..autodiff import Autodiff
from ..autodiff.graph import plain
from ..backend import bounds
from ..backend.base import BurnError
from ..backend.cube import graphs
from ..fusion import Fusion
from ..nn.module import Module
from ..optim.optimizer import Optimizer
from ..tensor.random import Generator, default_generator
from ..tensor.tensor import Tensor

# burn's and the kernel library's folders: a launch's origin is the user's line outside them
_LIBRARIES = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
              os.path.dirname(os.path.abspath(kernels.__file__)))


class CapturedStep:
    """``fn(model, *inputs)`` run eagerly ``warmup`` times, then captured as a CUDA graph and
    replayed (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], optimizers: Optimizer | Sequence[Optimizer] = (),
                 warmup: int = 3, generators: Sequence[Generator] = ()):
        if warmup < 3:
            raise BurnError(f"CapturedStep: warmup must be at least 3 (the first step compiles "
                            f"and tunes kernels; the last two are compared), got {warmup}")
        self.fn = fn
        self.optimizers = [optimizers] if isinstance(optimizers, Optimizer) else \
            list(optimizers)
        self.warmup = warmup
        self.generators = list(generators)
        self._draws: StepDraws | None = None
        self.calls = 0
        self._records: list[list[LaunchRecord]] = []
        self._graph: graphs.CudaGraph | None = None
        self._model: Module | None = None
        self._inputs: list[Tensor] = []
        self._outputs: list[Tensor] = []
        #: input position -> the size of the smallest axis its values index in the step
        self._limits: dict[int, int] = {}
        self._bare = False  # the step returns the model alone

    def __call__(self, model: Module, *inputs: Tensor) -> Any:
        """The step's result: ``(model, *outputs)`` (or the model, as ``fn`` returns it)."""
        self.calls += 1
        if self._graph is not None:
            return self._replay(model, inputs)
        backend = _graph_backend(model, inputs)
        for optimizer in self.optimizers:
            optimizer.capturable = True
        if self._draws is None:
            self._draws = StepDraws(backend, _generators(model, self.generators), graphs.write)
        if self.calls <= self.warmup:
            return self._eager(model, inputs)
        return self._capture(backend, model, inputs)

    # ---- the warm-up ----

    def _eager(self, model: Module, inputs: tuple) -> Any:
        assert self._draws is not None
        if self.calls < self.warmup - 1:  # the first calls compile and tune: not compared
            with self._draws.step():
                return self.fn(model, *inputs)
        with record_launches(_LIBRARIES) as launches, self._draws.step():
            result = self.fn(model, *inputs)
        self._records = [*self._records[-1:], launches]
        if len(self._records) == 2:
            self._check_static(*self._records, "two warm-up steps")
        return result

    def _check_static(self, first: list[LaunchRecord], second: list[LaunchRecord],
                      what: str) -> None:
        difference = first_difference(first, second)
        if difference is not None:
            raise BurnError(
                f"CapturedStep: {what} launched differently: {difference}. A captured "
                f"step replays the numbers its kernels were captured with. Keep what "
                f"changes in a tensor the step reads (an input), give CapturedStep the "
                f"optimizers the step uses, or call the step without capturing it")

    # ---- the capture ----

    def _capture(self, backend: Any, model: Module, inputs: tuple) -> Any:
        graph = graphs.CudaGraph(backend)
        # the graph reads its inputs from copies that replays then overwrite; the caller's
        # tensors stay as they are
        inputs = tuple(_copied(tensor, graphs.clone_layout) for tensor in inputs)

        def body() -> Any:
            result = self.fn(model, *inputs)
            new_model, outputs = _split(result)
            _copy_parameters(model, new_model, "the model the step returned")
            for output in outputs:  # Fusion's pending values are computed in the graph
                _view(output)
            return result, outputs

        assert self._draws is not None
        for optimizer in self.optimizers:
            optimizer.begin_capture()
        try:
            with record_launches(_LIBRARIES) as launches, self._draws.step(captured=True), \
                    bounds.recording_limits() as limits:
                result, outputs = graph.capture(body)
            self._check_static(self._records[-1], launches,
                               "the last warm-up step and the capture")
        except BurnError:
            self._abort()
            raise
        except Exception as err:  # torch's capture errors: say what a step cannot do
            self._abort()
            raise BurnError(f"CapturedStep: capturing the step failed ({type(err).__name__}: "
                            f"{err}). Inside a captured step nothing may be read back to the "
                            f"host (item(), numpy(), printing a tensor) and no tensor made "
                            f"from host data") from err
        for optimizer in self.optimizers:
            optimizer.end_capture(graphs.write)
        self._graph, self._model = graph, model
        self._inputs, self._outputs = list(inputs), outputs
        self._limits = _input_limits(self._inputs, limits)
        self._bare = isinstance(result, Module)
        return self._run(first=True)

    def _abort(self) -> None:
        for optimizer in self.optimizers:
            optimizer.abort_capture()

    # ---- replays ----

    def _replay(self, model: Module, inputs: tuple) -> Any:
        assert self._model is not None
        if model is not self._model and not isinstance(model, Module):
            raise BurnError(f"CapturedStep: the step's first argument must be the model (a "
                            f"burn.nn.Module), got {type(model).__name__}")
        if len(inputs) != len(self._inputs):
            raise BurnError(f"CapturedStep: captured with {len(self._inputs)} inputs, called "
                            f"with {len(inputs)}")
        for index, (static, given) in enumerate(zip(self._inputs, inputs)):
            if not isinstance(given, Tensor) or \
                    (given.shape, given.dtype) != (static.shape, static.dtype):
                raise BurnError(f"CapturedStep: input {index} was captured as "
                                f"{static.dtype.name}{list(static.shape)}, got "
                                f"{_described(given)}; keep the shapes of a captured step "
                                f"(burn.data.DataLoader(..., drop_last=True) drops a shorter "
                                f"last batch)")
            if index in self._limits:
                _check_index_input(index, given, self._limits[index])
        if model is not self._model:
            _copy_parameters(self._model, model, "the model given")
        for static, given in zip(self._inputs, inputs):
            target, source = _view(static), _view(given)
            if not graphs.same_place(target, source):
                graphs.copy(target, source)
                if not given.dtype.is_float:  # eager index checks see the new values' bounds
                    bounds.inherit(target.storage, source.storage)
        return self._run(first=False)

    def _run(self, first: bool) -> Any:
        """Replay the graph (the captured step's first run, too) and return its result."""
        assert self._graph is not None and self._model is not None
        assert self._draws is not None
        for optimizer in self.optimizers:
            optimizer.replayed(graphs.write, first)
        self._draws.replayed()
        self._graph.replay()
        if self._bare:
            return self._model
        return (self._model, *(_copied(out, graphs.clone) for out in self._outputs))


def _described(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype.name}{list(value.shape)}"
    return f"a {type(value).__name__}"


def _split(result: Any) -> tuple[Module, list[Tensor]]:
    """(model, outputs) of what the step returned, checked."""
    if isinstance(result, Module):
        return result, []
    if isinstance(result, tuple) and result and isinstance(result[0], Module) and all(
            isinstance(out, Tensor) for out in result[1:]):
        return result[0], list(result[1:])
    raise BurnError("CapturedStep: the step must return the model, or a tuple of the model "
                    "and tensors (model, loss, ...)")


def _copied(tensor: Tensor, clone: Callable[[Any], Any]) -> Tensor:
    """A copy of ``tensor`` in storage of its own, made by ``clone`` (integer values keep
    their bounds)."""
    view = _view(tensor)
    copy = clone(view)
    known = None if tensor.dtype.is_float else bounds.known_bounds(view.storage)
    if known is not None:  # the copy is the origin of what the step's index checks see
        bounds.remember_range(copy.storage, *known)
    return Tensor(copy, _inner_backend(tensor)).to(tensor.backend)


def _input_limits(inputs: list[Tensor], limits: list[tuple[Any, int]]) -> dict[int, int]:
    """For each input whose values the step's index checks saw (``bounds.recording_limits``
    at the capture): the smallest size of an axis they index."""
    found: dict[int, int] = {}
    for index, tensor in enumerate(inputs):
        storage = _view(tensor).storage
        sizes = [size for origin, size in limits if origin is storage]
        if sizes:
            found[index] = min(sizes)
    return found


def _check_index_input(index: int, given: Tensor, size: int) -> None:
    """A replay runs no index check: its integer inputs are checked against the axes the
    captured step indexes with them (from their bounds at upload, else a read)."""
    known = bounds.known_bounds(_view(given).storage)
    low, high = known if known is not None else given.backend.index_range(given.prim)
    if low < 0 or high >= size:
        raise BurnError(f"CapturedStep: input {index} holds values in [{low}, {high}], and the "
                        f"captured step indexes an axis of size {size} with them (valid: "
                        f"[0, {size - 1}]); the step did not run")


def _view(tensor: Tensor) -> Any:
    """The tensor's view over real storage (a ``Fusion`` value pending is computed)."""
    view = plain(tensor.prim) if isinstance(tensor.backend, Autodiff) else tensor.prim
    backend = _inner_backend(tensor)
    return backend.realized(view) if isinstance(backend, Fusion) else view


def _inner_backend(tensor: Tensor) -> Any:
    backend = tensor.backend
    return backend.inner if isinstance(backend, Autodiff) else backend


def _copy_parameters(target: Module, source: Module, what: str) -> None:
    """Copy each parameter of ``source`` into ``target``'s where they are not the same
    storage already (an optimizer step in place leaves nothing to copy)."""
    ours, theirs = target.named_parameters(), source.named_parameters()
    if [(n, p.shape, p.dtype) for n, p in ours] != [(n, p.shape, p.dtype) for n, p in theirs]:
        raise BurnError(f"CapturedStep: {what} does not have the captured model's parameters "
                        f"(paths, shapes and dtypes must match)")
    for (_, mine), (_, given) in zip(ours, theirs):
        target_view, source_view = _view(mine), _view(given)
        if not graphs.same_place(target_view, source_view):
            graphs.copy(target_view, source_view)


def _graph_backend(model: Module, inputs: tuple) -> Any:
    """The backend the step's graph would run on; a clear error where it cannot."""
    if not isinstance(model, Module):
        raise BurnError(f"CapturedStep: the step's first argument must be the model (a "
                        f"burn.nn.Module), got {type(model).__name__}")
    for index, value in enumerate(inputs):
        if not isinstance(value, Tensor):
            raise BurnError(f"CapturedStep: input {index} is a {type(value).__name__}; a "
                            f"captured step takes tensors (a number would be replayed as it "
                            f"was captured: bind it in the step function instead)")
    params = model.named_parameters()
    tensors = [p for _, p in params] + list(inputs)
    if not tensors:
        raise BurnError("CapturedStep: the model has no parameters and no inputs were given")
    backend = _inner_backend(tensors[0])
    if isinstance(backend, Fusion):  # its fused kernels are captured as the others are
        backend = backend.inner
    reason = graphs.graph_support(backend)
    if reason is not None:
        raise BurnError(f"CapturedStep: {reason}")
    return backend


def _generators(model: Module, given: Sequence[Generator]) -> list[Generator]:
    """The generators a step may draw from: the global one, each module's ``generator`` (as
    ``Dropout(generator=...)`` holds), and those given; each once."""
    found = [default_generator(), *given]
    for _, module in model.named_modules():
        generator = getattr(module, "generator", None)
        if isinstance(generator, Generator):
            found.append(generator)
    unique: list[Generator] = []
    for generator in found:
        if not isinstance(generator, Generator):
            raise BurnError(f"CapturedStep: generators must be burn.Generator objects, got "
                            f"{type(generator).__name__}")
        if all(generator is not seen for seen in unique):
            unique.append(generator)
    return unique


class StepDraws:
    """The device state each generator draws from inside the step (``begin_step``), and
    how many counters a step uses, so that each replay draws the next ones. ``write(view,
    values)`` copies host words into a state in stream order (``graphs.write``)."""

    def __init__(self, backend: Any, generators: list[Generator],
                 write: Callable[[Any, np.ndarray], None]):
        self.generators = generators
        self.states = [backend.from_numpy(g.state_words()) for g in generators]
        self.write = write
        #: counters each generator used in the last step (the captured one, once captured)
        self.counts: list[int] | None = None

    @contextlib.contextmanager
    def step(self, captured: bool = False) -> Iterator[None]:
        """Run a step (eager, or the capture: its draws are made by the first replay, so
        the generators go back to where they were) drawing from the states."""
        starts = [g.get_state() for g in self.generators]
        for generator, state in zip(self.generators, self.states):
            self.write(state, generator.state_words())
            generator.begin_step(state)
        try:
            yield
        finally:
            counts = [g.end_step() for g in self.generators]
            if captured:
                for generator, start in zip(self.generators, starts):
                    generator.set_state(start)
        if self.counts is not None and counts != self.counts:
            raise BurnError(f"CapturedStep: the step drew {sum(counts)} random numbers, the "
                            f"one before it {sum(self.counts)}; a captured step must draw "
                            f"the same numbers every step")
        self.counts = counts

    def replayed(self) -> None:
        """Before a replay: write each generator's seed and offset into its state, and move
        it past the counters the step uses."""
        assert self.counts is not None
        for generator, state, count in zip(self.generators, self.states, self.counts):
            self.write(state, generator.state_words())
            seed, offset = generator.get_state()
            generator.set_state((seed, offset + count))
