"""Static ISA lab, HIP side: compile every gfx950 variant offline and parse the assembly.

Nothing here needs a GPU or ROCm: ``clang -x hip --cuda-device-only -nogpuinc -nogpulib
--offload-arch=gfx950 -S`` (see :mod:`mla.kernels.hip.build`). The numbers are what this clang
produces; a ROCm hipcc of another LLVM version will allocate differently (seed 000 reports its
own compiler's counts, kept in data/published/).
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..kernels.hip import VARIANTS, clang_version, compile_offline, find_clang
from .isa import parse_amdgpu_asm

PARTIAL_KERNEL = "mla_mxfp4_partial"
REDUCE_KERNEL = "mla_lse_reduce"


def hip_rows(variants=None, asm_dir: Path | str | None = None, jobs: int = 2, clang: str | None = None) -> list[dict]:
    """One row per variant (its split-K partial kernel) plus one row for the LSE reduce kernel.

    ``asm_dir`` keeps the ``.s`` files (default: a temporary folder). Rows carry the variant's
    knobs, its one-line description, the parsed resources and the instruction mix."""
    clang = clang or find_clang()
    cver = clang_version(clang)
    names = list(variants) if variants is not None else list(VARIANTS)
    for n in names:
        if n not in VARIANTS:
            raise ValueError(f"unknown hip variant {n!r}; choose from {list(VARIANTS)}")
    tmp = None
    if asm_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="mla-isa-gfx950-")
        asm_dir = tmp.name
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            paths = list(ex.map(lambda n: compile_offline(n, asm_dir, clang=clang), names))
        rows = []
        for n, path in zip(names, paths):
            v = VARIANTS[n]
            kernels = {k.kernel: k for k in parse_amdgpu_asm(Path(path).read_text())}
            if PARTIAL_KERNEL not in kernels:
                raise RuntimeError(f"{path}: kernel {PARTIAL_KERNEL} missing from the assembly")
            base = dict(source="hip", target="gfx950", variant=n, kernel=PARTIAL_KERNEL, block_n=v.bn,
                        num_warps=v.nw, schedule=v.schedule, iglp=int(v.iglp), prefetch=int(v.prefetch),
                        what_changed=v.what, compiler=cver)
            rows.append({**base, **kernels[PARTIAL_KERNEL].row()})
            if n == names[0] and REDUCE_KERNEL in kernels:
                rows.append({**base, "variant": "lse_reduce", "kernel": REDUCE_KERNEL, "block_n": 0,
                             "num_warps": 2, "schedule": "", "iglp": 0, "prefetch": 0,
                             "what_changed": "split-K merge: 128 threads x 4 dims per (row, head)",
                             **kernels[REDUCE_KERNEL].row()})
        return rows
    finally:
        if tmp is not None:
            tmp.cleanup()


# Pairs the notes compare: (question, baseline variant, changed variant)
COMPARISONS = (
    ("iglp hints, BN 64", "b64w4_plain", "b64w4_iglp"),
    ("iglp hints, BN 128", "b128w4_plain", "b128w4_iglp"),
    ("prefetch, BN 64", "b64w4_plain", "b64w4_pf"),
    ("prefetch, BN 128", "b128w4_plain", "b128w4_pf"),
    ("prefetch + iglp vs prefetch, BN 64", "b64w4_pf", "b64w4_pf_iglp"),
    ("prefetch + iglp vs prefetch, BN 128", "b128w4_pf", "b128w4_pf_iglp"),
    ("BN 64 -> 128, plain", "b64w4_plain", "b128w4_plain"),
    ("BN 64 -> 128, iglp", "b64w4_iglp", "b128w4_iglp"),
)


def comparison_rows(rows: list[dict]) -> list[dict]:
    """Before/after VGPRs and occupancy for each pair in :data:`COMPARISONS` present in rows."""
    by = {r["variant"]: r for r in rows if r.get("source") == "hip"}
    out = []
    for what, a, b in COMPARISONS:
        if a in by and b in by:
            ra, rb = by[a], by[b]
            out.append(dict(comparison=what, base=a, changed=b,
                            vgpr_base=ra["vgpr_total"], vgpr_changed=rb["vgpr_total"],
                            vgpr_change_pct=round(100.0 * (rb["vgpr_total"] - ra["vgpr_total"]) / ra["vgpr_total"], 1),
                            waves_base=ra["waves_per_simd"], waves_changed=rb["waves_per_simd"],
                            lds_base=ra["lds_bytes"], lds_changed=rb["lds_bytes"],
                            loop_instr_base=ra["loop_instructions"], loop_instr_changed=rb["loop_instructions"],
                            loop_waitcnt_base=ra["loop_s_waitcnt"], loop_waitcnt_changed=rb["loop_s_waitcnt"]))
    return out
