#!/usr/bin/env bash
# Runs 15, 16 and 19 on the H200 in one device call each (BENCHMARKS.md): every gpu test, the
# split-K probe (bench/split_k_probe.py) on $PROBE_SHAPES, a cold autotune run whose export
# replaces the example matmul's entries in autotune_cache/ (in this working tree), then the
# same autotune script with empty cubepy and Triton caches, which must use those entries
# without tuning. Logs and the export go to $OUT. From the repo root, with .whl/ and .gl/
# carried:
#   bash bench/h200_retune_run.sh
set -u
source bench/h200_env.sh
PROBE_SHAPES=${PROBE_SHAPES:-1024x1024x32768,4352x4096x4096,2048x1024x16384}
mkdir -p $OUT/autotune $OUT/shipped
date -u | tee $OUT/gpu-tests.log
python3 -m pytest -m gpu -q -n 8 -p no:cacheprovider tests 2>&1 | tail -4 | tee -a $OUT/gpu-tests.log
python3 bench/split_k_probe.py --shapes "$PROBE_SHAPES" --dtypes bf16 2>&1 \
    | grep -v -i warn | tee $OUT/split-k-probe.log
date -u > $OUT/autotune.log
python3 bench/h200_autotune.py --out $OUT/autotune 2>&1 | tail -12 | tee -a $OUT/autotune.log
rm -f autotune_cache/examples.matmul.matmul_tuned--*.json
cp $OUT/autotune/examples.matmul.matmul_tuned--*.json autotune_cache/
date -u > $OUT/shipped.log
CUBEPY_CACHE_DIR=/tmp/cc2 TRITON_CACHE_DIR=/tmp/tc2 python3 bench/h200_autotune.py \
    --out $OUT/shipped 2>&1 | tail -12 | tee -a $OUT/shipped.log
