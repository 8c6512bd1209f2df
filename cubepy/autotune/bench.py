"""Benchmarking candidates: each target's own clock, snapshots of the arrays, output checks.

The loop (``benchmark``): every candidate first runs once on restored inputs (this compiles
it and is its warm-up); its outputs are compared with those of the first candidate that ran
(a wrong one is discarded). Then the survivors are timed round-robin, each sample being
enough runs to last ``SAMPLE_SECONDS`` (a lone 50 µs kernel would be timed together with the
launch gap before it; on CUDA each run starts from a cold L2 cache); from the second round
on, a candidate whose fastest run is slower than ``drop_ratio`` × the leader's median is
dropped; the rest keep being timed until ``rep`` rounds or ``max_seconds`` have passed (at
least three rounds). Those within ``tie_ratio`` (3 %) of the leader's median are the
finalists (the rest are dropped): they take turns for up to ``rep`` more rounds, and the one
with the least median wins. On a GPU (CUDA, or WGSL on a GPU adapter) the final is timed
under sustained load instead: the best few within ``SUSTAIN_RATIO`` of the leader take turns,
each sample after 0.1 s of the same candidate back to back (``timer.settle``), as a GPU at its
power cap clocks down by an amount that depends on the kernel (``_sustained_final``).

The clocks are in ``clocks.py``.

Example:
    >>> outcomes = benchmark(candidates, run, observe, Snapshot(arrays),
    ...                      timer_for("cpu", []))          # doctest: +SKIP
    >>> min((o for o in outcomes if o.status == "ok"), key=lambda o: o.median)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .clocks import SustainedTimer, Timer
from .config import Config
from .progress import Progress

# ---- snapshots and host copies of arrays ----

def to_host(value: Any) -> np.ndarray:
    """A NumPy copy of an array of any kind (NumPy, torch, CuPy, ``cube.DeviceArray``)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if hasattr(value, "__cube_device_array__"):
        return value.numpy()
    if type(value).__module__.startswith("torch"):
        tensor = value.detach()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        return tensor.cpu().numpy()
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):  # CuPy
        return value.get()
    return np.array(value, copy=True)


def observed_copy(value: Any) -> Any:
    """A copy of an output for comparing candidates: torch tensors stay on their device
    (copying a large output to the host per candidate took seconds), others go to NumPy."""
    if type(value).__module__.startswith("torch"):
        return value.detach().clone()
    return to_host(value)


def _copy(value: Any) -> Any:
    """A snapshot of an array on its own device (a 4096² float32 wgpu buffer took 0.1 s to
    upload again before each candidate, three per matmul candidate)."""
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("cupy"):
        return value.copy()
    if type(value).__module__.startswith("torch"):
        return value.clone()
    if hasattr(value, "__cube_device_array__") and hasattr(value, "copy"):
        return value.copy()  # cube.DeviceArray: restored with copy_from, on the device too
    return to_host(value)


def _restore(value: Any, saved: Any) -> None:
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            np.copyto(value, saved)
    elif type(value).__module__.startswith("torch"):
        value.copy_(saved)
    elif type(value).__module__.startswith("cupy"):
        value[...] = saved
    elif hasattr(value, "copy_from"):
        value.copy_from(saved)


class Snapshot:
    """Copies of the array arguments, taken before tuning and restored before each candidate.

    Example:
        >>> x = np.zeros(3); snap = Snapshot({"x": x}); x[:] = 1; snap.restore(); x
        array([0., 0., 0.])
    """

    def __init__(self, arrays: Mapping[str, Any]) -> None:
        self.arrays = dict(arrays)
        self.saved = {name: _copy(value) for name, value in self.arrays.items()}

    def restore(self) -> None:
        """Write the saved contents back into every array."""
        for name, value in self.arrays.items():
            _restore(value, self.saved[name])


# ---- comparing outputs ----

def tolerance(dtype: np.dtype | str) -> tuple[float, float] | None:
    """``(rtol, atol)`` for a float dtype (atol is scaled by the reference's magnitude),
    ``None`` for exact comparison (integers, bools)."""
    name = str(np.dtype(dtype)) if not isinstance(dtype, str) else dtype
    return {"float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2), "float32": (1e-4, 1e-5),
            "float64": (1e-9, 1e-12)}.get(name)


