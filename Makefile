# The commands the README names. Works on a fresh Debian machine with only python3, pip and
# apt: everything else (the venv, Python packages, Mesa's Vulkan driver) is installed here.
#   make demo [TARGET=cpu|cpu:debug|triton|wgsl]   a one-minute showcase, checked against NumPy
#   make test                                      the whole test suite plus ruff
#   make bench                                     asv (quick) and bench/cpu_bench.py
#   make lint                                      ruff only

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TARGET ?= cpu

# Stamps make the pip install run again only when pyproject.toml changes. The demo installs
# only what its target needs: [cpu] always (the NumPy peers use SciPy), plus the target's extra.
comma := ,
DEMO_EXTRAS := cpu$(if $(findstring wgsl,$(TARGET)),$(comma)wgpu)$(if $(findstring triton,$(TARGET)),$(comma)cuda)
DEV_STAMP := $(VENV)/.stamp-dev
DEMO_STAMP := $(VENV)/.stamp-$(subst $(comma),-,$(DEMO_EXTRAS))

CACHE := $(CURDIR)/.cache
RUNTIME_DIR := $(CACHE)/xdg-runtime
VULKAN_PKGS := mesa-vulkan-drivers libvulkan1

# Mesa prints "XDG_RUNTIME_DIR is invalid" unless it names an existing 0700 folder.
export XDG_RUNTIME_DIR := $(RUNTIME_DIR)
# Triton 3.9 warns on every compile unless this is set.
export TRITON_DEFAULT_FP_FUSION := 1
# Keep generated source, Numba binaries and autotune results inside the (ignored) checkout.
export CUBEPY_CACHE_DIR := $(CACHE)/cubepy

.PHONY: help demo test bench lint vulkan-drivers runtime-dir clean

help:
	@echo "make demo [TARGET=cpu|cpu:debug|triton|wgsl]  showcase kernels, checked and timed vs NumPy"
	@echo "make test                                     pytest (all targets present) + ruff"
	@echo "make bench                                    asv --quick + bench/cpu_bench.py"
	@echo "make lint                                     ruff check ."

# Debian's python3 has no ensurepip until python3-venv is installed; install it on demand.
$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "note: '$(PYTHON) -m venv' failed; installing python3-venv"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv && \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }

$(DEV_STAMP): pyproject.toml | $(PY)
	@echo "installing cubepy[dev] into $(VENV) (first time: a few minutes)"
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

$(DEMO_STAMP): pyproject.toml | $(PY)
	@echo "installing cubepy[$(DEMO_EXTRAS)] into $(VENV)"
	$(PY) -m pip install -q -e '.[$(DEMO_EXTRAS)]'
	@touch $@

runtime-dir:
	@mkdir -p $(CACHE) && mkdir -p -m 0700 $(RUNTIME_DIR) && chmod 0700 $(RUNTIME_DIR)

# lavapipe (Vulkan on the CPU) gives the wgsl target f16, subgroups and timestamps; without it
# wgpu falls back to OpenGL and those tests skip. Never fatal: the suite still runs.
vulkan-drivers:
	@if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then \
	  echo "note: apt-get not available; not installing $(VULKAN_PKGS)"; \
	elif dpkg -s $(VULKAN_PKGS) >/dev/null 2>&1; then :; \
	else \
	  SUDO=; \
	  if [ "$$(id -u)" != 0 ]; then \
	    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	    else echo "note: not root and no sudo; not installing $(VULKAN_PKGS)"; exit 0; fi; \
	  fi; \
	  echo "installing $(VULKAN_PKGS) (Mesa lavapipe, for the wgsl target)"; \
	  { $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(VULKAN_PKGS) >/dev/null; } \
	  || echo "note: installing $(VULKAN_PKGS) failed; wgsl tests use whatever adapter wgpu finds"; \
	fi

demo: $(DEMO_STAMP) runtime-dir $(if $(findstring wgsl,$(TARGET)),vulkan-drivers)
	$(PY) examples/demo.py --target '$(TARGET)'

# ruff runs first so that pytest's summary is the last line of the output; all four always
# run and the first failure's exit code is kept (pytest's 5, "no tests ran", is a failure).
# In the cubepy suites every new triton specialization is also compiled ahead of time for
# sm_90 and gfx942, so the GPU code paths are checked on every run without a GPU; burn's op
# suite (the same kernels' library, hundreds of specializations) runs them on the
# interpreter only.
# The cpu kernels users run are built at cubepy's default level (CUBEPY_CPU_OPT=2): the
# examples, flash attention, the cpu target's own tests, the autotuner's, and the
# conformance files whose results LLVM's optimizer could change (integer wraparound and
# shifts, bit casts, float edge cases and rounding: OPTIMIZED_CONFORMANCE).
# The rest of the conformance suite (what each builtin computes on every target) and burn's
# op suite (what ~600 library kernels compute) build theirs unoptimized (CUBEPY_CPU_OPT=0,
# and NUMBA_OPT=0 for Numba's code generator): the cpu target's compiles are most of the
# suite's time, and unoptimized they take a third less (BENCHMARKS.md, "Cold compiles and
# the time of make test"). They use caches of their own so that no optimized process loads
# their binaries. Unoptimized code keeps Numba's "dynamic globals" (addresses in the
# process), so Numba warns that it cannot cache such kernels and cubepy gives them no native
# image: both expected here, the warning silenced.
# Tests run on every core (xdist).
OPTIMIZED_CONFORMANCE := $(addprefix tests/conformance/,test_bitcast.py test_math_edges.py \
    test_float_semantics.py test_rounded_division.py test_products_and_xor.py)
UNOPTIMIZED_CONFORMANCE := $(filter-out $(OPTIMIZED_CONFORMANCE),$(sort $(wildcard tests/conformance/test_*.py)))
AOT_ENV := CUBEPY_TRITON_AOT=cuda:90,hip:gfx942
UNOPTIMIZED_ENV := CUBEPY_CPU_OPT=0 NUMBA_OPT=0 NUMBA_CACHE_DIR=$(CACHE)/numba-opt0 CUBEPY_CACHE_DIR=$(CACHE)/cubepy-opt0
UNOPTIMIZED_WARNINGS := -W "ignore:Cannot cache compiled function:numba.core.errors.NumbaWarning"
PYTEST := $(PY) -m pytest -q -ra -n auto --durations=15
test: $(DEV_STAMP) vulkan-drivers runtime-dir
	@status=0; \
	$(VENV)/bin/ruff check . || status=$$?; \
	$(AOT_ENV) $(PYTEST) --ignore=tests/burn $(addprefix --ignore=,$(UNOPTIMIZED_CONFORMANCE)) \
	    || { rc=$$?; [ $$status != 0 ] || status=$$rc; }; \
	$(AOT_ENV) $(UNOPTIMIZED_ENV) $(PYTEST) $(UNOPTIMIZED_WARNINGS) $(UNOPTIMIZED_CONFORMANCE) \
	    || { rc=$$?; [ $$status != 0 ] || status=$$rc; }; \
	$(UNOPTIMIZED_ENV) $(PYTEST) $(UNOPTIMIZED_WARNINGS) tests/burn \
	    || { rc=$$?; [ $$status != 0 ] || status=$$rc; }; \
	exit $$status

# asv asks about the machine on the terminal unless `asv machine --yes` ran first.
bench: $(DEV_STAMP) runtime-dir
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --python=same --quick --show-stderr
	$(PY) bench/cpu_bench.py

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(CACHE) .asv .pytest_cache .ruff_cache build *.egg-info
