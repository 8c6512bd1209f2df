"""The autotuner in one process: keys, checks of candidates, prune, defaults, host functions."""

from __future__ import annotations

import json
import statistics
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from autotune_kernels import (
    ADD_CONFIGS,
    MATMUL_CONFIGS,
    add_inputs,
    add_kernel,
    make_add,
    matmul,
    run_add,
)

import cubepy as cube
from cubepy import config
from cubepy.autotune import AutotuneWarning, TuneContext, bench, cache, key, pow2_anchor


def _entries(cache_dir: Path) -> list[dict]:
    files = sorted((cache_dir / "autotune").glob("*.json"))
    return [e for f in files for e in json.loads(f.read_text())["entries"].values()]


def _grid(n: int):
    return lambda meta: (cube.cdiv(n, meta["BLOCK"]),)


def test_anchors_and_layout_classes():
    assert [pow2_anchor(n) for n in (1, 2, 3, 1000, 1020, 1024, 3000)] == [
        1,
        2,
        4,
        1024,
        1024,
        1024,
        4096,
    ]
    a = np.zeros((4, 6), np.float32)
    assert [key.layout_class(v) for v in (a, a.T, a[:, ::2], a[:1], a[:0, ::2])] == [
        "c", "f", "s", "c", "c"]


def test_sizes_in_one_bucket_share_a_result(cache_dir):
    tuned = make_add()
    run_add(tuned, 1000)
    assert tuned.stats.tunings == 1 and tuned.stats.benchmark_runs > 0
    first_key = tuned.last_key
    run_add(tuned, 1020)  # the same bucket (1024): reused, not retuned
    assert tuned.stats.tunings == 1 and tuned.stats.memory_hits == 1
    assert tuned.last_key.id == first_key.id
    run_add(tuned, 3000)  # bucket 4096: tuned on its own
    assert tuned.stats.tunings == 2 and tuned.last_key.id != first_key.id
    entries = _entries(cache_dir)
    assert sorted(e["key"]["sizes"]["n"] for e in entries) == [1024, 4096]
    for entry in entries:
        assert entry["key"]["target"] == "cpu" and entry["key"]["device"].startswith("cpu: ")
        assert entry["key"]["arrays"] == {"x": "float32/c", "y": "float32/c", "out": "float32/c"}
        assert entry["best"] == ADD_CONFIGS[entry["best_index"]].as_json()
        assert all(t["median_s"] > 0 for t in entry["timings"] if t["status"] == "ok")
    fresh = make_add()  # a new process would see the same: the disk cache answers
    run_add(fresh, 1010)
    assert fresh.stats.tunings == 0 and fresh.stats.cache_hits == 1


def test_repeated_calls_reuse_their_key_but_not_across_layouts_or_settings(
        cache_dir, monkeypatch):
    n = 1000
    x, y, out = add_inputs(n)
    tuned = make_add()
    for _ in range(3):  # the same positional call: tuned once, then straight to its config
        tuned[_grid(n)](x, y, out, n)
        np.testing.assert_array_equal(out, x + y)
    assert tuned.stats.tunings == 1 and tuned.stats.memory_hits == 2
    first_key = tuned.last_key
    strided = np.repeat(x, 2)[::2]  # another layout class: its own key (the kernel reads
    tuned[_grid(n)](strided, y, out, n)  # memory in order, so only the key is checked here)
    assert tuned.stats.tunings == 2 and tuned.last_key.id != first_key.id
    assert tuned.last_key.as_json()["arrays"]["x"] == "float32/s"
    tuned[_grid(n)](x, y, out, n)  # back to the first call's key
    assert tuned.last_key.id == first_key.id and tuned.stats.tunings == 2
    monkeypatch.setenv("CUBEPY_AUTOTUNE", "0")  # new settings: the repeat is not reused
    config.reload()
    tuned[_grid(n)](x, y, out, n)
    np.testing.assert_array_equal(out, x + y)
    assert tuned.stats.defaults == 1 and tuned.last_config == ADD_CONFIGS[0]


