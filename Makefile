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

# ruff runs first so that pytest's summary is the last line of the output; all three always
# run and the first failure's exit code is kept (pytest's 5, "no tests ran", is a failure).
# In the cubepy suite every new triton specialization is also compiled ahead of time for sm_90
# and gfx942, so the GPU code paths are checked on every run without a GPU; burn's op suite
# (the same kernels' library, hundreds of specializations) runs them on the interpreter only.
# The cubepy suite, which checks the compiler, builds cpu kernels at cubepy's default level
# (CUBEPY_CPU_OPT=2), as users run them. burn's op suite checks what ~600 cpu kernels compute
# and builds them unoptimized (CUBEPY_CPU_OPT=0, and NUMBA_OPT=0 for Numba's code generator:
# 6 instead of 11 minutes on 2 cores), in caches of its own so that no optimized process ever
# loads its binaries. Unoptimized code keeps Numba's "dynamic globals" (addresses in the
# process), so Numba warns that it cannot cache such kernels and cubepy gives them no native
# image: both expected here, the warning silenced.
# Tests run on every core (xdist).
BURN_TEST_ENV := CUBEPY_CPU_OPT=0 NUMBA_OPT=0 NUMBA_CACHE_DIR=$(CACHE)/numba-opt0 CUBEPY_CACHE_DIR=$(CACHE)/cubepy-opt0
BURN_TEST_WARNINGS := -W "ignore:Cannot cache compiled function:numba.core.errors.NumbaWarning"
test: $(DEV_STAMP) vulkan-drivers runtime-dir
	@status=0; \
	$(VENV)/bin/ruff check . || status=$$?; \
	CUBEPY_TRITON_AOT=cuda:90,hip:gfx942 $(PY) -m pytest -q -ra -n auto --durations=15 \
	    --ignore=tests/burn || { rc=$$?; [ $$status != 0 ] || status=$$rc; }; \
	$(BURN_TEST_ENV) $(PY) -m pytest -q -ra -n auto --durations=15 $(BURN_TEST_WARNINGS) tests/burn \
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