def compare(reference: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]) -> str | None:
    """``None`` when ``got`` matches ``reference`` array by array, else what differs.

    Example:
        >>> compare({"out": np.ones(4)}, {"out": np.ones(4) + [0, 0, 0, 1]})
        "'out': 1 of 4 elements differ (max abs diff 1)"
    """
    for name, ref in reference.items():
        out = got.get(name)
        if out is not None and type(ref).__module__.startswith("torch"):
            diff = _compare_torch(name, ref, out)
            if diff is not None:
                return diff
            continue
        if out is None or out.shape != ref.shape:
            shape = None if out is None else out.shape
            return f"'{name}': shape {shape} instead of {ref.shape}"
        if _same_bits(ref, out):  # an input the candidates only read, or an exact result
            continue
        tol = tolerance(str(ref.dtype))
        if tol is None and ref.dtype.kind not in "fc":
            bad = ref != out
        else:
            rtol, atol = tol or (1e-4, 1e-5)
            # float32 holds 16- and 32-bit floats exactly and rounds far below these
            # tolerances; float64 copies made this check 3x slower at 16M elements
            wide = ref.dtype.kind == "c" or ref.dtype.itemsize > 4
            r, o = (x.astype(np.float64 if wide else np.float32) for x in (ref, out))
            largest = np.max(np.abs(r), where=np.isfinite(r), initial=0.0)
            scale = max(1.0, float(largest))
            with np.errstate(invalid="ignore"):
                bad = ~np.isclose(o, r, rtol=rtol, atol=atol * scale, equal_nan=True)
        count = int(np.count_nonzero(bad))
        if count:
            with np.errstate(invalid="ignore"):
                diff = np.abs(ref[bad].astype(np.float64) - out[bad].astype(np.float64))
            return f"'{name}': {count} of {ref.size} elements differ ({_worst(diff)})"
    return None


def _same_bits(ref: np.ndarray, out: np.ndarray) -> bool:
    """Whether two arrays hold the same bytes: milliseconds, where ``isclose`` took a
    second per 16M-element array (a matmul's candidates are compared on A and B too)."""
    if ref.dtype != out.dtype or ref.dtype.hasobject:
        return False
    return bool(np.array_equal(np.ascontiguousarray(ref).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(out).reshape(-1).view(np.uint8)))


def _worst(diff: np.ndarray) -> str:
    """The largest finite difference, and how many are NaN or infinite (where one side is:
    np.nanmax of those alone warned "All-NaN slice" at the user)."""
    finite = diff[np.isfinite(diff)]
    parts = [f"max abs diff {float(finite.max()):.3g}"] if finite.size else []
    if finite.size < diff.size:
        parts.append(f"{diff.size - finite.size} NaN or infinite")
    return ", ".join(parts)


def _compare_torch(name: str, ref: Any, out: Any) -> str | None:
    """``compare`` for two torch tensors, computed on their device."""
    if tuple(out.shape) != tuple(ref.shape):
        return f"'{name}': shape {tuple(out.shape)} instead of {tuple(ref.shape)}"
    import torch

    if out.dtype == ref.dtype and torch.equal(ref, out):  # an input no candidate writes
        return None
    tol = tolerance(str(ref.dtype).removeprefix("torch."))
    if tol is None and not ref.is_floating_point():
        bad = ref != out
    else:
        rtol, atol = tol or (1e-4, 1e-5)
        r, o = ref.double(), out.double()
        finite = r[torch.isfinite(r)].abs()
        scale = max(1.0, float(finite.max())) if finite.numel() else 1.0
        bad = ~torch.isclose(o, r, rtol=rtol, atol=atol * scale, equal_nan=True)
    count = int(bad.sum())
    if not count:
        return None
    diff = float((ref[bad].double() - out[bad].double()).abs().max())
    return f"'{name}': {count} of {ref.numel()} elements differ (max abs diff {diff:.3g})"


