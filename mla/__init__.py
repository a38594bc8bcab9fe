"""mla: a lab for DeepSeek-R1 absorbed-MLA decode kernels.

    import mla
    data = mla.generate_input(4, 1, 1024, seed=0)        # (q, kv_data, qo_indptr, kv_indptr, config)
    out = mla.decode(data, backend="torch", kv_format="fp8")
    print(mla.check(data, out))                           # (True, 'PASS: ...')
    mla.list_backends()                                   # every backend, available here or why not

Layers (each imports only those above it): problem -> inputs/quant -> reference/check ->
kernels -> backends -> bench -> analysis -> plots/CLI. See docs/ARCHITECTURE.md.
"""

from . import problem, quant
from . import backends
from .backends import decode, list_backends, plan
from .check import accuracy_metrics, check
from .inputs import generate_case, generate_input, validate_data
from .problem import (KV_FORMATS, LEADERBOARD, NUM_HEADS, Q_FORMATS, QK_HEAD_DIM, SM_SCALE, V_HEAD_DIM, Case,
                      get_cases)
from .reference import dequantize_kv, reference

__version__ = "0.1.0"

__all__ = [
    "Case", "KV_FORMATS", "LEADERBOARD", "NUM_HEADS", "QK_HEAD_DIM", "Q_FORMATS", "SM_SCALE", "V_HEAD_DIM",
    "accuracy_metrics", "backends", "check", "decode", "dequantize_kv", "generate_case", "generate_input",
    "get_cases", "list_backends", "plan", "problem", "quant", "reference", "validate_data",
]