def test_arrays_restored_between_candidates():
    n = 1000
    x, y, _ = add_inputs(n)
    expected = x + y
    tuned = make_add()
    tuned[_grid(n)](x, y, y, n)  # in place: y += x, exactly once despite tuning
    assert tuned.stats.tunings == 1
    np.testing.assert_array_equal(y, expected)


def test_wrong_candidate_rejected(cache_dir):
    configs = [cube.Config(BLOCK=64), cube.Config(BLOCK=128, PLUS_ONE=True), cube.Config(BLOCK=256)]
    tuned = make_add(configs)
    with pytest.warns(AutotuneWarning, match=r"discarded Config\(BLOCK=128, PLUS_ONE=True\)"):
        run_add(tuned, 1000)  # run_add checks out == x + y
    assert tuned.stats.rejected == 1
    assert tuned.last_config.kwargs.get("PLUS_ONE") is None
    (entry,) = _entries(cache_dir)
    statuses = [t["status"] for t in entry["timings"]]
    assert statuses[1] == "wrong" and "differ" in entry["timings"][1]["detail"]
    assert entry["best_index"] != 1


def test_failing_candidate_reported_and_prune_drops_it(cache_dir):
    configs = [cube.Config(BLOCK=64), cube.Config(BLOCK=100), cube.Config(BLOCK=128)]
    unpruned = make_add(configs)
    with pytest.warns(AutotuneWarning, match=r"discarded Config\(BLOCK=100\)"):
        run_add(unpruned, 1000)  # arange(0, 100) is not a power of two: a compile error
    assert unpruned.stats.failed == 1

    seen: list[TuneContext] = []

    def fits(candidates: list[cube.Config], ctx: TuneContext) -> list[cube.Config]:
        seen.append(ctx)
        return [c for c in candidates if c.kwargs["BLOCK"] & (c.kwargs["BLOCK"] - 1) == 0]

    cache.clear(cache.user_dir())
    pruned = make_add(configs, prune=fits)
    run_add(pruned, 1000)
    assert pruned.stats.failed == 0 and pruned.stats.tunings == 1
    assert seen[0].key == {"n": 1024} and seen[0].target == "cpu"
    assert isinstance(seen[0].limits, dict) and seen[0].args["n"] == 1000
    (entry,) = _entries(cache_dir)
    assert [t["status"] for t in entry["timings"]][1] == "pruned"
    assert entry["timings"][1]["runs"] == 0


def test_prune_that_keeps_nothing_is_an_error():
    tuned = make_add(prune=lambda configs, ctx: [])
    with pytest.raises(cube.CubeError, match="prune dropped every config"):
        run_add(tuned, 1000)


def test_autotune_off_uses_heuristic_default(cache_dir, monkeypatch):
    monkeypatch.setenv("CUBEPY_AUTOTUNE", "0")
    config.reload()
    tuned = make_add()
    run_add(tuned, 1000)
    assert tuned.last_config == ADD_CONFIGS[0]
    assert tuned.stats.benchmark_runs == 0 and tuned.stats.tunings == 0
    assert tuned.stats.defaults == 1
    picked = make_add(default=lambda ctx: cube.Config(BLOCK=256 if ctx.key["n"] >= 4096 else 128))
    run_add(picked, 1000)
    assert picked.last_config == cube.Config(BLOCK=128)
    run_add(picked, 5000)
    assert picked.last_config == cube.Config(BLOCK=256)
    assert picked.stats.benchmark_runs == 0
    assert not list((cache_dir / "autotune").glob("*.json"))


