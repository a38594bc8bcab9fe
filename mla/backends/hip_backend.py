"""``hip``: the gfx950 (MI355X) HIP kernel family -- MXFP4 KV cache, Q quantised to MXFP4 in the
kernel, scaled-FP4 MFMA for QK, fp8 MFMA with transposed LDS reads for PV, split-K + LSE reduce.

Runs only on ROCm with a gfx950 GPU. ``plan`` takes the variant's packaged code object
(``mla/kernels/hip/prebuilt/gfx950/``; after a source edit, a clang build, cached) and loads it through the HIP module API on the
``libamdhip64`` torch already loaded (``mla/kernels/hip/launcher.py``): no hipcc, no ROCm headers,
no torch extension. This project has no MI355X: the code objects are built and their argument
metadata checked here (CI), the launcher ran as its CUDA twin on an H200, but the gfx950 kernels
have never run; the harness checks them against ``mla.reference`` before timing when they do.

Supported: ``kv_format="mxfp4"``, ``q_format="bf16"`` (the kernel does the MXFP4 quantisation),
16 query heads, ``q_seq_len == 1``. Anything else raises ValueError naming what is unsupported.
Config: ``variant`` (see ``mla.kernels.hip.VARIANTS``), ``num_splits`` (else a heuristic).

V goes through fp8 e4m3 in LDS: FP4 (|x| <= 6) times the block scale must stay <= 448, so a V
block's E8M0 scale byte must be <= 133 (2^6 * 6 = 384). ``plan`` reads the V scales once and
raises ValueError above that (K, the QK operand, is consumed as FP4 with its scale: no limit).
"""

from __future__ import annotations

import math

import torch

from ..kernels.hip.build import load_variant
from ..kernels.hip.variants import DEFAULT_VARIANT, VARIANTS, get_variant
from ..problem import MXFP4_NUM_BLOCKS, MXFP4_PACKED_DIM, NUM_HEADS, QK_HEAD_DIM, SM_SCALE, V_HEAD_DIM
from .base import Backend, Plan

MI355X_CUS = 256
MAX_SPLITS = 64
MAX_V_E8M0 = 133  # largest E8M0 byte whose V block converts to e4m3 without overflow (6 * 2**6 <= 448)
V_BLOCKS = 16  # dims 0..511 = the first 16 blocks of 32
_CONFIG_KEYS = ("variant", "num_splits")


