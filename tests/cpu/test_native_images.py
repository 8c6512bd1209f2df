"""Native images of cpu kernels: built once, loaded by later processes without Numba, and
refused (with Numba running the kernel) where the compiled code needs Numba's runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cubepy as cube
from cubepy import config

REPO_ROOT = Path(__file__).resolve().parents[2]


@cube.kernel
def scaled_softmax(x, out, n, scale, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    m = cols < n
    v = cube.load(x + row * n + cols, mask=m, other=float("-inf")) * scale
    e = cube.exp(v - cube.max(v, axis=0))
    cube.store(out + row * n + cols, e / cube.sum(e, axis=0), mask=m)


@cube.kernel
def flagged_copy(x, out, n, negate, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    v = cube.load(x + offs, mask=m, other=0)
    cube.store(out + offs, cube.where(negate, -v, v), mask=m)


@cube.kernel
def tile_matmul(a, b, c, K: cube.Comptime[int]):
    rows = cube.arange(0, K)
    tile_a = cube.load(a + rows[:, None] * K + rows[None, :])
    tile_b = cube.load(b + rows[:, None] * K + rows[None, :])
    cube.store(c + rows[:, None] * K + rows[None, :], cube.dot(tile_a, tile_b))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache folder for this test alone (and for the processes it starts)."""
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    config.reload()
    _forget_compiled()
    yield tmp_path
    monkeypatch.undo()
    config.reload()


def _forget_compiled() -> None:
    """Drop this process's compiled kernels, as a new process would start."""
    for kernel in (scaled_softmax, flagged_copy, tile_matmul):
        kernel._compiled.clear()
        kernel._fast.clear()


def _softmax_reference(x: np.ndarray, scale: float) -> np.ndarray:
    v = x.astype(np.float64) * scale
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _compiled(kernel, *args, **comptime):
    compiled, _, _ = kernel.compiled(args, comptime)
    return compiled


def _images(cache_dir: Path, suffix: str) -> list[Path]:
    return sorted((cache_dir / "cpu").glob(f"*{suffix}"))


def test_a_kernel_gets_an_image_and_runs_from_it(cache_dir, rng):
    x = rng.standard_normal((37, 100)).astype(np.float32)
    out = np.full_like(x, np.nan)
    scaled_softmax[(37,)](x, out, 100, 0.5, BLOCK=128)
    np.testing.assert_allclose(out, _softmax_reference(x, 0.5), rtol=1e-5, atol=1e-7)
    assert _compiled(scaled_softmax, x, out, 100, 0.5, BLOCK=128).entry is not None
    assert len(_images(cache_dir, ".native")) == 1


