#!/usr/bin/env bash
# The Jupyter wheels `make reproduce` needs on a device image that has torch, pandas and matplotlib but no Jupyter and
# no network (the lent H200 / H100: CPython 3.12, x86-64): into .whl/ (git-ignored), for a device call's carry.
# debugpy and jedi are left out (5 + 5 MB; ipykernel and IPython import them only when present): ~7 MB, so the bundle
# fits a call beside FlashInfer's and a slimmed tree (scripts/device_tree.sh).
#   bash scripts/device_wheels.sh [DIR]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
dir=${1:-.whl}; py=${PYTHON:-.venv/bin/python}; [ -x "$py" ] || py=python3  # a checkout without `make setup`
rm -rf "$dir" && mkdir -p "$dir"
"$py" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$dir" \
  nbclient nbformat ipykernel jupyter_client jupyter_core traitlets tornado pyzmq ipython
rm -f "$dir"/debugpy-*.whl "$dir"/jedi-*.whl
echo "$(ls "$dir"/*.whl | wc -l) wheels, $(du -sh "$dir" | cut -f1) in $dir"
