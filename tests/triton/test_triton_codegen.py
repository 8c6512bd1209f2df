"""The ``triton`` target's code generation: the source it writes, interpreter or GPU, and
ahead-of-time compilation (tensor cores on sm_90 and gfx942, checked without a GPU).

Results of every op against NumPy are the conformance suite's job (``tests/conformance``,
which runs on ``triton`` too); this file checks what is particular to this backend.
"""

from __future__ import annotations

import ast

import ml_dtypes
import numpy as np
import pytest
from shared_kernels import k_slice

triton = pytest.importorskip("triton")

import cubepy as cube  # noqa: E402
from cubepy import config  # noqa: E402
from cubepy.backends.triton import codegen, loader  # noqa: E402
from cubepy.runtime.targets import get_backend  # noqa: E402


def _matmul(
    a, c, b, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    """C (float16) = A @ B for row-major float16 A (M x K) and B (K x N), a K loop of dots."""
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        a_tile, b_tile = k_slice(a, b, rm, rn, k0 + cube.arange(0, BK), M, N, K)
        acc = cube.dot(a_tile, b_tile, acc=acc)
    cube.store(
        c + rm[:, None] * N + rn[None, :],
        acc.to(cube.float16),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def _activation(x, out, s, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    cube.store(out + offs, cube.tanh(v) * s + v // 2.0, mask=mask)


def _small_dot(a, b, c, i, BM: cube.Comptime[int]):
    r = cube.arange(0, BM)
    a_tile = cube.load(a + r[:, None] * BM + r[None, :])
    b_tile = cube.load(b + r[:, None] * BM + r[None, :])
    cube.store(c + r[:, None] * BM + r[None, :], cube.dot(a_tile, b_tile) + i)


def _function_ir(fn, *args, **kwargs):
    """The optimized IR of ``fn`` specialized on these arguments for the triton target."""
    kern = cube.kernel(fn)
    bound, _ = kern._bind(args, dict(kwargs))
    _, params, _ = kern._specialize(bound, "triton")
    return kern.build(params)


@pytest.fixture
def env(monkeypatch):
    """Set cubepy environment variables for one test (the settings are re-read)."""

    def set_env(**values: str) -> None:
        # start from no setting at all: `make test` itself sets CUBEPY_TRITON_AOT
        for name in ("CUBEPY_TRITON_AOT", "CUBEPY_TRITON_INTERPRET"):
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        config.reload()

    yield set_env
    monkeypatch.undo()  # the caller's environment back first, then re-read it
    config.reload()


def _matmul_args(M=130, N=132, K=150):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    return a, np.full((M, N), np.nan, np.float16), b, M, N, K


# -- ahead-of-time compilation: tensor cores without a GPU -------------------------------------


def test_aot_matmul_uses_wgmma_on_sm90_and_mfma_on_gfx942(env):
    env(CUBEPY_TRITON_AOT="cuda:90,hip:gfx942")
    a, c, b, M, N, K = _matmul_args()
    kern = cube.kernel(_matmul)  # a fresh kernel: nothing cached from other tests
    compiled, _, _ = kern.compiled(
        (a, c, b, M, N, K), {"BM": 128, "BN": 128, "BK": 64, "target": "triton"}
    )
    assert set(compiled.aot) == {"cuda:90", "hip:gfx942"}
    assert "wgmma" in compiled.aot["cuda:90"].asm["ptx"]
    assert "v_mfma" in compiled.aot["hip:gfx942"].asm["amdgcn"]
    assert "tl.dot(" in compiled.source
    if loader.should_interpret():  # the same specialization also runs here, on the interpreter
        kern[(2, 2)](a, c, b, M, N, K, BM=128, BN=128, BK=64, target="triton")
        expected = a.astype(np.float32) @ b.astype(np.float32)
        np.testing.assert_allclose(c.astype(np.float32), expected, rtol=1e-2, atol=1e-2)


def test_aot_failure_names_the_kernel_and_the_target(env):
    env(CUBEPY_TRITON_AOT="cuda:90,metal:3")
    kern = cube.kernel(_activation)
    x = np.zeros(8, np.float32)
    with pytest.raises(cube.CompileError) as info:
        kern[(1,)](x, x, 1.0, 8, BLOCK=16, target="triton")
    message = str(info.value)
    assert "_activation" in message and "metal:3" in message and "CUBEPY_TRITON_AOT" in message


def test_no_aot_without_the_setting(env):
    env()
    x = np.zeros(8, np.float32)
    compiled, _, _ = cube.kernel(_activation).compiled(
        (x, x, 1.0, 8), {"BLOCK": 16, "target": "triton"}
    )
    assert compiled.aot == {}


# -- the generated source ----------------------------------------------------------------------


def test_source_is_readable_python_with_one_tl_call_per_op():
    fn = _function_ir(
        _activation, np.zeros(4, np.float32), np.zeros(4, np.float32), 2.0, 4, BLOCK=128
    )
    text = codegen.generate(fn, interpret=False).text
    ast.parse(text)  # plain Python that triton.jit can read
    assert text.startswith("# Generated by cubepy from kernel _activation")
    assert "import triton.language as tl\n" in text
    # int32 parameters stay unannotated so Triton specializes on 1 and on multiples of 16
    assert "@triton.jit\ndef _activation(x_ptr, out_ptr, s: tl.float32, n):" in text
    assert "# line " in text  # the user's lines, so the source reads back
    body = text[text.index("def _activation") :].splitlines()[1:]
    assert all(len(line) <= 100 for line in body)
    assert all(line.count("tl.") <= 3 for line in body if not line.lstrip().startswith("#"))
    # float // is NumPy's, from libdevice's exact fmod (not floor(a / b), nor the int helper)
    assert "libdevice.tanh(" in text and "libdevice.fmod(" in text
    assert "_floordiv_float(" in text and "_floordiv(" not in text
    assert "tl.load(" in text and "mask=mask_0" in text and "tl.store(" in text


def test_gpu_and_interpreter_forms_differ_only_where_the_interpreter_needs_it():
    x = np.zeros(4, ml_dtypes.bfloat16)
    fn = _function_ir(_activation, x, x, ml_dtypes.bfloat16(2.0), 4, BLOCK=16)
    gpu = codegen.generate(fn, interpret=False).text
    interp = codegen.generate(fn, interpret=True).text
    # GPU: bfloat16 is native; math goes through float32; tanh from libdevice
    assert "_round_bf16" not in gpu and "libdevice.tanh(" in gpu
    assert ".to(tl.float32)).to(tl.bfloat16)" in gpu
    # interpreter: bfloat16 in float32 registers, loaded and stored as its 16-bit patterns
    # (the interpreter's own conversions read subnormals as 0), rounded to nearest even when
    # stored
    assert "libdevice." not in interp and "_tanh(" in interp
    assert "_bf16_value(tl.load(" in interp and "tl.pointer_type(tl.int16)" in interp
    assert "tl.store(" in interp and "_bf16_bits(" in interp and ".to(tl.bfloat16)" not in interp


def test_scalar_parameters_keep_their_dtype():
    x = np.zeros(4, np.float64)
    fn = _function_ir(_activation, x, x, np.float64(1) / 3, 4, BLOCK=16)
    assert "s: tl.float64" in codegen.generate(fn, interpret=False).text
    assert "s = tl.full((), s, tl.float64)" in codegen.generate(fn, interpret=True).text
    h = np.zeros(4, np.float16)
    fn = _function_ir(_activation, h, h, np.float16(1.5), 4, BLOCK=16)
    assert "s: tl.float32" in codegen.generate(fn, interpret=False).text  # passed as fp32
    assert "s = s.to(tl.float16)" in codegen.generate(fn, interpret=False).text


def test_float32_dot_is_ieee_unless_tf32_is_allowed():
    a, c, b, M, N, K = _matmul_args(32, 32, 32)
    a, b, c = a.astype(np.float32), b.astype(np.float32), c.astype(np.float32)
    fn = _function_ir(_matmul, a, c, b, M, N, K, BM=32, BN=32, BK=32)
    assert "input_precision='ieee'" in codegen.generate(fn, interpret=False).text
    assert (
        "input_precision='tf32'" in get_backend("triton").compile(fn, {"allow_tf32": True}).source
    )


def _atomic_orders(x, acc, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.atomic_add(acc + offs, cube.load(x + offs), sem="relaxed")
    cube.atomic_max(acc + offs, cube.load(x + offs), sem="relaxed")  # a CAS loop's helper
    cube.atomic_min(acc + offs, 1.0)


def test_relaxed_atomics_pass_their_order_to_triton():
    x = np.zeros(16, np.float32)
    text = codegen.generate(_function_ir(_atomic_orders, x, x, BLOCK=16), interpret=False).text
    assert 'tl.atomic_add(v_0, v_2, sem="relaxed")' in text and text.count('sem="relaxed"') == 1
    assert "_atomic_max_nan(" in text and "_atomic_min_nan(" in text


def test_unknown_launch_option_is_refused():
    x = np.zeros(4, np.float32)
    fn = _function_ir(_activation, x, x, 1.0, 4, BLOCK=16)
    with pytest.raises(cube.LaunchError, match="num_warps, num_stages, allow_tf32"):
        get_backend("triton").compile(fn, {"num_wraps": 4})


def test_small_tiles_dot_as_a_product_sum():
    a = np.arange(64, dtype=np.float32).reshape(8, 8) / 8
    b = np.eye(8, dtype=np.float32)[::-1].copy()
    c = np.zeros((8, 8), np.float32)
    fn = _function_ir(_small_dot, a, b, c, 3, BM=8)
    text = codegen.generate(fn, interpret=False).text
    assert "tl.dot(" not in text and "tl.sum(" in text  # tl.dot wants tiles of 16 or more
    if loader.should_interpret():
        cube.kernel(_small_dot)[(1,)](a, b, c, 3, BM=8, target="triton")
        np.testing.assert_allclose(c, a @ b + 3)


# -- interpreter or GPU ------------------------------------------------------------------------


def test_interpreter_is_chosen_without_a_gpu_or_when_asked(env):
    backend = get_backend("triton")
    env(CUBEPY_TRITON_INTERPRET="1")
    assert backend.device_key() == "triton:interpreter"
    assert "interpreter" in backend.info().device
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    cube.kernel(_activation)[(1,)](x, out, 0.0, 8, BLOCK=16, target="triton")
    np.testing.assert_array_equal(out, x // 2)
    env()
    on_gpu = loader.gpu_driver_available()
    assert (backend.device_key() == "triton:interpreter") == (not on_gpu)


def test_gpu_asked_for_without_one_is_a_clear_error(env):
    if loader.gpu_driver_available():
        pytest.skip("a GPU is present")
    env(CUBEPY_TRITON_INTERPRET="0")
    x = np.zeros(8, np.float32)
    with pytest.raises(cube.LaunchError, match="finds none"):
        cube.kernel(_activation)[(1,)](x, x, 1.0, 8, BLOCK=16, target="triton")


# -- a real GPU (the H200 machine) -------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_matmul_bf16_and_options_with_torch():
    torch = pytest.importorskip("torch")
    a, c, b, M, N, K = _matmul_args(300, 260, 200)
    ad, bd = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    cd = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    kern = cube.kernel(_matmul)
    grid = (cube.cdiv(M, 128), cube.cdiv(N, 128))
    kern[grid](ad, cd, bd, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    expected = ad.float() @ bd.float()
    torch.testing.assert_close(cd.float(), expected, rtol=1e-2, atol=1e-2)
    x = torch.linspace(-3, 3, 1000, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    cube.kernel(_activation)[(cube.cdiv(1000, 256),)](x, out, 2.0, 1000, BLOCK=256)
    reference = torch.tanh(x.float()) * 2 + torch.floor(x.float() / 2)
    torch.testing.assert_close(out.float(), reference, rtol=1e-2, atol=2e-2)
    with pytest.raises(cube.LaunchError, match="NumPy"):
        kern[grid](a, c, b, M, N, K, BM=128, BN=128, BK=64, target="triton")
