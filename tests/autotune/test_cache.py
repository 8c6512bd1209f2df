"""The on-disk cache: corrupt files and entries, other versions, edited config lists, shipped
results, processes that share the cache (one after the other, and at once), and cached
winners that no longer run where they are read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from autotune_kernels import ADD_CONFIGS, add_inputs, add_kernel, make_add, run_add

import cubepy as cube
from cubepy.autotune import AutotuneCacheWarning, AutotuneWarning, cache

HERE = Path(__file__).resolve().parent

# A child process: tune add for each size in argv[2] (after meeting its sibling at the
# barrier folder argv[1], unless it is "-") and print its counters as JSON.
CHILD = """
import json, os, pathlib, sys, time
sys.path.insert(0, HERE)
import autotune_kernels as K
from cubepy.autotune import STATS
barrier, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
tuned = K.make_add()
if barrier != "-":
    pathlib.Path(barrier, f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while len(list(pathlib.Path(barrier).glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
for n in sizes:
    K.run_add(tuned, n)
print(json.dumps(STATS.as_dict()))
""".replace("HERE", repr(str(HERE)), 1)


def _only_file(cache_dir: Path) -> Path:
    (path,) = (cache_dir / "autotune").glob("*.json")
    return path


def _edit_entry(path: Path, **changes: object) -> None:
    doc = json.loads(path.read_text())
    (entry_id,) = doc["entries"]
    doc["entries"][entry_id].update(changes)
    path.write_text(json.dumps(doc))


def _warm_kernels() -> None:
    """Compile add's specializations here, so that child processes load them from disk."""
    x, y, out = add_inputs(8)
    for cfg in ADD_CONFIGS:
        add_kernel[(1,)](x, y, out, 8, **cfg.launch_kwargs())


def _spawn(barrier: str, sizes: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, barrier, sizes],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def _finish(proc: subprocess.Popen) -> dict[str, int]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_corrupt_file_is_ignored_retuned_and_rewritten(cache_dir):
    run_add(make_add(), 1000)
    path = _only_file(cache_dir)
    path.write_text('{"format": 1, "entries": {')  # a torn or hand-mangled file
    tuned = make_add()
    with pytest.warns(AutotuneCacheWarning, match="corrupt"):
        run_add(tuned, 1000)
    assert tuned.stats.tunings == 1 and tuned.stats.cache_hits == 0
    doc = json.loads(path.read_text())
    assert len(doc["entries"]) == 1 and doc["kernel"] == "autotune_kernels.add_kernel"
    reread = make_add()
    run_add(reread, 1000)
    assert reread.stats.cache_hits == 1 and reread.stats.tunings == 0


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"best_index": "first"}, "corrupt"),
        ({"best_index": 7}, "not in the config list"),
        ({"cubepy": "0.0.1"}, "tuned by cubepy 0.0.1"),
    ],
)
def test_bad_or_foreign_entry_is_retuned(cache_dir, changes, message):
    run_add(make_add(), 1000)
    path = _only_file(cache_dir)
    _edit_entry(path, **changes)
    tuned = make_add()
    with pytest.warns(AutotuneCacheWarning, match=message):
        run_add(tuned, 1000)
    assert tuned.stats.tunings == 1
    (entry,) = json.loads(path.read_text())["entries"].values()
    assert entry["cubepy"] == cube.__version__ and isinstance(entry["best_index"], int)


def test_changed_config_list_retunes(cache_dir):
    run_add(make_add(), 1000)
    edited = [ADD_CONFIGS[2], ADD_CONFIGS[1]]
    tuned = make_add(edited)
    run_add(tuned, 1000)
    assert tuned.stats.tunings == 1 and tuned.stats.cache_hits == 0
    (entry,) = json.loads(_only_file(cache_dir).read_text())["entries"].values()
    assert entry["configs_checksum"] == tuned.checksum and len(entry["timings"]) == 2
    same = make_add(edited)
    run_add(same, 1000)
    assert same.stats.cache_hits == 1 and same.stats.tunings == 0


