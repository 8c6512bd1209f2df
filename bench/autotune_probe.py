"""Why a tuned skinny matmul can be slower than its config (exploration; see BENCHMARKS.md).

Times 16x8192x8192 bf16 through ``matmul_tuned`` (the autotune dispatch), the same config
through ``matmul`` directly, and torch, with triton's do_bench; and the host time per call,
with the tuner's dispatch alone on its repeat path and on its full path.
With ``--profile``, where the host time of 2,000 tuned calls goes (cProfile).
"""

from __future__ import annotations

import sys

import torch
import triton.testing

sys.path.insert(0, ".")
sys.path.insert(0, "bench")
from burn_gpu_bench import host_us  # noqa: E402

from cubepy.autotune import STATS  # noqa: E402
from examples import matmul as mm  # noqa: E402

m, n, k = 16, 8192, 8192
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
mm.matmul_tuned(a, b, c, m, n, k)
torch.cuda.synchronize()
best = mm.matmul_tuned.last_config
print("tunings", STATS.tunings, "config", best)
kw = best.launch_kwargs()
config = mm.Config(kw["BM"], kw["BN"], kw["BK"], kw["GROUP"], kw["num_warps"], kw["num_stages"],
                   kw.get("PERSISTENT", False), kw.get("C_DESC", False), kw.get("FLAT", False),
                   kw.get("SPLIT_K", False))


for name, fn in [("matmul_tuned", lambda: mm.matmul_tuned(a, b, c, m, n, k)),
                 ("matmul(config)", lambda: mm.matmul(a, b, c, config=config)),
                 ("torch.matmul", lambda: torch.matmul(a, b))]:
    print(f"{name:<16} do_bench {triton.testing.do_bench(fn, return_mode='median') * 1e3:7.1f} us"
          f"  host {host_us(fn, calls=500):6.1f} us/call", flush=True)

# The tuner's own share: its dispatch with a no-op in place of the matmul, for a repeated
# positional call (straight to the remembered config) and through the full binding and key
# (the path every call took before the repeat key)
tuner, args = mm.matmul_tuned, (a, b, c, m, n, k)


def dispatch() -> None:
    tuner._call(lambda cfg: None, args, {})


print(f"{'dispatch, repeat':<16} host {host_us(dispatch, calls=2000):6.1f} us/call")
tuner._keyed_positions, keyed = None, tuner._keyed_positions
print(f"{'dispatch, full':<16} host {host_us(dispatch, calls=2000):6.1f} us/call")
tuner._keyed_positions = keyed

if "--profile" in sys.argv:  # where the host time of a tuned call goes
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        mm.matmul_tuned(a, b, c, m, n, k)
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)