def choose_num_splits(batch_size: int, max_kv_len: int, block_n: int, num_cus: int = MI355X_CUS) -> int:
    """Splits per batch element: ~2 workgroups per CU, each split >= 2 tiles, at most 64."""
    if batch_size < 1 or max_kv_len < 1:
        raise ValueError(f"batch_size and max_kv_len must be >= 1, got {batch_size}, {max_kv_len}")
    want = math.ceil(2 * num_cus / batch_size)
    by_length = max(1, max_kv_len // (2 * block_n))
    return max(1, min(want, by_length, MAX_SPLITS))


def check_hip_config(config: dict) -> None:
    """ValueError for a config key or value this kernel family does not take (no inputs needed)."""
    unknown = sorted(set(config) - set(_CONFIG_KEYS))
    if unknown:
        raise ValueError(f"hip backend: unknown config {unknown}; accepts {list(_CONFIG_KEYS)}")
    if "variant" in config:
        get_variant(config["variant"])
    if config.get("num_splits") is not None:
        ns = config["num_splits"]
        if not isinstance(ns, int) or isinstance(ns, bool) or not 1 <= ns <= MAX_SPLITS:
            raise ValueError(f"hip backend: num_splits must be an int in 1..{MAX_SPLITS}, got {ns!r}")


def validate_request(data, kv_format: str, q_format: str, config: dict) -> None:
    """Raise ValueError for anything this kernel family does not implement (before any build)."""
    check_hip_config(config)
    if kv_format != "mxfp4":
        raise ValueError(f"hip backend: kv_format {kv_format!r} is unsupported; the gfx950 kernels read "
                         f"the MXFP4 cache only (kv_format='mxfp4')")
    if q_format != "bf16":
        raise ValueError(f"hip backend: q_format {q_format!r} is unsupported; pass bf16 Q, the kernel "
                         f"quantises it to MXFP4 itself")
    q, kv_data, qo_indptr, kv_indptr, cfg = data
    if int(cfg["num_heads"]) != NUM_HEADS or q.shape[1] != NUM_HEADS:
        raise ValueError(f"hip backend: {q.shape[1]} query heads are unsupported; the kernel is written for "
                         f"{NUM_HEADS} (one 16-row MFMA tile; 32 heads would need two)")
    if int(cfg["q_seq_len"]) != 1:
        raise ValueError(f"hip backend: q_seq_len {cfg['q_seq_len']} is unsupported; the kernel decodes one "
                         f"query token per batch element (no causal mask inside the KV tile)")
    if q.dtype != torch.bfloat16 or q.shape[2] != QK_HEAD_DIM or not q.is_contiguous():
        raise ValueError(f"hip backend: q must be contiguous bf16 (total_q, 16, {QK_HEAD_DIM}), got "
                         f"{q.dtype} {tuple(q.shape)}")
    if "mxfp4" not in kv_data:
        raise ValueError(f"hip backend: kv_data has no 'mxfp4' entry (has {sorted(kv_data)})")
    packed, scales = kv_data["mxfp4"]
    if packed.shape[-1] != MXFP4_PACKED_DIM or packed.element_size() != 1:
        raise ValueError(f"hip backend: MXFP4 packed KV must be 1-byte elements (..., {MXFP4_PACKED_DIM}), "
                         f"got {packed.dtype} {tuple(packed.shape)}")
    if packed.reshape(-1, MXFP4_PACKED_DIM).stride(0) % 16:
        raise ValueError("hip backend: MXFP4 packed rows must start on 16-byte boundaries (16-byte loads)")
    if scales.dim() != 2 or scales.shape[1] < MXFP4_NUM_BLOCKS or scales.stride(1) != 1 or scales.element_size() != 1:
        raise ValueError(f"hip backend: MXFP4 scales must be (total_kv, >= {MXFP4_NUM_BLOCKS}) bytes with unit "
                         f"inner stride (the row stride is read from the tensor), got {tuple(scales.shape)} "
                         f"strides {scales.stride()}")
    check_v_scales(scales)


def check_v_scales(scales) -> None:
    """ValueError if a V block's E8M0 scale overflows the kernel's fp8 V path (one device read)."""
    top = int(scales.view(torch.uint8)[:, :V_BLOCKS].max()) if scales.numel() else 0
    if top > MAX_V_E8M0:
        raise ValueError(f"hip backend: an MXFP4 V block has E8M0 scale {top} (2^{top - 127}); the kernel converts "
                         f"V to fp8 e4m3 and is exact only up to {MAX_V_E8M0} (6 * 2^6 = 384 <= 448). Use the "
                         f"triton backend for these inputs")


class HipBackend(Backend):
    name = "hip"
    description = ("gfx950 HIP: MXFP4 KV, in-kernel MXFP4 Q, scaled-FP4 MFMA QK, fp8 MFMA PV via "
                   "ds_read_b64_tr_b8, split-K (compiled offline here, never run in this project)")
    kv_formats = ("mxfp4",)
    q_formats = ("bf16",)
    devices = ("cuda",)  # torch calls ROCm devices "cuda"

    def availability(self) -> tuple[bool, str]:
        why = "needs ROCm on gfx950 (MI355X)"
        if getattr(torch.version, "hip", None) is None:
            return False, f"{why}; this torch build has no HIP"
        if not torch.cuda.is_available():
            return False, f"{why}; no GPU is visible"
        arch = torch.cuda.get_device_properties(0).gcnArchName
        if not arch.startswith("gfx950"):
            return False, f"{why}; found {arch}"
        return True, ""

    def check_request(self, data, kv_format: str, q_format: str, config: dict | None = None) -> None:
        # Shape/format problems first (ValueError), so they are reported the same on any machine;
        # then the shared checks, which raise BackendUnavailable off gfx950.
        validate_request(data, kv_format, q_format, config or {})
        super().check_request(data, kv_format, q_format)

    def check_config(self, config: dict) -> None:
        check_hip_config(config)

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        validate_request(data, kv_format, q_format, config)
        v = get_variant(config.get("variant") or DEFAULT_VARIANT)
        return make_plan(data, v, load_variant(v), config.get("num_splits"))


def make_plan(data, v, launcher, num_splits: int | None = None) -> Plan:
    """Buffers, grids and the lean ``run`` for one shape, launching through ``launcher`` (a
    :class:`~mla.kernels.hip.launcher.ModuleLauncher` over this variant's code object). Call
    :func:`validate_request` first. Also what the exported leaderboard submission runs."""
    q, kv_data, qo_indptr, kv_indptr, cfg = data
    batch = int(kv_indptr.numel()) - 1
    ns = num_splits or choose_num_splits(batch, int(cfg["kv_seq_len"]), v.bn)
    total_q = q.shape[0]
    dev = q.device
    part_o = torch.empty((ns, total_q, NUM_HEADS, V_HEAD_DIM), dtype=torch.float32, device=dev)
    part_lse = torch.empty((ns, total_q, NUM_HEADS), dtype=torch.float32, device=dev)
    out = torch.empty((total_q, NUM_HEADS, V_HEAD_DIM), dtype=torch.bfloat16, device=dev)
    qk_scale_log2 = float(cfg.get("sm_scale", SM_SCALE)) * math.log2(math.e)  # the kernel uses exp2
    partial_grid, partial_block = (ns, batch), (v.threads,)
    reduce_grid = (total_q * NUM_HEADS,)

    def run(d):
        q_, kvd, qo, kv = d[0], d[1], d[2], d[3]
        packed, scales = kvd["mxfp4"]
        nib = packed.view(torch.uint8).reshape(-1, MXFP4_PACKED_DIM)
        sc = scales.view(torch.uint8)
        launcher.launch("mla_mxfp4_partial", partial_grid, partial_block, q_, nib, sc, qo, kv, part_o, part_lse,
                        total_q, ns, nib.stride(0), sc.stride(0), qk_scale_log2)
        launcher.launch("mla_lse_reduce", reduce_grid, (128,), part_o, part_lse, out, total_q, ns)
        return out

    return Plan(backend="hip", kv_format="mxfp4", q_format="bf16", run=run, outputs=[out, part_o, part_lse],
                config=dict(variant=v.name, num_splits=ns, block_n=v.bn, num_warps=v.nw, schedule=v.schedule))


BACKEND = HipBackend()
__all__ = ["BACKEND", "HipBackend", "VARIANTS", "choose_num_splits", "make_plan", "validate_request"]