def warm_up_in_parallel(configs: Sequence[Config], run: Callable[[Config], Any],
                        threads: int = 8) -> None:
    """Run every candidate once, several at a time, so that their compilations overlap (a
    GPU kernel's compile is mostly C++ passes and ptxas, which run without the GIL). Outputs
    are garbage afterwards (the runs raced); errors are left for the checked runs to report."""
    from concurrent.futures import ThreadPoolExecutor

    def quietly(config: Config) -> None:
        try:
            run(config)
        except Exception:  # noqa: BLE001 - reported when the candidate is checked
            pass

    with ThreadPoolExecutor(max(1, min(threads, len(configs)))) as pool:
        list(pool.map(quietly, configs))


# ---- the benchmark loop ----

@dataclass
class Outcome:
    """What happened to one candidate: ``ok``, ``dropped`` (too slow), ``wrong``, ``error``."""

    index: int
    config: Config
    status: str = "pending"
    samples: list[float] = field(default_factory=list)
    detail: str = ""
    error: BaseException | None = None

    @property
    def median(self) -> float:
        """Median seconds over the timed runs (``inf`` before any)."""
        return statistics.median(self.samples) if self.samples else float("inf")

    def as_json(self) -> dict[str, Any]:
        """The record kept in the cache."""
        return {"index": self.index, "config": self.config.as_json(), "status": self.status,
                "median_s": self.median if self.samples else None,
                "runs": len(self.samples), "detail": self.detail}


def describe_best(outcomes: Sequence[Outcome]) -> str | None:
    """``"Config(BLOCK=128) 0.012 ms"`` for the fastest timed candidate so far."""
    timed = [o for o in outcomes if o.samples and o.status == "ok"]
    if not timed:
        return None
    best = min(timed, key=lambda o: o.median)
    return f"{best.config} {best.median * 1e3:.3g} ms"


def _check(outcome: Outcome, run: Callable[[Config], Any],
           observe: Callable[[Any], dict[str, np.ndarray]],
           reference: tuple[Outcome, dict[str, np.ndarray]] | None, warmup: int
           ) -> dict[str, np.ndarray] | None:
    """Run the candidate once and compare it; returns its outputs when it is the reference."""
    try:
        observed = observe(run(outcome.config))
        if reference is not None:
            diff = compare(reference[1], observed)
            if diff is not None:
                outcome.status = "wrong"
                outcome.detail = f"output differs from {reference[0].config}: {diff}"
                return None
        for _ in range(warmup):
            run(outcome.config)
    except Exception as err:  # a candidate that cannot compile or run is discarded
        outcome.status, outcome.error = "error", err
        outcome.detail = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        return None
    outcome.status = "ok"
    return observed if reference is None else None


SAMPLE_SECONDS = 2e-3  # one timed sample runs a candidate this long at least (at most 100x)


def _repeats_per_sample(timer: Timer, once: Callable[[], Any]) -> int:
    """How many runs one sample times: a short kernel timed alone measures the clock's
    resolution and the launch gap around it as much as the kernel, and picks winners by
    noise."""
    try:
        seconds = timer(once)
    except Exception:  # noqa: BLE001 - the timing loop reports the error on this candidate
        return 1
    return max(1, min(100, int(SAMPLE_SECONDS / max(seconds, 1e-7))))


Sample = Callable[["Outcome"], float]  # seconds per run of one timed sample of a candidate


def _sampler(run: Callable[[Config], Any], timer: Timer, repeats: Mapping[int, int]) -> Sample:
    """One sample of a candidate: ``repeats[index]`` runs on ``timer``, seconds per run."""
    def sample(outcome: Outcome) -> float:
        count = repeats[outcome.index]
        return timer(functools.partial(run, outcome.config), count) / count
    return sample