def test_host_function_tuning(cache_dir, rng):
    tuned = cube.autotune(configs=MATMUL_CONFIGS, key=["a", "b"])(matmul)
    a = rng.random((40, 64), dtype=np.float32)
    b = rng.random((64, 24), dtype=np.float32)
    c = tuned(a, b, target="cpu:debug")  # the host function's result is returned
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert tuned.stats.tunings == 1 and tuned.last_config in MATMUL_CONFIGS
    (entry,) = _entries(cache_dir)
    assert entry["key"]["sizes"] == {"a": [64, 64], "b": [64, 32]}
    assert entry["key"]["target"] == "cpu:debug"
    statuses = [t["status"] for t in entry["timings"]]  # one may be dropped as too slow
    assert set(statuses) <= {"ok", "dropped"} and statuses[entry["best_index"]] == "ok"
    a2, b2 = a[:33].copy(), b[:, :20].copy()  # shapes in the same buckets
    np.testing.assert_allclose(tuned(a2, b2, target="cpu:debug"), a2 @ b2, rtol=1e-5, atol=1e-5)
    assert tuned.stats.tunings == 1 and tuned.stats.memory_hits == 1


def test_fingerprint_covers_helpers_and_kernels(tmp_path, monkeypatch):
    template = textwrap.dedent("""
        import cubepy as cube

        @cube.func
        def helper(v):
            return v {op} 1.0

        @cube.kernel
        def kern(x, n, BLOCK: cube.Comptime[int]):
            offs = cube.arange(0, BLOCK)
            cube.store(x + offs, helper(cube.load(x + offs, offs < n)), offs < n)

        def host(x, BLOCK=16):
            kern[(1,)](x, x.size, BLOCK=BLOCK)
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    prints = {}
    commented = template.replace("    return v {op} 1.0",
                                 "    # one more\n\n    return v {op} 1.0  # #")
    commented = commented.replace("kern[(1,)](x, x.size, BLOCK=BLOCK)",
                                  "kern[(1,)](x, x.size, BLOCK=BLOCK)  # one cube")
    for name, op, text in (("fp_plus", "+", template), ("fp_minus", "-", template),
                           ("fp_plus_again", "+", template),
                           ("fp_plus_commented", "+", commented)):
        (tmp_path / f"{name}.py").write_text(text.format(op=op))
        module = __import__(name)
        prints[name] = (key.fingerprint(module.kern), key.fingerprint(module.host))
    assert prints["fp_plus"][0] != prints["fp_minus"][0]  # the helper's source counts
    assert prints["fp_plus"][1] != prints["fp_minus"][1]  # the host sees its kernels
    assert prints["fp_plus"][0] == prints["fp_plus_again"][0]  # the source, not the module
    assert prints["fp_plus"] == prints["fp_plus_commented"]  # comments and blank lines do not
    assert key.fingerprint(add_kernel) == make_add().fingerprint


def test_misuse_is_reported():
    with pytest.raises(cube.CubeError, match="not a comptime parameter"):
        cube.autotune(configs=[cube.Config(BLOK=64)], key=["n"])(add_kernel)
    with pytest.raises(cube.CubeError, match="key 'm'"):
        cube.autotune(configs=ADD_CONFIGS, key=["m"])(add_kernel)
    x, y, out = add_inputs(10)
    with pytest.raises(cube.LaunchError, match="BLOCK is chosen by autotune"):
        make_add()[(1,)](x, y, out, 10, BLOCK=64)


def test_compare_tolerances():
    ref = {"out": np.linspace(0, 100, 50, dtype=np.float32)}
    assert bench.compare(ref, {"out": ref["out"] * (1 + 1e-6)}) is None
    assert "1 of 50" in bench.compare(ref, {"out": ref["out"] + np.eye(1, 50, 3)[0]})
    ints = {"i": np.arange(5)}
    assert bench.compare(ints, {"i": np.arange(5) + (np.arange(5) == 2)}) is not None
    assert bench.compare(ref, {"out": ref["out"][:10]}).startswith("'out': shape")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_compare_tolerance_in_each_float_dtype(dtype):
    # values up to 100: a difference is tolerated up to rtol * |ref| + atol * 100; ref[500]
    # is 0, where atol * 100 alone applies, and ref[1000] is 100
    rtol, atol = bench.tolerance(dtype)
    ref = np.linspace(-100, 100, 1001).astype(dtype)
    within, beyond = ref.copy(), ref.copy()
    within[500] += np.asarray(0.5 * atol * 100, dtype)
    within[1000] += np.asarray(0.5 * (rtol + atol) * 100, dtype)
    beyond[500] += np.asarray(2 * atol * 100, dtype)
    assert bench.compare({"out": ref}, {"out": within}) is None
    assert bench.compare({"out": ref}, {"out": beyond}).startswith("'out': 1 of 1001")


def test_compare_takes_identical_bits_as_equal():
    # an input that no candidate writes is identical to the bit, NaN payloads included
    ref = np.array([1.0, np.nan, -0.0, np.inf], np.float32)
    assert bench.compare({"a": ref}, {"a": ref.copy()}) is None
    assert bench.compare({"a": ref}, {"a": np.array([1, np.nan, 0.0, np.inf], np.float32)}) \
        is None  # -0.0 and 0.0: other bits, within tolerance
    assert bench.compare({"a": ref}, {"a": np.array([1, 2, -0.0, np.inf], np.float32)}) \
        == "'a': 1 of 4 elements differ (1 NaN or infinite)"


def test_compare_reports_nan_outputs_without_numpy_warnings():
    ref = {"out": np.ones(4, np.float32)}
    with warnings.catch_warnings():
        # before: np.nanmax warned "All-NaN slice encountered" at the user
        warnings.simplefilter("error")
        assert bench.compare(ref, {"out": np.full(4, np.nan, np.float32)}) == (
            "'out': 4 of 4 elements differ (4 NaN or infinite)")
        assert bench.compare(ref, {"out": np.array([1, 3, np.inf, 1], np.float32)}) == (
            "'out': 2 of 4 elements differ (max abs diff 2, 1 NaN or infinite)")


def _scripted_benchmark(seconds_of, rep: int = 10) -> list[bench.Outcome]:
    """``bench.benchmark`` over configs C(I=0..), each run taking ``seconds_of(index, nth)``
    seconds on a scripted clock (its nth run, counted from 0)."""
    runs: dict[int, int] = {}
    pending: list[float] = []

    def run(config):
        index = config.kwargs["I"]
        pending.append(seconds_of(index, runs.get(index, 0)))
        runs[index] = runs.get(index, 0) + 1
        return np.zeros(2)

    def timer(once, count: int = 1) -> float:
        pending.clear()
        for _ in range(count):
            once()
        return sum(pending)

    candidates = [(i, cube.Config(I=i)) for i in range(4)]
    return bench.benchmark(candidates, run, lambda out: {"out": out}, bench.Snapshot({}),
                           timer, warmup=0, rep=rep, max_seconds=60.0)


def test_close_candidates_are_timed_again_in_turns():
    costs = [2e-3, 2.04e-3, 2.4e-3, 6e-3]  # C1 within 3 % of C0, C2 not; C3 too slow

    def seconds(index, nth):
        # the GPU heats up during the final rounds (runs 12 on: the check, sizing a sample,
        # ten samples of one run before): the finalists' medians pass C2's
        return costs[index] * (1.5 if index < 2 and nth >= 12 else 1.0)

    outcomes = _scripted_benchmark(seconds)
    first, close, far, slow = outcomes
    assert slow.status == "dropped" and len(slow.samples) == 2
    assert far.status == "dropped" and len(far.samples) == 10
    assert far.detail == "1.200x the leader's time after 10 runs: not a finalist"
    for finalist in (first, close):
        assert finalist.status == "ok" and len(finalist.samples) == 20
        assert finalist.detail == "finalist: 10 more runs in turns with 1 others"
    assert far.median < first.median < close.median  # C2 is not eligible: C0 wins
    assert min((o for o in outcomes if o.status == "ok"), key=lambda o: o.median) is first


def test_a_lucky_start_does_not_decide_a_close_race():
    # C1 runs 1 % faster than C0 in the first ten rounds only (a cool GPU, a quiet host), 2 %
    # slower afterwards: over the finalists' rounds as well, C0 wins.
    def seconds(index, nth):
        if index == 1:  # runs 0-21: the check, sizing a sample, ten samples of two runs
            return 0.99e-3 if nth < 22 else 1.02e-3
        return [1e-3, 1e-3, 1.5e-3, 2e-3][index]

    outcomes = _scripted_benchmark(seconds)
    assert statistics.median(outcomes[1].samples[:10]) < outcomes[0].median  # led at first
    assert min(outcomes, key=lambda o: o.median).index == 0


class _ThrottlingClock:
    """A scripted GPU clock with ``settle``: a run of config I takes ``seconds_of(I, streak)``,
    ``streak`` being how many runs of I came just before it (a power cap slows a kernel
    only once it has run back to back a while)."""

    overhead_seconds = 0.5e-3  # the device time each run carries besides itself (zeroings)

    def __init__(self, seconds_of):
        self.seconds_of, self.last, self.streak, self.pending = seconds_of, None, 0, []
        self.settled = []

    def run(self, config):
        index = config.kwargs["I"]
        self.streak = self.streak + 1 if index == self.last else 0
        self.last = index
        self.pending.append(self.seconds_of(index, self.streak))
        return np.zeros(2)

    def __call__(self, once, count: int = 1) -> float:
        self.pending.clear()
        for _ in range(count):
            once()
        return sum(self.pending)

    def settle(self, once, count: int) -> None:
        self.settled.append(count)
        for _ in range(count):
            once()


def test_the_final_on_a_power_capped_gpu_is_timed_sustained():
    # C0 leads from a cold start but slows after 20 runs back to back (it draws the most
    # power); C1 is 7 % behind cold but steady; C2 (25 % behind) is not a contender; C3 is
    # dropped in the first rounds.
    def seconds(index, streak):
        if index == 0:
            return 2.0e-3 if streak < 20 else 2.3e-3
        return [None, 2.15e-3, 2.5e-3, 6e-3][index]

    clock = _ThrottlingClock(seconds)
    candidates = [(i, cube.Config(I=i)) for i in range(4)]
    outcomes = bench.benchmark(candidates, clock.run, lambda out: {"out": out},
                               bench.Snapshot({}), clock, warmup=0, rep=10, max_seconds=60.0)
    hot, steady, far, slow = outcomes
    assert slow.status == "dropped" and far.status == "dropped"
    assert far.detail == ("1.250x the leader's time after 10 runs from a cold start: "
                          "not a contender")
    # 0.1 s of runs before each sample, a run being the kernel and the clock's 0.5 ms
    assert clock.settled == [40, 38] * bench.SUSTAIN_ROUNDS
    for outcome, settled, cold_ms in ((hot, 40, "2"), (steady, 38, "2.15")):
        assert outcome.status == "ok" and len(outcome.samples) == bench.SUSTAIN_ROUNDS
        assert outcome.detail == (  # samples of 10 ms of runs
            f"sustained: 3 samples of 5 runs in turns with 1 others, each after {settled} "
            f"untimed runs back to back; {cold_ms} ms per run from a cold start")
    assert hot.median == pytest.approx(2.3e-3) and steady.median == pytest.approx(2.15e-3)
    assert min((o for o in outcomes if o.status == "ok"), key=lambda o: o.median) is steady


def test_a_lone_contender_is_not_timed_again():
    clock = _ThrottlingClock(lambda index, streak: [1e-3, 2e-3][index])
    candidates = [(i, cube.Config(I=i)) for i in range(2)]
    first, second = bench.benchmark(candidates, clock.run, lambda out: {"out": out},
                                    bench.Snapshot({}), clock, warmup=0, max_seconds=60.0)
    assert clock.settled == [] and first.status == "ok"
    assert second.status == "dropped"  # 2x the leader: dropped in the first rounds


def _count_positive(x, BLOCK=64, OFF_BY_ONE=False):
    """A host function returning a number: how many elements of x are positive."""
    return int(np.count_nonzero(x > 0)) + int(OFF_BY_ONE)


@pytest.mark.parametrize("returns", [lambda n: n, lambda n: (np.float32(n), np.zeros(2))])
def test_a_host_function_returning_numbers_is_checked(cache_dir, returns):
    # before: only arrays were compared, and a candidate returning a wrong count could win
    def host(x, BLOCK=64, OFF_BY_ONE=False):
        return returns(_count_positive(x, BLOCK, OFF_BY_ONE))

    configs = [cube.Config(BLOCK=64), cube.Config(BLOCK=128, OFF_BY_ONE=True)]
    tuned = cube.autotune(configs=configs, key=["x"])(host)
    x = np.linspace(-1, 1, 101)
    with pytest.warns(AutotuneWarning, match=r"discarded Config\(BLOCK=128, OFF_BY_ONE=True\): "
                      r"output differs .*'<return 0>': 1 of 1 elements differ \(max abs diff 1"):
        result = tuned(x)
    assert np.asarray(returns(50) if not isinstance(result, tuple) else result[0]) == 50
    assert tuned.last_config == configs[0] and tuned.stats.rejected == 1


@pytest.mark.parametrize("prune", [None, lambda configs, ctx: configs + configs[::-1]])
def test_a_config_listed_twice_is_timed_once(cache_dir, prune):
    # kernels/matmul.py's list holds two configs twice; each was checked and timed twice
    configs = [ADD_CONFIGS[0], ADD_CONFIGS[1], cube.Config(BLOCK=64)]
    runs: list[int] = []

    def host(x, y, BLOCK=64):
        runs.append(BLOCK)
        out = np.zeros_like(x)
        add_kernel[(cube.cdiv(x.size, BLOCK),)](x, y, out, x.size, BLOCK=BLOCK)
        return out

    tuned = cube.autotune(configs=configs, key=["x"], prune=prune)(host)
    x, y, _ = add_inputs(1000)
    np.testing.assert_array_equal(tuned(x, y), x + y)
    (entry,) = _entries(cache_dir)
    assert [t["index"] for t in entry["timings"]] == [0, 1, 2]
    assert entry["timings"][2]["status"] == "duplicate" and entry["best_index"] in (0, 1)
    assert entry["timings"][2]["detail"] == "the same config as #0"
    assert tuned.stats.benchmark_runs == len(runs) - 1  # the last run is the call's own
    assert runs.count(64) > 1 and runs.count(128) > 1


def _fails_for_each_config(x, BLOCK=64):
    raise RuntimeError(f"no kernel for BLOCK={BLOCK}")


def test_every_config_failing_its_own_way_says_so(cache_dir):
    tuned = cube.autotune(configs=ADD_CONFIGS, key=["x"])(_fails_for_each_config)
    with pytest.warns(AutotuneWarning) as caught, pytest.raises(RuntimeError) as info:
        tuned(np.ones(4))
    assert [str(w.message).split("discarded ")[1] for w in caught] == [
        f"{c}: RuntimeError: no kernel for BLOCK={c.kwargs['BLOCK']}" for c in ADD_CONFIGS]
    assert str(info.value) == "no kernel for BLOCK=64"
    assert info.value.__notes__ == [
        "autotune test_tuner._fails_for_each_config (x=[4], x:float64/c): every config failed "
        "(see the warnings above); this error is Config(BLOCK=64)'s"]
    assert _entries(cache_dir) == []  # nothing to keep


@pytest.mark.parametrize("value, tunings, defaults", [
    ("0", 0, 1), ("off", 0, 1), ("1", 1, 0), (" TRUE ", 1, 0), ("garbage", None, None)])
def test_autotune_setting_values(cache_dir, monkeypatch, value, tunings, defaults):
    monkeypatch.setenv("CUBEPY_AUTOTUNE", value)
    tuned = make_add()
    if tunings is None:  # a typo is an error naming the variable, not silently "on"
        with pytest.raises(ValueError, match="CUBEPY_AUTOTUNE='garbage': expected 0 or 1"):
            config.reload()
            run_add(tuned, 1000)
        return
    config.reload()
    run_add(tuned, 1000)
    assert (tuned.stats.tunings, tuned.stats.defaults) == (tunings, defaults)
    assert len(_entries(cache_dir)) == tunings  # with tuning off nothing is written
