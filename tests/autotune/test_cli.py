"""``python -m cubepy.autotune``: list, show, clear and export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from autotune_kernels import make_add, run_add

from cubepy.autotune import cache
from cubepy.autotune.__main__ import main


def test_list_show_export_clear(cache_dir, tmp_path, capsys):
    tuned = make_add()
    run_add(tuned, 1000)
    run_add(tuned, 3000)
    device = tuned.last_key.device

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "autotune_kernels.add_kernel" in out and "2 entries" in out and device in out

    assert main(["show", "add_kernel"]) == 0
    out = capsys.readouterr().out
    assert "key n=1024" in out and "key n=4096" in out and "best Config(BLOCK=" in out
    assert out.count("#0 Config(BLOCK=64)") == 2  # every timing is shown

    out_dir = tmp_path / "shipped_here"
    assert main(["export", "--device", device, "--out", str(out_dir)]) == 0
    (exported,) = out_dir.glob("*")  # one JSON file, no lock or temp files left
    doc = json.loads(exported.read_text())
    assert doc["device"] == device and len(doc["entries"]) == 2
    assert main(["export", "--device", "no such device", "--out", str(out_dir)]) == 1

    assert main(["clear", "nothing-matches"]) == 1  # a misspelt filter: an error
    assert "matches kernel 'nothing-matches'" in capsys.readouterr().err
    assert len(cache.cache_files(cache.user_dir())) == 1
    assert main(["clear"]) == 0
    assert cache.cache_files(cache.user_dir()) == []
    capsys.readouterr()
    assert main(["show"]) == 0  # an empty cache is no error
    assert "no entries in" in capsys.readouterr().out


def test_module_runs_as_a_program(cache_dir):
    result = subprocess.run(
        [sys.executable, "-m", "cubepy.autotune", "list"],
        text=True,
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"user cache: {cache_dir / 'autotune'}" in result.stdout


def test_show_survives_a_damaged_file(cache_dir, capsys):
    run_add(make_add(), 1000)
    (path,) = cache.user_dir().glob("*.json")
    doc = json.loads(path.read_text())
    (entry,) = doc["entries"].values()
    entry.update(key=5, timings=[3, {"index": 0, "config": "BLOCK", "median_s": "fast"}])
    doc["entries"]["other"] = 7
    path.write_text(json.dumps(doc))
    # before: AttributeError: 'int' object has no attribute 'get', a traceback from show
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert "key (no key): best Config(BLOCK=" in out
    assert "(corrupt timing 3)" in out and "#0 'BLOCK'  None  -" in out
    assert "(corrupt entry)" in out


def test_export_errors_say_what_to_do(cache_dir, tmp_path, capsys):
    run_add(make_add(), 1000)
    ((_, doc),) = cache.cache_files(cache.user_dir())
    device = doc["device"]
    assert main(["export", "--device", "no such device"]) == 1
    err = capsys.readouterr().err
    assert "no cached entries for device 'no such device'" in err and repr(device) in err
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    # before: FileExistsError from pathlib's mkdir, a traceback
    assert main(["export", "--device", device, "--out", str(not_a_folder)]) == 1
    assert f"error: cannot write to {not_a_folder}" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["clear", ""],  # before: matched every file, and deleted them all
    ["clear", "--device", " "],
    ["show", ""],
    ["export", "--device", ""],  # before: exported whichever single device was there
    ["export", "--device", "cpu", "--kernel", ""],
])
def test_empty_filters_are_refused(cache_dir, capsys, argv):
    run_add(make_add(), 1000)
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "it is empty: give part of a name" in capsys.readouterr().err
    assert len(cache.cache_files(cache.user_dir())) == 1  # nothing removed


@pytest.mark.parametrize("argv", [["show", "no_such_kernel"], ["show", "--device", "tpu"],
                                  ["clear", "no_such_kernel"], ["clear", "--device", "tpu"]])
def test_filters_matching_nothing_are_an_error_that_says_what_is_there(cache_dir, capsys, argv):
    # before: exit status 0 and "no matching entries" (show) or "0 files removed" (clear)
    run_add(make_add(), 1000)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: nothing in {cache.user_dir()} matches ")
    assert "it holds: autotune_kernels.add_kernel [cpu: " in err
    assert len(cache.cache_files(cache.user_dir())) == 1


def test_export_never_overwrites_a_corrupt_shipped_file(cache_dir, tmp_path, capsys):
    # before: a file left with merge-conflict markers was silently replaced by the export
    run_add(make_add(), 1000)
    ((path, doc),) = cache.cache_files(cache.user_dir())
    out = tmp_path / "ship"
    out.mkdir()
    conflicted = '<<<<<<< HEAD\n{"format": 1}\n=======\n{}\n>>>>>>> other\n'
    (out / path.name).write_text(conflicted)
    assert main(["export", "--device", doc["device"], "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{out / path.name} is not a valid autotune cache file" in err
    assert "nothing was written" in err
    assert (out / path.name).read_text() == conflicted
    (out / path.name).unlink()  # as the message says: delete it to replace it
    assert main(["export", "--device", "CPU", "--out", str(out)]) == 0
    assert f"[{doc['device']}]" in capsys.readouterr().out  # the device matched, in full
    assert json.loads((out / path.name).read_text())["entries"] == doc["entries"]


def test_show_and_list_name_what_they_ignore(cache_dir, capsys):
    run_add(make_add(), 1000)
    (cache.user_dir() / "broken.json").write_text("{")
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert f"(corrupt, ignored: {cache.user_dir() / 'broken.json'}; `clear` removes it)" in out
    assert "key n=1024" in out
    cache.clear(cache.user_dir())
    cache.user_dir().rmdir()
    cache.user_dir().write_text("")  # a file in the folder's place
    assert main(["list"]) == 0
    assert "(0 files)  (a file, not a folder" in capsys.readouterr().out
