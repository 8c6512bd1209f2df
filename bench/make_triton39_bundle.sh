#!/usr/bin/env bash
# Builds .t39/t39.tar.xz: Triton 3.9 for the H200 machine (Python 3.12, no network), small
# enough to travel with a device call (the working tree may be 64 MiB in all).
#
#   bash bench/make_triton39_bundle.sh      # here, in the project's root; then on the device:
#   bash bench/h200_triton39_run.sh         # with `carry: [".t39"]`
#
# The wheel is 272 MiB. Left out, since nothing on an H200 uses them: the AMD backend's
# libraries (its Python files stay: Triton imports every backend its entry points name), the
# profiling libraries (CUPTI, proton), nvdisasm, FileCheck and the test plugins; libtriton.so
# loses its debug sections. For sm_90 Triton 3.9 runs the newer of its two ptxas builds
# (`ptxas-blackwell`, CUDA 13.4), so only that one travels, with `ptxas` as a link to it.
# What remains packs to about 55 MiB.
set -euo pipefail
VERSION=${TRITON_VERSION:-3.9.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$work" \
    "triton==$VERSION"
(cd "$work" && unzip -q triton-*.whl 'triton/*')
t="$work/triton"
rm -rf "$t"/backends/amd/lib "$t"/backends/amd/include "$t"/backends/nvidia/lib/cupti* \
    "$t"/_C/libproton.so "$t"/backends/nvidia/bin/nvdisasm "$t"/backends/nvidia/bin/ptxas \
    "$t"/FileCheck "$t"/instrumentation "$t"/plugins
ln -s ptxas-blackwell "$t"/backends/nvidia/bin/ptxas
strip --strip-debug "$t"/_C/libtriton.so
mkdir -p .t39
grep -qx '/.t39/' .git/info/exclude || echo /.t39/ >> .git/info/exclude
tar -C "$work" -cf - triton | xz -T0 -6 > .t39/t39.tar.xz
ls -l .t39/t39.tar.xz
