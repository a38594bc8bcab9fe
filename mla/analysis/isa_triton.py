"""Static ISA lab, Triton side: the ``triton`` backend's kernels compiled offline for
``GPUTarget("hip", "gfx950", 64)`` (MI355X) and ``GPUTarget("cuda", 90, 32)`` (H100/H200).

The kernels and their offline compile entry point belong to :mod:`mla.kernels.triton`
(``compile_offline(target, variant=, kv_format=, **options)``); this module sweeps variants and
the AMD knobs (``waves_per_eu``, ``matrix_instr_nonkdim``, ``kpack``) through it and parses what
comes back:

* gfx950: the ``amdgcn`` assembly, with the same parser as the HIP kernels.
* sm90: ``cuobjdump --dump-resource-usage`` and ``cuobjdump -sass`` on the cubin, ``ptxas -v``
  on the PTX for spill bytes (all three tools ship in the triton wheel), plus the PTX mix
  (``mma.sync`` vs ``wgmma.mma_async``) and, from the SASS of the split kernel's hottest loop,
  warp-instructions, shared-memory bytes and MMAs per KV token (``isa.SM90_LOOP_COLUMNS``).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import time
import warnings
import tempfile
from pathlib import Path

from .isa import (AMD_MIX_KEYS, NV_MIX_KEYS, parse_amdgpu_asm, parse_ptx, parse_ptxas_info, parse_sass,
                  sass_hottest_loop, sass_ws_tile, sm90_loop_row)

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # triton 3.9 warns when unset; keep its default
# Triton resets kpack=2 to 1 on gfx950 (deprecated there) and warns once per compile; the sweep
# keeps kpack=2 rows to show that the ISA is then identical.
warnings.filterwarnings("ignore", message="kpack is deprecated")

TARGETS = ("gfx950", "sm90")
# AMD compile options swept on top of each variant's (BLOCK_N, warps, stages).
AMD_KNOBS = dict(waves_per_eu=(0, 1, 2), matrix_instr_nonkdim=(16, 32), kpack=(1, 2))
# The knob sweep runs on these (variant, kv_format) pairs only, to keep the lab a minute long.
AMD_KNOB_BASES = (("v2_n64_w4_s2", "mxfp4"), ("v2_n64_w4_s2", "fp8"))


class TritonOfflineUnavailable(RuntimeError):
    """The triton kernel package has no working ``compile_offline`` yet; the message says so."""


def gpu_target(target: str):
    from triton.backends.compiler import GPUTarget

    if target == "gfx950":
        return GPUTarget("hip", "gfx950", 64)
    if target == "sm90":
        return GPUTarget("cuda", 90, 32)
    raise ValueError(f"unknown target {target!r}; choose from {TARGETS}")


def triton_version() -> str:
    import triton

    return f"triton {triton.__version__}"


def _asm_dict(result) -> dict:
    """compile_offline may return a dict of stages or a CompiledKernel-like object (``.asm``)."""
    if isinstance(result, dict):
        return result.get("asm", result)
    asm = getattr(result, "asm", None)
    if isinstance(asm, dict):
        return asm
    raise TypeError(f"compile_offline returned {type(result).__name__}; expected a dict of asm stages")


def _compile(target: str, variant: str, kv_format: str, options: dict) -> list[dict]:
    """compile_offline for one config -> a list of {kernel, asm} (split kernel, maybe reduce)."""
    try:
        from ..kernels.triton import compile_offline
    except ImportError as e:  # the package or the function is not there yet
        raise TritonOfflineUnavailable(f"mla.kernels.triton.compile_offline is not importable: {e}") from e
    try:
        res = compile_offline(gpu_target(target), variant=variant, kv_format=kv_format, **options)
    except NotImplementedError as e:
        raise TritonOfflineUnavailable("mla.kernels.triton.compile_offline is a stub (NotImplementedError); "
                                       "the triton helper has not landed it yet") from e
    # Accepted shapes: one compiled kernel / asm dict, a list of them, or {kernel name: either}.
    if isinstance(res, dict) and res and all(isinstance(v, dict) or hasattr(v, "asm") for v in res.values()):
        return [dict(kernel=k, asm=_asm_dict(v), shared=_shared_bytes(v), num_warps=_meta(v, "num_warps"))
                for k, v in res.items()]
    items = list(res) if isinstance(res, (list, tuple)) else [res]
    out = []
    for i, it in enumerate(items):
        name = getattr(it, "name", None) or getattr(getattr(it, "metadata", None), "name", None)
        if name is None and isinstance(it, dict):
            name = it.get("name")
        out.append(dict(kernel=name or f"kernel{i}", asm=_asm_dict(it), shared=_shared_bytes(it),
                        num_warps=_meta(it, "num_warps")))
    return out


def _meta(item, key: str):
    """One field of the compiler metadata (a dict or an attribute, depending on the wrapper)."""
    meta = getattr(item, "metadata", None)
    if meta is None and isinstance(item, dict):
        meta = item.get("metadata")
    return meta.get(key) if isinstance(meta, dict) else getattr(meta, key, None)


def _shared_bytes(item) -> int:
    """Triton allocates LDS / shared memory dynamically, so the ISA's static size is 0: take the
    compiler metadata's ``shared`` instead."""
    return int(_meta(item, "shared") or 0)


