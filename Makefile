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

.PHONY: setup test reproduce smoke info clean-venv

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@if python3 -c "import torch" 2>/dev/null; then \
		echo "[setup] reusing the system torch"; python3 -m venv --system-site-packages $(VENV); \
	else \
		python3 -m venv $(VENV) && $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q "$(TORCH)"; \
	fi
	$(PY) -m pip install -q -e ".[notebooks,dev]"
	@touch $@

test: setup
	$(PY) -m pytest -q -n auto --dist loadfile

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
