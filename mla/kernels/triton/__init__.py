"""The portable Triton MLA decode family (flash-decode + split-K + LSE reduce).

Public API:
    TritonDecodePlan(data, kv_format=, q_format=, variant=, num_splits=, graph=)  per-shape plan; .run(data),
                                                                                 .bind(data) -> fastest callable
    balanced_schedule, GraphAutoPolicy                                           the work list / graph="auto" rule
    VARIANTS, DEFAULT_VARIANT, get_variant                                       the named kernel variants
    choose_num_splits, race_num_splits, lookup_split_decision                    the split heuristic / race
    compile_offline(target, variant=, kv_format=, ...)                           AOT compile (asm dict) for
                                                                                 GPUTarget("cuda",90,32) / ("hip","gfx950",64)
    quantize_q_like_kernel                                                       torch mirror of in-kernel Q quantization
"""

from .launch import (GraphAutoPolicy, TritonDecodePlan, balanced_schedule, choose_num_splits, device_sm_count,
                     heads_per_program, interpreting, lookup_split_decision, race_num_splits)
from .offline import compile_offline
from .qformat import quantize_q_like_kernel
from .variants import DEFAULT_VARIANT, VARIANTS, Variant, get_variant

__all__ = ["DEFAULT_VARIANT", "GraphAutoPolicy", "TritonDecodePlan", "balanced_schedule", "VARIANTS", "Variant", "choose_num_splits", "compile_offline",
           "device_sm_count", "get_variant", "heads_per_program", "interpreting", "lookup_split_decision",
           "quantize_q_like_kernel", "race_num_splits"]
