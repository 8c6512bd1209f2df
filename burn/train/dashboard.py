"""The terminal dashboard of a training run: progress within each epoch, then one line per
epoch with its metrics.

On a terminal the progress line is redrawn in place (a bar, batches done, items per second,
time left, the running metrics) at most ``refresh`` times a second; written to a file or a
pipe (CI logs), a progress line is printed every ``log_every`` seconds instead, so a long
epoch still shows that it moves. Reading the running metrics makes the host wait for the
device, which is why it is rate-limited.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> board = burn.train.Dashboard(stream=out)
    >>> board.start_epoch(0, epochs=2, batches=10)
    >>> board.end_epoch({"train": {"loss": "0.25"}}, seconds=1.5)
    >>> print(out.getvalue().strip())
    epoch 1/2  1.5 s  train loss 0.25
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Dashboard:
    """Prints a run's progress to ``stream`` (standard error by default).

    ``live``: redraw one progress line in place (the default when ``stream`` is a terminal).
    ``refresh``: the least seconds between two redraws of the live line. ``log_every``: the
    seconds between two progress lines when not live (0: none, only the epoch lines)."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 refresh: float = 0.25, log_every: float = 30.0):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty()) if live is None else live
        self.refresh, self.log_every = refresh, log_every
        self._epoch = self._epochs = 0
        self._batches: int | None = None
        self._started = self._last_shown = 0.0
        self._shown_live = False

    def start_epoch(self, epoch: int, epochs: int, batches: int | None) -> None:
        """A new epoch (``epoch`` counts from 0) of ``batches`` batches (None: unknown)."""
        self._epoch, self._epochs, self._batches = epoch, epochs, batches
        self._started = self._last_shown = time.perf_counter()

    def batch(self, done: int, items: int, running: Callable[[], dict[str, str]]) -> None:
        """``done`` batches (``items`` items) of this epoch are finished. ``running`` gives
        the running metrics, formatted; it is called only when a line is shown."""
        if not self.live and self.log_every <= 0:
            return
        now = time.perf_counter()
        if now - self._last_shown < (self.refresh if self.live else self.log_every):
            return
        self._last_shown = now
        line = self._progress(done, items, now - self._started, running())
        if self.live:
            self.stream.write("\r\x1b[2K" + line)
            self._shown_live = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end_epoch(self, summary: dict[str, dict[str, str]], seconds: float,
                  extra: str = "") -> None:
        """The epoch's line: ``summary`` maps a phase (``"train"``, ``"valid"``) to its
        formatted metrics."""
        parts = [f"epoch {self._epoch + 1}/{self._epochs}", f"{seconds:.1f} s"]
        for phase, metrics in summary.items():
            if metrics:
                parts.append(phase + " " + " ".join(f"{k} {v}" for k, v in metrics.items()))
        if extra:
            parts.append(extra)
        prefix = "\r\x1b[2K" if self._shown_live else ""
        self._shown_live = False
        self.stream.write(prefix + "  ".join(parts) + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of its own (a resumed run, a checkpoint written)."""
        prefix = "\r\x1b[2K" if self._shown_live else ""
        self._shown_live = False
        self.stream.write(prefix + text + "\n")
        self.stream.flush()

    def _progress(self, done: int, items: int, elapsed: float, running: dict[str, str]) -> str:
        head = f"epoch {self._epoch + 1}/{self._epochs}"
        rate = items / elapsed if elapsed > 0 else 0.0
        if self._batches:
            width = 20
            filled = min(width, width * done // self._batches)
            bar = "[" + "#" * filled + "." * (width - filled) + "]"
            left = elapsed / done * (self._batches - done) if done else 0.0
            where = f"{bar} {done}/{self._batches}  eta {_clock(left)}"
        else:
            where = f"batch {done}"
        metrics = " ".join(f"{k} {v}" for k, v in running.items())
        return f"{head} {where}  {rate:,.0f} items/s  {metrics}".rstrip()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Silent(Dashboard):
    """A dashboard that prints nothing (``Learner(..., dashboard=False)``)."""

    def __init__(self) -> None:
        super().__init__(stream=sys.stderr, live=False, log_every=0)

    def batch(self, done: int, items: int, running: Callable[[], dict[str, str]]) -> None:
        return

    def end_epoch(self, summary: dict[str, dict[str, str]], seconds: float,
                  extra: str = "") -> None:
        return

    def message(self, text: str) -> None:
        return
