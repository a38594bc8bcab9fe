# The two commands of the README:  `make reproduce` (the main job)  and  `make test`.
# Both create or reuse a local virtual environment (.venv). A machine whose python3 already has
# torch (a CUDA or ROCm build) shares it with the venv; otherwise the venv gets the CPU torch
# that lies on this kind of machine's disk (pip finds torch==2.13.0 there).
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
MODE   ?= $(shell python3 -c "import torch,sys; sys.stdout.write('live' if torch.cuda.is_available() else 'replay')" 2>/dev/null || echo replay)

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
	$(PY) -m pytest -q

reproduce: setup
	$(PY) -m mla reproduce --mode $(MODE)

smoke: setup
	$(PY) -m mla smoke

info: setup
	$(PY) -m mla info

clean-venv:
	rm -rf $(VENV)
