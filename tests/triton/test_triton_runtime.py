"""The Triton backend's runtime layer, with hand-written ``@triton.jit`` kernels.

Covers the NumPy adapter for Triton's interpreter (every dtype, views written in place,
``tl.dot``), the loader of generated source and its interpreter/compiler mode switch, the
classification of launch arguments, and ahead-of-time compilation for sm_90 and gfx942.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

triton = pytest.importorskip("triton")

from cubepy.backends.triton import aot, arrays, loader  # noqa: E402
from cubepy.backends.triton.adapter import NumpyTensor, TorchLikeDtype  # noqa: E402
from cubepy.errors import LaunchError  # noqa: E402


def _load_kernels():
    path = Path(__file__).with_name("runtime_kernels.py")
    spec = importlib.util.spec_from_file_location("cubepy_tests_triton_runtime_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


K = _load_kernels()

ALL_DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    ml_dtypes.bfloat16,
    np.float32,
    np.float64,
]


def interpret(kernel, grid, *args, **constexprs):
    """Launch ``kernel`` on Triton's interpreter with NumPy arrays, as the runtime does."""
    with loader.interpret_mode(True):
        names = [f"arg{i}" for i in range(len(args))]
        launch = arrays.prepare_launch_args(dict(zip(names, args)), interpreter=True)
        loader.as_mode(kernel, True)[grid](*launch.values(), **constexprs)


def _random(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 50, n).astype(dtype)
    return (rng.random(n) * 8).astype(dtype)


# -- adapter ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_adapter_round_trip_every_dtype(dtype):
    rng = np.random.default_rng(0)
    n = 37
    x, y = _random(rng, n, dtype), _random(rng, n, dtype)
    out = np.zeros_like(x)
    if np.dtype(dtype) == np.bool_:
        interpret(K.or_kernel, (3,), x, y, out, n, BLOCK=16)
        np.testing.assert_array_equal(out, x | y)
    elif np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        # The interpreter does bf16 arithmetic on raw bits, so the kernel computes in f32; its
        # f32 -> bf16 cast truncates (a GPU rounds to nearest), hence one bf16 ulp of slack.
        interpret(K.add_upcast_kernel, (3,), x, y, out, n, BLOCK=16)
        expected = x.astype(np.float32) + y.astype(np.float32)
        np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2**-7, atol=0)
    else:
        interpret(K.add_kernel, (3,), x, y, out, n, BLOCK=16)
        np.testing.assert_array_equal(out, x + y)


def test_adapter_answers_what_the_interpreter_asks():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = a[1:, ::2]
    t = NumpyTensor(view)
    assert str(t.dtype) == "torch.float32"
    assert t.data_ptr() == a.ctypes.data + 1 * 6 * 4
    assert t.size() == (3, 3) and t.stride() == (6, 2) and t.element_size() == 4
    storage = t.untyped_storage()
    assert storage.cpu() is storage and storage.data_ptr() == t.data_ptr()
    host = t.new_empty(0, device="cpu").set_(
        storage.cpu(), t.storage_offset(), t.size(), t.stride()
    )
    assert host.data_ptr() == t.data_ptr()
    from triton.runtime.jit import mangle_type

    assert mangle_type(t) == "*fp32"
    assert mangle_type(NumpyTensor(np.zeros(2, ml_dtypes.bfloat16))) == "*bf16"
    assert mangle_type(NumpyTensor(np.zeros(2, np.uint32))) == "*u32"


def test_adapter_rejects_unsupported_dtypes_and_odd_strides():
    with pytest.raises(TypeError, match="complex64"):
        NumpyTensor(np.zeros(2, np.complex64))
    packed = np.zeros(4, dtype=[("a", np.int8), ("b", np.float32)])
    with pytest.raises(ValueError, match="multiples"):
        NumpyTensor(packed["b"])