def _nv_bin(tool: str) -> str | None:
    """The triton wheel's copy of an NVIDIA tool, else $CUDA_HOME/bin's, else one on PATH."""
    try:
        import triton.backends.nvidia as nv

        p = Path(nv.__file__).parent / "bin" / tool
        if p.exists():
            return str(p)
    except ImportError:
        pass
    p = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / tool
    return str(p) if p.exists() else shutil.which(tool)


def _cuobjdump(cubin: bytes) -> tuple[dict, str]:
    """(resource usage dict, SASS text) of a cubin via the triton wheel's cuobjdump."""
    tool = _nv_bin("cuobjdump")
    if tool is None or not cubin:
        return {}, ""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.cubin"
        f.write_bytes(cubin)
        res = subprocess.run([tool, "--dump-resource-usage", str(f)], capture_output=True, text=True)
        sass = subprocess.run([tool, "-sass", str(f)], capture_output=True, text=True).stdout
    usage = {}

    for key, col in (("REG", "registers"), ("SHARED", "smem_bytes"), ("LOCAL", "local_bytes"), ("STACK", "stack_bytes")):
        m = re.findall(rf"\b{key}:(\d+)", res.stdout)
        if m:
            usage[col] = max(int(x) for x in m)
    return usage, sass


def _ptxas_verbose(ptx: str) -> dict:
    """Registers, spill bytes, stack from the triton wheel's ptxas -v on the PTX (the cubin's
    resource table has no spill counts)."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    if not ptx or not m:
        return {}
    # triton 3.9 emits PTX 9.x, which only the wheel's newer ptxas ("ptxas-blackwell") accepts
    for tool in filter(None, (_nv_bin("ptxas-blackwell"), _nv_bin("ptxas"))):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "k.ptx"
            f.write_text(ptx)
            r = subprocess.run([tool, f"-arch={m.group(1)}", "-v", str(f), "-o", str(Path(d) / "k.cubin")],
                               capture_output=True, text=True)
        if r.returncode == 0:
            return parse_ptxas_info(r.stdout + r.stderr)
    return {}


def _rows_for(target: str, variant: str, kv_format: str, options: dict) -> list[dict]:
    rows = []
    for item in _compile(target, variant, kv_format, options):
        asm = item["asm"]
        base = dict(source="triton", target=target, variant=variant, kv_format=kv_format, kernel=item["kernel"],
                    **{k: options.get(k, "") for k in AMD_KNOBS}, compiler=triton_version())
        if target == "gfx950":
            text = asm.get("amdgcn")
            if not text:
                raise RuntimeError(f"{variant}/{kv_format}: no 'amdgcn' stage in compile_offline's result")
            for k in parse_amdgpu_asm(text):
                k.lds_bytes = k.lds_bytes or item["shared"]  # dynamic LDS: from the metadata
                rows.append({**base, "symbol": k.kernel, **{c: v for c, v in k.row().items() if c != "kernel"}})
        else:
            ptx = asm.get("ptx", "")
            usage, sass = _cuobjdump(asm.get("cubin", b""))
            pmix, smix = parse_ptx(ptx), parse_sass(sass)
            info = _ptxas_verbose(ptx)
            row = {**base, **usage, "smem_dynamic_bytes": item["shared"],
                   "spill_stores_bytes": info.get("spill_stores_bytes", ""),
                   "spill_loads_bytes": info.get("spill_loads_bytes", "")}
            row["spills"] = int(bool(info.get("spill_stores_bytes") or info.get("spill_loads_bytes")))
            for k in NV_MIX_KEYS:
                row[f"ptx_{k}"] = pmix.get(k, 0)
                row[f"sass_{k}"] = smix.get(k, 0)
            if not sass:
                raise RuntimeError(f"{variant}/{kv_format}: no SASS (cuobjdump missing or the cubin is empty)")
            # the SASS is per warp; the per-token columns scale by the CTA's warps and the trip's tokens
            v = _variant(variant)
            if getattr(v, "gluon_ws", 0):  # warp-specialized: one tile over the partitions, per 4-warp partition
                row.update(sm90_loop_row(sass_ws_tile(sass), 4, v.block_n))
                row["num_warps"] = int(item["num_warps"] or 0)
            else:
                row.update(sm90_loop_row(sass_hottest_loop(sass), int(item["num_warps"] or v.num_warps), v.block_n))
            rows.append(row)
    return rows


def _variant(name: str):
    from ..kernels.triton import get_variant

    return get_variant(name)


def variant_names(variants=None) -> list[str]:
    """``variants`` (names, or one comma-separated string) checked against the registry; None = all."""
    from ..kernels.triton import VARIANTS

    if variants is None:
        return list(VARIANTS)
    names = [n.strip() for n in (variants.split(",") if isinstance(variants, str) else variants) if n.strip()]
    if not names:
        raise ValueError(f"unknown triton variant: none named in {variants!r}")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:  # submission --variant's message: the close matches, not all ~150 names
        from ..backends.triton_backend import variant_suggestion

        raise ValueError(variant_suggestion(unknown[0], VARIANTS))
    return names


def _rows_job(args):  # module level: picklable for the process pool
    return _rows_for(*args)


def triton_rows(target: str, variants=None, kv_formats=("mxfp4", "fp8", "bf16"), knob_sweep: bool = True,
                log=None, jobs: int = 1) -> list[dict]:
    """Every variant x kv_format at default options, plus (gfx950) the AMD knob sweep.

    variants: names or a comma-separated string (default: every registered variant).
    log: called with one progress line per compile (``[3/108] v1_n32_w4_s2 fp8: 2.1 s``).
    jobs: compile in that many processes (1 here: the CPU machine is shared; more on a device host).
    Raises :class:`TritonOfflineUnavailable` if the triton package cannot compile offline yet."""
    gpu_target(target)  # validates
    names = variant_names(variants)
    from mla.kernels.triton.variants import get_variant

    configs = [(v, fmt, {}) for v, fmt in itertools.product(names, kv_formats) if fmt in get_variant(v).kv_formats
               and not (target == "gfx950" and get_variant(v).family == "gluon")]  # generation 3 is sm90 only
    if target == "gfx950" and knob_sweep:
        for v, fmt in AMD_KNOB_BASES:
            if v in names:
                configs += [(v, fmt, dict(waves_per_eu=w, matrix_instr_nonkdim=n, kpack=k))
                            for w, n, k in itertools.product(*AMD_KNOBS.values())]
    t0, rows = time.time(), []

    def note(i, v, fmt, opts, t=None):
        if log:
            knobs = "".join(f" {k}={x}" for k, x in opts.items())
            took = f"{t:.1f} s, " if t is not None else ""
            log(f"  [{i}/{len(configs)}] {target} {v} {fmt}{knobs}: {took}{time.time() - t0:.0f} s so far")

    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            results = pool.map(_rows_job, [(target, *c) for c in configs])
            for i, ((v, fmt, opts), r) in enumerate(zip(configs, results), 1):
                rows += r
                note(i, v, fmt, opts)
        return rows
    for i, (v, fmt, opts) in enumerate(configs, 1):
        t = time.time()
        rows += _rows_for(target, v, fmt, opts)
        note(i, v, fmt, opts, time.time() - t)
    return rows


def merge_rows(path: Path, rows: list[dict], prov: dict) -> tuple[list[dict], int]:
    """A partial run's ``rows`` (``prov`` applied) merged into the CSV at ``path``: that file's rows
    of the variants not re-run are kept with their own provenance; the re-run variants' old rows
    are replaced in place (new variants go last). Returns (rows, number of rows kept)."""
    new = [{**r, **prov} for r in rows]
    if not Path(path).exists():
        return new, 0
    import csv

    with open(path, newline="") as f:
        old = list(csv.DictReader(f))
    cols = list(dict.fromkeys(k for r in new for k in r))
    cols += [k for k in (old[0] if old else {}) if k not in cols]
    by_variant: dict[str, list[dict]] = {}
    for r in new:
        by_variant.setdefault(r["variant"], []).append(r)
    rerun, out, kept = set(by_variant), [], 0
    for r in old:
        v = r.get("variant")
        if v in by_variant:
            out += by_variant.pop(v)  # the first old row of a re-run variant: its new rows
        elif v not in rerun:
            out.append(r)
            kept += 1
    for group in by_variant.values():
        out += group
    return [{c: r.get(c, "") for c in cols} for r in out], kept


__all__ = ["AMD_KNOBS", "AMD_MIX_KEYS", "TARGETS", "TritonOfflineUnavailable", "gpu_target", "triton_rows",
           "triton_version", "merge_rows", "variant_names"]
