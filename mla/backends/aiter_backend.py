"""aiter: AMD AITER's ``mla_decode_fwd`` (ROCm only). NOT RUN HERE: this project's machines are a
CPU and an H200. Every call below is checked in CI against AITER's real signatures at each release
from v0.1.11 to main (``tests/test_aiter_contract.py``, data recorded from AITER's source by
``scripts/record_aiter_contract.py``), and the buffer sizes against AITER's own sizing function.

Formats (as the leaderboard reference names them):
  a16w16  q bf16 + kv bf16
  a16w8   q bf16 + kv fp8   gfx950 has this kernel only in persistent mode, 16 heads, q_seq_len <= 4
  a8w8    q fp8  + kv fp8   (Q quantized inside the call with a static per-tensor scale,
                             ``q_absmax / fp8_max``; 6.0 covers standard-normal Q, as in the seeds)
Modes (config ``mode``):
  persistent     (default) work schedule from get_mla_metadata_info_v1 / get_mla_metadata_v1, made in
                 plan, with ``num_kv_splits`` (default 32, as the problem's reference and both seeds)
  nonpersistent  one launch configuration from ``num_kv_splits`` (None: aiter's own heuristic)
Paging: page size 1, kv_indices = arange(total_kv), ``kv_last_page_lens`` = 1 per sequence. AITER's
metadata kernel counts tokens as ``(pages - 1) * page_size + last_page_len``
(csrc/kernels/mla/metadata/v1_2_device.cuh, kv_offset), so with one token per page the last page
holds one token, as AITER's own tests pass it. The problem's reference passes the full KV lengths
instead; that only enters kv_offset (the causal offset for q_seq_len > 1), and the decode kernels do
not read the array at page size 1 (csrc/kernels/mla/hk/mi35x_v32_fwd_decode_m16x4_fp8_fp8.cuh: "pages
== tokens"), so at q_seq_len 1 both should give the same result; for q_seq_len > 1 the lengths would enter that
causal offset, ones follow AITER's formula (read from source, not run).

Installing AMD's AITER (not the unrelated PyPI package ``aiter``; PyPI's ``amd-aiter`` 0.1.7 lacks
``page_size``): ``git clone --recursive https://github.com/ROCm/aiter && cd aiter &&
git checkout v0.1.11 (or newer) && pip install -e .`` on a ROCm torch, or use a ROCm image that ships it.
"""

from __future__ import annotations

import importlib.util
import inspect
import re

import torch

from .. import problem as P
from .base import Backend, BackendUnavailable, Plan

MODES = ("persistent", "nonpersistent")
DEFAULT_NUM_KV_SPLITS = 32
MIN_AITER = (0, 1, 11)
# The parameters this backend passes by keyword that older AITERs lack (v0.1.10 has neither
# kv_last_page_lens nor page_size in get_mla_metadata_v1, nor page_size / nhead_kv in mla_decode_fwd).
REQUIRED_PARAMS = {
    "get_mla_metadata_info_v1": ("num_kv_splits", "intra_batch_mode", "fast_mode", "is_sparse"),
    "get_mla_metadata_v1": ("kv_last_page_lens", "page_size", "kv_granularity", "max_seqlen_qo",
                            "uni_seqlen_qo", "fast_mode", "max_split_per_batch", "intra_batch_mode",
                            "dtype_q", "dtype_kv"),
    "mla_decode_fwd": ("page_size", "nhead_kv", "sm_scale", "logit_cap", "num_kv_splits", "q_scale",
                       "kv_scale", "intra_batch_mode", "work_meta_data", "work_indptr", "work_info_set",
                       "reduce_indptr", "reduce_final_map", "reduce_partial_map"),
}
# gfx950 assembly kernels for bf16 Q + fp8 KV (hsa/gfx950/mla/mla_asm.csv, identical v0.1.11..main;
# tests/test_aiter_contract.py checks this against the recorded table of every version):
# (query heads per KV head, persistent, padded q_seq_len) -> kernel.
GFX950_A16W8 = {(16, True, 4): "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps"}


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(0, 1, 11) from '0.1.11', '0.1.11.post2', '0.1.12.dev5+gabc'; None if unparsable."""
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in m.groups()) if m else None


def aiter_version() -> str | None:
    """The installed AMD AITER's version from its distribution metadata ('amd-aiter'), if any."""
    from importlib import metadata

    try:
        return metadata.version("amd-aiter")
    except metadata.PackageNotFoundError:
        return None


