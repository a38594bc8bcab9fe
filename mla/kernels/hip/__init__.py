"""gfx950 (MI355X) HIP kernel family for MXFP4-KV MLA decode.

Sources: ``mla_mxfp4_decode.hip`` (device code), ``mla_compat.h`` (the HIP names it uses, also
for offline builds without ROCm), Python: :mod:`.variants` names the variants,
:mod:`.build` compiles them (assembly for the ISA lab, cached code objects for the backend),
:mod:`.launcher` loads and launches code objects through the HIP (or, as a twin, CUDA) module API.
"""

from .build import ToolchainMissing, clang_version, compile_offline, find_clang, load_variant
from .variants import DEFAULT_VARIANT, VARIANTS, Variant, get_variant

__all__ = ["DEFAULT_VARIANT", "VARIANTS", "ToolchainMissing", "Variant", "clang_version",
           "compile_offline", "find_clang", "get_variant", "load_variant"]