def _timing_rounds(alive: list[Outcome], rounds: int, sample: Sample, *,
                   drop_ratio: float | None, max_seconds: float,
                   report: Callable[[int, list[Outcome]], None]) -> list[Outcome]:
    """Time ``alive`` round-robin for up to ``rounds`` rounds, stopping once three rounds are
    done and ``max_seconds`` have passed; with ``drop_ratio``, candidates whose fastest run is
    slower than that × the leader's median are dropped from the second round on. Returns the
    survivors."""
    started = time.perf_counter()
    for round_index in range(rounds):
        for outcome in alive:
            try:
                outcome.samples.append(sample(outcome))
            except Exception as err:
                outcome.status, outcome.error = "error", err
                outcome.detail = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        alive = [o for o in alive if o.status == "ok"]
        if not alive:
            break
        leader = min(o.median for o in alive)
        if drop_ratio is not None and round_index >= 1:
            for outcome in alive:  # its fastest run, so that one hiccup drops nobody
                if min(outcome.samples) > drop_ratio * leader:
                    outcome.status = "dropped"
                    outcome.detail = (f"{outcome.median / leader:.2f}x the leader's time after "
                                      f"{len(outcome.samples)} runs")
            alive = [o for o in alive if o.status == "ok"]
        report(round_index, alive)
        if len(alive) <= 1 or (round_index >= 2 and time.perf_counter() - started > max_seconds):
            break
    return alive


def benchmark(candidates: Sequence[tuple[int, Config]], run: Callable[[Config], Any],
              observe: Callable[[Any], dict[str, np.ndarray]], snapshot: Snapshot,
              timer: Timer, *, warmup: int = 1, rep: int = 10, drop_ratio: float = 1.5,
              max_seconds: float = 1.0, progress: Progress | None = None,
              parallel_warmup: bool = False, tie_ratio: float = 1.03) -> list[Outcome]:
    """Check and time every candidate (see the module docstring); the outcomes, in order.
    ``parallel_warmup`` first compiles the candidates concurrently (``warm_up_in_parallel``).
    Candidates whose median is within ``tie_ratio`` of the leader's are finalists: they are
    timed for up to ``rep`` more rounds, in turns among themselves, before the least median
    wins (GPU configs often differ by 1-3 %, about the spread of ten samples). On a clock with
    a ``settle`` method (a ``SustainedTimer``: CUDA's, WGSL's on a GPU adapter) the final is
    timed under sustained load instead (``_sustained_final``)."""
    outcomes = [Outcome(index, cfg) for index, cfg in candidates]
    if parallel_warmup and len(outcomes) > 1:
        warm_up_in_parallel([o.config for o in outcomes], run)
    reference: tuple[Outcome, dict[str, np.ndarray]] | None = None
    for done, outcome in enumerate(outcomes, 1):
        if progress:
            progress.set(f"checking {done}/{len(outcomes)}")
        snapshot.restore()
        observed = _check(outcome, run, observe, reference, warmup)
        if observed is not None:
            reference = (outcome, observed)
        if progress:
            progress.update(f"checked {done}/{len(outcomes)}")
    alive = [o for o in outcomes if o.status == "ok"]
    if len(alive) <= 1:
        return outcomes
    repeats = {o.index: _repeats_per_sample(timer, functools.partial(run, o.config))
               for o in alive}

    def report(stage: str, rounds: int = rep) -> Callable[[int, list[Outcome]], None]:
        def update(round_index: int, left: list[Outcome]) -> None:
            if progress:
                progress.update(f"{stage} round {round_index + 1}/{rounds}, {len(left)} left, "
                                f"best so far {describe_best(outcomes)}")
        return update

    sample = _sampler(run, timer, repeats)
    alive = _timing_rounds(alive, rep, sample, drop_ratio=drop_ratio, max_seconds=max_seconds,
                           report=report("timing"))
    if isinstance(timer, SustainedTimer):
        _sustained_final(alive, run, timer, report=report("sustained", SUSTAIN_ROUNDS))
    else:
        _close_final(alive, sample, tie_ratio=tie_ratio, rep=rep, max_seconds=max_seconds,
                     report=report("final"))
    return outcomes


def _drop_others(alive: list[Outcome], finalists: list[Outcome], why: str) -> None:
    """Drop those of ``alive`` not among ``finalists``, their detail ending with ``why``.
    They leave the race: the finalists' later samples come from a GPU in another state
    (hotter, or settled), so a median over both phases is comparable among finalists only."""
    leader = min((o.median for o in alive), default=float("inf"))
    for outcome in alive:
        if outcome not in finalists:
            outcome.status = "dropped"
            outcome.detail = (f"{outcome.median / leader:.3f}x the leader's time after "
                              f"{len(outcome.samples)} runs{why}")