def missing_params(aiter_mod, mla_mod) -> dict[str, list[str]]:
    """The REQUIRED_PARAMS this AITER's functions lack ({} when all are there)."""
    fns = {"get_mla_metadata_info_v1": aiter_mod.get_mla_metadata_info_v1,
           "get_mla_metadata_v1": aiter_mod.get_mla_metadata_v1, "mla_decode_fwd": mla_mod.mla_decode_fwd}
    out = {}
    for name, fn in fns.items():
        try:
            have = set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):  # a compiled binding without a signature: trust the version
            continue
        lack = [p for p in REQUIRED_PARAMS[name] if p not in have]
        if lack:
            out[name] = lack
    return out


def check_aiter(aiter_mod, mla_mod, version: str | None) -> None:
    """Raise BackendUnavailable naming the problem if this AITER cannot take our calls."""
    v = parse_version(version) if version else None
    if v is not None and v < MIN_AITER:
        raise BackendUnavailable(f"aiter {version} is too old: these calls need AMD AITER >= "
                                 f"{'.'.join(map(str, MIN_AITER))} (page_size / kv_last_page_lens / nhead_kv)")
    lack = missing_params(aiter_mod, mla_mod)
    if lack:
        raise BackendUnavailable(f"this aiter ({version or 'version unknown'}) lacks parameters {lack}; "
                                 f"install AMD AITER >= {'.'.join(map(str, MIN_AITER))} from github.com/ROCm/aiter")


def check_formats(kv_format: str, q_format: str, mode: str, heads: int, q_seq_len: int, arch: str) -> None:
    """ValueError for a format/mode combination that has no AITER kernel (so it fails at plan time,
    not inside the launch with 'cannot find suitable kernel')."""
    if q_format == "fp8" and kv_format != "fp8":
        raise ValueError("aiter: fp8 Q needs fp8 KV (a8w8); use q_format bf16 for a bf16 cache")
    if arch.startswith("gfx950") and q_format == "bf16" and kv_format == "fp8":
        padded = 4 if q_seq_len <= 4 else q_seq_len
        key = (heads // P.NUM_KV_HEADS, mode == "persistent", padded)
        if key not in GFX950_A16W8:
            have = ", ".join(f"{k} ({'persistent' if p else 'nonpersistent'}, {h} heads, q_seq_len <= {s})"
                             for (h, p, s), k in GFX950_A16W8.items())
            raise ValueError(f"aiter on gfx950 has no a16w8 (bf16 Q + fp8 KV) kernel for {heads} heads, "
                             f"q_seq_len {q_seq_len}, mode {mode!r}; it has: {have}. Use mode='persistent' "
                             f"with 16 heads, or q_format='fp8' (a8w8)")


def parse_config(config: dict) -> tuple[str, int | None, float]:
    allowed = {"mode", "num_kv_splits", "q_absmax"}
    unknown = set(config) - allowed
    if unknown:
        raise ValueError(f"backend 'aiter' does not take config {sorted(unknown)} (takes {sorted(allowed)})")
    mode = config.get("mode", "persistent")
    if mode not in MODES:
        raise ValueError(f"aiter mode must be one of {MODES}, got {mode!r}")
    splits = config.get("num_kv_splits", DEFAULT_NUM_KV_SPLITS if mode == "persistent" else None)
    if mode == "persistent" and splits is None:
        raise ValueError("aiter persistent mode needs an int num_kv_splits (get_mla_metadata_info_v1 "
                         "multiplies by it); the default is 32")
    if splits is not None and (not isinstance(splits, int) or isinstance(splits, bool) or splits < 1):
        raise ValueError(f"aiter num_kv_splits must be a positive int, got {splits!r}")
    return mode, splits, float(config.get("q_absmax", 6.0))


def build_plan(aiter_mod, mla_mod, data, *, kv_format: str, q_format: str, arch: str, **config) -> Plan:
    """The plan, with AITER passed in (the real modules on ROCm; the contract tests pass stand-ins
    built from AITER's recorded signatures)."""
    mode, splits, q_absmax = parse_config(config)
    q, kv_data, qo_indptr, kv_indptr, cfg = data
    device, heads = q.device, q.shape[1]
    s, bs = int(cfg["q_seq_len"]), int(cfg["batch_size"])
    check_formats(kv_format, q_format, mode, heads, s, arch)
    lengths = tuple(cfg["kv_lens"]) if cfg.get("kv_lens") is not None else (int(cfg["kv_seq_len"]),) * bs
    fp8 = aiter_mod.dtypes.fp8
    if kv_format == "fp8" and kv_data["fp8"][0].dtype != fp8:
        raise BackendUnavailable(f"this GPU's aiter fp8 is {fp8}, the cache is {kv_data['fp8'][0].dtype}")
    kv_dtype = torch.bfloat16 if kv_format == "bf16" else fp8
    q_dtype = torch.bfloat16 if q_format == "bf16" else fp8
    kv_indices = torch.arange(sum(lengths), dtype=torch.int32, device=device)
    kv_last_page_lens = torch.ones(bs, dtype=torch.int32, device=device)
    out = torch.empty((q.shape[0], heads, P.V_HEAD_DIM), dtype=torch.bfloat16, device=device)
    q_fp8 = torch.empty(q.shape, dtype=fp8, device=device) if q_format == "fp8" else None
    fp8_max = float(torch.finfo(fp8).max)
    q_scale = torch.tensor([q_absmax / fp8_max], dtype=torch.float32, device=device)

    meta = {}
    if mode == "persistent":
        info = aiter_mod.get_mla_metadata_info_v1(bs, s, heads, q_dtype, kv_dtype, is_sparse=False,
                                                  fast_mode=False, num_kv_splits=splits, intra_batch_mode=True)
        work = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in info]
        aiter_mod.get_mla_metadata_v1(qo_indptr, kv_indptr, kv_last_page_lens, heads // P.NUM_KV_HEADS,
                                      P.NUM_KV_HEADS, True, work[0], work[2], work[1], work[3], work[4], work[5],
                                      page_size=1, kv_granularity=16, max_seqlen_qo=s, uni_seqlen_qo=s,
                                      fast_mode=False, max_split_per_batch=splits, intra_batch_mode=True,
                                      dtype_q=q_dtype, dtype_kv=kv_dtype)
        meta = dict(work_meta_data=work[0], work_indptr=work[1], work_info_set=work[2],
                    reduce_indptr=work[3], reduce_final_map=work[4], reduce_partial_map=work[5])
    sm_scale = float(cfg.get("sm_scale", P.SM_SCALE))
    mla_decode_fwd = mla_mod.mla_decode_fwd

    def run(data):
        q, kv_data, qo_indptr, kv_indptr = data[0], data[1], data[2], data[3]
        if kv_format == "bf16":
            kv, kv_scale = kv_data["bf16"], None
        else:
            kv, kv_scale = kv_data["fp8"]
        if q_format == "fp8":  # static scale: no amax reduction, no host sync
            q_fp8.copy_((q.float() / q_scale).clamp(-fp8_max, fp8_max))
            q_in, qs = q_fp8, q_scale
        else:
            q_in, qs = q, None
        mla_decode_fwd(q_in, kv.view(-1, 1, P.NUM_KV_HEADS, P.QK_HEAD_DIM), out, qo_indptr, kv_indptr,
                       kv_indices, kv_last_page_lens, s, page_size=1, nhead_kv=P.NUM_KV_HEADS,
                       sm_scale=sm_scale, logit_cap=0.0, num_kv_splits=splits, q_scale=qs, kv_scale=kv_scale,
                       intra_batch_mode=True, **meta)
        return out

    tag = {"bf16": "a16", "fp8": "a8"}[q_format] + {"bf16": "w16", "fp8": "w8"}[kv_format]
    return Plan(backend="aiter", kv_format=kv_format, q_format=q_format, run=run, outputs=[out],
                config={"variant": f"aiter-{mode}-{tag}", "mode": mode, "num_kv_splits": splits,
                        "q_absmax": q_absmax if q_format == "fp8" else None})