def test_noncontiguous_views_are_written_in_place():
    base = np.full((8, 20), -1.0, np.float32)
    view = base[2:7, 1::3]  # offset first element, column stride 3
    s0, s1 = (s // 4 for s in view.strides)
    interpret(K.fill_2d_kernel, (1,), view, s0, s1, view.shape[0], view.shape[1], BM=8, BN=8)
    rows, cols = np.indices(view.shape)
    np.testing.assert_array_equal(view, rows * 100 + cols)
    untouched = np.ones(base.shape, bool)
    untouched[2:7, 1::3] = False
    assert (base[untouched] == -1.0).all()

    transposed = np.zeros((6, 5), np.float32).T  # strides (1, 5) in elements
    s0, s1 = (s // 4 for s in transposed.strides)
    interpret(K.fill_2d_kernel, (1,), transposed, s0, s1, 5, 6, BM=8, BN=8)
    rows, cols = np.indices((5, 6))
    np.testing.assert_array_equal(transposed, rows * 100 + cols)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_interpreter_dot_matmul_matches_numpy(dtype):
    rng = np.random.default_rng(1)
    M, N, Kd = 24, 20, 40
    a = rng.standard_normal((M, Kd)).astype(dtype)
    b = rng.standard_normal((Kd, N)).astype(dtype)
    c = np.zeros((M, N), np.float32)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    interpret(K.matmul_kernel, grid, a, b, c, M, N, Kd, Kd, N, N, BM=16, BN=16, BK=16)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=2e-2 if dtype == np.float16 else 1e-4, atol=2e-2)


def test_triton_language_helpers_follow_the_mode():
    # tl.sum and tl.cdiv are @jit functions of triton.language, decorated when triton was
    # imported (here: without TRITON_INTERPRET): the mode switch must swap them.
    rng = np.random.default_rng(2)
    x = rng.random((3, 20)).astype(np.float32) + 0.5
    out = np.zeros_like(x)
    interpret(K.scale_rows_kernel, (3,), x, out, 20, 20, 20, BLOCK=32)
    np.testing.assert_allclose(out, x / x.sum(axis=1, keepdims=True), rtol=1e-5)


# -- loader ----------------------------------------------------------------------------------

GENERATED = """\
import triton
import triton.language as tl


@triton.jit
def _twice(v):
    return v * 2


@triton.jit
def gen_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _twice(v) + tl.max(v, axis=0), mask=mask)
"""


def test_loader_runs_generated_source(tmp_path):
    fn = loader.load_jit_function(GENERATED, "gen_kernel", tmp_path, interpret=True)
    path = loader.source_path(GENERATED, tmp_path)
    assert path.parent == tmp_path / "triton" and path.read_text() == GENERATED
    assert fn is loader.load_jit_function(GENERATED, "gen_kernel", tmp_path, interpret=True)
    assert not list(path.parent.glob("*.tmp"))

    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    interpret(fn, (1,), x, out, 10, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x + 9)

    jit_form = loader.load_jit_function(GENERATED, "gen_kernel", tmp_path, interpret=False)
    assert isinstance(jit_form, triton.runtime.jit.JITFunction)
    asm = aot.compile_aot(
        jit_form, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64}, "cuda:80"
    )
    assert "gen_kernel" in asm.text


def test_loader_names_a_missing_kernel(tmp_path):
    with pytest.raises(AttributeError, match="no_such"):
        loader.load_jit_function(GENERATED, "no_such", tmp_path)


def test_interpret_mode_nests_and_sets_triton():
    import os

    with loader.interpret_mode(True):
        assert loader.current_interpret_mode() and os.environ["TRITON_INTERPRET"] == "1"
        assert type(triton.language.sum).__name__ == "InterpretedFunction"
        with loader.interpret_mode(False):
            assert not loader.current_interpret_mode()
            assert isinstance(triton.language.sum, triton.runtime.jit.JITFunction)
            assert isinstance(triton.language.standard._sum_combine, triton.runtime.jit.JITFunction)
        assert loader.current_interpret_mode()
        assert type(triton.language.standard._sum_combine).__name__ == "InterpretedFunction"


def test_interpret_mode_makes_other_threads_wait_for_the_other_mode():
    seen = []
    entered = threading.Event()
    release = threading.Event()

    def hold_interpreter():
        with loader.interpret_mode(True):
            entered.set()
            release.wait(5)
            seen.append(("interp", loader.current_interpret_mode()))

    holder = threading.Thread(target=hold_interpreter)
    holder.start()
    entered.wait(5)

    def want_compiler():
        with loader.interpret_mode(False):
            seen.append(("jit", loader.current_interpret_mode()))

    other = threading.Thread(target=want_compiler)
    other.start()
    other.join(0.2)
    assert other.is_alive()  # waits while the interpreter is in use
    release.set()
    holder.join(5)
    other.join(5)
    assert seen == [("interp", True), ("jit", False)]