def test_a_new_process_runs_the_image_without_numba(cache_dir, rng):
    x = rng.standard_normal((5, 60)).astype(np.float32)
    scaled_softmax[(5,)](x, np.empty_like(x), 60, 2.0, BLOCK=64)  # builds the image
    child = textwrap.dedent("""
        import json, sys
        import numpy as np
        from tests.cpu.test_native_images import scaled_softmax
        x = np.asarray(json.loads(sys.stdin.read()), np.float32)
        out = np.full_like(x, np.nan)
        scaled_softmax[(x.shape[0],)](x, out, x.shape[1], 2.0, BLOCK=64)
        print(json.dumps({"out": out.tolist(), "numba": "numba" in sys.modules}))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run([sys.executable, "-c", child], input=json.dumps(x.tolist()),
                          capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    refusals = {p.name: p.read_text() for p in _images(cache_dir, ".numba")}
    assert result["numba"] is False, (_images(cache_dir, ".native"), refusals)
    np.testing.assert_allclose(np.asarray(result["out"]), _softmax_reference(x, 2.0),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("negate", [True, False])
def test_scalar_and_array_types_cross_the_entry(cache_dir, rng, dtype, negate):
    x = (rng.standard_normal(300) * 50).astype(dtype)
    out = np.zeros_like(x)
    flagged_copy[(3,)](x, out, 300, negate, BLOCK=128)
    np.testing.assert_array_equal(out, -x if negate else x)
    assert _compiled(flagged_copy, x, out, 300, negate, BLOCK=128).entry is not None


def test_a_damaged_image_is_rebuilt(cache_dir, rng):
    x = rng.standard_normal((4, 30)).astype(np.float32)
    scaled_softmax[(4,)](x, np.empty_like(x), 30, 1.0, BLOCK=32)
    (image,) = _images(cache_dir, ".native")
    image.write_bytes(b"{not json\n" + image.read_bytes()[:40])
    _forget_compiled()
    out = np.full_like(x, np.nan)
    scaled_softmax[(4,)](x, out, 30, 1.0, BLOCK=32)
    np.testing.assert_allclose(out, _softmax_reference(x, 1.0), rtol=1e-5, atol=1e-7)
    assert image.read_bytes().startswith(b'{"format"')


def test_read_only_inputs_run_through_numba(cache_dir, rng):
    x = rng.standard_normal((3, 20)).astype(np.float32)
    x.flags.writeable = False
    out = np.full((3, 20), np.nan, np.float32)
    scaled_softmax[(3,)](x, out, 20, 1.5, BLOCK=32)
    np.testing.assert_allclose(out, _softmax_reference(x, 1.5), rtol=1e-5, atol=1e-7)


def test_dot_needs_numba_blas_and_gets_no_image(cache_dir, rng):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.full_like(a, np.nan)
    tile_matmul[(1,)](a, b, c, K=16)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert _compiled(tile_matmul, a, b, c, K=16).entry is None
    (refusal,) = _images(cache_dir, ".numba")
    assert "numba_xx" in refusal.read_text()  # the reason: Numba's BLAS shim


def test_native_images_can_be_turned_off(cache_dir, rng, monkeypatch):
    monkeypatch.setenv("CUBEPY_CPU_NATIVE", "0")
    config.reload()
    x = rng.standard_normal((2, 10)).astype(np.float32)
    out = np.full_like(x, np.nan)
    scaled_softmax[(2,)](x, out, 10, 1.0, BLOCK=16)
    np.testing.assert_allclose(out, _softmax_reference(x, 1.0), rtol=1e-5, atol=1e-7)
    assert _compiled(scaled_softmax, x, out, 10, 1.0, BLOCK=16).entry is None
    assert not _images(cache_dir, ".native")


# -- reshapes: Numba's C helper for them, carried by the image (cpu/reshape.py) --


def _numpy_view_strides(a: np.ndarray, shape: tuple, fortran: bool):
    """NumPy's answer: the strides of ``a`` viewed as ``shape`` without a copy, or None."""
    source, target = (a.T, shape[::-1]) if fortran else (a, shape)
    try:
        view = np.reshape(source, target, copy=False)  # NumPy 2.1+: a view or ValueError
    except ValueError:
        return None
    except TypeError:  # older NumPy: no copy=, so set .shape (deprecated from NumPy 2.5)
        view = source.view()
        try:
            view.shape = target
        except AttributeError:
            return None
    return view.strides[::-1] if fortran else view.strides


@pytest.mark.parametrize("fortran", [False, True])
def test_the_reshape_helper_agrees_with_numpy(rng, fortran):
    from cubepy.backends.cpu.reshape import nocopy_strides

    checked = 0
    for _ in range(400):
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 4], size=rng.integers(1, 5)))
        a = np.zeros([s * 2 for s in shape], np.float32)[tuple(slice(None, None, 2)
                                                                for _ in shape)]
        if rng.random() < 0.5:
            a = np.zeros(shape, np.float32)
        if rng.random() < 0.3:
            a = a.T
        factors = [d for d in (2, 3, 1, 4, 2) if a.size % d == 0 and rng.random() < 0.5]
        new_shape, rest = [], a.size
        for d in factors:
            if rest % d == 0:
                new_shape.append(d)
                rest //= d
        new_shape = tuple(int(v) for v in rng.permutation(new_shape + [rest]))
        out = np.zeros(len(new_shape), np.intp)
        got = nocopy_strides(np.array(a.shape), np.array(a.strides), np.array(new_shape), out,
                             a.itemsize, fortran)
        want = _numpy_view_strides(a, new_shape, fortran)
        assert got == (want is not None), (a.shape, a.strides, new_shape)
        if want is not None:  # strides of length-1 axes are free
            assert all(g == w for g, w, n in zip(out, want, new_shape) if n != 1)
            checked += 1
    assert checked > 100


