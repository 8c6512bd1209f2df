"""Mistakes in using ``@cube.autotune``: each is reported once, at the user's line (the
argument at fault in the decorator, the hook, or the call) with a caret and what to write
instead, never from the tuner's own lines and never as a candidate "discarded" for it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from autotune_kernels import ADD_CONFIGS, add_inputs, add_kernel, make_add

import cubepy as cube
from cubepy import config

SOURCE = Path(__file__).read_text().splitlines()


def _points_at(err: BaseException, snippet: str) -> str:
    """The message names this file and the one line holding ``snippet``, shows that line
    and puts the caret under ``snippet`` exactly; returns the message."""
    message = str(err)
    (line,) = [i + 1 for i, text in enumerate(SOURCE)
               if snippet in text and "_points_at(" not in text]
    assert message.startswith(f"{__file__}:{line}:"), message
    lines = message.splitlines()
    shown = next(i for i, text in enumerate(lines) if snippet in text)
    caret = lines[shown + 1]
    assert caret.strip() == "^" * len(snippet), message
    assert caret.index("^") == lines[shown].index(snippet), message
    assert "cubepy/autotune" not in message, message
    return message


def _decorate(**options):
    return cube.autotune(**{"configs": ADD_CONFIGS, "key": ["n"], **options})


def test_key_that_is_one_string():
    # before: iterated, a string of "size" meant the keys s, i, z and e ("key 's' must ...")
    with pytest.raises(cube.CubeError) as info:
        cube.autotune(configs=ADD_CONFIGS, key="size")(add_kernel)
    assert "write key=['size']" in _points_at(info.value, 'key="size"')


def test_key_that_is_no_parameter_suggests_the_parameters():
    with pytest.raises(cube.CubeError) as info:
        cube.autotune(configs=ADD_CONFIGS, key=["nn"])(add_kernel)
    message = _points_at(info.value, '"nn"')
    assert "key 'nn' is not a parameter of add_kernel" in message
    assert "did you mean 'n'? parameters to key on: PLUS_ONE, n, out, x, y" in message


def test_config_keyword_the_kernel_lacks_points_at_that_config():
    with pytest.raises(cube.CubeError) as info:
        cube.autotune(configs=[cube.Config(BLOCK=64), cube.Config(BLOK=128)], key=["n"])(add_kernel)
    message = _points_at(info.value, "cube.Config(BLOK=128)")
    assert "did you mean 'BLOCK'?" in message and "PLUS_ONE" in message


@pytest.mark.parametrize("configs, snippet, words", [
    ([], "configs=[]", "configs is empty"),
    ([{"BLOCK": 64}], "configs=[{", "write cube.Config(BLOCK=64)"),
    (cube.Config(BLOCK=64), "configs=cube", "not a list of cube.Config"),
])
def test_config_lists_that_are_not_lists_of_configs(configs, snippet, words):
    # before: a list of dicts failed with AttributeError: 'dict' object has no attribute
    # 'as_json', a lone Config with TypeError: 'Config' object is not iterable
    with pytest.raises(cube.CubeError, match=re.escape(words)) as info:
        cube.autotune(configs=configs, key=["n"])(add_kernel)
    assert str(info.value).startswith(f"{__file__}:")
    assert "hint: write " in str(info.value)


def test_bucket_that_is_not_a_function():
    # before: TypeError: 'int' object is not callable, from key.py at the first call
    with pytest.raises(cube.CubeError) as info:
        cube.autotune(configs=ADD_CONFIGS, key={"n": 1024})(add_kernel)
    assert "pow2_anchor" in _points_at(info.value, 'key={"n": 1024}')


@pytest.mark.parametrize("option, snippet", [
    ({"drop_ratio": 0.5}, "drop_ratio"),
    ({"rep": 0}, "rep"),
])
def test_timing_options_out_of_range(option, snippet):
    # before: drop_ratio=0.5 dropped the leader and every other candidate, and the call
    # failed with a bare StopIteration from inside the tuner; rep=0 timed nothing and kept
    # the first config as if it had won
    with pytest.raises(cube.CubeError, match=f"autotune .*: {snippet}=") as info:
        _decorate(**option)(add_kernel)
    assert str(info.value).startswith(f"{__file__}:") and "hint: " in str(info.value)


def test_triton_style_config_with_a_dict():
    # before: the dict became num_warps, and BLOCK was silently left unset
    assert cube.Config({"BLOCK": 64}, num_warps=4) == cube.Config(BLOCK=64, num_warps=4)
    assert cube.Config({"BLOCK": 64}).kwargs == {"BLOCK": 64}
    with pytest.raises(TypeError, match="pass the values by name"):
        cube.Config(4)


def test_missing_argument_is_one_error_at_the_call():
    # before: every candidate was "discarded" (one AutotuneWarning each) for the missing n,
    # then a LaunchError pointed at cubepy/autotune/tuner.py and hinted to pass BLOCK
    x, y, out = add_inputs(100)
    tuned = make_add()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cube.LaunchError) as info:
            tuned[(2,)](x, y, out)
    message = _points_at(info.value, "tuned[(2,)](x, y, out)")
    assert "add_kernel(): missing 'n'" in message
    assert "hint: call it as add_kernel[grid](x, y, out, n, PLUS_ONE=False)" in message
    assert tuned.stats.tunings == 0 and tuned.stats.failed == 0


def test_unusable_argument_is_one_error_at_the_call():
    x, y, out = add_inputs(100)
    tuned = make_add()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a "discarded" warning per candidate
        with pytest.raises(cube.LaunchError, match="argument 'n' is a list") as info:
            tuned[(2,)](x, y, out, [100])
    _points_at(info.value, "tuned[(2,)](x, y, out, [100])")
    with pytest.raises(cube.LaunchError, match="unknown target 'tpu'") as info:
        tuned[(2,)](x, y, out, 100, target="tpu")
    _points_at(info.value, 'tuned[(2,)](x, y, out, 100, target="tpu")')


def _add_on_host(x, y, BLOCK=64):
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {x.shape} and {y.shape}")
    out = np.zeros_like(x)
    add_kernel[(cube.cdiv(x.size, BLOCK),)](x, y, out, x.size, BLOCK=BLOCK)
    return out


def test_host_function_failing_alike_for_every_config_raises_once():
    # before: three AutotuneWarnings "discarded Config(BLOCK=...): ValueError: shapes
    # differ", as if the configs were at fault, then the ValueError
    tuned = cube.autotune(configs=ADD_CONFIGS, key=["x", "y"])(_add_on_host)
    x = np.ones(500, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="shapes differ"):
            tuned(x, np.ones(400, np.float32))
        np.testing.assert_array_equal(tuned(x, x), x + x)  # a good call still tunes
    assert tuned.stats.failed == 0 and tuned.stats.tunings == 2


def test_prune_that_returns_nothing_usable_points_at_the_hook():
    def keep_small(configs, ctx):
        [c for c in configs if c.kwargs["BLOCK"] <= 128]  # forgot `return`

    x, y, out = add_inputs(100)
    # before: TypeError: 'NoneType' object is not iterable, from inside the tuner
    with pytest.raises(cube.CubeError, match="prune returned None for n=128 on cpu") as info:
        make_add(prune=keep_small)[(2,)](x, y, out, 100)
    _points_at(info.value, "def keep_small(configs, ctx):")
    assert "return [c for c in configs if ...]" in str(info.value)
    with pytest.raises(cube.CubeError, match="prune dropped every config") as info:
        make_add(prune=lambda configs, ctx: [])[(2,)](x, y, out, 100)
    assert str(info.value).startswith(f"{__file__}:") and "keep at least one" in str(info.value)


def test_default_with_a_name_the_kernel_lacks(monkeypatch):
    monkeypatch.setenv("CUBEPY_AUTOTUNE", "0")
    config.reload()

    def heuristic(ctx):
        return cube.Config(BLK=128)

    x, y, out = add_inputs(100)
    # before: a LaunchError "missing a required argument: 'BLOCK'" at cubepy's tuner.py
    with pytest.raises(cube.CubeError, match="default returned Config\\(BLK=128\\)") as info:
        make_add(default=heuristic)[(2,)](x, y, out, 100)
    assert "did you mean 'BLOCK'?" in _points_at(info.value, "def heuristic(ctx):")


def test_a_kernel_without_cube_kernel_launched_with_a_grid():
    def scale(x, n, BLOCK: cube.Comptime[int]):
        pass

    tuned = cube.autotune(configs=ADD_CONFIGS, key=["n"])(scale)
    # before: "is an autotuned host function: call it, without a grid"
    with pytest.raises(cube.CubeError, match="did you forget @cube.kernel") as info:
        tuned[(1,)](np.zeros(4), 4)
    _points_at(info.value, "tuned[(1,)]")


def test_a_tuned_kernel_called_without_a_grid():
    x, y, out = add_inputs(100)
    tuned = make_add()
    with pytest.raises(cube.CubeError, match="called without a grid") as info:
        tuned(x, y, out, 100)
    _points_at(info.value, "tuned(x, y, out, 100)")


class _Plan:
    def __init__(self, n: int) -> None:
        self.n = n


def _add_plan(plan, x, y, out, BLOCK=64):
    add_kernel[(cube.cdiv(plan.n, BLOCK),)](x, y, out, plan.n, BLOCK=BLOCK)


def test_key_on_an_object_keyed_by_its_address():
    # before: the key held "<_Plan object at 0x7f...>", new for every object: each call was
    # tuned again and added an entry to the cache file
    tuned = cube.autotune(configs=ADD_CONFIGS, key=["plan"])(_add_plan)
    x, y, out = add_inputs(100)
    with pytest.raises(cube.LaunchError, match="key 'plan' is <.*_Plan object at 0x") as info:
        tuned(_Plan(100), x, y, out)
    assert "plan.n as n" in _points_at(info.value, "tuned(_Plan(100), x, y, out)")
    assert tuned.stats.tunings == 0


class _Mode:  # a user's object: its default repr holds its address
    pass


def _add_with_mode(x, y, out, mode=None, BLOCK=64):
    add_kernel[(cube.cdiv(x.size, BLOCK),)](x, y, out, x.size, BLOCK=BLOCK)


@pytest.mark.parametrize("candidates, fn, words", [
    # before: "discarded" at every tuning, one AutotuneWarning per call, since every launch
    # refuses these values
    ([cube.Config(BLOCK=64), cube.Config(BLOCK=128, num_warps=3)], add_kernel,
     "num_warps=3; it must be a power of two"),
    ([cube.Config(BLOCK=64), cube.Config(BLOCK="128")], add_kernel,
     "'BLOCK' is a cube.Comptime[int] parameter, but it got '128'"),
    ([cube.Config(BLOCK=64), cube.Config(BLOCK=128, num_stages=-1)], add_kernel,
     "num_stages=-1; it must be an int >= 0"),
    # before: accepted, then "missing a required argument: 'BLOCK'" at every tuning
    ([cube.Config(BLOCK=64), cube.Config(PLUS_ONE=True)], add_kernel, "leaves BLOCK unset"),
    # before: the config list's checksum held the object's address, so every process tuned
    # again and the cached results were never found
    ([cube.Config(BLOCK=128), cube.Config(BLOCK=64, mode=_Mode())], _add_with_mode,
     "whose repr differs in every process"),
])
def test_configs_no_launch_could_use_are_an_error_at_the_config(candidates, fn, words):
    with pytest.raises(cube.CubeError) as info:
        cube.autotune(configs=candidates, key=["x"] if fn is _add_with_mode else ["n"])(fn)
    message = _points_at(info.value, "configs=candidates")
    assert f"{candidates[1]!r}" in message  # the config at fault
    assert words in message and "hint: " in message


def _pick(kernel):
    return kernel


def test_a_function_in_a_config_is_keyed_by_its_name():
    # a host function choosing among kernels by passing one: stable across processes
    configs = [cube.Config(kernel=add_kernel), cube.Config(kernel=_pick)]
    assert configs[1].as_json() == {"kernel": "<test_misuse._pick>"}
    first, again = (cube.autotune(configs=configs, key=[])(lambda x, kernel=None: x)
                    for _ in range(2))
    assert first.checksum == again.checksum


@pytest.mark.parametrize("options, snippet, words", [
    # before: TypeError "<lambda>() takes 1 positional argument but 2 were given" from the
    # tuner's lines at the first call
    ({"prune": lambda configs: configs}, "prune=", "cannot be called as prune(configs, ctx)"),
    ({"default": lambda: ADD_CONFIGS[0]}, "default=", "cannot be called as default(ctx)"),
    ({"prune": ADD_CONFIGS}, "prune=", "is not a function"),
    ({"key": {"n": lambda: 1024}}, "key=", "bucket of key 'n' (<lambda>) cannot be called"),
])
def test_hooks_that_cannot_be_called_are_an_error_at_the_decorator(options, snippet, words):
    with pytest.raises(cube.CubeError, match=re.escape(words)) as info:
        cube.autotune(**{"configs": ADD_CONFIGS, "key": ["n"], **options})(add_kernel)
    message = str(info.value)
    assert message.startswith(f"{__file__}:") and "hint: " in message
    assert "cubepy/autotune" not in message


def test_a_builtin_without_a_signature_is_an_error_at_the_decorator():
    # before: ValueError: no signature found for builtin type <class 'int'>, from inspect
    with pytest.raises(cube.CubeError, match="whose parameters Python cannot read") as info:
        cube.autotune(configs=ADD_CONFIGS, key=[])(int)
    _points_at(info.value, "cube.autotune(configs=ADD_CONFIGS, key=[])(int)")


def _bucket_that_raises(n):
    raise RuntimeError(f"no bucket for {n}")


def _prune_that_raises(configs, ctx):
    return [c for c in configs if c.kwargs["BLOCKS"]]  # a misspelt name


@pytest.mark.parametrize("options, error, note", [
    ({"key": {"n": _bucket_that_raises}}, RuntimeError,
     "raised by the bucket function of key 'n' for 100"),
    ({"prune": _prune_that_raises}, KeyError, "raised by its prune hook for n=128 on cpu"),
])
def test_a_hook_that_raises_is_let_through_with_a_note(options, error, note):
    # before: a bare KeyError from inside the tuner, with nothing to say whose hook it was
    x, y, out = add_inputs(100)
    with pytest.raises(error) as info:
        cube.autotune(**{"configs": ADD_CONFIGS, "key": ["n"], **options})(add_kernel)[(2,)](
            x, y, out, 100)
    assert any(n.startswith("autotune autotune_kernels.add_kernel: ") and n.endswith(note)
               for n in getattr(info.value, "__notes__", [note]))
    frames = [f.name for f in info.traceback]
    assert frames[-1] in ("_bucket_that_raises", "_prune_that_raises", "<listcomp>")


@pytest.mark.parametrize("bucket, expected", [
    (lambda n: np.int64(2048), 2048),  # before: TypeError "int64 is not JSON serializable"
    (lambda n: "big" if n > 50 else "small", "big"),
])
def test_bucket_results_that_are_json_data(bucket, expected):
    tuned = cube.autotune(configs=ADD_CONFIGS, key={"n": bucket})(add_kernel)
    x, y, out = add_inputs(100)
    tuned[lambda meta: (cube.cdiv(100, meta["BLOCK"]),)](x, y, out, 100)
    np.testing.assert_array_equal(out, x + y)
    assert tuned.last_key.as_json()["sizes"] == {"n": expected}


def test_bucket_that_returns_an_object_points_at_the_bucket():
    def bucket(n):
        return object()

    x, y, out = add_inputs(100)
    with pytest.raises(cube.CubeError, match="returned <object object at 0x") as info:
        cube.autotune(configs=ADD_CONFIGS, key={"n": bucket})(add_kernel)[(2,)](x, y, out, 100)
    _points_at(info.value, "def bucket(n):")
