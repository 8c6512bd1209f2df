"""``@cube.autotune``: choose the fastest config of a kernel (or of a host function) per key.

The first call for a new key benchmarks the candidates (``bench.benchmark``), keeps the winner
in this process and in the on-disk cache (``cache``); later calls, here or in the next
process, use it at once. ``CUBEPY_AUTOTUNE=0`` skips all of that and uses the heuristic
default. See ``autotune`` for the options.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .. import config as settings_module
from ..errors import CubeError, LaunchError, user_stacklevel
from ..runtime.args import is_array
from ..runtime.jit import OPTIONS, Kernel
from ..runtime.targets import cuda_available, target_info
from . import cache, misuse
from .bench import (
    Outcome,
    Snapshot,
    benchmark,
    describe_best,
    observed_copy,
)
from .clocks import timer_for
from .config import Config, configs_checksum
from .context import AutotuneWarning, Stats, TuneContext, count
from .key import (
    Bucket,
    TuneKey,
    bound_key,
    fingerprint,
    make_key,
    repeat_key,
    resolve_target,
)
from .progress import Progress

log = logging.getLogger("cubepy.autotune")


class Autotuner:
    """A kernel or host function with a list of configs, tuned per key (see ``autotune``).

    Launch a tuned kernel as the kernel itself, without the tuned parameters:
    ``tuned[grid](*args)``; call a tuned host function as the function: ``tuned(*args)``.
    ``last_config`` is the config the latest call used; ``stats`` counts what happened.
    """

    __cube_autotuner__ = True

    def __init__(self, fn: Kernel | Callable[..., Any], configs: Sequence[Config],
                 key: Sequence[str] | Mapping[str, Bucket | None], *,
                 prune: Callable[[list[Config], TuneContext], Sequence[Config]] | None = None,
                 default: Callable[[TuneContext], Config] | None = None, warmup: int = 1,
                 rep: int = 10, drop_ratio: float = 1.5, max_seconds: float = 1.0) -> None:
        misuse.check_decorated(fn)
        self.fn = fn
        self.is_kernel = isinstance(fn, Kernel)
        inner = fn.fn if self.is_kernel else fn
        self.signature = fn.signature if self.is_kernel else inspect.signature(fn)
        self.name = f"{inner.__module__}.{getattr(inner, '__qualname__', repr(inner))}"
        self.configs = misuse.checked_configs(self.name, configs)
        self.key = misuse.checked_key(self.name, key)
        misuse.check_options(self.name, warmup=warmup, rep=rep, drop_ratio=drop_ratio,
                             max_seconds=max_seconds)
        misuse.check_names(self.name, fn, self.signature, self.configs, self.key)
        misuse.check_config_values(self.name, fn, self.signature, self.configs)
        misuse.check_hooks(self.name, prune, default, self.key)
        self.prune, self.default = prune, default
        self.warmup, self.rep, self.drop_ratio = warmup, rep, drop_ratio
        self.max_seconds = max_seconds
        self.checksum = configs_checksum(self.configs)
        self._distinct = [(i, c) for i, c in enumerate(self.configs) if c not in self.configs[:i]]
        self.stats = Stats()
        self.last_config: Config | None = None
        self.last_key: TuneKey | None = None
        self._memo: dict[str, Config] = {}
        self._keys: dict[tuple, TuneKey] = {}
        self._defaults: dict[str, Config] = {}
        self._repeats: dict[tuple, tuple[TuneKey, Config, str]] = {}
        self._lock = threading.RLock()
        self._tuned_names = frozenset(name for c in self.configs for name in c.launch_kwargs())
        self._launch_kwargs = {id(c): c.launch_kwargs() for c in self.configs}
        self._positional = self._positional_names()
        self._keyed_positions = self._keyed_positions_of()
        functools.update_wrapper(self, inner, updated=())

    def _positional_names(self) -> tuple[int, list[tuple[str, Any]]] | None:
        """For binding without ``inspect``: how many leading parameters positional arguments
        may fill (those before the first tuned one), and every untuned parameter with its
        default; None unless all are plain positional-or-keyword parameters."""
        params = list(self.signature.parameters.values())
        if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
            return None
        leading = next((i for i, p in enumerate(params) if p.name in self._tuned_names),
                       len(params))
        return leading, [(p.name, p.default) for p in params if p.name not in self._tuned_names]

    def _keyed_positions_of(self) -> tuple[bool, ...] | None:
        """For ``repeat_key``: per leading positional parameter, whether its value is part
        of the key (a key name, or a host function's own ``target``); None where positional
        calls cannot be keyed that way."""
        if self._positional is None:
            return None
        leading = self._positional[1][:self._positional[0]]
        return tuple(name in self.key or (name == "target" and not self.is_kernel)
                     for name, _ in leading)

    def __repr__(self) -> str:
        return f"<cube.autotune {self.name}: {len(self.configs)} configs>"

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of the source of the code tuned (see ``key.fingerprint``)."""
        return fingerprint(self.fn)

    # ---- calling ----

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        if not self.is_kernel:
            raise misuse.grid_on_function(self.name, self.fn, self.signature)

        def launch(*args: Any, **kwargs: Any) -> None:
            def run(cfg: Config) -> None:
                try:
                    self.fn[grid](*args, **kwargs, **self._config_kwargs(cfg))
                except LaunchError as err:  # it points at the line above: point at the call's
                    raise misuse.at_user(err) from None
            self._located(run, args, kwargs)
        return launch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.is_kernel:
            raise misuse.call_error(f"{self.fn.__name__} is a kernel, called without a grid",
                                    f"launch it as {self.fn.__name__}[(cubes,)](...)")
        return self._located(lambda cfg: self.fn(*args, **kwargs, **self._config_kwargs(cfg)),
                             args, kwargs)

    def _located(self, run: Callable[[Config], Any], args: tuple,
                 kwargs: dict[str, Any]) -> Any:
        """``_call``, with a LaunchError of the call (a missing argument, an unknown target)
        pointing at the user's line instead of nowhere."""
        try:
            return self._call(run, args, kwargs)
        except LaunchError as err:
            located = misuse.at_user(err)
            if located is err:
                raise
            raise located from None

    def _config_kwargs(self, cfg: Config) -> dict[str, Any]:
        known = self._launch_kwargs.get(id(cfg))
        return known if known is not None else cfg.launch_kwargs()

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        fast = self._bind_fast(args, kwargs)
        if fast is not None:
            return fast
        tuned = self._tuned_names
        clash = sorted(tuned & set(kwargs))
        if clash:
            raise LaunchError(f"{self.name}: {', '.join(clash)} is chosen by autotune; "
                              "do not pass it")
        options = OPTIONS if self.is_kernel else ()
        try:
            bound = self.signature.bind_partial(
                *args, **{k: v for k, v in kwargs.items() if k not in options})
        except TypeError as err:
            raise misuse.binding_error(self.fn, self.signature, tuned, str(err)) from None
        bound.apply_defaults()
        # bind_partial lets the tuned parameters out, and so any other missing one, which
        # every candidate then failed on in turn
        missing = [name for name, p in self.signature.parameters.items()
                   if name not in bound.arguments and name not in tuned
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if missing:
            raise misuse.binding_error(self.fn, self.signature, tuned, "missing "
                                       f"{', '.join(repr(name) for name in missing)}")
        return {k: v for k, v in bound.arguments.items() if k not in tuned}

    def _bind_fast(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """``_bind`` for the common call (every untuned parameter given, positionally, and
        no keywords): a zip instead of ``inspect``'s binding, which costs tens of microseconds
        per call. None sends any other call through the full binding (and its errors)."""
        if self._positional is None or kwargs or len(args) > self._positional[0]:
            return None
        untuned = self._positional[1]
        bound = {name: value for (name, _), value in zip(untuned, args)}
        for name, default in untuned[len(args):]:
            if default is inspect.Parameter.empty:
                return None  # a missing argument: the full binding says which
            bound[name] = default
        return bound

    def _call(self, run: Callable[[Config], Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        repeat = repeat_key(args, self._keyed_positions) if not kwargs else None
        if repeat is not None:
            seen = self._repeats.get(repeat)
            if seen is not None:  # a call like an earlier one: its config, nothing rebuilt
                self.last_key, self.last_config, counter = seen
                count(self.stats, counter)
                return run(self.last_config)
        bound = self._bind(args, kwargs)
        explicit = kwargs.get("target")
        if explicit is None and not self.is_kernel and isinstance(bound.get("target"), str):
            explicit = bound["target"]  # a host function's own `target` parameter
        tune_key = self._key_of(bound, explicit)
        self.last_key = tune_key
        if not settings_module.settings().autotune:
            chosen = self._defaults.get(tune_key.id)
            if chosen is None:
                chosen = self._defaults[tune_key.id] = self._default(
                    self._context(tune_key, bound))
            count(self.stats, "defaults")
            self.last_config = chosen
            self._remember(repeat, tune_key, chosen, "defaults")
            return run(chosen)
        chosen = self._memo.get(tune_key.id)
        if chosen is not None:
            count(self.stats, "memory_hits")
        else:
            with self._lock:
                chosen = self._memo.get(tune_key.id)
                cached = None if chosen is not None else self._from_cache(tune_key)
                if cached is not None:
                    ran, result = self._try_cached(tune_key, run, cached)
                    if ran:
                        self._memo[tune_key.id] = self.last_config = cached
                        self._remember(repeat, tune_key, cached, "memory_hits")
                        return result
                chosen = chosen or self._tune(tune_key, bound, run)
                self._memo[tune_key.id] = chosen
        self.last_config = chosen
        self._remember(repeat, tune_key, chosen, "memory_hits")
        return run(chosen)

    def _try_cached(self, tune_key: TuneKey, run: Callable[[Config], Any],
                    cached: Config) -> tuple[bool, Any]:
        """(True, result) of the first run in this process of a winner read from disk, or
        (False, None) if it failed: one that no longer builds or launches here (tuned under
        another compiler version, or shipped for a device with more memory per cube) is stale
        and is tuned again, with a warning, instead of failing the call. Build and launch
        failures come before anything is written, so the tuning starts from the call's own
        inputs. A ValueError or TypeError is the call's inputs at fault, not the winner: it
        is raised as it is."""
        try:
            return True, run(cached)
        except (ValueError, TypeError):
            raise
        except Exception as error:  # noqa: BLE001 - any failure of a stale winner retunes
            warnings.warn(f"autotune {self.name} ({tune_key.describe()}): the cached winner "
                          f"{cached} failed here ({type(error).__name__}: {error}); tuning "
                          "again", AutotuneWarning, stacklevel=user_stacklevel())
            return False, None

    def _remember(self, repeat: tuple | None, tune_key: TuneKey, chosen: Config,
                  counter: str) -> None:
        if repeat is None:
            return
        if len(self._repeats) >= 4096:  # many distinct shapes: start over, stay small
            self._repeats.clear()
        self._repeats[repeat] = (tune_key, chosen, counter)

    def _key_of(self, bound: Mapping[str, Any], explicit: str | None) -> TuneKey:
        raw = bound_key(bound, self.key, explicit, settings_module.settings())
        tune_key = self._keys.get(raw) if raw is not None else None
        if tune_key is None:
            tune_key = make_key(bound, self.key, resolve_target(bound, explicit), self.name)
            if raw is not None:
                if len(self._keys) >= 4096:  # many distinct shapes: start over, stay small
                    self._keys.clear()
                self._keys[raw] = tune_key
        return tune_key

    # ---- choosing ----

    def _context(self, tune_key: TuneKey, bound: Mapping[str, Any]) -> TuneContext:
        return TuneContext(self.name, dict(tune_key.sizes), bound, tune_key.target,
                           tune_key.device, target_info(tune_key.target))

    def _candidates(self, ctx: TuneContext) -> list[tuple[int, Config]]:
        """The configs to benchmark, with their indices in ``configs``: those ``prune`` keeps,
        each once (a config listed twice was timed twice)."""
        if self.prune is None:
            return list(self._distinct)
        where = f"{', '.join(f'{k}={v}' for k, v in ctx.key.items())} on {ctx.target}"
        with misuse.noting(f"autotune {self.name}: raised by its prune hook for {where}"):
            returned = self.prune(list(self.configs), ctx)
        kept = misuse.checked_prune(self.name, self.prune, returned, where)
        indexed, seen = [], set()
        for cfg in kept:
            index = next((i for i, c in enumerate(self.configs) if c is cfg), None)
            if index is None:
                index = next((i for i, c in enumerate(self.configs) if c == cfg), None)
            if index is None:
                raise misuse.hook_error(self.name, self.prune, f"prune returned {cfg}, which is "
                                        "not in configs=", "return configs from the list it is "
                                        "given, or add this one to configs=")
            if cfg not in seen:
                seen.add(cfg)
                indexed.append((index, self.configs[index]))
        return indexed

    def _default(self, ctx: TuneContext) -> Config:
        if self.default is not None:
            with misuse.noting(f"autotune {self.name}: raised by its default hook for "
                               f"{ctx.target}"):
                chosen = self.default(ctx)
            if not isinstance(chosen, Config):
                raise misuse.hook_error(self.name, self.default, f"default returned {chosen!r}, "
                                        "not a cube.Config", "return one of the configs, e.g. "
                                        f"{self.configs[0]}")
            bad = misuse.unknown_setting(self.fn, self.signature, chosen)
            if bad is not None:  # it would fail at launch, pointing at cubepy's own line
                raise misuse.hook_error(self.name, self.default, f"default returned {chosen}, "
                                        f"which sets '{bad}': {self.fn.__name__} takes no such "
                                        "parameter", misuse.names_hint(self.fn, bad))
            return chosen
        return self._candidates(ctx)[0][1]

    def _from_cache(self, tune_key: TuneKey) -> Config | None:
        found = cache.find(self.name, tune_key.device, tune_key.id, fingerprint=self.fingerprint,
                           checksum=self.checksum, configs=self.configs)
        if found is None:
            return None
        entry, path = found
        count(self.stats, "cache_hits")
        log.info("autotune %s (%s): cached %s from %s", self.name, tune_key.describe(),
                 self.configs[entry["best_index"]], path)
        return self.configs[entry["best_index"]]

    def _tune(self, tune_key: TuneKey, bound: Mapping[str, Any],
              run: Callable[[Config], Any]) -> Config:
        ctx = self._context(tune_key, bound)
        candidates = self._candidates(ctx)
        if len(candidates) == 1:
            return candidates[0][1]
        started = time.perf_counter()
        arrays = {name: value for name, value in bound.items() if is_array(value)}
        snapshot = Snapshot(arrays)

        def observe(result: Any) -> dict[str, np.ndarray]:
            outputs = {name: observed_copy(value) for name, value in arrays.items()}
            results = result if isinstance(result, (tuple, list)) else [result]
            # numbers too: a host function returning a count or a norm is checked as well
            outputs.update({f"<return {i}>": observed_copy(r) if is_array(r) else np.asarray(r)
                            for i, r in enumerate(results)
                            if is_array(r) or isinstance(r, (int, float, complex, np.generic))})
            return outputs

        def counted(cfg: Config) -> Any:
            count(self.stats, "benchmark_runs")
            return run(cfg)

        with Progress(self.name, tune_key.describe(), len(candidates)) as progress:
            outcomes = benchmark(candidates, counted, observe, snapshot,
                                 timer_for(tune_key.target, list(arrays.values())),
                                 warmup=self.warmup, rep=self.rep, drop_ratio=self.drop_ratio,
                                 max_seconds=self.max_seconds, progress=progress,
                                 parallel_warmup=tune_key.target == "triton" and cuda_available())
            snapshot.restore()
            count(self.stats, "tunings")
            ok = [o for o in outcomes if o.status == "ok"]
            errors = [o.error for o in outcomes if o.error is not None]
            if not ok and len({(type(e), str(e)) for e in errors}) == 1:
                raise misuse.trimmed(errors[0])  # every config failed alike: the call's fault
            self._report(tune_key, outcomes)
            if not ok:  # each its own way: the first one's error, saying that all failed
                first = next(o for o in outcomes if o.error is not None)
                misuse.note(first.error, f"autotune {self.name} ({tune_key.describe()}): every "
                            f"config failed (see the warnings above); this error is "
                            f"{first.config}'s")
                raise misuse.trimmed(errors[0])
            best = min(ok, key=lambda o: o.median)
            progress.finish(describe_best(outcomes) or str(best.config))
        self._store(tune_key, candidates, outcomes, best, time.perf_counter() - started)
        return best.config

    def _report(self, tune_key: TuneKey, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            if outcome.status in ("wrong", "error"):
                count(self.stats, "rejected" if outcome.status == "wrong" else "failed")
                warnings.warn(f"autotune {self.name} ({tune_key.describe()}): discarded "
                              f"{outcome.config}: {outcome.detail}", AutotuneWarning,
                              stacklevel=user_stacklevel())

    def _store(self, tune_key: TuneKey, candidates: list[tuple[int, Config]],
               outcomes: list[Outcome], best: Outcome, seconds: float) -> None:
        kept = {index for index, _ in candidates}
        first = {c: i for i, c in reversed(list(enumerate(self.configs)))}
        pruned = [{"index": i, "config": c.as_json(), "median_s": None, "runs": 0,
                   **({"status": "duplicate", "detail": f"the same config as #{first[c]}"}
                      if first[c] in kept else {"status": "pruned", "detail": "dropped by prune"})}
                  for i, c in enumerate(self.configs) if i not in kept]
        entry = {
            "cubepy": cache.version(), "fingerprint": self.fingerprint,
            "configs_checksum": self.checksum, "key": tune_key.as_json(),
            "best_index": best.index, "best": best.config.as_json(),
            "timings": sorted([o.as_json() for o in outcomes] + pruned,
                              key=lambda t: t["index"]),
            "tuned_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "tuning_s": round(seconds, 4),
        }
        path = cache.store(self.name, tune_key.target, tune_key.device, tune_key.id, entry)
        log.info("autotune %s (%s): %s wins; stored in %s", self.name, tune_key.describe(),
                 best.config, path)


def autotune(configs: Sequence[Config], key: Sequence[str] | Mapping[str, Bucket | None], *,
             prune: Callable[[list[Config], TuneContext], Sequence[Config]] | None = None,
             default: Callable[[TuneContext], Config] | None = None, warmup: int = 1,
             rep: int = 10, drop_ratio: float = 1.5, max_seconds: float = 1.0
             ) -> Callable[[Kernel | Callable[..., Any]], Autotuner]:
    """Decorator: tune a kernel (or a host function that launches kernels) over ``configs``.

    - ``key``: parameter names whose values select a result; ints are bucketed to the next
      power of two (1000 and 1020 share 1024), arrays by their bucketed shape. A mapping gives
      each name its own bucket function (``None``: exact values). Array dtypes and layouts,
      the target and the device are always part of the key.
    - ``prune(configs, ctx)``: returns the configs that can run for this call (e.g. those
      whose tiles fit ``ctx.limits``), before anything runs.
    - ``default(ctx)``: the heuristic config used when ``CUBEPY_AUTOTUNE=0`` (otherwise the
      first config that ``prune`` keeps).
    - ``warmup``: extra runs per candidate after its first (checked) run; ``rep``: timed rounds
      at most; ``drop_ratio``: candidates slower than this × the leader are dropped early;
      ``max_seconds``: timing stops after this long (once three rounds are done).

    Every candidate's outputs (all array arguments, and arrays returned by a host function)
    must match the first config's; arrays are restored between candidates, so kernels that
    write in place tune correctly. For a host function each config's entries are passed as
    keyword arguments.

    Example:
        >>> import cubepy as cube
        >>> @cube.autotune(configs=[cube.Config(BLOCK=128), cube.Config(BLOCK=512)], key=["n"])
        ... @cube.kernel
        ... def add(x, y, out, n, BLOCK: cube.Comptime[int]):
        ...     offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        ...     m = offs < n
        ...     cube.store(out + offs, cube.load(x + offs, m) + cube.load(y + offs, m), m)
        >>> add[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](x, y, out, n)  # doctest: +SKIP
    """
    def wrap(fn: Kernel | Callable[..., Any]) -> Autotuner:
        try:
            return Autotuner(fn, configs, key, prune=prune, default=default, warmup=warmup,
                             rep=rep, drop_ratio=drop_ratio, max_seconds=max_seconds)
        except CubeError as err:  # its message shows the user's line: cubepy's frames are noise
            raise err.with_traceback(None) from None
    return wrap