@cube.kernel
def tile_copy(x, out, m, n, row_stride, col_stride, BM: cube.Comptime[int],
              BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.cube_pos(1) * BN + cube.arange(0, BN)
    mask = (rows[:, None] < m) & (cols[None, :] < n)  # [:, None] reshapes: Numba's helper
    offsets = rows[:, None] * row_stride + cols[None, :] * col_stride
    cube.store(out + offsets, cube.load(x + offsets, mask=mask), mask=mask)


def test_one_generated_module_gets_an_image_per_dtype(cache_dir):
    """A kernel whose tiles reshape (Numba calls its C helper, which the image carries) and
    whose generated source is the same for every dtype (Numba types it per call): each
    specialization needs its own image, in one process and in the next. Both are fresh
    processes at the default level: in this one, a test before may have compiled the helper
    at another level, whose code holds this process's addresses (and the image is refused)."""
    child = textwrap.dedent("""
        import json
        import numpy as np
        from tests.cpu.test_native_images import tile_copy, _compiled
        rng = np.random.default_rng(0)
        arrays = [(rng.standard_normal((20, 30)) * 50).astype(dtype)
                  for dtype in (np.int8, np.float32, np.int16, np.float64)]
        for x in arrays:
            out = np.zeros_like(x)
            tile_copy[(2, 2)](x, out, 20, 30, 30, 1, BM=16, BN=16)
            np.testing.assert_array_equal(out, x)
        compiled = [_compiled(tile_copy, x, np.zeros_like(x), 20, 30, 30, 1, BM=16, BN=16)
                    for x in arrays]
        print(json.dumps({"paths": len({c.path for c in compiled}),
                          "reshapes": ".reshape(" in compiled[0].source,
                          "entries": [c.entry is not None for c in compiled]}))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("CUBEPY_CPU_OPT", "NUMBA_OPT")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    for run in ("builds", "loads"):
        proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                              cwd=REPO_ROOT, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        # one generated module, an image per dtype; the second process loads them
        assert seen == {"paths": 1, "reshapes": True, "entries": [True] * 4}, (run, seen)
        assert len(_images(cache_dir, ".native")) == 4, run


def test_an_image_never_holds_an_address_of_this_process():
    """Numba keeps addresses of this process's objects in "dynamic globals". What only the
    Python wrapper reads is dropped with it; one the entry still reads refuses the image."""
    import llvmlite.binding as llvm

    from cubepy.backends.cpu import native

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(textwrap.dedent("""
        @"numba.dynamic.globals.7f00" = global ptr inttoptr (i64 140000 to ptr)
        @"numba.dynamic.globals.7f08" = global ptr inttoptr (i64 140008 to ptr)
        define ptr @entry() {
          %p = load ptr, ptr @"numba.dynamic.globals.7f00"
          ret ptr %p
        }
        define ptr @python_wrapper() {
          %p = load ptr, ptr @"numba.dynamic.globals.7f08"
          ret ptr %p
        }
    """))
    module.triple = llvm.get_process_triple()
    native._keep_only(module, "entry")
    assert native._process_addresses(module) == {"numba.dynamic.globals.7f00"}


def test_an_unoptimized_kernel_holding_addresses_runs_through_numba(cache_dir, rng):
    """Unoptimized (CUBEPY_CPU_OPT=0), Numba leaves addresses of the building process in the
    float16 rounding helpers' code; the image is refused, saying so, and Numba runs the kernel.
    A fresh process is needed: this one's helpers may already be compiled at another level."""
    x = (rng.standard_normal(300) * 50).astype(np.float16)
    child = textwrap.dedent("""
        import json, sys
        import numpy as np
        from tests.cpu.test_native_images import flagged_copy
        x = np.asarray(json.loads(sys.stdin.read()), np.float16)
        out = np.zeros_like(x)
        flagged_copy[(3,)](x, out, x.size, True, BLOCK=128)
        print(json.dumps(out.astype(np.float64).tolist()))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), CUBEPY_CPU_OPT="0")
    proc = subprocess.run([sys.executable, "-c", child], input=json.dumps(x.tolist()),
                          capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = np.asarray(json.loads(proc.stdout.strip().splitlines()[-1]), np.float16)
    np.testing.assert_array_equal(out, -x)
    assert _images(cache_dir, ".native") == []
    (why,) = _images(cache_dir, ".numba")
    assert why.read_text().startswith("holds addresses of this process: numba.dynamic.globals")


def test_images_are_keyed_by_the_optimization_level(monkeypatch):
    """An image compiled with CUBEPY_CPU_OPT=0 (unoptimized, quick to build) is never loaded by
    a process at the default level, nor the other way round; Numba's own NUMBA_OPT does not
    change the level of cubepy's kernels."""
    from cubepy.backends.cpu import native

    monkeypatch.delenv("CUBEPY_CPU_OPT", raising=False)
    config.reload()
    default = native.host_tag()
    monkeypatch.setenv("CUBEPY_CPU_OPT", "2")
    monkeypatch.setenv("NUMBA_OPT", "0")
    config.reload()
    assert native.host_tag() == default
    monkeypatch.setenv("CUBEPY_CPU_OPT", "0")
    config.reload()
    assert native.host_tag() != default
    monkeypatch.setenv("CUBEPY_CPU_OPT", "fast")
    with pytest.raises(ValueError, match="CUBEPY_CPU_OPT='fast': expected an optimization level"):
        config.reload()
    monkeypatch.undo()
    config.reload()


@pytest.mark.parametrize("native_images", ["1", "0"])
def test_kernels_compile_at_cubepys_level_and_numbas_is_restored(cache_dir, rng, monkeypatch,
                                                                  native_images):
    """The level Numba's pass builders see while a kernel compiles is CUBEPY_CPU_OPT's, when
    an image is built and on the dispatcher path (no images: compiled before the first call);
    afterwards Numba's level is its own again."""
    from numba.core import codegen
    from numba.core import config as numba_config

    seen: list[int] = []
    build_passes = codegen.CPUCodegen._pass_builder

    def recording(self, **kwargs):
        seen.append(int(kwargs.get("opt", numba_config.OPT)))
        return build_passes(self, **kwargs)

    size = 32 if native_images == "1" else 64  # specializations no other test compiles
    a = rng.standard_normal((size, size)).astype(np.float32)
    c = np.full_like(a, np.nan)
    before = numba_config.OPT
    assert int(before) != 1
    with monkeypatch.context() as patch:
        patch.setattr(codegen.CPUCodegen, "_pass_builder", recording)
        patch.setenv("CUBEPY_CPU_OPT", "1")
        patch.setenv("CUBEPY_CPU_NATIVE", native_images)
        # a NUMBA_* variable that changed makes Numba re-read them all as a compile starts
        patch.setenv("NUMBA_OPT", str(int(before)))
        config.reload()
        tile_matmul[(1,)](a, a, c, K=size)
    config.reload()
    np.testing.assert_allclose(c, a @ a, rtol=1e-4, atol=1e-4)
    assert numba_config.OPT == before
    # the full pipelines run at 1; Numba asks for its "cheap" first pass at 0 explicitly
    assert 1 in seen and set(seen) <= {0, 1}
