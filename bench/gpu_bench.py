"""Every GPU figure of the H200 issues in one run: a markdown table, and JSON with --out.

    python bench/gpu_bench.py [--out results.json] [--only matmul,wgsl] [--quick]

Rows (each ratio is against a peer measured in the same run; times are medians after a warm-up:
``triton.testing.do_bench`` on CUDA, ``cubepy.backends.wgsl.timing.time_launches`` on WGSL):

- triton: matmul (M x N x K: A is M x K, B is K x N, all row-major) in bf16 and fp16, the best
  of a short list of configs against torch.matmul (cuBLAS); fp32 with and without TF32; fused
  gelu and row softmax against the bandwidth of a torch device-to-device copy of the same size
  (read + write bytes); the host cost of launching a cached kernel against a hand-written
  ``triton.jit`` kernel.
- wgsl (the NVIDIA Vulkan adapter unless CUBEPY_WGPU_ADAPTER says otherwise): gelu and a sum
  against the torch copy bandwidth, matmul against cuBLAS, the host cost of 1,000 launches.

The rows live beside this script, in gpu_bench_triton.py and gpu_bench_wgsl.py; the kernels
come from examples/ (matmul, softmax, vector add) and asv_bench/ (gelu). Every row runs in its
own try/except: a failure prints its error and the rest still run. A full run takes about a
minute on an H200 (Triton's compiles included).

``--quick`` uses tiny sizes so the code paths can be smoke-tested without a GPU: the triton rows
then run on Triton's interpreter and the wgsl rows on whatever adapter wgpu finds (lavapipe),
with NumPy stand-ins for the torch peers (named so in the table, their goals marked n/a).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path

# bench/ is a folder of scripts: reach the examples' kernels from the repository root.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
if not os.environ.get("XDG_RUNTIME_DIR"):  # Mesa and NVIDIA's Vulkan loader warn without it
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubepy-xdg-")

import gpu_bench_triton as tr  # noqa: E402
import gpu_bench_wgsl as wg  # noqa: E402
from gpu_bench_triton import SHORT, Row  # noqa: E402

import cubepy as cube  # noqa: E402
from examples.matmul import Config  # noqa: E402

# Tuning lists: short, and picked from a wider sweep on an H200 (Triton 3.6).
SQUARE_CONFIGS = [Config(128, 256, 64, 8, 8, 3), Config(128, 256, 64, 16, 8, 3),
                  Config(256, 128, 64, 8, 8, 3), Config(128, 256, 32, 8, 8, 4),
                  Config(128, 128, 64, 8, 4, 4),
                  # deeper pipelines and smaller output tiles, for short K (8192x8192x1024)
                  Config(128, 256, 64, 8, 8, 4), Config(256, 128, 64, 8, 8, 4),
                  Config(128, 128, 64, 8, 8, 4), Config(128, 128, 128, 8, 8, 3),
                  # a 5-stage pipeline of 32-wide K slices (bench/matmul_sweep.py)
                  Config(128, 256, 32, 8, 8, 5),
                  # persistent, TMA block loads (examples.matmul.matmul_persistent_kernel)
                  Config(128, 256, 64, 8, 8, 3, True), Config(128, 256, 64, 16, 8, 3, True),
                  Config(128, 256, 32, 8, 8, 5, True),
                  # and C written by TMA too (bench/epilogue_probe.py: 1-3 % where K is short)
                  Config(128, 256, 64, 8, 8, 3, True, True),
                  Config(128, 256, 64, 16, 8, 3, True, True),
                  Config(128, 256, 32, 8, 8, 5, True, True),
                  # and the tile and K loops pipelined as one (cube.range(..., flatten=True))
                  Config(128, 256, 64, 8, 8, 3, True, True, True),
                  Config(128, 256, 64, 16, 8, 3, True, True, True),
                  Config(128, 256, 32, 8, 8, 5, True, True, True),
                  Config(128, 256, 64, 8, 8, 3, True, False, True)]
# 16 rows: one row of tiles; narrow tiles make more cubes (split-K would make more still).
SMALL_M_CONFIGS = [Config(16, 64, 512, 1, 4, 3), Config(16, 128, 128, 1, 4, 4),
                   Config(16, 32, 128, 1, 2, 6), Config(16, 32, 256, 1, 2, 4)]
FP32_CONFIGS = [Config(128, 64, 32, 8, 4, 4), Config(64, 128, 32, 8, 4, 4),
                Config(128, 128, 32, 8, 8, 3), Config(256, 128, 32, 8, 8, 3),
                Config(128, 256, 32, 8, 8, 3)]
WGSL_MATMUL_CONFIGS = [Config(64, 64, 32, 8), Config(128, 64, 32, 8), Config(128, 128, 16, 8),
                       Config(128, 128, 32, 8)]
FULL = {
    "matmul": [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (1024, 8192, 8192),
               (16, 8192, 8192)],
    "matmul_fp32": [(4096, 4096, 4096)], "gelu": 64 << 20, "softmax": (8192, 8192),
    "launch_n": 1024, "launches": 1000, "sum": 256 << 20, "wgsl_matmul": (4096, 4096, 4096),
    "gelu_configs": [(1024, 4), (2048, 8), (4096, 8)], "softmax_warps": [8, 16],
    "wgsl_gelu_blocks": [256, 1024, 4096], "sum_configs": [(2048, 1024), (4096, 1024)],
    "configs": {"square": SQUARE_CONFIGS, "small_m": SMALL_M_CONFIGS, "fp32": FP32_CONFIGS,
                "wgsl": WGSL_MATMUL_CONFIGS},
}
QUICK = {
    "matmul": [(128, 128, 128), (128, 128, 64), (16, 128, 128)], "matmul_fp32": [(64, 64, 64)],
    "gelu": 1 << 16, "softmax": (64, 512), "launch_n": 1024, "launches": 50, "sum": 1 << 20,
    "wgsl_matmul": (128, 128, 128), "gelu_configs": [(1024, 4), (4096, 8)],
    "softmax_warps": [8], "wgsl_gelu_blocks": [1024, 4096], "sum_configs": [(64, 1024)],
    "configs": {"square": [Config(32, 32, 32, 2, 4, 3), Config(64, 32, 32, 2, 4, 3)],
                "small_m": [Config(16, 32, 32, 1, 4, 3)], "fp32": [Config(32, 32, 32, 2, 4, 3)],
                "wgsl": [Config(32, 32, 32, 2), Config(64, 64, 32, 2)]},
}


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def markdown(rows: list[Row]) -> str:
    lines = ["| row | target | cubepy | peer | peer time | ratio | goal | detail |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}x"
        goal = r.goal + ("" if r.met is None else (" ✓" if r.met else " ✗"))
        detail = f"ERROR: {r.error}" if r.error else r.detail
        lines.append(f"| {r.name} | {r.target} | {fmt_time(r.ours)} | {r.peer_name or '-'} "
                     f"| {fmt_time(r.peer)} | {ratio} | {goal or '-'} | {detail} |")
    return "\n".join(lines)


# ---- the machine -------------------------------------------------------------------------------


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - absent or broken: say so
        return "absent"


def header(quick: bool) -> dict:
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "cubepy": cube.__version__, "quick": quick,
            "targets": cube.available_targets()}
    for module in ("numpy", "torch", "triton", "cupy", "wgpu"):
        meta[module] = _version(module)
    try:
        import torch

        meta["cuda_device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "-"
        meta["torch_cuda"] = torch.version.cuda
    except Exception:  # noqa: BLE001
        meta["cuda_device"] = "-"
    try:
        meta["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip() or "-"
    except Exception:  # noqa: BLE001 - no nvidia-smi
        meta["driver"] = "-"
    meta["triton_mode"] = ("GPU" if cube.cuda_available() else "interpreter") \
        if "triton" in meta["targets"] else "-"
    return meta


def select_wgpu_adapter(args) -> None:
    """On a CUDA machine the wgsl rows use the NVIDIA Vulkan adapter unless told otherwise."""
    from cubepy import config

    if args.wgpu_adapter:
        os.environ["CUBEPY_WGPU_ADAPTER"] = args.wgpu_adapter
    elif not os.environ.get("CUBEPY_WGPU_ADAPTER") and cube.cuda_available():
        os.environ["CUBEPY_WGPU_ADAPTER"] = "NVIDIA"
    config.reload()


def wgsl_adapter() -> str:
    try:
        from cubepy.backends.wgsl.device import get_device

        return get_device().adapter_summary
    except Exception as err:  # noqa: BLE001
        return f"unavailable ({type(err).__name__}: {err})"


def plan(quick: bool, targets: list[str]) -> list[tuple]:
    """(row name, target, function, extra arguments) of every row, in order."""
    s = QUICK if quick else FULL
    cfg = s["configs"]
    rows: list[tuple] = []
    env = tr.TritonEnv()  # also the wgsl rows' peers (torch on a GPU, else NumPy stand-ins)

    def add(name, target, fn, *args):
        if target not in targets:
            rows.append((name, target, _missing, (target,)))
        else:
            rows.append((name, target, fn, (env, *args)))

    for dtype in ("bfloat16", "float16"):
        for shape in s["matmul"]:
            configs = cfg["small_m"] if shape[0] <= 64 else cfg["square"]
            add(f"matmul {SHORT[dtype]} {'x'.join(map(str, shape))}", "triton", tr.triton_matmul,
                shape, dtype, configs)
    for shape in s["matmul_fp32"]:
        for tf32 in (True, False):
            add(f"matmul fp32 {'TF32' if tf32 else 'IEEE'} {'x'.join(map(str, shape))}",
                "triton", tr.triton_matmul, shape, "float32", cfg["fp32"], tf32)
    mega = f"{s['gelu'] >> 20}M" if s["gelu"] >= 1 << 20 else str(s["gelu"])
    add(f"fused gelu {mega} f32 vs copy", "triton", tr.triton_gelu, s["gelu"], s["gelu_configs"])
    shape = "x".join(map(str, s["softmax"]))
    add(f"row softmax {shape} bf16 vs copy", "triton", tr.triton_softmax_vs_copy, s["softmax"],
        s["softmax_warps"])
    add(f"row softmax {shape} bf16 vs torch.softmax", "triton", tr.triton_softmax_vs_torch,
        s["softmax"], s["softmax_warps"])
    add("host cost of a cached launch", "triton", tr.triton_launch_cost, s["launch_n"],
        s["launches"])
    sum_n = f"{s['sum'] >> 20}M"
    add(f"fused gelu {mega} f32 vs copy", "wgsl", wg.wgsl_gelu, s["gelu"], s["wgsl_gelu_blocks"])
    add(f"sum {sum_n} f32 vs copy", "wgsl", wg.wgsl_sum, s["sum"], s["sum_configs"])
    shape = "x".join(map(str, s["wgsl_matmul"]))
    add(f"matmul fp32 {shape}", "wgsl", wg.wgsl_matmul, s["wgsl_matmul"], "float32", cfg["wgsl"])
    add(f"matmul fp16 in, fp32 acc {shape}", "wgsl", wg.wgsl_matmul, s["wgsl_matmul"], "float16",
        cfg["wgsl"])
    add(f"{s['launches']} launches, one sync", "wgsl", wg.wgsl_launches, s["launch_n"],
        s["launches"])
    return rows


def _missing(row: Row, target: str) -> None:
    raise RuntimeError(f"target {target!r} is not available here: {cube.available_targets()}")


# ---- running rows ------------------------------------------------------------------------------


def run_row(rows: list[Row], name: str, target: str, fn, *fn_args) -> None:
    """``fn(row, *fn_args)`` fills ``row``; an exception is recorded in it and printed."""
    row = Row(name, target)
    started = time.perf_counter()
    try:
        fn(row, *fn_args)
    except Exception as err:  # noqa: BLE001 - any failure: record it and go on
        text = str(err).strip().splitlines()
        row.error = f"{type(err).__name__}: {text[0] if text else ''}"[:300]
        traceback.print_exc(limit=3, file=sys.stderr)
    if "stand-in" in row.peer_name and row.met is not None:  # no GPU: the goal says nothing
        row.met, row.goal = None, row.goal + " (n/a)"
    rows.append(row)
    print(markdown([row]).splitlines()[-1] + f"  <!-- {time.perf_counter() - started:.1f} s -->",
          flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the rows and the machine's description here (JSON)")
    p.add_argument("--quick", action="store_true", help="tiny sizes: smoke-test the code paths")
    p.add_argument("--only", default="", help="comma-separated substrings of row names to run")
    p.add_argument("--wgpu-adapter", default="",
                   help="part of the WebGPU adapter summary (default: NVIDIA on a CUDA machine)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    select_wgpu_adapter(args)
    meta = header(args.quick)
    targets = meta["targets"]
    meta["wgsl_adapter"] = wgsl_adapter() if "wgsl" in targets else "-"
    print(f"# cubepy GPU benchmarks ({meta['date']}{', --quick' if args.quick else ''})\n")
    print(f"- CUDA device: {meta['cuda_device']}, driver {meta['driver']}, "
          f"CUDA (torch) {meta.get('torch_cuda', '-')}; triton target on the {meta['triton_mode']}")
    print(f"- WGSL adapter: {meta['wgsl_adapter']}")
    print(f"- Python {meta['python']}, cubepy {meta['cubepy']}, torch {meta['torch']}, triton "
          f"{meta['triton']}, cupy {meta['cupy']}, numpy {meta['numpy']}, wgpu {meta['wgpu']}")
    print("- ratio: peer time / cubepy time for matmul and softmax-vs-torch; cubepy bandwidth / "
          "copy bandwidth for the memory-bound rows; cubepy / peer host time for launches\n")
    print(markdown([]))
    rows: list[Row] = []
    only = [s for s in args.only.split(",") if s]
    for name, target, fn, fn_args in plan(args.quick, targets):
        if only and not any(s in name or s == target for s in only):
            continue
        run_row(rows, name, target, fn, *fn_args)
    print("\n" + markdown(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"meta": meta, "rows": [asdict(r) for r in rows]},
                                             indent=2))
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
