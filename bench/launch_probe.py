"""Where the host time of a cached cubepy launch goes on a CUDA GPU (exploration).

Times, per call, the whole launch of a vector add and its parts: the JIT's fast-path key, the
grid normalization, the interpreter-mode check, and the Triton launch it ends in, beside a
hand-written ``triton.jit`` kernel's launch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from burn_gpu_bench import host_us

import cubepy as cube
from cubepy.backends.triton.loader import current_interpret_mode
from cubepy.runtime.jit import normalize_grid


@cube.kernel
def add(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=m) + cube.load(y + offs, mask=m), mask=m)


@triton.jit
def add_triton(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


x = torch.randn(1024, device="cuda")
y, out = torch.randn_like(x), torch.empty_like(x)
args, kwargs = (x, y, out, 1024), {"BLOCK": 1024}
add[(1,)](*args, **kwargs)
compiled, _, _ = add.compiled(args, dict(kwargs))
_, trusted = next(iter(add._fast.values()))
launch = add[(1,)]
rows = {
    "cubepy launch": lambda: add[(1,)](x, y, out, 1024, BLOCK=1024),
    "hand-written triton.jit launch": lambda: add_triton[(1,)](x, y, out, 1024, BLOCK=1024),
    "our triton.jit function, direct": lambda: compiled.jit_fn[(1, 1, 1)](x, y, out, 1024),
    "  the same with our launch options": lambda: compiled.jit_fn[(1, 1, 1)](
        x, y, out, 1024, **compiled.launch_options),
    "trusted launcher (after the key)": lambda: trusted((1, 1, 1), [x, y, out, 1024]),
    "launch with kernel[grid] held": lambda: launch(x, y, out, 1024, BLOCK=1024),
    "kernel[grid]": lambda: add[(1,)],
    "fast-path key": lambda: add._fast_key(args, kwargs),
    "normalize_grid": lambda: normalize_grid((1,), {}, "add"),
    "current_interpret_mode": current_interpret_mode,
}
# Below Triton's JIT dispatch (its binder, specialization and cache key): the compiled kernel
# that dispatch returns, launched through its own grid proxy, and through its C launcher with
# the stream fetched once
kernel_object = compiled.jit_fn.run(x, y, out, 1024, grid=(1, 1, 1), warmup=False,
                                    **compiled.launch_options)
stream = torch.cuda.current_stream().cuda_stream


def raw_launch() -> None:
    kernel_object.run(1, 1, 1, stream, kernel_object.function, kernel_object.packed_metadata,
                      None, None, None, x, y, out, 1024)


rows.update({
    "compiled kernel[grid]": lambda: kernel_object[(1, 1, 1)](x, y, out, 1024),
    "compiled kernel, C launcher": raw_launch,
    "current stream": lambda: torch.cuda.current_stream().cuda_stream,
    "data_ptr x3": lambda: (x.data_ptr(), y.data_ptr(), out.data_ptr()),
})
print(f"launch options: {compiled.launch_options}")
for name, fn in rows.items():
    try:
        print(f"{name:<34} {host_us(fn, calls=20000, warmup=200):7.2f} µs", flush=True)
    except Exception as exc:  # an internal this Triton lacks: reported
        print(f"{name:<34} failed: {str(exc).splitlines()[0][:100]}", flush=True)