class AiterBackend(Backend):
    name = "aiter"
    description = "AITER mla_decode_fwd (ROCm), persistent (32 splits) or non-persistent; not run here"
    kv_formats = ("bf16", "fp8")
    q_formats = ("bf16", "fp8")
    devices = ("cuda",)  # torch's ROCm build names its devices 'cuda'

    def availability(self) -> tuple[bool, str]:
        if not torch.version.hip or not torch.cuda.is_available():
            return False, "needs ROCm (a HIP build of torch with an AMD GPU) and AMD's aiter >= 0.1.11"
        if importlib.util.find_spec("aiter") is None:
            return False, "needs AMD's aiter >= 0.1.11 (github.com/ROCm/aiter; not PyPI's 'aiter')"
        v = parse_version(aiter_version() or "")
        if v is not None and v < MIN_AITER:
            return False, f"aiter {aiter_version()} is older than 0.1.11 (no page_size / kv_last_page_lens)"
        return True, ""

    def check_config(self, config: dict) -> None:
        parse_config(config)

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        parse_config(config)  # config errors before the import, so they read the same everywhere
        import aiter
        import aiter.mla

        check_aiter(aiter, aiter.mla, aiter_version())
        arch = torch.cuda.get_device_properties(data[0].device).gcnArchName
        return build_plan(aiter, aiter.mla, data, kv_format=kv_format, q_format=q_format, arch=arch, **config)


BACKEND = AiterBackend()
