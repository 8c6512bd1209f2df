#!/usr/bin/env bash
# On the H200: cubepy's matmul under a newer Triton (3.9) than the machine's own (3.6).
#
# The machine has no network, so a slimmed Triton 3.9 wheel travels as .t39/t39.tar.xz
# (bench/make_triton39_bundle.sh builds it; `carry: [".t39"]`). It is unpacked ahead of the
# machine's own Triton on PYTHONPATH; torch stays the machine's. Steps (STEPS picks some):
#   tests      every GPU test (wgpu's too when .whl/gpu-env.sh was sourced first)
#   autotune   a cold autotune of the example matmul, the shipped cache hidden, so that every
#              key is tuned by 3.9's compiler (bench/h200_autotune.py)
#   gluon      the hand-written Gluon matmul (bench/gluon_probe.py), for comparison
#   multicast  the Gluon matmul of clusters with TMA multicast (bench/multicast_probe.py,
#              Triton >= 3.7)
#   ws4        Triton's own warp specialization (bench/epilogue_probe.py --ws4)
#   sweep      the example matmul's configs at 4096^3 (bench/matmul_sweep.py)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/t39 "$OUT"
tar xJf .t39/t39.tar.xz -C /tmp/t39 || exit 1
export TRITON_DEFAULT_FP_FUSION=1 PYTHONPATH=/tmp/t39:$PWD${PYTHONPATH:+:$PYTHONPATH} TRITON_CACHE_DIR=/tmp/tc39 CUBEPY_CACHE_DIR=/tmp/cc39
python3 -c "import triton, torch; print('triton', triton.__version__, triton.__file__, 'torch', torch.__version__)" || exit 1
STEPS=${STEPS:-tests autotune gluon multicast ws4}
for step in $STEPS; do
  case $step in
    tests) timeout 400 python3 -m pytest -m gpu -q -n 8 -p no:cacheprovider tests 2>&1 | tail -15 | tee "$OUT/h200-t39-gpu-tests.log" ;;
    autotune) mv autotune_cache /tmp/shipped-hidden  # every key tuned by 3.9's compiler
      timeout 300 python3 bench/h200_autotune.py --out "$OUT/autotune39" 2>&1 | tee "$OUT/h200-t39-autotune.log" ;;
    gluon) timeout 200 python3 bench/gluon_probe.py --only "coop 128x256x64 s3" 2>&1 | grep -v "nanobind\|leaked" | tail -30 | tee "$OUT/h200-t39-gluon.log" ;;
    multicast)
      timeout 90 python3 bench/multicast_probe.py --rounds 0 --shapes "4096,4096,4096;1000,1528,712;129,264,72" 2>&1 | grep -v "Warning\|nanobind\|leaked" | tail -40 | tee "$OUT/h200-t39-multicast-check.log"
      timeout 300 python3 bench/multicast_probe.py --repeat 2 --json "$OUT/h200-t39-multicast.json" 2>&1 | grep -v "Warning\|nanobind\|leaked" | tail -60 | tee "$OUT/h200-t39-multicast.log" ;;
    ws4) timeout 300 python3 bench/epilogue_probe.py --ws4 --shapes 4096x4096x4096,8192x8192x8192 --dtypes bf16 2>&1 | grep -v "Warning\|nanobind\|leaked\|warn_once" | tail -40 | tee "$OUT/h200-t39-ws4.log" ;;
    sweep) timeout 300 python3 bench/matmul_sweep.py --shapes 4096,4096,4096 --turns 3 2>&1 | tail -30 | tee "$OUT/h200-t39-sweep.log" ;;
  esac
done