def test_shipped_results_are_used_read_only(cache_dir):
    run_add(make_add(), 1000)
    device = json.loads(_only_file(cache_dir).read_text())["device"]
    (shipped,) = cache.export(device, cache.SHIPPED_DIR)
    assert not list(cache.SHIPPED_DIR.glob("*.lock"))
    cache.clear(cache.user_dir())
    tuned = make_add()
    run_add(tuned, 1000)
    assert tuned.stats.cache_hits == 1 and tuned.stats.tunings == 0
    assert not list((cache_dir / "autotune").glob("*.json"))  # nothing copied or rewritten
    assert json.loads(shipped.read_text())["device"] == device


def test_cache_hit_across_processes(cache_dir):
    _warm_kernels()
    first = _finish(_spawn("-", "1000"))
    assert first["tunings"] == 1 and first["benchmark_runs"] > 0
    second = _finish(_spawn("-", "1000"))
    assert second["tunings"] == 0 and second["benchmark_runs"] == 0
    assert second["cache_hits"] == 1


def test_two_processes_tuning_at_once(cache_dir, tmp_path):
    _warm_kernels()
    procs = [_spawn(str(tmp_path), "1000,3000"), _spawn(str(tmp_path), "1000,9000")]
    stats = [_finish(p) for p in procs]
    assert all(s["tunings"] + s["cache_hits"] == 2 for s in stats)
    doc = json.loads(_only_file(cache_dir).read_text())  # valid JSON, every key merged in
    sizes = sorted(e["key"]["sizes"]["n"] for e in doc["entries"].values())
    assert sizes == [1024, 4096, 16384]
    assert not list((cache_dir / "autotune").glob("*.tmp"))


_UNBUILDABLE: set[int] = set()  # BLOCK sizes that "no longer build" (as after an upgrade)


