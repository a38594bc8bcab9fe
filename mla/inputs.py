"""Input generation (the GPU MODE ``amd-mixed-mla`` contract) and input validation.

``generate_input`` returns ``(q, kv_data, qo_indptr, kv_indptr, config)``; see docs/ARCHITECTURE.md.
All three KV formats are made from the same bf16 cache, as on the leaderboard.
"""

from __future__ import annotations

import numbers

import torch

from . import problem as P
from .quant import FP8_DTYPES, quantize_fp8, quantize_mxfp4

# aiter pads the E8M0 scale rows of a (total_kv, 576) quantization to a multiple of 8 blocks;
# we lay the scales out the same way, so kernels must read the row stride, not assume 18.
MXFP4_SCALE_COLS = (P.MXFP4_NUM_BLOCKS + 7) // 8 * 8  # 24


def generate_input(batch_size: int, q_seq_len: int, kv_seq_len: int, seed: int, *, device="cpu",
                   num_heads: int = P.NUM_HEADS, kv_lens=None):
    """Fresh random MLA decode inputs: q and the bf16 KV cache are standard normal.

    ``kv_lens`` (one length per batch element) makes a ragged batch; ``kv_seq_len`` must then be
    its maximum. The random stream depends on ``seed`` and the device type (CPU and GPU
    generators differ)."""
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int (inputs are reproducible from their seed), got {seed!r}")
    if kv_lens is not None:
        kv_lens = tuple(int(n) for n in kv_lens)
    P.validate_shape(batch_size, q_seq_len, kv_seq_len, num_heads, kv_lens)
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():  # torch's own error names an ATen library
        raise ValueError(f"device {str(device)!r}: this machine has no CUDA/ROCm device (torch {torch.__version__}); "
                         "use device='cpu'")
    lengths = kv_lens if kv_lens is not None else (kv_seq_len,) * batch_size
    total_q, total_kv = batch_size * q_seq_len, sum(lengths)

    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    q = torch.randn((total_q, num_heads, P.QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)
    kv = torch.randn((total_kv, P.NUM_KV_HEADS, P.QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)

    kv_fp8, kv_scale = quantize_fp8(kv, compute_dtype=None)  # bf16 math, as the contract's reference.py
    packed, scales = quantize_mxfp4(kv.reshape(total_kv, P.QK_HEAD_DIM))
    scales_padded = torch.zeros((total_kv, MXFP4_SCALE_COLS), dtype=torch.uint8, device=device)
    scales_padded[:, : P.MXFP4_NUM_BLOCKS] = scales
    kv_data = {
        "bf16": kv,
        "fp8": (kv_fp8, kv_scale),
        "mxfp4": (packed.reshape(total_kv, P.NUM_KV_HEADS, P.MXFP4_PACKED_DIM), scales_padded),
    }

    qo_indptr = torch.arange(batch_size + 1, dtype=torch.int32, device=device) * q_seq_len
    kv_indptr = torch.zeros(batch_size + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(torch.tensor(lengths, dtype=torch.int64), 0).to(torch.int32)
    kv_indptr = kv_indptr.to(device)

    config = {
        "batch_size": batch_size,
        "num_heads": num_heads,
        "num_kv_heads": P.NUM_KV_HEADS,
        "qk_head_dim": P.QK_HEAD_DIM,
        "kv_lora_rank": P.KV_LORA_RANK,
        "qk_rope_head_dim": P.QK_ROPE_HEAD_DIM,
        "v_head_dim": P.V_HEAD_DIM,
        "q_seq_len": q_seq_len,
        "kv_seq_len": kv_seq_len,
        "sm_scale": P.SM_SCALE,
        "kv_lens": kv_lens,
    }
    return q, kv_data, qo_indptr, kv_indptr, config


def generate_case(case: P.Case, *, device="cpu", seed=None):
    """``generate_input`` for a :class:`mla.problem.Case` (``seed`` overrides the case's seed)."""
    kw = case.kwargs()
    if seed is not None:
        kw["seed"] = seed
    return generate_input(**kw, device=device)


# ----------------------------------------------------------------------------------------------
# validation: every problem gets a ValueError that names it
# ----------------------------------------------------------------------------------------------
def _check_indptr(name, t, batch_size, device):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.int32:
        raise ValueError(f"{name} must be int32, got {t.dtype}")
    if t.dim() != 1 or t.numel() != batch_size + 1:
        raise ValueError(f"{name} must have shape ({batch_size + 1},) for batch_size {batch_size}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device}, q is on {device}")


def validate_data(data, kv_format: str | None = None, *, deep: bool = True) -> list[int]:
    """Check an input tuple against the contract; raise ValueError naming the first problem.

    ``kv_format`` restricts the KV check to one format (None: every format present).
    ``deep`` also reads the indptrs (a device sync) and checks monotonicity, lengths and totals.
    Returns the per-batch KV lengths when ``deep`` (else an empty list)."""
    if not isinstance(data, (tuple, list)) or len(data) != 5:
        raise ValueError("data must be the 5-tuple (q, kv_data, qo_indptr, kv_indptr, config)")
    q, kv_data, qo_indptr, kv_indptr, config = data
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    for key in ("batch_size", "num_heads", "q_seq_len", "kv_seq_len"):
        if key not in config:
            raise ValueError(f"config is missing {key!r}")
    ints = {}
    for key in ("batch_size", "num_heads", "q_seq_len", "kv_seq_len"):
        v = config[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"config[{key!r}] must be an int, got {v!r}")
        ints[key] = int(v)
    bs, heads, s = ints["batch_size"], ints["num_heads"], ints["q_seq_len"]
    scale = config.get("sm_scale", P.SM_SCALE)  # (the contract's 1/sqrt(576) when absent)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not 0 < float(scale) < float("inf"):
        raise ValueError(f"config['sm_scale'] must be a finite number > 0, got {scale!r}")
    kv_lens_cfg = config.get("kv_lens")
    P.validate_shape(bs, s, ints["kv_seq_len"], heads,
                     None if kv_lens_cfg is None else tuple(int(n) for n in kv_lens_cfg))
    if not isinstance(q, torch.Tensor):
        raise ValueError(f"q must be a torch.Tensor, got {type(q).__name__}")
    if q.dtype != torch.bfloat16:
        raise ValueError(f"q must be bfloat16, got {q.dtype}")
    if q.dim() != 3 or q.shape[1:] != (heads, P.QK_HEAD_DIM):
        raise ValueError(f"q must have shape (total_q, {heads}, {P.QK_HEAD_DIM}), got {tuple(q.shape)}")
    if heads not in P.SUPPORTED_NUM_HEADS:
        raise ValueError(f"num_heads must be one of {P.SUPPORTED_NUM_HEADS}, got {heads}")
    if q.shape[0] != bs * s:
        raise ValueError(f"q has {q.shape[0]} rows, expected batch_size * q_seq_len = {bs * s}")
    _check_indptr("qo_indptr", qo_indptr, bs, q.device)
    _check_indptr("kv_indptr", kv_indptr, bs, q.device)
    if not isinstance(kv_data, dict):
        raise ValueError(f"kv_data must be a dict of formats, got {type(kv_data).__name__}")
    formats = [kv_format] if kv_format is not None else [f for f in P.KV_FORMATS if f in kv_data]
    if not formats:
        raise ValueError(f"kv_data holds none of the formats {P.KV_FORMATS}")
    total_kv = None
    for fmt in formats:
        n = _validate_kv(kv_data, fmt, q.device)
        if total_kv is not None and n != total_kv:
            raise ValueError(f"kv_data formats disagree on total_kv ({total_kv} vs {n} in {fmt!r})")
        total_kv = n
    if not deep:
        return []
    return check_indptr_contents(qo_indptr.tolist(), kv_indptr.tolist(), q.shape[0], total_kv, s)


def check_indptr_contents(qo: list[int], kv: list[int], q_rows: int, total_kv: int, q_seq_len: int) -> list[int]:
    """The indptr contents (read to host lists) against the rows they index: ValueError naming the
    first problem, else the per-batch KV lengths. One definition for the synchronous check and for
    the message of a failed asynchronous one (mla/validate.py)."""
    s = q_seq_len
    for name, ptr, total in (("qo_indptr", qo, q_rows), ("kv_indptr", kv, total_kv)):
        if ptr[0] != 0:
            raise ValueError(f"{name}[0] must be 0, got {ptr[0]}")
        if any(b < a for a, b in zip(ptr, ptr[1:])):
            raise ValueError(f"{name} is not monotone non-decreasing: {ptr[:8]}{'...' if len(ptr) > 8 else ''}")
        if any(b == a for a, b in zip(ptr, ptr[1:])):
            i = next(i for i, (a, b) in enumerate(zip(ptr, ptr[1:])) if a == b)
            raise ValueError(f"{name}: batch element {i} has a zero-length sequence")
        if ptr[-1] != total:
            raise ValueError(f"{name}[-1] = {ptr[-1]} does not match the {total} rows it indexes")
    q_lens = [b - a for a, b in zip(qo, qo[1:])]
    kv_lens = [b - a for a, b in zip(kv, kv[1:])]
    if any(n != s for n in q_lens):
        raise ValueError(f"every batch element must have q_seq_len = {s} queries, got {sorted(set(q_lens))}")
    short = [i for i, n in enumerate(kv_lens) if n < s]
    if short:
        raise ValueError(f"batch element {short[0]} has {kv_lens[short[0]]} KV tokens, fewer than q_seq_len {s}")
    return kv_lens


def check_fp8_scale(kv_data) -> None:
    """The fp8 KV scale's value (a host read: a device sync on a GPU): finite and > 0, else a
    ValueError. One definition for the decode path's check (mla/validate.py) and the references."""
    s = float(kv_data["fp8"][1].reshape(-1)[0])
    if not (s > 0 and s < float("inf")):
        raise ValueError(f"kv_data['fp8'] scale must be finite and > 0, got {s}")


def _validate_kv(kv_data, fmt, device) -> int:
    """Check one KV format's tensors; return total_kv."""
    if fmt not in P.KV_FORMATS:
        raise ValueError(f"unknown kv_format {fmt!r}; choose from {P.KV_FORMATS}")
    if fmt not in kv_data:
        raise ValueError(f"kv_data has no {fmt!r} entry (has {sorted(kv_data)})")
    entry = kv_data[fmt]
    if fmt == "bf16":
        if not isinstance(entry, torch.Tensor):
            raise ValueError("kv_data['bf16'] must be a tensor")
        t, want = entry, torch.bfloat16
        if t.dtype != want:
            raise ValueError(f"kv_data['bf16'] must be bfloat16, got {t.dtype} (mismatched format)")
        dim = P.QK_HEAD_DIM
    else:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise ValueError(f"kv_data[{fmt!r}] must be a (buffer, scale) pair")
        t, scale = entry
        if fmt == "fp8":
            if t.dtype not in FP8_DTYPES.values():
                raise ValueError(f"kv_data['fp8'] buffer must be an fp8 dtype, got {t.dtype} (mismatched format)")
            if scale.dtype != torch.float32 or scale.numel() != 1:
                raise ValueError(f"kv_data['fp8'] scale must be one fp32 value, got {scale.dtype} x {scale.numel()}")
            dim = P.QK_HEAD_DIM
        else:
            if t.dtype != torch.uint8:
                raise ValueError(f"kv_data['mxfp4'] buffer must be uint8 (packed E2M1), got {t.dtype} (mismatched format)")
            dim = P.MXFP4_PACKED_DIM
            if scale.dtype != torch.uint8 or scale.dim() != 2 or scale.shape[0] != t.shape[0] \
                    or scale.shape[1] < P.MXFP4_NUM_BLOCKS:
                raise ValueError(f"kv_data['mxfp4'] scales must be uint8 (total_kv, >= {P.MXFP4_NUM_BLOCKS}), "
                                 f"got {scale.dtype} {tuple(scale.shape)}")
            if scale.stride(1) != 1:
                raise ValueError("kv_data['mxfp4'] scale rows must be contiguous (stride(1) == 1)")
        if scale.device != device:
            raise ValueError(f"kv_data[{fmt!r}] scale is on {scale.device}, q is on {device}")
    if t.dim() != 3 or t.shape[1:] != (P.NUM_KV_HEADS, dim):
        raise ValueError(f"kv_data[{fmt!r}] must have shape (total_kv, 1, {dim}), got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"kv_data[{fmt!r}] is on {t.device}, q is on {device}")
    return t.shape[0]
