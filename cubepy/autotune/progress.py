"""Progress of a tuning on stderr: which kernel, how many candidates, where it stands.

Nothing is printed for a tuning that ends within ``threshold`` (one second); past it, the
latest status is printed at most once per ``interval``, and a last line says how it ended.
A watchdog thread prints the first line as soon as the threshold passes, even while one
candidate is still compiling (a Triton kernel can take several seconds to build: before, a
tuning stuck on its first candidate printed nothing until that candidate was done).

Example:
    >>> import io
    >>> p = Progress("add", "n=1024", total=3, threshold=0.0, stream=io.StringIO())
    >>> p.update("checked 1/3"); p.stream.getvalue()
    'cubepy.autotune: tuning add (n=1024), 3 candidates: checked 1/3\\n'
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO


class Progress:
    """Progress lines on stderr, only once tuning has taken more than ``threshold`` seconds.

    Use it as a context manager to have the watchdog print the first line on time (``with
    Progress(...) as progress:``); ``update`` and ``finish`` work without it too.
    """

    def __init__(self, name: str, key: str, total: int, *, threshold: float = 1.0,
                 interval: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 stream: TextIO | None = None) -> None:
        self.name, self.key, self.total = name, key, total
        self.threshold, self.interval, self.clock = threshold, interval, clock
        self.stream = stream
        self.started = clock()
        self.last: float | None = None
        self.status = f"checking 1/{total}"  # what the watchdog prints
        self.ended = False
        self._lock = threading.Lock()
        self._watchdog: threading.Timer | None = None

    def __enter__(self) -> Progress:
        self._watchdog = threading.Timer(self.threshold, self._overdue)
        self._watchdog.daemon = True  # never keeps the program alive
        self._watchdog.start()
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if error is not None and not self.ended and self.last is not None:
            # a tuning whose progress was shown says that it stopped, not just goes quiet
            self._end(f"stopped after {self.clock() - self.started:.1f} s "
                      f"({type(error).__name__})")

    def _overdue(self) -> None:
        with self._lock:
            if self.last is None and not self.ended:
                self.last = self.clock()
                self._write(self.status)

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stderr
        print(f"cubepy.autotune: tuning {self.name} ({self.key}), {self.total} candidates: "
              f"{text}", file=stream, flush=True)

    def set(self, status: str) -> None:
        """Record ``status`` for the watchdog's first line without printing it (a candidate
        about to compile: "checking 2/3")."""
        with self._lock:
            self.status = status

    def update(self, status: str) -> None:
        """Report ``status``: printed past the threshold, at most once per ``interval``."""
        with self._lock:
            self.status = status
            now = self.clock()
            if now - self.started < self.threshold:
                return
            if self.last is not None and now - self.last < self.interval:
                return
            self.last = now
            self._write(status)

    def finish(self, best: str) -> None:
        """The last line, printed when tuning took longer than the threshold."""
        elapsed = self.clock() - self.started
        if elapsed >= self.threshold or self.last is not None:
            self._end(f"done in {elapsed:.1f} s, best {best}")
        self.ended = True

    def _end(self, text: str) -> None:
        with self._lock:
            self.ended = True
            if self._watchdog is not None:
                self._watchdog.cancel()
            self._write(text)
