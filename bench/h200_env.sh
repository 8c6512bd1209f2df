# Sourced first by the bench/h200_*_run.sh scripts on the H200 machine (from the repo root,
# with .whl/ and .gl/ carried): wgpu and the Vulkan loader (.whl/gpu-env.sh), fused
# multiply-adds in Triton as on our builds, unbuffered logs, scratch caches, and $OUT.
OUT=${OUT:-/tmp/h200-out}
source .whl/gpu-env.sh
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cc TRITON_CACHE_DIR=/tmp/tc
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p -m 700 $XDG_RUNTIME_DIR $OUT
