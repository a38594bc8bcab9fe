"""torch: bmm + softmax + bmm on the KV cache, any device, every KV format (the seeds' small-batch path).

What one call does (all of it is timed):
  bf16   scores = bmm(q, K^T) -> fp32 softmax -> bf16 -> bmm(p, V)
  fp8    the fp8 cache is cast to bf16 (exact: every e4m3 value is a bf16 value), the per-tensor
         scale is folded in exactly: into the fp32 scores (sm_scale * s) and onto the output (* s).
  mxfp4  the packed cache is decoded to bf16 (E2M1 code table x 2**(E8M0 - 127), exact in bf16)
Dequantizing inside the call is the honest choice: a real decode step reads the quantized cache,
so its conversion cost belongs to the step; a bf16 copy made at plan time would time a bf16
kernel under an fp8 label. The bf16 copy it materializes (2 bytes/element written, then read) is
why this backend moves more bytes than io_bytes counts.

Uniform batches run as one batched bmm (q_seq_len > 1 gets a decode-causal mask); ragged batches
loop over batch elements with lengths taken from ``config['kv_lens']`` (no device sync).
The decoder is written independently of mla.quant on purpose: the two cross-check each other.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import problem as P
from .base import Backend, Plan

_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _decode_tables(device):
    """byte -> (value of low nibble, value of high nibble) in bf16, and E8M0 byte -> bf16 power of
    two (0xFF -> NaN); both exact in bf16. Looked up with F.embedding, which takes int32 indices
    (no 8-byte index copy of a multi-GB cache)."""
    e2m1 = torch.tensor(_E2M1, dtype=torch.float32)
    byte = torch.arange(256)
    pairs = torch.stack((e2m1[byte & 0xF], e2m1[byte >> 4]), dim=1)  # (256, 2)
    pow2 = torch.ldexp(torch.ones(256), (byte - 127).to(torch.int32))
    pow2[255] = float("nan")
    return pairs.to(torch.bfloat16).to(device), pow2.to(torch.bfloat16).view(256, 1).to(device)


class TorchBackend(Backend):
    name = "torch"
    description = "bmm + softmax + bmm in PyTorch on bf16 (dequantized in the call); any device"
    kv_formats = P.KV_FORMATS
    q_formats = ("bf16",)
    devices = ("cpu", "cuda")

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        self.check_config(config)
        q, kv_data, qo_indptr, kv_indptr, cfg = data
        device, heads = q.device, q.shape[1]
        s, bs = int(cfg["q_seq_len"]), int(cfg["batch_size"])
        lengths = tuple(cfg["kv_lens"]) if cfg.get("kv_lens") is not None else (int(cfg["kv_seq_len"]),) * bs
        uniform = len(set(lengths)) == 1
        sm_scale = float(cfg.get("sm_scale", P.SM_SCALE))
        out = torch.empty((bs * s, heads, P.V_HEAD_DIM), dtype=torch.bfloat16, device=device)
        tables = _decode_tables(device) if kv_format == "mxfp4" else None
        # additive causal masks per distinct length, built once (fp32: 0 or -inf)
        masks = {}
        if s > 1:
            for n in set(lengths):
                i = torch.arange(s, device=device).repeat_interleave(heads).unsqueeze(1)  # row = i*H + h
                j = torch.arange(n, device=device).unsqueeze(0)
                masks[n] = torch.zeros((s * heads, n), device=device).masked_fill(j >= n - s + i + 1, float("-inf"))
        starts = [0]
        for n in lengths:
            starts.append(starts[-1] + n)

        def kv_bf16(kv_data):
            """(total_kv, 576) bf16 and the per-tensor scale to fold (None for bf16 / mxfp4)."""
            if kv_format == "bf16":
                return kv_data["bf16"].view(-1, P.QK_HEAD_DIM), None
            if kv_format == "fp8":
                buf, scale = kv_data["fp8"]
                # a scale the validation would refuse gives NaN rows, as the Triton kernels do
                scale = torch.where((scale > 0) & torch.isfinite(scale), scale, torch.full_like(scale, float("nan")))
                return buf.view(-1, P.QK_HEAD_DIM).to(torch.bfloat16), scale
            packed, scales = kv_data["mxfp4"]
            pairs, pow2 = tables
            vals = F.embedding(packed.view(-1, P.MXFP4_PACKED_DIM).int(), pairs)  # (total_kv, 288, 2)
            blk = F.embedding(scales[:, : P.MXFP4_NUM_BLOCKS].int(), pow2)  # (total_kv, 18, 1)
            return (vals.view(-1, P.MXFP4_NUM_BLOCKS, P.MXFP4_BLOCK) * blk).view(-1, P.QK_HEAD_DIM), None

        def attend(qb, kvb, scale, n, o):
            """qb (B, s*H, 576), kvb (B, n, 576) -> writes o (B, s*H, 512)."""
            scores = torch.bmm(qb, kvb.transpose(1, 2)).float()
            scores.mul_(sm_scale if scale is None else scale * sm_scale)
            if s > 1:
                scores.add_(masks[n])
            p = torch.softmax(scores, dim=-1).to(torch.bfloat16)
            torch.bmm(p, kvb[..., : P.V_HEAD_DIM], out=o)

        def run(data):
            q, kv_data = data[0], data[1]
            kv, scale = kv_bf16(kv_data)
            if uniform:
                n = lengths[0]
                attend(q.view(bs, s * heads, P.QK_HEAD_DIM), kv.view(bs, n, P.QK_HEAD_DIM), scale, n,
                       out.view(bs, s * heads, P.V_HEAD_DIM))
            else:
                for b, n in enumerate(lengths):
                    attend(q[b * s:(b + 1) * s].reshape(1, s * heads, P.QK_HEAD_DIM),
                           kv[starts[b]:starts[b + 1]].unsqueeze(0), scale, n,
                           out[b * s:(b + 1) * s].view(1, s * heads, P.V_HEAD_DIM))
            if scale is not None:
                out.mul_(scale)  # V's scale, folded onto the output (computed in fp32, rounded once)
            return out

        return Plan(backend=self.name, kv_format=kv_format, q_format=q_format, run=run, outputs=[out],
                    config={"variant": "torch-bmm" + ("-batched" if uniform else "-loop")})


BACKEND = TorchBackend()
