"""What the autotuner shares with its hooks and its callers: the context a ``prune`` or
``default`` hook sees (``TuneContext``), the counters of what it did (``Stats``, ``STATS``)
and the warning a discarded candidate raises (``AutotuneWarning``).

Example:
    >>> s = Stats(); count(s, "tunings"); s.tunings
    1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.base import TargetInfo


class AutotuneWarning(UserWarning):
    """A candidate was discarded while tuning: its output was wrong, or it failed to run."""


@dataclass
class Stats:
    """Counters of what the autotuner did (per ``Autotuner`` and for the whole process).

    Example:
        >>> from cubepy.autotune import STATS
        >>> STATS.tunings >= 0
        True
    """

    tunings: int = 0         # keys benchmarked
    benchmark_runs: int = 0  # candidate runs while tuning (checks, warm-ups, timed runs)
    cache_hits: int = 0      # winners read from a cache file
    memory_hits: int = 0     # winners reused within this process
    defaults: int = 0        # calls that used the heuristic default (CUBEPY_AUTOTUNE=0)
    rejected: int = 0        # candidates discarded for a wrong output
    failed: int = 0          # candidates discarded because they raised

    def as_dict(self) -> dict[str, int]:
        """The counters as a dict."""
        return dataclasses.asdict(self)


STATS = Stats()


@dataclass(frozen=True)
class TuneContext:
    """What ``prune`` and ``default`` hooks see about a call.

    ``key``: the bucketed key values by name; ``args``: the bound arguments; ``limits``: the
    target's limits (``target_info(target).limits``, e.g. workgroup memory).
    """

    name: str
    key: Mapping[str, Any]
    args: Mapping[str, Any]
    target: str
    device: str
    info: TargetInfo

    @property
    def limits(self) -> dict[str, int]:
        """The target's limits (names as ``TargetInfo.limits`` spells them)."""
        return self.info.limits


def count(stats: Stats, name: str) -> None:
    """Add one to counter ``name`` of ``stats`` and of the process-wide ``STATS``."""
    for counters in (stats, STATS):
        setattr(counters, name, getattr(counters, name) + 1)