def _add_on_host(x, y, out, n, BLOCK=64):
    if len(y) < n:
        raise ValueError(f"y has {len(y)} elements, fewer than n={n}")
    if BLOCK in _UNBUILDABLE:
        raise RuntimeError(f"out of resources: BLOCK={BLOCK} needs more than this device has")
    add_kernel[(cube.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)


def _tuned_add_on_host():
    return cube.autotune(configs=ADD_CONFIGS, key=["n"])(_add_on_host)


def _winner(cache_dir: Path) -> int:
    (entry,) = json.loads(_only_file(cache_dir).read_text())["entries"].values()
    return entry["best"]["BLOCK"]


def test_cached_winner_that_no_longer_runs_is_tuned_again(cache_dir):
    x, y, out = add_inputs(1000)
    _tuned_add_on_host()(x, y, out, 1000)
    stale = _winner(cache_dir)
    _UNBUILDABLE.add(stale)
    try:
        fresh = _tuned_add_on_host()  # a new process's tuner: the winner comes from disk
        out[:] = 0
        with pytest.warns(AutotuneWarning) as caught:
            fresh(x, y, out, 1000)
        stale_warning, discarded = (w for w in caught if w.category is AutotuneWarning)
        assert re.search(f"cached winner Config\\(BLOCK={stale}\\) failed here "
                         r"\(RuntimeError: out of resources", str(stale_warning.message))
        assert f"discarded Config(BLOCK={stale})" in str(discarded.message)
        assert stale_warning.filename == discarded.filename == __file__  # the caller's line
        np.testing.assert_array_equal(out, x + y)
        assert fresh.stats.cache_hits == 1 and fresh.stats.tunings == 1
        assert fresh.last_config != cube.Config(BLOCK=stale) and _winner(cache_dir) != stale
        later = _tuned_add_on_host()  # the next process runs the new winner untuned
        later(x, y, out, 1000)
        assert later.stats.cache_hits == 1 and later.stats.tunings == 0
    finally:
        _UNBUILDABLE.clear()


def test_cached_winner_failing_on_bad_inputs_is_not_tuned_again(cache_dir):
    x, y, out = add_inputs(1000)
    _tuned_add_on_host()(x, y, out, 1000)
    fresh = _tuned_add_on_host()
    with pytest.raises(ValueError, match="fewer than n=1000"):
        fresh(x, y[:10], out, 1000)  # the same key: n decides it
    assert fresh.stats.cache_hits == 1 and fresh.stats.tunings == 0


def test_cache_warnings_name_the_callers_line(cache_dir):
    # before: they named cubepy/autotune/tuner.py (line 367 for a corrupt file, 282 for a
    # corrupt entry), a fixed stack depth that missed the user's call
    run_add(make_add(), 1000)
    path = _only_file(cache_dir)
    _edit_entry(path, best_index="first")
    with pytest.warns(AutotuneCacheWarning, match="corrupt") as caught:
        run_add(make_add(), 1000)
    path.write_text("{")
    with pytest.warns(AutotuneCacheWarning, match="not valid JSON") as caught_file:
        run_add(make_add(), 3000)
    for warning in [*caught, *caught_file]:
        assert warning.filename == str(HERE / "autotune_kernels.py")  # run_add's launch


def test_cache_files_are_readable_by_all(cache_dir, tmp_path):
    # before: mkstemp's 0o600 stayed, so files exported to autotune_cache/ and shipped could
    # be read by their owner only
    umask = os.umask(0o022)
    try:
        run_add(make_add(), 1000)
        path = _only_file(cache_dir)
        assert path.stat().st_mode & 0o777 == 0o644
        (exported,) = cache.export(json.loads(path.read_text())["device"], tmp_path / "ship")
        assert exported.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)
    path.chmod(0o640)  # a mode the user chose is kept through rewrites
    run_add(make_add(), 3000)
    assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("content, problem", [
    (b"\xff\xfe\x00garbage", "UnicodeDecodeError"),  # before: a UnicodeDecodeError stopped
    (b"[" * 100_000 + b"]" * 100_000, "RecursionError"),  # the call, and a RecursionError
    (b"", "JSONDecodeError"),
])
def test_undecodable_files_are_ignored_and_rewritten(cache_dir, content, problem):
    run_add(make_add(), 1000)
    path = _only_file(cache_dir)
    path.write_bytes(content)
    tuned = make_add()
    with pytest.warns(AutotuneCacheWarning, match=f"not valid JSON \\({problem}"):
        run_add(tuned, 1000)
    assert tuned.stats.tunings == 1
    (entry,) = json.loads(path.read_text())["entries"].values()
    assert entry["key"]["sizes"] == {"n": 1024}


def _file_for_folder(cache_dir: Path) -> tuple[Path, str]:
    (cache_dir / "autotune").write_text("not a folder")
    return cache_dir / "autotune", "is a file, not a folder"


def _folder_for_file(cache_dir: Path) -> tuple[Path, str]:
    path = _only_file(cache_dir)
    path.unlink()
    path.mkdir()
    return path, "is a folder, not a file"


@pytest.mark.parametrize("block", [_file_for_folder, _folder_for_file])
def test_something_in_the_way_of_the_cache_warns_once_with_what_to_do(cache_dir, block):
    # before: a file in place of the folder gave two warnings, "[Errno 20] Not a directory"
    # and "[Errno 17] File exists" about the folder
    if block is _folder_for_file:
        run_add(make_add(), 1000)
    in_the_way, words = block(cache_dir)
    tuned = make_add()
    with pytest.warns(AutotuneCacheWarning) as caught:
        run_add(tuned, 1000)
        run_add(tuned, 3000)  # another key: the same warning is not repeated
    (warning,) = caught
    assert f"{in_the_way} {words}; results are not kept. Move" in str(warning.message)
    assert tuned.stats.tunings == 2


def test_a_boolean_best_index_is_corrupt(cache_dir):
    # before: True was taken as index 1
    run_add(make_add(), 1000)
    _edit_entry(_only_file(cache_dir), best_index=True, best=ADD_CONFIGS[1].as_json())
    tuned = make_add()
    with pytest.warns(AutotuneCacheWarning, match="mistyped fields"):
        run_add(tuned, 1000)
    assert tuned.stats.tunings == 1 and tuned.stats.cache_hits == 0
