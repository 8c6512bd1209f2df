"""Progress of a tuning on stderr: quiet under a second; past it, which kernel, how many
candidates and where it stands, from the first second on even while one candidate is still
compiling, and a last line however the tuning ends."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest

import cubepy as cube
from cubepy.autotune import progress

PREFIX = "cubepy.autotune: tuning add (n=1024), 3 candidates: "


def test_progress_goes_to_stderr_after_the_threshold(capsys):
    clock = iter([0.0, 0.5, 2.0, 2.2, 3.5, 4.0]).__next__
    shown = progress.Progress("add", "n=1024", total=3, threshold=1.0, clock=clock)
    shown.update("checked 1/3")  # 0.5 s: quiet
    shown.update("checked 2/3")  # 2.0 s: printed
    shown.update("checked 3/3")  # 2.2 s: too soon after the last line
    shown.update("timing round 1/10, 3 left, best so far Config(BLOCK=64) 0.1 ms")
    shown.finish("Config(BLOCK=64) 0.1 ms")
    assert capsys.readouterr().err.splitlines() == [
        PREFIX + "checked 2/3",
        PREFIX + "timing round 1/10, 3 left, best so far Config(BLOCK=64) 0.1 ms",
        PREFIX + "done in 4.0 s, best Config(BLOCK=64) 0.1 ms",
    ]


@pytest.mark.parametrize("threshold, lines", [(60.0, 0), (0.0, 2)])
def test_a_quick_tuning_prints_nothing(threshold, lines):
    stream = io.StringIO()
    with progress.Progress("add", "n=1024", total=3, threshold=threshold,
                           stream=stream) as shown:
        shown.update("checked 1/3")
        shown.finish("Config(BLOCK=64) 0.1 ms")
    assert len(stream.getvalue().splitlines()) == lines


@pytest.mark.parametrize("fails", [False, True])
def test_the_first_line_comes_on_time_during_a_long_first_candidate(fails):
    # before: lines were printed only between candidates, so a tuning whose first candidate
    # compiled for 20 s said nothing for 20 s
    stream = io.StringIO()
    printed = threading.Event()
    writes = stream.write

    def write(text: str) -> int:
        printed.set()
        return writes(text)

    stream.write = write  # type: ignore[method-assign]
    try:
        with progress.Progress("add", "n=1024", total=3, threshold=0.05,
                               stream=stream) as shown:
            assert printed.wait(5.0)  # the "compile" still runs: the watchdog printed
            assert stream.getvalue() == PREFIX + "checking 1/3\n"
            if fails:
                raise RuntimeError("out of resources")
            shown.update("checked 3/3")
            shown.finish("Config(BLOCK=64) 0.1 ms")
    except RuntimeError:
        pass
    last = stream.getvalue().splitlines()[-1]
    if fails:  # it says that it stopped, instead of going quiet
        assert last.startswith(PREFIX + "stopped after ") and last.endswith("(RuntimeError)")
    else:
        assert last.startswith(PREFIX + "done in ") and "best Config(BLOCK=64)" in last


def test_a_real_tuning_over_a_second_shows_its_progress(capsys):
    slept = set()

    def slow(x, B=1):
        if B not in slept:  # each config's first run "compiles" for 0.7 s
            slept.add(B)
            time.sleep(0.7)
        return x * 2

    tuned = cube.autotune(configs=[cube.Config(B=1), cube.Config(B=2)], key=["x"], rep=3)(slow)
    np.testing.assert_array_equal(tuned(np.ones(8)), np.full(8, 2.0))
    err = capsys.readouterr().err.splitlines()
    prefix = (f"cubepy.autotune: tuning test_progress.{slow.__qualname__} (x=[8], "
              "x:float64/c), 2 candidates: ")
    assert err[0] == prefix + "checking 2/2"  # at one second, while the second "compiles"
    assert err[-1].startswith(prefix + "done in ") and "best Config(B=" in err[-1]
