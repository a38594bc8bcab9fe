"""aiter: AMD AITER's ``mla_decode_fwd`` (ROCm only). NOT RUN HERE: this project's machines are a
CPU and an H200, so this module is written from the leaderboard seeds' calls and kept small.

Formats (as the leaderboard reference names them):
  a16w16  q bf16 + kv bf16
  a16w8   q bf16 + kv fp8
  a8w8    q fp8  + kv fp8   (Q quantized inside the call with a static per-tensor scale,
                             ``q_absmax / fp8_max``; 6.0 covers standard-normal Q, as in the seeds)
Modes (config ``mode``):
  nonpersistent  one launch configuration from ``num_kv_splits`` (None: aiter's heuristic)
  persistent     work schedule from get_mla_metadata_info_v1 / get_mla_metadata_v1, made in plan
Paging: page size 1, kv_indices = arange(total_kv), last-page length 1 for every sequence.
"""

from __future__ import annotations

import importlib.util

import torch

from .. import problem as P
from .base import Backend, BackendUnavailable, Plan

MODES = ("persistent", "nonpersistent")


class AiterBackend(Backend):
    name = "aiter"
    description = "AITER mla_decode_fwd (ROCm), persistent or non-persistent; not run here"
    kv_formats = ("bf16", "fp8")
    q_formats = ("bf16", "fp8")
    devices = ("cuda",)  # torch's ROCm build names its devices 'cuda'

    def availability(self) -> tuple[bool, str]:
        if not torch.version.hip or not torch.cuda.is_available():
            return False, "needs ROCm (a HIP build of torch with an AMD GPU) and the aiter package"
        if importlib.util.find_spec("aiter") is None:
            return False, "needs the aiter package (pip extra 'rocm')"
        return True, ""

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        allowed = {"mode", "num_kv_splits", "q_absmax"}
        unknown = set(config) - allowed
        if unknown:
            raise ValueError(f"backend 'aiter' does not take config {sorted(unknown)} (takes {sorted(allowed)})")
        mode = config.get("mode", "persistent")
        if mode not in MODES:
            raise ValueError(f"aiter mode must be one of {MODES}, got {mode!r}")
        if q_format == "fp8" and kv_format != "fp8":
            raise ValueError("aiter: fp8 Q needs fp8 KV (a8w8); use q_format bf16 for a bf16 cache")
        splits = config.get("num_kv_splits")
        q_absmax = float(config.get("q_absmax", 6.0))

        import aiter
        from aiter.mla import mla_decode_fwd

        q, kv_data, qo_indptr, kv_indptr, cfg = data
        device, heads = q.device, q.shape[1]
        s, bs = int(cfg["q_seq_len"]), int(cfg["batch_size"])
        lengths = tuple(cfg["kv_lens"]) if cfg.get("kv_lens") is not None else (int(cfg["kv_seq_len"]),) * bs
        fp8 = aiter.dtypes.fp8
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
            info = aiter.get_mla_metadata_info_v1(bs, s, heads, q_dtype, kv_dtype, is_sparse=False,
                                                  fast_mode=False, num_kv_splits=splits, intra_batch_mode=True)
            work = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in info]
            aiter.get_mla_metadata_v1(qo_indptr, kv_indptr, kv_last_page_lens, heads, P.NUM_KV_HEADS, True,
                                      work[0], work[2], work[1], work[3], work[4], work[5],
                                      page_size=1, kv_granularity=16, max_seqlen_qo=s, uni_seqlen_qo=s,
                                      fast_mode=False, max_split_per_batch=splits, intra_batch_mode=True,
                                      dtype_q=q_dtype, dtype_kv=kv_dtype)
            meta = dict(work_meta_data=work[0], work_indptr=work[1], work_info_set=work[2],
                        reduce_indptr=work[3], reduce_final_map=work[4], reduce_partial_map=work[5])

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
                           sm_scale=float(cfg.get("sm_scale", P.SM_SCALE)), logit_cap=0.0,
                           num_kv_splits=splits, q_scale=qs, kv_scale=kv_scale, intra_batch_mode=True, **meta)
            return out

        tag = {"bf16": "a16", "fp8": "a8"}[q_format] + {"bf16": "w16", "fp8": "w8"}[kv_format]
        return Plan(backend=self.name, kv_format=kv_format, q_format=q_format, run=run, outputs=[out],
                    config={"variant": f"aiter-{mode}-{tag}", "mode": mode, "num_kv_splits": splits,
                            "q_absmax": q_absmax if q_format == "fp8" else None})


BACKEND = AiterBackend()
