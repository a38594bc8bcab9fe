# The two commands of the README:  `make reproduce` (the main job)  and  `make test`.
# Both create or reuse a local virtual environment (.venv). A machine whose python3 already has
# torch (a CUDA or ROCm build) shares it with the venv; otherwise the venv gets the CPU torch
# that lies on this kind of machine's disk (pip finds torch==2.13.0 there).
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
MODE   ?= $(shell python3 -c "import torch,sys; sys.stdout.write('live' if torch.cuda.is_available() else 'replay')" 2>/dev/null || echo replay)
# Offline (a GPU image without Jupyter and without network, e.g. the H200's): when .whl/ holds the
# Jupyter wheels and python3 already has torch, matplotlib and pandas, `make reproduce` installs the
# wheels into $(SITE) (no index, no network) and runs with python3 and PYTHONPATH instead of a venv.
WHEELS ?= .whl
SITE   ?= /tmp/mla-site
OFFLINE := $(shell ls $(WHEELS)/*.whl >/dev/null 2>&1 && python3 -c "import torch, matplotlib, pandas" 2>/dev/null && echo 1)

.PHONY: setup test test-h200-triton reproduce smoke info clean-venv

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@if python3 -c "import torch" 2>/dev/null; then \
		python3 -m venv --system-site-packages $(VENV); \
	else \
		python3 -m venv $(VENV); \
	fi
	@# Ask the new venv, not python3: when python3 is itself an activated venv's, its torch is not in
	@# the "system" site-packages the new venv sees, and pip would otherwise resolve the newest torch.
	@if $(PY) -c "import torch" 2>/dev/null; then \
		echo "[setup] reusing the system torch $$($(PY) -c 'import torch; print(torch.__version__)')"; \
	else \
		echo "[setup] installing $(TORCH)"; $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q "$(TORCH)"; \
	fi
	$(PY) -m pip install -q -e ".[notebooks,dev]"
	@touch $@

# --no-loadscope-reorder keeps tests/conftest.py's file order: the notebook replays (~2.5 min, 5 tests) start
# beside test_triton_gen3.py instead of last. 2026-12-06, this 2-core CPU machine, fresh clone and triton cache,
# with offline.py's persistent compile child: .ci/run 15m12s -> 10m48s (this lane 8m13s -> 6m35s, 3.6's 5m46s -> 2m58s)
test: setup
	$(PY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder

# The H200 image compiles with triton 3.6, this venv with the newest triton. This lane installs the H200's
# triton beside the venv (--target, no dependencies) and reruns the tests that compile kernels offline for
# sm90 / gfx950 with it, so a change that 3.6 cannot compile (a Gluon API, a PTX pattern) fails here, not in
# a device session. Only compile tests: triton 3.6's interpreter fails under numpy 2 (an int() of a 1-d array).
# --dist load: nearly all of it is test_triton_gen3.py, which loadfile keeps on one worker (2026-12-06, this CPU
# machine: 3m35s against 4m17s; the main lane stays loadfile, 7m28s against 8m51s with load)
H200_TRITON     ?= 3.6.0
H200_TRITON_DIR ?= .triton-$(H200_TRITON)
COMPILE_TESTS   := tests/test_triton_gen3.py tests/test_isa_triton.py tests/test_pdl.py \
	tests/test_triton_kernels.py::test_compile_offline_sm90_and_gfx950 \
	tests/test_triton_kernels.py::test_word_decode_variants_compile_for_sm90_with_cp_async \
	tests/test_triton_kernels.py::test_swapab_compiles_offline_with_the_mxfp4_scale_guard_for_mxfp4_only \
	tests/test_triton_kernels.py::test_fused_variants_compile_for_sm90_with_the_acq_rel_counter
test-h200-triton: setup
	@test -f $(H200_TRITON_DIR)/triton/__init__.py || \
		$(PY) -m pip install -q --no-deps --target $(H200_TRITON_DIR) "triton==$(H200_TRITON)"
	PYTHONPATH=$(CURDIR)/$(H200_TRITON_DIR) $(PY) -c "import triton; assert triton.__version__ == '$(H200_TRITON)', triton.__file__"
	PYTHONPATH=$(CURDIR)/$(H200_TRITON_DIR) $(PY) -m pytest -q -n auto --dist load -p no:cacheprovider $(COMPILE_TESTS)

ifeq ($(OFFLINE),1)
reproduce:
	python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $(SITE) $(WHEELS)/*.whl
	PYTHONPATH="$(CURDIR):$(SITE)$${PYTHONPATH:+:$$PYTHONPATH}" python3 -m mla reproduce --mode $(MODE)
else
reproduce: setup
	$(PY) -m mla reproduce --mode $(MODE)
endif

smoke: setup
	$(PY) -m mla smoke

info: setup
	$(PY) -m mla info

clean-venv:
	rm -rf $(VENV)