def _close_final(alive: list[Outcome], sample: Sample, *, tie_ratio: float, rep: int,
                 max_seconds: float, report: Callable[[int, list[Outcome]], None]) -> None:
    """The candidates within ``tie_ratio`` of the leader take turns for ``rep`` more rounds;
    the rest are dropped."""
    leader = min((o.median for o in alive), default=float("inf"))
    finalists = [o for o in alive if o.median <= tie_ratio * leader]
    if len(finalists) <= 1:
        return
    _drop_others(alive, finalists, ": not a finalist")
    before = {o.index: len(o.samples) for o in finalists}
    _timing_rounds(finalists, rep, sample, drop_ratio=None, max_seconds=max_seconds,
                   report=report)
    for outcome in finalists:
        if outcome.status == "ok":
            outcome.detail = (f"finalist: {len(outcome.samples) - before[outcome.index]} "
                              f"more runs in turns with {len(finalists) - 1} others")


SUSTAIN_RATIO = 1.10  # how far behind the cold-start leader a config may still win sustained
SUSTAIN_CONTENDERS = 5
SUSTAIN_ROUNDS = 3
SUSTAINED_SAMPLE_SECONDS = 10e-3  # timed runs per sustained sample (at most 100 runs)
SETTLE_SECONDS = 0.1  # of untimed runs back to back before each sustained sample
MAX_SETTLE_RUNS = 1000  # bounds the host's time on kernels shorter than their launch


def _sustained_final(alive: list[Outcome], run: Callable[[Config], Any],
                     timer: SustainedTimer, *,
                     report: Callable[[int, list[Outcome]], None]) -> None:
    """The final on a clock whose device slows under sustained load (``timer.settle``): the
    best few of the first rounds, each sample timed after about 0.1 s of the same candidate
    back to back, in turns. The winner is the least sustained median.

    Why: an H200 at its 700 W cap lowers its SM clock within 50-130 ms of steady work, and by
    how much depends on the kernel's power draw. Flash attention's 64x64 blocks ran 2.4 %
    faster than its 128x128 blocks in a model loop's first 20 launches and 6-7 % slower from
    the 60th on (run 71), and the first rounds' samples are short runs after idle. A config
    slower from a cold start (up to ``SUSTAIN_RATIO``) may be the faster one in a loop."""
    leader = min((o.median for o in alive), default=float("inf"))
    ranked = sorted(alive, key=lambda o: o.median)
    contenders = [o for o in ranked if o.median <= SUSTAIN_RATIO * leader][:SUSTAIN_CONTENDERS]
    _drop_others(alive, contenders, " from a cold start: not a contender")
    if len(contenders) <= 1:
        return
    cold = {o.index: o.median for o in contenders}
    repeats = {o.index: max(1, min(100, math.ceil(SUSTAINED_SAMPLE_SECONDS / o.median)))
               for o in contenders}
    # Each run also keeps the GPU busy with what the clock adds to it (the L2 zeroing).
    settles = {o.index: max(1, min(MAX_SETTLE_RUNS, math.ceil(
        SETTLE_SECONDS / (o.median + timer.overhead_seconds)))) for o in contenders}
    for outcome in contenders:  # samples of the two phases are not comparable
        outcome.samples = []
    timed = _sampler(run, timer, repeats)

    def sustained(outcome: Outcome) -> float:
        timer.settle(functools.partial(run, outcome.config), settles[outcome.index])
        return timed(outcome)

    _timing_rounds(contenders, SUSTAIN_ROUNDS, sustained, drop_ratio=None,
                   max_seconds=float("inf"), report=report)
    for outcome in contenders:
        if outcome.status == "ok":
            outcome.detail = (f"sustained: {len(outcome.samples)} samples of "
                              f"{repeats[outcome.index]} runs in turns with "
                              f"{len(contenders) - 1} others, each after "
                              f"{settles[outcome.index]} untimed runs back to back; "
                              f"{cold[outcome.index] * 1e3:.4g} ms per run from a cold start")
