#!/usr/bin/env python3
"""Print the bank-conflict model of generation 3's shared-memory accesses (mla/analysis/smem_banks.py):
the worst wavefronts per quarter warp of each access (1 = conflict-free). No GPU.

    python3 scripts/probes/gluon_bank_model.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mla.analysis.smem_banks import report  # noqa: E402

for name, n in report().items():
    print(f"{n}  {name}")