def test_should_interpret_follows_config(monkeypatch):
    from cubepy import config

    monkeypatch.setenv("CUBEPY_TRITON_INTERPRET", "1")
    config.reload()
    try:
        assert loader.should_interpret()
        monkeypatch.setenv("CUBEPY_TRITON_INTERPRET", "0")
        config.reload()
        assert not loader.should_interpret()
        monkeypatch.delenv("CUBEPY_TRITON_INTERPRET")
        config.reload()
        assert loader.should_interpret() == (not loader.gpu_driver_available())
    finally:
        monkeypatch.delenv("CUBEPY_TRITON_INTERPRET", raising=False)
        config.reload()


# -- launch arguments ------------------------------------------------------------------------


class FakeCudaArray:
    """Just the CUDA array interface, as CuPy or Numba give it (never dereferenced here)."""

    def __init__(self, address=0x7F00_0000_0000, shape=(4, 8), typestr="<f2", strides=None):
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
        }


class DLPackOnly:
    """An array reachable only through DLPack (here backed by NumPy, so on the CPU)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_host_array_on_gpu_is_a_clear_error():
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError) as err:
        arrays.prepare_launch_args({"x": x, "n": 4}, interpreter=False)
    assert str(err.value) == (
        "argument 'x' is a NumPy (host) array; pass a CUDA array (cupy/torch) or "
        "cube.asarray(x, device='cuda')"
    )


def test_numpy_becomes_an_adapter_on_the_interpreter():
    x = np.zeros(4, np.float32)
    launch = arrays.prepare_launch_args({"x": x, "n": 4, "eps": 1e-5}, interpreter=True)
    assert isinstance(launch["x"], NumpyTensor) and launch["x"].array is x
    assert launch["n"] == 4 and launch["eps"] == 1e-5


def test_cuda_array_interface_is_wrapped_for_triton():
    from triton.runtime.jit import mangle_type

    cuda = FakeCudaArray(strides=(32, 2))
    arg = arrays.to_launch_arg("a", cuda, interpreter=False)
    assert arg.data_ptr() == 0x7F00_0000_0000
    assert mangle_type(arg) == "*fp16"
    assert arg.strides == (16, 1) and arg.shape == (4, 8) and arg.device == "cuda:0"
    assert arrays.array_dtype_name(cuda) == "float16"
    assert arrays.array_device(cuda) == "cuda:0"
    with pytest.raises(LaunchError, match="'a' is a CUDA array"):
        arrays.to_launch_arg("a", cuda, interpreter=True)


def test_arrays_on_different_devices_name_both_arguments():
    with pytest.raises(LaunchError, match=r"'x' \(cpu\) and 'w' \(cuda:0\)"):
        arrays.check_same_device({"x": np.zeros(2), "n": 2, "w": FakeCudaArray()})
    assert arrays.check_same_device({"n": 1}) is None


def test_dlpack_only_arrays_are_read_without_a_framework():
    base = np.arange(12, dtype=np.int16).reshape(3, 4)
    obj = DLPackOnly(base[:, 1:])
    pointer = arrays.read_dlpack(obj)
    assert pointer.data_ptr() == base[:, 1:].ctypes.data
    assert (pointer.shape, pointer.strides, pointer.device) == ((3, 3), (4, 1), "cpu")
    assert arrays.array_dtype_name(obj) == "int16" and arrays.array_device(obj) == "cpu"
    launch = arrays.to_launch_arg("d", obj, interpreter=True)
    assert isinstance(launch, NumpyTensor) and launch.data_ptr() == base[:, 1:].ctypes.data
    assert arrays.read_dlpack(DLPackOnly(np.zeros(2, np.bool_))).dtype == TorchLikeDtype("bool")
    # NumPy will not export bfloat16 through DLPack; the type codes are read like this:
    assert (
        arrays._dlpack_dtype(4, 16, 1) == "bfloat16" and arrays._dlpack_dtype(2, 16, 1) == "float16"
    )
    with pytest.raises(TypeError, match="lanes=4"):
        arrays._dlpack_dtype(2, 32, 4)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_array_dtype_names(dtype):
    expected = "bool" if np.dtype(dtype) == np.bool_ else np.dtype(dtype).name
    assert arrays.array_dtype_name(np.zeros(2, dtype)) == expected
    assert arrays.array_device(np.zeros(2, dtype)) == "cpu"


def test_needs_int64():
    from numpy.lib.stride_tricks import as_strided

    assert not arrays.needs_int64(np.zeros((64, 64), np.float32))
    assert not arrays.needs_int64(np.zeros(0, np.float32))
    edge = as_strided(np.zeros(1, np.float32), shape=(2,), strides=(4 * (2**31 - 2),))
    assert not arrays.needs_int64(edge)  # span exactly 2**31 - 1
    over = as_strided(np.zeros(1, np.float32), shape=(2,), strides=(4 * (2**31 - 1),))
    assert arrays.needs_int64(over)
    assert arrays.needs_int64(FakeCudaArray(shape=(2**16, 2**15 + 1), typestr="<f4"))


# -- ahead-of-time compilation ---------------------------------------------------------------

MATMUL_SIGNATURE = {
    "a_ptr": "*fp16",
    "b_ptr": "*fp16",
    "c_ptr": "*fp32",
    "M": "i32",
    "N": "i32",
    "K": "i32",
    "stride_am": "i32",
    "stride_bk": "i32",
    "stride_cm": "i32",
}
MATMUL_BLOCKS = {"BM": 64, "BN": 64, "BK": 32}


def test_aot_fp16_dot_uses_wgmma_on_sm90():
    asm = aot.compile_aot(K.matmul_kernel, MATMUL_SIGNATURE, MATMUL_BLOCKS, "cuda:90")
    assert asm.isa == "ptx" and "wgmma" in asm.text
    assert asm.target == "cuda:90" and asm.name == "matmul_kernel"
    assert asm.num_warps == 4 and asm.shared > 0
    assert isinstance(asm.asm["cubin"], bytes)


def test_aot_fp16_dot_uses_mfma_on_gfx942():
    asm = aot.compile_aot(
        K.matmul_kernel, MATMUL_SIGNATURE, MATMUL_BLOCKS, "hip:gfx942", num_warps=8
    )
    assert asm.isa == "amdgcn" and "v_mfma" in asm.text
    assert asm.num_warps == 8 and asm.shared > 0


def test_aot_works_in_interpreter_mode(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with loader.interpret_mode(True):
        interp_form = loader.as_mode(K.scale_rows_kernel, True)
        signature = {
            "x_ptr": "*float32",
            "out_ptr": "*float32",
            "stride_x": "int32",
            "stride_out": "int32",
            "N": "int32",
        }
        asm = aot.compile_aot(interp_form, signature, {"BLOCK": 128}, "cuda:90")
        assert loader.current_interpret_mode()  # restored after the compile
    assert "scale_rows_kernel" in asm.text


def test_aot_reports_missing_types():
    with pytest.raises(ValueError, match="parameter 'n'"):
        aot.compile_aot(
            K.add_kernel,
            {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
            {"BLOCK": 64},
            "cuda:90",
        )
    with pytest.raises(ValueError, match="unknown AOT target"):
        aot.parse_target("metal:3")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("cuda:90", ("cuda", 90, 32)),
        ("sm_80", ("cuda", 80, 32)),
        ("cuda:sm_90a", ("cuda", 90, 32)),
        ("hip:gfx942", ("hip", "gfx942", 64)),
        ("hip:gfx1100", ("hip", "gfx1100", 32)),
    ],
)
def test_parse_target(target, expected):
    t = aot.parse_target(target)
    assert (t.backend, t.arch, t.warp_size) == expected


# -- a real GPU (the H200 machine) -----------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not loader.gpu_driver_available(), reason="needs a CUDA GPU driver")
def test_gpu_launch_with_cupy_and_torch():
    cupy = pytest.importorskip("cupy")
    n = 1000
    with loader.interpret_mode(False):
        kernel = loader.as_mode(K.add_kernel, False)
        x = cupy.arange(n, dtype=cupy.float32)
        y = cupy.ones(n, dtype=cupy.float32)
        out = cupy.zeros(n, dtype=cupy.float32)
        launch = arrays.prepare_launch_args({"x": x, "y": y, "out": out, "n": n}, interpreter=False)
        kernel[(triton.cdiv(n, 256),)](*launch.values(), BLOCK=256)
        cupy.cuda.runtime.deviceSynchronize()
        np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(n) + 1)
        torch = pytest.importorskip("torch")
        t = torch.zeros(n, device="cuda")
        launch = arrays.prepare_launch_args({"x": x, "y": y, "out": t, "n": n}, interpreter=False)
        assert launch["out"] is t
        kernel[(triton.cdiv(n, 256),)](*launch.values(), BLOCK=256)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(t.cpu().numpy(), np.arange(n) + 1)


def test_docstring_examples_run():
    import doctest
    import importlib

    for name in ("adapter", "arrays", "aot", "loader"):
        module = importlib.import_module(f"cubepy.backends.triton.{name}")
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, f"{name}: {result}"
